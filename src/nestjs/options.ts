import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { ConnectionOption, Logger, QueueOptions, WorkerOptions } from '../index.js';

/** What a queue registered with `registerQueue` may set besides its name (the rest comes from `forRoot`). */
export type QueueDefaults = Omit<QueueOptions, 'connection' | 'prefix' | 'logger'>;

/**
 * What a `@Processor` may set: the Worker's options but those that `forRoot` (or the queue's
 * `registerQueue` entry) decides, so that a worker always reads the keys its queue writes.
 */
export type ProcessorOptions = Omit<WorkerOptions, 'connection' | 'prefix' | 'logger' | 'clock' | 'partitions'>;

/** Options of `SandglassModule.forRoot`: the Redis every queue and processor uses, and defaults. */
export interface SandglassModuleOptions {
  /**
   * Where Redis is: a URL, ioredis options, or an ioredis `Redis`/`Cluster` instance. Every queue
   * and worker of the application shares one connection to it (two with pub/sub). An instance
   * you pass stays yours: closing the application does not close it.
   */
  connection: ConnectionOption;
  /** Prefix of every Redis key, for queues and workers alike. @default 'sg' */
  prefix?: string;
  /**
   * Where queues and workers log warnings and errors.
   * Default: Nest's `Logger` with the context `Sandglass`.
   */
  logger?: Logger;
  /** Options of every registered Queue, which a `registerQueue` entry may override. */
  defaultQueueOptions?: QueueDefaults;
  /**
   * Options of every `@Processor`'s Worker, which the decorator's options override
   * (`concurrency`, `leaseMs`, `maxAttempts`, `backoff`, `closeTimeoutMs`, ...).
   */
  defaultWorkerOptions?: ProcessorOptions;
}

/** Options of `SandglassModule.forRootAsync`: a factory for {@link SandglassModuleOptions}, Nest style. */
export interface SandglassModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Providers the factory needs, by token, in the order of its parameters (e.g. `[ConfigService]`). */
  inject?: FactoryProvider['inject'];
  /** Makes the options; may be async (read a secret, wait for a config service). */
  useFactory: (...args: never[]) => SandglassModuleOptions | Promise<SandglassModuleOptions>;
}

/**
 * One queue of `SandglassModule.registerQueue`: its name and what it sets differently from
 * `forRoot` (a `connection` or `prefix` of its own applies to the queue's `@Processor` too).
 */
export interface RegisterQueueOptions extends QueueDefaults {
  /** The queue's name; `@InjectQueue(name)` injects it. */
  name: string;
  /** Another Redis for this queue (and its processors). Default: the `forRoot` connection. */
  connection?: ConnectionOption;
  /** Another key prefix for this queue (and its processors). Default: the `forRoot` prefix. */
  prefix?: string;
}
