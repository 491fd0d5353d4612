import { encodeBackoff } from './backoff.js';
import { acquireConnection, type ConnectionLease } from './connection.js';
import { ClosedError, ConflictError, NotFoundError, NotReplicatedError, ValidationError } from './errors.js';
import { newJobId } from './ids.js';
import { defaultLogger } from './logger.js';
import { PartitionStore, type EncodedJob } from './store/partition-store.js';
import type { StoredJob } from './store/record.js';
import { isQueueRegistered, listQueueNames, registerQueue } from './store/registry.js';
import { MAX_PARTITIONS, QueuePartitions, partitionOf } from './store/partitions.js';
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
  /**
   * Split the queue into this many partitions, each under its own hash tag, so that one queue
   * spreads over the nodes of a Redis Cluster. Fixed when the queue is first used; opening it
   * with another count throws ConflictError. Default: the stored count (1 for a new queue).
   */
  partitions?: number;
  /**
   * After each add, wait until this many replicas confirmed the write (Redis `WAIT`), at most
   * `timeoutMs`; if fewer did, `add` throws {@link NotReplicatedError} (the job is written; adding
   * it again with the same id is safe). Narrows, but does not close, the window in which a failover
   * loses acknowledged jobs. Default: off.
   */
  waitForReplicas?: { replicas: number; timeoutMs: number };
}

