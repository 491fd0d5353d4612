import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ValidationError } from '../index.js';
import type { RegisterQueueOptions, SandglassModuleAsyncOptions, SandglassModuleOptions } from './options.js';
import { QueueRegistry } from './queue-registry.js';
import { getQueueToken, SANDGLASS_MODULE_OPTIONS } from './tokens.js';
import { SandglassWorkers } from './workers.js';

/**
 * sandglass in a Nest application. Import `forRoot` (or `forRootAsync`) once, in the root module:
 * it is global and runs the workers of every `@Processor`. Import `registerQueue` in each module
 * that adds jobs, and inject its queues with `@InjectQueue(name)`.
 * @example
 * \@Module({
 *   imports: [
 *     SandglassModule.forRoot({ connection: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' }),
 *     SandglassModule.registerQueue({ name: 'order-timeout' }),
 *   ],
 *   providers: [OrdersService, OrderTimeoutProcessor],
 * })
 * export class OrdersModule {}
 */
@Module({})
export class SandglassModule {
  /** The Redis, key prefix, logger and defaults of every queue and worker; global. */
  static forRoot(options: SandglassModuleOptions): DynamicModule {
    return core([{ provide: SANDGLASS_MODULE_OPTIONS, useValue: options }], []);
  }

  /**
   * Like `forRoot`, with the options made by a factory that may inject providers (a ConfigService)
   * and may be async.
   * @example
   * SandglassModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ connection: config.get('REDIS_URL') }),
   * })
   */
  static forRootAsync(options: SandglassModuleAsyncOptions): DynamicModule {
    if (typeof options?.useFactory !== 'function')
      throw new ValidationError('SandglassModule.forRootAsync: expected `useFactory`, a function that returns the options of forRoot');
    const factory = options.useFactory as (...args: unknown[]) => SandglassModuleOptions | Promise<SandglassModuleOptions>;
    return core([{ provide: SANDGLASS_MODULE_OPTIONS, useFactory: factory, inject: options.inject ?? [] }], options.imports ?? []);
  }

  /**
   * Provides a Queue per entry, injectable with `@InjectQueue(name)` (or the token
   * `getQueueToken(name)`), on `forRoot`'s connection unless the entry names its own. The queues
   * close when the application shuts down.
   */
  static registerQueue(...queues: RegisterQueueOptions[]): DynamicModule {
    const providers: Provider[] = queues.map(entry => {
      if (typeof entry?.name !== 'string')
        throw new ValidationError('SandglassModule.registerQueue: expected entries of the form { name: string, ...QueueOptions }');
      return {
        provide: getQueueToken(entry.name),
        useFactory: (registry: QueueRegistry | undefined) => {
          if (!registry) {
            throw new ValidationError(
              `SandglassModule.registerQueue('${entry.name}'): no SandglassModule.forRoot() or forRootAsync() in the application; import one in the root module to say which Redis to use`,
            );
          }
          return registry.open(entry);
        },
        inject: [{ token: QueueRegistry, optional: true }],
      };
    });
    return { module: SandglassModule, providers, exports: providers };
  }
}

function core(options: Provider[], imports: NonNullable<DynamicModule['imports']>): DynamicModule {
  return {
    module: SandglassModule,
    global: true,
    imports: [DiscoveryModule, ...imports],
    providers: [...options, QueueRegistry, SandglassWorkers],
    exports: [SANDGLASS_MODULE_OPTIONS, QueueRegistry, SandglassWorkers],
  };
}
