import { encodeBackoff } from './backoff.js';
import { acquireConnection, type ConnectionLease } from './connection.js';
import { ClosedError, ConflictError, ValidationError } from './errors.js';
import { newJobId } from './ids.js';
import { defaultLogger } from './logger.js';
import { PartitionStore, type EncodedJob } from './store/partition-store.js';
import type { StoredJob } from './store/record.js';
import { listQueueNames, registerQueue } from './store/registry.js';
import type {
  AddOptions,
  BulkJob,
  CancelResult,
  ConnectionOption,
  JobInfo,
  JobState,
  Logger,
  QueueCounters,
  QueueStats,
  RescheduleResult,
} from './types.js';
import {
  DEFAULT_MAX_PAYLOAD_BYTES,
  MAX_DELAY_MS,
  assertBackoff,
  assertInteger,
  assertJobId,
  assertQueueName,
  serializePayload,
  toDue,
} from './validate.js';

/** Options of `new Queue`. */
export interface QueueOptions {
  /** Where Redis is: URL, ioredis options, or an ioredis instance you own. */
  connection: ConnectionOption;
  /**
   * Prefix of every Redis key. Queues and workers must use the same one.
   * @default 'sg'
   */
  prefix?: string;
  /**
   * Largest payload accepted, in bytes of JSON.
   * @default 262144 (256 KiB)
   */
  maxPayloadBytes?: number;
  /** Where warnings go. Default: Node process warnings. */
  logger?: Logger;
}

/** Jobs per `add` script call in `addBulk`: large enough to amortize the round trip, small enough not to block Redis. */
const BULK_CHUNK = 500;
/** Dead letters moved or deleted per script call. */
const DEAD_BATCH = 1_000;

/**
 * The producer and admin side of a queue: add jobs, look them up, cancel or reschedule them, read
 * counts and manage dead letters. Cheap to create; connections are shared per process.
 *
 * @example
 * const timeouts = new Queue<{ orderId: number }>('order-timeout', { connection: 'redis://127.0.0.1:6379' });
 * await timeouts.add({ orderId: 42 }, { delay: '30m', id: 'order:42' });
 */
export class Queue<T = unknown> {
  /** The queue's name. */
  readonly name: string;
  readonly #connection: ConnectionLease;
  readonly #store: PartitionStore;
  readonly #maxPayloadBytes: number;
  #registered: Promise<void> | undefined;
  #closed = false;

  constructor(name: string, options: QueueOptions) {
    assertQueueName(name);
    const prefix = options?.prefix ?? 'sg';
    assertQueueName(prefix);
    if (!options?.connection) throw new ValidationError('Expected `connection`: a Redis URL, ioredis options or an ioredis instance');
    this.#maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    assertInteger('maxPayloadBytes', this.#maxPayloadBytes, 2, 512 * 1024 * 1024);
    this.name = name;
    this.#connection = acquireConnection(options.connection, options.logger ?? defaultLogger);
    this.#store = new PartitionStore(this.#connection.client, prefix, name, 0);
  }

  /**
   * Adds a job that falls due after `delay` (default: now) or at `at`.
   * Adding an `id` that exists returns that id and changes nothing (unless `ifExists: 'replace'`).
   *
   * @returns the job's id.
   * @throws {ValidationError} bad options; {@link PayloadTooLargeError}; {@link ConflictError} when
   *   replacing a running job; {@link ConnectionError} when Redis cannot be reached.
   */
  async add(payload: T, options: AddOptions = {}): Promise<string> {
    const [id] = await this.addBulk([{ ...options, payload }], options.ifExists);
    return id as string;
  }