/** Jobs per `add` script call in `addBulk`: large enough to amortize the round trip, small enough not to block Redis. */
const BULK_CHUNK = 500;
/** Reads never create a queue (no key is written by a GET of an unknown name); adds and pauses do. */
const READ = { create: false } as const;
const CREATE = { create: true } as const;
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
  readonly #partitions: QueuePartitions;
  readonly #maxPayloadBytes: number;
  readonly #waitForReplicas: { replicas: number; timeoutMs: number } | undefined;
  #registered: Promise<void> | undefined;
  #closed = false;

  constructor(name: string, options: QueueOptions) {
    assertQueueName(name);
    const prefix = options?.prefix ?? 'sg';
    assertQueueName(prefix);
    if (!options?.connection) throw new ValidationError('Expected `connection`: a Redis URL, ioredis options or an ioredis instance');
    this.#maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    assertInteger('maxPayloadBytes', this.#maxPayloadBytes, 2, 512 * 1024 * 1024);
    if (options.waitForReplicas !== undefined) {
      assertInteger('waitForReplicas.replicas', options.waitForReplicas?.replicas, 1, 100);
      assertInteger('waitForReplicas.timeoutMs', options.waitForReplicas.timeoutMs, 1, 60_000);
      this.#waitForReplicas = { ...options.waitForReplicas };
    }
    this.name = name;
    this.#connection = acquireConnection(options.connection, options.logger ?? defaultLogger);
    if (options.partitions !== undefined) assertInteger('partitions', options.partitions, 1, MAX_PARTITIONS);
    this.#partitions = new QueuePartitions(this.#connection.client, prefix, name, options.partitions);
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
    const [stores] = await Promise.all([this.#partitions.all({ create: true }), this.#register()]);
    const byPartition = stores.map(() => [] as EncodedJob[]);
    for (const job of encoded) byPartition[partitionOf(job.id, stores.length)]?.push(job);
    // Partitions in parallel (they may live on different nodes); chunks of one partition in order.
    let leastAcknowledged = Number.POSITIVE_INFINITY;
    await Promise.all(
      byPartition.map(async (partitionJobs, partition) => {
        const store = stores[partition] as PartitionStore;
        for (let start = 0; start < partitionJobs.length; start += BULK_CHUNK) {
          const chunk = partitionJobs.slice(start, start + BULK_CHUNK);
          const { statuses, acknowledged } = await store.add(chunk, ifExists, this.#waitForReplicas);
          if (acknowledged !== undefined) leastAcknowledged = Math.min(leastAcknowledged, acknowledged);
          const running = statuses.findIndex(status => status === 3);
          if (running >= 0) throw new ConflictError(`Job ${chunk[running]?.id} is running and cannot be replaced; the other jobs of the call were written`);
        }
      }),
    );
    const ids = encoded.map(job => job.id);
    if (this.#waitForReplicas && leastAcknowledged < this.#waitForReplicas.replicas) {
      throw new NotReplicatedError(leastAcknowledged, this.#waitForReplicas.replicas, ids);
    }
    return ids;
  }

  /** The job with this id, or null when it does not exist (never added, completed or cancelled). */
  async get(id: string): Promise<JobInfo<T> | null> {
    this.#assertOpen();
    assertJobId(id);
    const raw = await (await this.#partitions.storeFor(id, READ)).get(id);
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
    return (await this.#partitions.storeFor(id, READ)).cancel(id);
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
    const due = toDue(when, Date.now());
    const { result } = await (await this.#partitions.storeFor(id, READ)).reschedule(id, due);
    return result;
  }

  /** Counts of jobs by state, read atomically on the server's clock. */
  async stats(): Promise<QueueStats> {
    this.#assertOpen();
    const all = await this.#eachPartition(store => store.stats());
    const total = { delayed: 0, ready: 0, active: 0, dead: 0, paused: all.some(raw => raw.paused) };
    for (const raw of all) {
      total.delayed += raw.waiting - raw.ready;
      total.ready += raw.ready;
      total.active += raw.active;
      total.dead += raw.dead;
    }
    return total;
  }

  /** Running totals since the queue was first used (for metrics). */
  async counters(): Promise<QueueCounters> {
    this.#assertOpen();
    const all = await this.#eachPartition(store => store.stats());
    const read = (name: keyof QueueCounters) => all.reduce((sum, raw) => sum + (raw.counters[name] ?? 0), 0);
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

  /**
   * Stops workers from claiming jobs of this queue; running jobs carry on.
   *
   * Only a queue that exists (a job was added to it) can be paused, so that a misspelled name is
   * refused instead of leaving a paused queue that silently holds the first job added under it.
   * To pause a queue before its first job, pass `{ create: true }`: the queue is then recorded and
   * shows in `listQueues` (and the CLI's and dashboard's queue lists) as paused.
   *
   * @throws {NotFoundError} the queue does not exist and `create` is not set.
   * @example
   * await new Queue('emails', { connection }).pause({ create: true }); // before the first add
   */
  async pause(options: { create?: boolean } = {}): Promise<void> {
    this.#assertOpen();
    const create = options?.create ?? false;
    if (typeof create !== 'boolean') throw new ValidationError(`Expected \`create\` to be a boolean, got ${typeof create}`);
    // Recorded before the flag is set: a pause that fails half-way leaves a visible queue, never a hidden paused one.
    if (create) await this.#register();
    else await this.#assertExists('pause', 'check the name, or pass { create: true } to pause it before its first job');
    await this.#eachPartition(store => store.setPaused(true), CREATE);
  }

  /**
   * Lets workers claim again; they are woken at once.
   * @throws {NotFoundError} the queue does not exist (never added to nor paused with `create`).
   */
  async resume(): Promise<void> {
    this.#assertOpen();
    await this.#assertExists('resume', 'check the name');
    await this.#eachPartition(store => store.setPaused(false), READ);
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
    // Each partition is ordered; the page of the whole queue is within the first offset + limit
    // of each one, merged by score.
    const pages = await this.#eachPartition(store => store.listJobs(state, 0, offset + limit));
    const newestFirst = state === 'dead';
    const merged = pages.flatMap(page => page.entries).sort((a, b) => (newestFirst ? b.score - a.score : a.score - b.score));
    return merged.slice(offset, offset + limit).map(({ job, score, lastError }) => {
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
    const all = await this.#eachPartition(store => store.dueHistogram(boundsMs));
    const sumAt = (i: number) => all.reduce((sum, part) => sum + (part.counts[i] as number), 0);
    return {
      now: Math.max(...all.map(part => part.now)),
      ready: all.reduce((sum, part) => sum + part.ready, 0),
      buckets: boundsMs.map((untilMs, i) => ({ untilMs, count: sumAt(i) })),
      later: sumAt(boundsMs.length),
    };
  }

  /** A page of dead letters, most recently dead first, with their last error. */
  listDead(options: { offset?: number; limit?: number } = {}): Promise<JobInfo<T>[]> {
    return this.list('dead', options);
  }

  /**
   * Sends dead letters back to be run at once with a fresh set of attempts: the given ids, or all
   * of them (in bounded batches) when called without ids.
   * @returns how many were moved.
   */
  async retryDead(ids?: string | readonly string[]): Promise<number> {
    this.#assertOpen();
    if (ids === undefined) return sum(await this.#eachPartition(store => repeatUntilZero(() => store.retryDead([], DEAD_BATCH))));
    const list = typeof ids === 'string' ? [ids] : [...ids];
    list.forEach(assertJobId);
    const stores = await this.#partitions.all(READ);
    const byPartition = stores.map(() => [] as string[]);
    for (const id of list) byPartition[partitionOf(id, stores.length)]?.push(id);
    let moved = 0;
    for (const [partition, partitionIds] of byPartition.entries()) {
      for (let start = 0; start < partitionIds.length; start += DEAD_BATCH) {
        moved += await (stores[partition] as PartitionStore).retryDead(partitionIds.slice(start, start + DEAD_BATCH), DEAD_BATCH);
      }
    }
    return moved;
  }

  /** Deletes all dead letters. @returns how many were deleted. */
  async purgeDead(): Promise<number> {
    this.#assertOpen();
    return sum(await this.#eachPartition(store => repeatUntilZero(() => store.purgeDead(DEAD_BATCH))));
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
    this.#registered ??= registerQueue(this.#connection.client, this.#partitions.prefix, this.name).catch(error => {
      this.#registered = undefined;
      throw error;
    });
    return this.#registered;
  }

  /** Refuses an admin change of a queue that does not exist: the name is most likely misspelled. */
  async #assertExists(operation: string, hint: string): Promise<void> {
    if (await isQueueRegistered(this.#connection.client, this.#partitions.prefix, this.name, operation)) return;
    throw new NotFoundError(`Queue '${this.name}' does not exist under prefix '${this.#partitions.prefix}' (no job was ever added to it); ${hint}`);
  }

  /** Runs `call` on every partition at once (they may live on different nodes). */
  async #eachPartition<R>(call: (store: PartitionStore) => Promise<R>, options: { create: boolean } = READ): Promise<R[]> {
    return Promise.all((await this.#partitions.all(options)).map(call));
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClosedError(`Queue ${this.name} is closed`);
  }
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

async function repeatUntilZero(step: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let moved = await step(); moved > 0; moved = await step()) total += moved;
  return total;
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
