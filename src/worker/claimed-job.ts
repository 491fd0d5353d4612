import { tickOfJob } from '../store/tick-ids.js';
import type { StoredJob } from '../store/stored.js';
import type { Job, JobSchedule } from '../core/types.js';

/**
 * The `Job` a handler receives. Its AbortSignal is made only when a handler asks for it: most
 * handlers never do, and an AbortController per job is a measurable share of a worker's CPU.
 * The fields are set one by one in the constructor (not copied from an object): one object and
 * one shape per job on the worker's hot path.
 */
export class ClaimedJob<T> implements Job<T> {
  readonly id: string;
  readonly queue: string;
  readonly payload: T;
  readonly dueAt: number;
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The job's group; undefined for the default group (a field on every job: one shape). */
  readonly group: string | undefined;
  readonly #traceparent: string | undefined;
  readonly #tickAt: number | undefined;
  readonly #limitedAt: number;
  #controller: AbortController | undefined;
  #abortReason: unknown;

  /** `limitedAt`: the last time the queue's limit held claims back (server ms), -1 never. */
  constructor(
    id: string,
    queue: string,
    payload: T,
    dueAt: number,
    attempt: number,
    maxAttempts: number,
    tickAt: number | undefined,
    traceparent: string | undefined,
    limitedAt = -1,
    group: string | undefined = undefined,
  ) {
    this.id = id;
    this.queue = queue;
    this.payload = payload;
    this.dueAt = dueAt;
    this.attempt = attempt;
    this.maxAttempts = maxAttempts;
    this.group = group;
    this.#traceparent = traceparent;
    this.#tickAt = tickAt;
    this.#limitedAt = limitedAt;
    this.#controller = undefined;
    this.#abortReason = undefined;
  }

  /** The schedule tick this job is, if it is one (made when asked for: most jobs are not ticks). */
  get schedule(): JobSchedule | undefined {
    return this.#tickAt === undefined ? undefined : tickOfJob(this.id, this.#tickAt);
  }

  /** The W3C traceparent stored with the job, if it was added in a trace (a getter, like `schedule`). */
  get traceparent(): string | undefined {
    return this.#traceparent;
  }

  get heldByLimit(): boolean {
    return this.dueAt <= this.#limitedAt;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Aborts the signal (now, or as soon as it is asked for). The first reason wins. */
  abort(reason: Error): void {
    if (this.#abortReason !== undefined) return;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * The `Job` fields of a claimed record, for a Worker's handler and a PullConsumer's caller alike.
 * `defaultMaxAttempts` is the consumer's, for jobs added without their own.
 */
export function claimedJobFields<T>(queue: string, stored: StoredJob, defaultMaxAttempts: number): Omit<Job<T>, 'signal'> {
  const fields: { -readonly [K in keyof Omit<Job<T>, 'signal'>]: Job<T>[K] } = {
    id: stored.id,
    queue,
    payload: JSON.parse(stored.payloadJson) as T,
    dueAt: stored.dueAt as number, // a claim always answers with the due score it took the job at
    attempt: stored.attempts,
    maxAttempts: stored.maxAttempts ?? defaultMaxAttempts,
  };
  // Set only when there is one: most jobs are neither ticks nor traced.
  if (stored.tickAt !== undefined) fields.schedule = tickOfJob(stored.id, stored.tickAt);
  if (stored.traceparent !== undefined) fields.traceparent = stored.traceparent;
  if (stored.group !== undefined) fields.group = stored.group;
  return fields;
}
