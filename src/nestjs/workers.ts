import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { ValidationError, Worker, type WorkerOptions } from '../index.js';
import type { JobEventName, ProcessorMetadata } from './decorators.js';
import { QueueRegistry, type QueuePlace } from './queue-registry.js';
import { ON_JOB_EVENT_METADATA, PROCESSOR_METADATA } from './tokens.js';

/** A `@Processor` provider found at bootstrap, checked, with its event methods. */
interface FoundProcessor {
  readonly name: string;
  readonly instance: Record<string, unknown> & { process: (arg: unknown) => unknown };
  readonly metadata: ProcessorMetadata;
  readonly place: QueuePlace;
  readonly events: readonly (readonly [method: string, event: JobEventName])[];
}

const EVENTS: readonly JobEventName[] = ['completed', 'failed', 'dead', 'stale', 'error'];

/**
 * Processor instances some SandglassWorkers serves: a second forRoot in one application (two
 * SandglassWorkers) would otherwise run every processor twice.
 */
const served = new WeakSet<object>();

/**
 * The Workers SandglassModule runs for the application's `@Processor` classes: found through
 * Nest's DiscoveryService and started at `onApplicationBootstrap` (after every provider exists and
 * `onModuleInit` ran), closed at `onModuleDestroy`, the first shutdown hook, so that running
 * handlers finish (or their jobs are handed back after the worker's `closeTimeoutMs`) before the
 * queues close at `onApplicationShutdown`. Inject it to wait until the workers listen (tests) or to
 * read their state (health checks).
 */
@Injectable()
export class SandglassWorkers implements OnApplicationBootstrap, OnModuleDestroy {
  readonly #started: { readonly queues: readonly string[]; readonly worker: Worker<unknown>; readonly instance: object }[] = [];

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(QueueRegistry) private readonly registry: QueueRegistry,
  ) {}

  /** Every worker started, in discovery order. */
  all(): Worker<unknown>[] {
    return this.#started.map(({ worker }) => worker);
  }

  /** The workers that serve `queue`. */
  get(queue: string): Worker<unknown>[] {
    return this.#started.filter(({ queues }) => queues.includes(queue)).map(({ worker }) => worker);
  }

  /** Resolves once every worker listens for wake-ups (see `Worker.waitUntilReady`). */
  async waitUntilReady(): Promise<void> {
    await Promise.all(this.all().map(worker => worker.waitUntilReady()));
  }

  /**
   * Finds and checks every processor before starting any (a mistake in one must not leave the
   * others' workers running in an application that failed to start); if a Worker refuses its
   * options, those already started are closed before the error goes to Nest.
   */
  async onApplicationBootstrap(): Promise<void> {
    const found = this.#discover();
    try {
      for (const processor of found) this.#start(processor);
    } catch (error) {
      await this.onModuleDestroy();
      throw error;
    }
  }

  async onModuleDestroy(): Promise<void> {
    const started = this.#started.splice(0);
    for (const { instance } of started) served.delete(instance);
    await Promise.all(started.map(({ worker }) => worker.close()));
  }

  #discover(): FoundProcessor[] {
    const found: FoundProcessor[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const metatype = wrapper.metatype;
      if (typeof metatype !== 'function') continue;
      const metadata = this.reflector.get<ProcessorMetadata | undefined>(PROCESSOR_METADATA, metatype);
      if (!metadata) continue;
      const name = metatype.name || 'anonymous class';
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        throw new ValidationError(
          `@Processor ${name}: a processor must be a singleton provider (default scope); it is request- or transient-scoped, or depends on such a provider`,
        );
      }
      const instance = wrapper.instance as FoundProcessor['instance'] | undefined;
      if (!instance)
        throw new ValidationError(`@Processor ${name}: Nest made no instance of it (is it a lazily loaded module's provider?)`);
      if (typeof instance.process !== 'function') {
        throw new ValidationError(
          `@Processor ${name} has no process() method: declare \`process(job)\` (\`process(jobs)\` with the \`batch\` option)`,
        );
      }
      if (served.has(instance)) {
        throw new ValidationError(
          `@Processor ${name} is already run by another SandglassModule.forRoot: import forRoot (or forRootAsync) once, in the root module`,
        );
      }
      found.push({ name, instance, metadata, place: this.#placeOf(name, metadata.queues), events: this.#events(name, instance) });
    }
    return found;
  }

  /** All queues of one worker share a connection and prefix: refuse processors whose queues do not. */
  #placeOf(name: string, queues: readonly string[]): QueuePlace {
    const places = queues.map(queue => this.registry.placeOf(queue));
    const place = places[0] ?? this.registry.placeOf('');
    if (places.some(other => other.connection !== place.connection || other.prefix !== place.prefix)) {
      throw new ValidationError(
        `@Processor ${name}: its queues (${queues.join(', ')}) are registered with different connections or prefixes; one worker reads one Redis under one prefix`,
      );
    }
    return place;
  }

  #events(name: string, instance: object): [string, JobEventName][] {
    const events: [string, JobEventName][] = [];
    for (const method of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance) as object | null)) {
      const target = (instance as Record<string, unknown>)[method];
      if (typeof target !== 'function') continue;
      const event = this.reflector.get<JobEventName | undefined>(ON_JOB_EVENT_METADATA, target);
      if (event === undefined) continue;
      if (!EVENTS.includes(event)) {
        throw new ValidationError(`@OnJobEvent on ${name}.${method}: expected one of ${EVENTS.join(', ')}, got '${String(event)}'`);
      }
      events.push([method, event]);
    }
    return events;
  }

  #start({ name, instance, metadata, place, events }: FoundProcessor): void {
    const { logger, options } = this.registry;
    const workerOptions: WorkerOptions = {
      ...options.defaultWorkerOptions,
      ...metadata.options,
      connection: place.connection,
      prefix: place.prefix,
      logger,
    };
    const handler = (arg: unknown): unknown => instance.process(arg);
    let worker: Worker<unknown>;
    try {
      // One call for both overloads (single job and batch): the options decide which one it is.
      worker = new (
        Worker as new (queues: readonly string[], handler: (arg: unknown) => unknown, options: WorkerOptions) => Worker<unknown>
      )(metadata.queues, handler, workerOptions);
    } catch (error) {
      if (error instanceof ValidationError) throw new ValidationError(`@Processor ${name}: ${error.message}`);
      throw error;
    }
    this.#started.push({ queues: metadata.queues, worker, instance });
    served.add(instance);
    for (const [method, event] of events) {
      worker.on(event, (...args: unknown[]) => {
        // A listener's failure is reported, never thrown into the worker, and a rejected promise
        // is caught so that it cannot become an unhandled rejection that ends the process.
        const report = (error: unknown): void =>
          logger.error(
            `sandglass: @OnJobEvent('${event}') ${name}.${method} failed: ${error instanceof Error ? error.message : String(error)}`,
          );
        try {
          const result = (instance[method] as (...args: unknown[]) => unknown).apply(instance, args);
          if (isThenable(result)) result.then(undefined, report);
        } catch (error) {
          report(error);
        }
      });
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}