  /**
   * Adds many jobs with one round trip per chunk of 500. Every entry is validated before anything
   * is written, so a bad entry rejects the whole call and writes nothing.
   *
   * @returns the ids, in the order of `jobs`.
   */
  async addBulk(jobs: readonly BulkJob<T>[], ifExists: 'keep' | 'replace' = 'keep'): Promise<string[]> {
    this.#assertOpen();
    if (!Array.isArray(jobs)) throw new ValidationError('Expected `jobs` to be an array');
    if (ifExists !== 'keep' && ifExists !== 'replace') throw new ValidationError(`Expected \`ifExists\` to be 'keep' or 'replace', got ${String(ifExists)}`);
    const encoded = jobs.map(job => this.#encode(job));
    await this.#register();
    for (let start = 0; start < encoded.length; start += BULK_CHUNK) {
      const chunk = encoded.slice(start, start + BULK_CHUNK);
      const { statuses } = await this.#store.add(chunk, ifExists);
      const running = statuses.findIndex(status => status === 3);
      if (running >= 0) throw new ConflictError(`Job ${chunk[running]?.id} is running and cannot be replaced; the other jobs of the call were written`);
    }
    return encoded.map(job => job.id);
  }

  /** The job with this id, or null when it does not exist (never added, completed or cancelled). */
  async get(id: string): Promise<JobInfo<T> | null> {
    this.#assertOpen();
    assertJobId(id);
    const raw = await this.#store.get(id);
    if (!raw) return null;
    // A waiting job's due time is its score; an active or dead one's is in its record.
    const waiting = raw.state === 'delayed' || raw.state === 'ready';
    const info = toJobInfo<T>(raw.job, raw.state, waiting ? raw.score : (raw.job.dueAt ?? raw.score), raw.lastError);
    if (raw.state === 'active') info.leaseUntilAt = raw.score;
    if (raw.state === 'dead') info.deadAt = raw.score;
    return info;
  }

  /**
   * Cancels a waiting (or dead) job.
   * @returns `'cancelled'`; `'running'` when a worker holds it (it is not interrupted);
   *   `'not_found'` when there is no such job.
   */
  async cancel(id: string): Promise<CancelResult> {
    this.#assertOpen();
    assertJobId(id);
    return this.#store.cancel(id);
  }

  /**
   * Moves a waiting job to a new due time in one atomic step. A dead job is revived at that time
   * with a fresh set of attempts.
   * @returns `'rescheduled'`, `'running'` (unchanged) or `'not_found'`.
   */
  async reschedule(id: string, when: { delay?: number | string; at?: Date | number }): Promise<RescheduleResult> {
    this.#assertOpen();
    assertJobId(id);
    if (when?.delay === undefined && when?.at === undefined) throw new ValidationError('Expected `delay` or `at`');
    const { result } = await this.#store.reschedule(id, toDue(when, Date.now()));
    return result;
  }

  /** Counts of jobs by state, read atomically on the server's clock. */
  async stats(): Promise<QueueStats> {
    this.#assertOpen();
    const raw = await this.#store.stats();
    return { delayed: raw.waiting - raw.ready, ready: raw.ready, active: raw.active, dead: raw.dead, paused: raw.paused };
  }

  /** Running totals since the queue was first used (for metrics). */
  async counters(): Promise<QueueCounters> {
    this.#assertOpen();
    const { counters } = await this.#store.stats();
    const read = (name: keyof QueueCounters) => counters[name] ?? 0;
    return {
      added: read('added'),
      claimed: read('claimed'),
      completed: read('completed'),
      retried: read('retried'),
      dead: read('dead'),
      reaped: read('reaped'),
      stale: read('stale'),
    };
  }

  /** Stops workers from claiming jobs of this queue; running jobs carry on. */
  async pause(): Promise<void> {
    this.#assertOpen();
    await this.#store.setPaused(true);
  }

  /** Lets workers claim again; they are woken at once. */
  async resume(): Promise<void> {
    this.#assertOpen();
    await this.#store.setPaused(false);
  }

  /**
   * A page of jobs in one state: `delayed` and `ready` soonest due first, `active` soonest lease
   * end first (with `leaseUntilAt`), `dead` most recent first (with `deadAt`).
   */
  async list(state: JobState, options: { offset?: number; limit?: number } = {}): Promise<JobInfo<T>[]> {
    this.#assertOpen();
    if (!['delayed', 'ready', 'active', 'dead'].includes(state)) {
      throw new ValidationError(`Expected \`state\` to be 'delayed', 'ready', 'active' or 'dead', got ${String(state)}`);
    }
    const offset = options.offset ?? 0;
    const limit = options.limit ?? 100;
    assertInteger('offset', offset, 0);
    assertInteger('limit', limit, 1, 1_000);
    const { entries } = await this.#store.listJobs(state, offset, limit);
    return entries.map(({ job, score, lastError }) => {
      const waiting = state === 'delayed' || state === 'ready';
      const info = toJobInfo<T>(job, state, waiting ? score : (job.dueAt ?? score), lastError);
      if (state === 'active') info.leaseUntilAt = score;
      if (state === 'dead') info.deadAt = score;
      return info;
    });
  }

  /**
   * When waiting jobs fall due: `ready` (due now), then a count per window ending at each bound
   * (ms from now, increasing), then `later` (after the last bound). For timelines and dashboards.
   *
   * @example
   * await queue.dueHistogram([60_000, 3_600_000, 86_400_000]); // next minute, hour, day
   */
  async dueHistogram(boundsMs: readonly number[]): Promise<{ now: number; ready: number; buckets: { untilMs: number; count: number }[]; later: number }> {
    this.#assertOpen();
    if (!Array.isArray(boundsMs) || boundsMs.length > 100) throw new ValidationError('Expected `boundsMs` to be an array of at most 100 offsets in ms');
    boundsMs.forEach((bound, i) => {
      assertInteger(`boundsMs[${i}]`, bound, 1, MAX_DELAY_MS);
      if (i > 0 && bound <= (boundsMs[i - 1] as number)) throw new ValidationError('Expected `boundsMs` to increase');
    });
    const { now, ready, counts } = await this.#store.dueHistogram(boundsMs);
    return {
      now,
      ready,
      buckets: boundsMs.map((untilMs, i) => ({ untilMs, count: counts[i] as number })),
      later: counts[boundsMs.length] as number,
    };
  }

  /** A page of dead letters, most recently dead first, with their last error. */
  async listDead(options: { offset?: number; limit?: number } = {}): Promise<JobInfo<T>[]> {
    this.#assertOpen();
    const offset = options.offset ?? 0;
    const limit = options.limit ?? 100;
    assertInteger('offset', offset, 0);
    assertInteger('limit', limit, 1, 1_000);
    const entries = await this.#store.listDead(offset, limit);
    return entries.map(entry => ({ ...toJobInfo<T>(entry.job, 'dead', entry.job.dueAt ?? entry.deadAt, entry.lastError || undefined), deadAt: entry.deadAt }));
  }

  /**
   * Sends dead letters back to be run at once with a fresh set of attempts: the given ids, or all
   * of them (in bounded batches) when called without ids.
   * @returns how many were moved.
   */
  async retryDead(ids?: string | readonly string[]): Promise<number> {
    this.#assertOpen();
    if (ids === undefined) return this.#repeatUntilZero(() => this.#store.retryDead([], DEAD_BATCH));
    const list = typeof ids === 'string' ? [ids] : [...ids];
    list.forEach(assertJobId);
    let moved = 0;
    for (let start = 0; start < list.length; start += DEAD_BATCH) moved += await this.#store.retryDead(list.slice(start, start + DEAD_BATCH), DEAD_BATCH);
    return moved;
  }

  /** Deletes all dead letters. @returns how many were deleted. */
  async purgeDead(): Promise<number> {
    this.#assertOpen();
    return this.#repeatUntilZero(() => this.#store.purgeDead(DEAD_BATCH));
  }

  /** Releases the connection (closed when no other Queue or Worker of the process uses it). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#connection.release();
  }

  #encode(job: BulkJob<T>): EncodedJob {
    if (typeof job !== 'object' || job === null) throw new ValidationError('Expected each bulk entry to be { payload, delay?, at?, id?, ... }');
    if (job.id !== undefined) assertJobId(job.id);
    if (job.maxAttempts !== undefined) assertInteger('maxAttempts', job.maxAttempts, 1, 1_000_000);
    if (job.backoff !== undefined) assertBackoff(job.backoff);
    return {
      id: job.id ?? newJobId(),
      due: toDue(job, Date.now()),
      maxAttempts: job.maxAttempts === undefined ? '' : String(job.maxAttempts),
      backoff: encodeBackoff(job.backoff),
      payloadJson: serializePayload(job.payload, this.#maxPayloadBytes),
    };
  }

  #register(): Promise<void> {
    // Remembered for admin tools (listing queues). Once per Queue object; a failure is retried next time.
    this.#registered ??= registerQueue(this.#connection.client, this.#store.prefix, this.name).catch(error => {
      this.#registered = undefined;
      throw error;
    });
    return this.#registered;
  }

  async #repeatUntilZero(step: () => Promise<number>): Promise<number> {
    let total = 0;
    for (let moved = await step(); moved > 0; moved = await step()) total += moved;
    return total;
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClosedError(`Queue ${this.name} is closed`);
  }
}

function toJobInfo<T>(job: StoredJob, state: JobInfo<T>['state'], dueAt: number, lastError: string | undefined): JobInfo<T> {
  const info: JobInfo<T> = { id: job.id, payload: JSON.parse(job.payloadJson) as T, state, dueAt, attempts: job.attempts };
  if (job.maxAttempts !== undefined) info.maxAttempts = job.maxAttempts;
  if (lastError !== undefined) info.lastError = lastError;
  return info;
}

/**
 * Names of the queues that were ever added to under `prefix` (default 'sg'), sorted.
 *
 * @example
 * const names = await listQueues({ connection: 'redis://127.0.0.1:6379' });
 */
export async function listQueues(options: { connection: ConnectionOption; prefix?: string; logger?: Logger }): Promise<string[]> {
  const prefix = options.prefix ?? 'sg';
  assertQueueName(prefix);
  const connection = acquireConnection(options.connection, options.logger ?? defaultLogger);
  try {
    return await listQueueNames(connection.client, prefix);
  } finally {
    await connection.release();
  }
}
