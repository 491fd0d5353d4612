import { Inject, SetMetadata } from '@nestjs/common';
import type { Job, WorkerEvents } from '../index.js';
import type { ProcessorOptions } from './options.js';
import { getQueueToken, ON_JOB_EVENT_METADATA, PROCESSOR_METADATA } from './tokens.js';

/** What `@Processor` records on its class. */
export interface ProcessorMetadata {
  readonly queues: readonly string[];
  readonly options: ProcessorOptions;
}

/**
 * What a `@Processor` class implements (optional: the decorator checks for the method at bootstrap).
 * @example
 * \@Processor('order-timeout')
 * export class OrderTimeoutProcessor implements JobProcessor<{ orderId: number }> { async process(job: Job<{ orderId: number }>) {} }
 */
export interface JobProcessor<T = unknown> {
  /** Runs one due job: resolve to ack it, throw to fail it. */
  process(job: Job<T>): unknown;
}

/** What a `@Processor` class with the `batch` option implements: `process` gets arrays of due jobs. */
export interface BatchJobProcessor<T = unknown> {
  /** Runs a batch of due jobs: resolve to ack them all, throw to fail them all. */
  process(jobs: Job<T>[]): unknown;
}

/** A Worker event a method can hear with `@OnJobEvent`. */
export type JobEventName = keyof WorkerEvents<unknown>;

/**
 * Marks a provider as the handler of a queue's jobs (or of several queues'): at application
 * bootstrap SandglassModule starts a Worker that calls its `process(job)` method for each due job
 * (`process(jobs)` with an array when `options.batch` is set), and closes it on shutdown. Resolve to
 * ack the job; throw to fail it (retried with backoff, then dead-lettered).
 *
 * The class must be listed in a module's `providers` (it may inject other providers, by explicit
 * token), and `SandglassModule.forRoot` must be imported somewhere in the application.
 * @example
 * \@Processor('order-timeout', { concurrency: 50 })
 * export class OrderTimeoutProcessor {
 *   async process(job: Job<{ orderId: number }>) { await closeIfUnpaid(job.payload.orderId); }
 * }
 */
export function Processor(queues: string | readonly string[], options: ProcessorOptions = {}): ClassDecorator {
  const metadata: ProcessorMetadata = { queues: typeof queues === 'string' ? [queues] : [...queues], options };
  return SetMetadata(PROCESSOR_METADATA, metadata);
}

/**
 * Binds a method of a `@Processor` class to one of its Worker's events, with the event's arguments:
 * `completed (job, result)`, `failed (job, error, retryAt)`, `dead (job, error)`, `stale (job)`,
 * `error (error)`. A method that throws or rejects is reported to the worker's logger; it never
 * changes the job's outcome. With an `'error'` method the worker logs Redis errors no more itself.
 * @example
 * \@OnJobEvent('dead') onDead(job: Job<{ orderId: number }>, error: unknown) { this.alerts.send(job.id, error); }
 */
export function OnJobEvent(event: JobEventName): MethodDecorator {
  return SetMetadata(ON_JOB_EVENT_METADATA, event);
}

/**
 * Injects the Queue registered with `SandglassModule.registerQueue({ name })`.
 * @example
 * constructor(\@InjectQueue('order-timeout') private readonly timeouts: Queue<{ orderId: number }>) {}
 */
export function InjectQueue(name: string): PropertyDecorator & ParameterDecorator {
  return Inject(getQueueToken(name));
}
