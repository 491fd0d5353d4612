import { encodeBackoff } from '../core/backoff.js';
import { acquireConnection } from '../connection/connection.js';
import { ClosedError, ConflictError, NotFoundError, NotReplicatedError, ValidationError } from '../core/errors.js';
import { newJobId } from '../core/ids.js';
import { decodeCursor, encodeCursor, mergePages } from './list-page.js';
import { resolveQueueOptions, type QueueOptions } from './queue-options.js';
import { getQueueRetention, setQueueRetention } from '../flow/queue-retention.js';
import { resolveSharedOptions } from '../core/role-options.js';
import type { EncodedJob, JobSnapshot, PartitionStorage } from '../store/partition-storage.js';
import type { QueueStorage, StorageConnection } from '../store/queue-storage.js';
import { partitionOf } from '../store/placement.js';
import { getQueueLimits, setQueueLimits } from '../flow/queue-limits.js';
import { repeatUntilZero } from '../core/repeat.js';
import { tickOfJob } from '../store/tick-ids.js';
import { QueueSchedules } from '../schedules/queue-schedules.js';
import type {
  AddOptions,
  BulkJob,
  CancelResult,
  ConnectionOption,
  JobInfo,
  JobState,
  LimitsInput,
  Logger,
  QueueCounters,
  QueueLimits,
  Retention,
  RetentionInput,
  QueueStats,
  RescheduleResult,
  ScheduleInfo,
  ScheduleSpec,
  UnscheduleResult,
  When,
} from '../core/types.js';
import { endSend, startSend } from '../telemetry/telemetry.js';
import { MAX_DELAY_MS, assertBackoff, assertInteger, assertJobId, assertOnExpire, assertOptions, serializePayload, toDue, toExpireAfterMs, toTraceparent } from '../core/validate.js';

export type { QueueOptions } from './queue-options.js';

/** Jobs per `add` script call in `addBulk`: large enough to amortize the round trip, small enough not to block Redis. */
const BULK_CHUNK = 500;
/** Chunks of one partition sent before the first one answers (see #add). */
const BULK_IN_FLIGHT = 4;
/** Reads never create a queue (no key is written by a GET of an unknown name); adds and pauses do. */
const READ = { create: false } as const;
/**
 * How recently the queue's limiter must have refused a claim for `stats().limited` to count the
 * ready jobs as held back by the limit (a refused worker asks again within this when work waits).
 */
const LIMITED_RECENTLY_MS = 1_000;
const CREATE = { create: true } as const;
/** Dead letters moved or deleted per script call. */
const DEAD_BATCH = 1_000;
/** Option names, refused when unknown: a misspelled `dealy` must not add a job due at once. */
const ADD_OPTIONS = ['delay', 'at', 'id', 'ifExists', 'maxAttempts', 'backoff', 'expireAfter', 'onExpire', 'traceparent'];
const BULK_FIELDS = ['payload', 'delay', 'at', 'id', 'maxAttempts', 'backoff', 'expireAfter', 'onExpire', 'traceparent'];
const LIST_OPTIONS = ['limit', 'cursor'];
const STATES: readonly JobState[] = ['delayed', 'ready', 'active', 'dead', 'completed'];

/** A page of `queue.list`: the jobs, and the cursor of the next page (null on the last page). */
export interface JobPage<T> {
  jobs: JobInfo<T>[];
  /** Pass it as `cursor` to get the next page; null when this page is the last. */
  nextCursor: string | null;
}

/** Options of `queue.list` and `queue.listDead`. */
export interface ListOptions {
  /** Page size, 1-1000. @default 100 */
  limit?: number;
  /** The `nextCursor` of the previous page; the first page without it. */
  cursor?: string;
}

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
  readonly #connection: StorageConnection;
  readonly #storage: QueueStorage;
  readonly #schedules: QueueSchedules;
  readonly #maxPayloadBytes: number;
  readonly #waitForReplicas: { replicas: number; timeoutMs: number } | undefined;
  #registered: Promise<void> | undefined;
  #closed = false;

  constructor(name: string, options: QueueOptions) {
    // Every option is checked before the connection is taken: a refusal leaves nothing open.
    const resolved = resolveQueueOptions(name, options);
    this.name = resolved.name;
    this.#maxPayloadBytes = resolved.maxPayloadBytes;
    this.#waitForReplicas = resolved.waitForReplicas;
    this.#connection = acquireConnection(resolved.connection, resolved.logger);
    this.#storage = this.#connection.queue(resolved.prefix, resolved.name, resolved.partitions);
    this.#schedules = new QueueSchedules(this.#storage, resolved.maxPayloadBytes, () => this.#register());
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
    this.#assertOpen();
    assertOptions('queue.add', options, ADD_OPTIONS);
    const { ifExists = 'keep', ...rest } = options ?? {};
    const [id] = await this.#add([this.#encode({ ...rest, payload } as BulkJob<T>)], ifExists, false);
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
    const encoded = jobs.map((job: unknown, index) => {
      if (typeof job === 'object' && job !== null && Object.hasOwn(job, 'ifExists')) {
        throw new ValidationError(`\`jobs[${index}].ifExists\` is not an option of one entry: give it for the whole call, addBulk(jobs, 'replace')`);
      }
      assertOptions(`queue.addBulk (jobs[${index}])`, job, BULK_FIELDS);
      return this.#encode(job as BulkJob<T>, `jobs[${index}].payload`);
    });
    return this.#add(encoded, ifExists, true);
  }

  /**
   * Writes validated jobs inside the PRODUCER span `send <queue>` (one per call, and per explicit
   * `traceparent`: telemetry.ts), each job storing its span's context.
   */
  async #add(encoded: EncodedJob[], ifExists: unknown, bulk: boolean): Promise<string[]> {
    if (ifExists !== 'keep' && ifExists !== 'replace') throw new ValidationError(`Expected \`ifExists\` to be 'keep' or 'replace', got ${String(ifExists)}`);
    const spans = startSend(this.name, encoded, bulk);
    try {
      const ids = await this.#write(encoded, ifExists);
      endSend(spans);
      return ids;
    } catch (error) {
      endSend(spans, error);
      throw error;
    }
  }

  /** Writes validated jobs: partitions in parallel, each in chunks, in order. */
  async #write(encoded: readonly EncodedJob[], ifExists: 'keep' | 'replace'): Promise<string[]> {
    const [stores] = await Promise.all([this.#storage.partitions({ create: true }), this.#register()]);
    const byPartition = stores.map(() => [] as EncodedJob[]);
    for (const job of encoded) byPartition[partitionOf(job.id, stores.length)]?.push(job);
    // Partitions in parallel (they may live on different nodes); chunks of one partition in order.
    let leastAcknowledged = Number.POSITIVE_INFINITY;
    // Every chunk is written even when one holds a running job, so that the error can say truly
    // that the other jobs were written.
    const running: string[] = [];
    const ticks: string[] = [];
    const writeChunk = async (store: PartitionStorage, chunk: readonly EncodedJob[]): Promise<void> => {
      const { statuses, acknowledged } = await store.add(chunk, ifExists, this.#waitForReplicas);
      if (acknowledged !== undefined) leastAcknowledged = Math.min(leastAcknowledged, acknowledged);
      statuses.forEach((status, i) => {
        if (status === 'running') running.push((chunk[i] as EncodedJob).id);
        else if (status === 'tick') ticks.push((chunk[i] as EncodedJob).id);
      });
    };
    // A chunk's failure fails the call (as before, later chunks of its partition are not sent); every
    // write sent is awaited here, so none is left unobserved.
    const sent: Promise<void>[] = [];
    await Promise.all(
      byPartition.map(async (partitionJobs, partition) => {
        const store = stores[partition] as PartitionStorage;
        // Up to BULK_IN_FLIGHT chunks travel at once on the partition's connection, so that this
        // process encodes the next chunk while Redis writes the last. Redis runs them in the order
        // sent and answers in that order, so waiting for the oldest is waiting for the first to end.
        const window: Promise<void>[] = [];
        for (let start = 0; start < partitionJobs.length; start += BULK_CHUNK) {
          if (window.length >= BULK_IN_FLIGHT) await window.shift();
          const write = writeChunk(store, partitionJobs.slice(start, start + BULK_CHUNK));
          write.catch(() => undefined); // observed by the awaits here and below
          window.push(write);
          sent.push(write);
        }
      }),
    );
    await Promise.all(sent);
    const refused = running.length + ticks.length;
    if (refused > 0) {
      const others = encoded.length > refused ? '; the other jobs of the call were written' : '';
      const list = (ids: string[]) => `${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', ...' : ''}`;
      const reasons: string[] = [];
      if (running.length === 1) reasons.push(`Job ${running[0]} is running and cannot be replaced`);
      else if (running.length > 1) reasons.push(`${running.length} jobs are running and cannot be replaced (${list(running)})`);
      if (ticks.length > 0) {
        const which = ticks.length === 1 ? `Job ${ticks[0]} is` : `${ticks.length} jobs are (${list(ticks)})`;
        reasons.push(`${which} a schedule's pending tick and cannot be replaced: change the schedule (queue.schedule) instead`);
      }
      throw new ConflictError(`${reasons.join('; ')}${others}`);
    }
    const ids = encoded.map(job => job.id);
    if (this.#waitForReplicas && leastAcknowledged < this.#waitForReplicas.replicas) {
      throw new NotReplicatedError(leastAcknowledged, this.#waitForReplicas.replicas, ids);
    }
    return ids;
  }

  /**
   * The job with this id, or null when it does not exist (never added, cancelled, or completed and
   * not kept). A completed job kept by `setRetention` has state `'completed'`, `finishedAt` and
   * `result` (absent when the handler returned nothing, or nothing JSON can hold).
   */
  async get(id: string): Promise<JobInfo<T> | null> {
    this.#assertOpen();
    assertJobId(id);
    const raw = await (await this.#storage.partitionFor(id, READ)).get(id);
    return raw ? toJobInfo<T>(raw) : null;
  }

  /**
   * Cancels a waiting (or dead) job.
   * @returns `'cancelled'`; `'running'` when a worker holds it (it is not interrupted);
   *   `'not_found'` when there is no such job, or it completed (a kept completed job stays kept).
   */
  async cancel(id: string): Promise<CancelResult> {
    this.#assertOpen();
    assertJobId(id);
    return (await this.#storage.partitionFor(id, READ)).cancel(id);
  }

  /**
   * Moves a waiting job to a new due time in one atomic step. A dead job is revived at that time
   * with a fresh set of attempts.
   * @returns `'rescheduled'`, `'running'` (unchanged) or `'not_found'` (also for a completed job, kept or not).
   */
  async reschedule(id: string, when: When): Promise<RescheduleResult> {
    this.#assertOpen();
    assertJobId(id);
    assertOptions('queue.reschedule', when, ['delay', 'at']);
    if (when?.delay === undefined && when?.at === undefined) throw new ValidationError('Expected `delay` or `at`');
    const due = toDue(when, Date.now());
    const { result } = await (await this.#storage.partitionFor(id, READ)).reschedule(id, due);
    return result;
  }

  /** Counts of jobs by state, read atomically on the server's clock. */
  async stats(): Promise<QueueStats> {
    this.#assertOpen();
    const all = await this.#eachPartition(store => store.stats());
    const total = { delayed: 0, ready: 0, active: 0, dead: 0, paused: all.some(part => part.paused), limited: 0, completed: 0 };
    let heldBack = false;
    for (const part of all) {
      total.delayed += part.delayed;
      total.ready += part.ready;
      total.active += part.active;
      total.dead += part.dead;
      total.completed += part.completed;
      if (part.limitedAt !== -1 && part.limitedAt > part.now - LIMITED_RECENTLY_MS) heldBack = true;
    }
    // Ready jobs of a queue whose limit has no room now, or held work back just now, wait on the limit.
    if (heldBack) total.limited = total.ready;
    return total;
  }

  /** Running totals since the queue was first used (for metrics). */
  async counters(): Promise<QueueCounters> {
    this.#assertOpen();
    const all = await this.#eachPartition(store => store.stats());
    const read = (name: keyof QueueCounters) => all.reduce((sum, part) => sum + (part.counters[name] ?? 0), 0);
    return {
      added: read('added'),
      claimed: read('claimed'),
      completed: read('completed'),
      retried: read('retried'),
      dead: read('dead'),
      reaped: read('reaped'),
      stale: read('stale'),
      ticks: read('ticks'),
      ticksSkipped: read('ticksSkipped'),
      expired: read('expired'),
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
   * end first (with `leaseUntilAt`), `dead` most recent first (with `deadAt`), `completed` (kept by
   * `setRetention`) most recent first (with `finishedAt` and `result`); jobs of equal time in id order. Page on with `cursor: nextCursor`; a page costs the same wherever it is (also
   * among a million jobs due in one minute: a page reads the time cells of the jobs it shows). Jobs that move while you page may be missed or seen twice (a list is not a snapshot).
   *
   * @example
   * for (let page = await queue.list('dead'); ; page = await queue.list('dead', { cursor: page.nextCursor })) {
   *   for (const job of page.jobs) console.log(job.id, job.lastError);
   *   if (!page.nextCursor) break;
   * }
   */
  async list(state: JobState, options: ListOptions = {}): Promise<JobPage<T>> {
    this.#assertOpen();
    if (!STATES.includes(state)) throw new ValidationError(`Expected \`state\` to be 'delayed', 'ready', 'active', 'dead' or 'completed', got ${String(state)}`);
    if (typeof options === 'object' && options !== null && Object.hasOwn(options, 'offset')) {
      throw new ValidationError('`offset` is not an option of queue.list: page with `cursor`, the `nextCursor` of the previous page');
    }
    assertOptions('queue.list', options, LIST_OPTIONS);
    const limit = options?.limit ?? 100;
    assertInteger('limit', limit, 1, 1_000);
    const after = options?.cursor === undefined ? undefined : decodeCursor(options.cursor);
    // Each partition is in the state's order: the page is within the first limit + 1 jobs after
    // the cursor of each (the one extra tells whether there is a next page).
    const pages = await this.#eachPartition(store => store.listJobs(state, after, limit + 1));
    const more = pages.some(page => page.count > limit);
    const { entries, next } = mergePages(state, pages.map(page => page.entries), limit, more);
    const jobs = entries.map(entry => toJobInfo<T>(entry));
    return { jobs, nextCursor: next ? encodeCursor(next) : null };
  }

  /**
   * When waiting jobs fall due: `ready` (due now), then a count per window ending at each bound
   * (ms from now, increasing), then `later` (after the last bound). For timelines and dashboards.
   * Exact, but for jobs that were added many hours ahead: a window edge falling among such jobs'
   * coarse time bucket counts the bucket whole in the window where it starts (dueHistogram.lua).
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
  listDead(options: ListOptions = {}): Promise<JobPage<T>> {
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
    const stores = await this.#storage.partitions(READ);
    const byPartition = stores.map(() => [] as string[]);
    for (const id of list) byPartition[partitionOf(id, stores.length)]?.push(id);
    let moved = 0;
    for (const [partition, partitionIds] of byPartition.entries()) {
      for (let start = 0; start < partitionIds.length; start += DEAD_BATCH) {
        moved += await (stores[partition] as PartitionStorage).retryDead(partitionIds.slice(start, start + DEAD_BATCH), DEAD_BATCH);
      }
    }
    return moved;
  }

  /** Deletes all dead letters. @returns how many were deleted. */
  async purgeDead(): Promise<number> {
    this.#assertOpen();
    return sum(await this.#eachPartition(store => repeatUntilZero(() => store.purgeDead(DEAD_BATCH))));
  }

  /**
   * Creates or updates the recurring schedule `key` (an idempotent upsert): the same definition
   * from any number of processes at once is one schedule and one job per tick; a changed one
   * replaces the pending tick with the new definition's first tick after now. Each tick arrives
   * as an ordinary job with `job.schedule = { key, tickAt }`. See README, "Schedules".
   *
   * @throws {ValidationError} a bad spec (unknown `tz`, bad `cron`, both `cron` and `every`, ...); nothing is written.
   * @example
   * await queue.schedule('daily-report', { cron: '0 9 * * *', tz: 'Europe/Berlin', payload: { kind: 'daily' } });
   */
  async schedule(key: string, spec: ScheduleSpec): Promise<ScheduleInfo<T>> {
    this.#assertOpen();
    return (await this.#schedules.upsert(key, spec)) as ScheduleInfo<T>;
  }

  /** The schedule `key`, or null when there is none. */
  async getSchedule(key: string): Promise<ScheduleInfo<T> | null> {
    this.#assertOpen();
    return (await this.#schedules.get(key)) as ScheduleInfo<T> | null;
  }

  /** Every schedule of the queue, sorted by key. */
  async listSchedules(): Promise<ScheduleInfo<T>[]> {
    this.#assertOpen();
    return (await this.#schedules.list()) as ScheduleInfo<T>[];
  }

  /**
   * Stops a schedule from creating ticks; its pending tick is removed if its time is still to come
   * (a due or running one finishes).
   * @throws {NotFoundError} there is no schedule `key`.
   */
  async pauseSchedule(key: string): Promise<ScheduleInfo<T>> {
    this.#assertOpen();
    return (await this.#schedules.pause(key)) as ScheduleInfo<T>;
  }

  /**
   * Lets a paused schedule go on at its next future tick (ticks missed while paused are not run).
   * @throws {NotFoundError} there is no schedule `key`.
   */
  async resumeSchedule(key: string): Promise<ScheduleInfo<T>> {
    this.#assertOpen();
    return (await this.#schedules.resume(key)) as ScheduleInfo<T>;
  }

  /** Removes the schedule and its pending tick if its time is still to come (a due or running tick finishes). */
  async unschedule(key: string): Promise<UnscheduleResult> {
    this.#assertOpen();
    return this.#schedules.remove(key);
  }

  /**
   * Sets the queue's limits, stored with the queue: every Worker, PullConsumer and webhook binding
   * of every process obeys them from its next claim, across all partitions. A limit left out is
   * kept; `null` clears it. `rate`: at most `max` job starts in any sliding window of `per`;
   * `concurrency`: at most this many jobs running at once; `expireAfter`: the deadline of jobs
   * added without their own. See README, "Flow control".
   * @returns the limits now in force.
   * @throws {ValidationError} a bad limit; nothing is written.
   * @example
   * await queue.setLimits({ rate: { max: 100, per: '1s' }, concurrency: 5 });
   */
  async setLimits(input: LimitsInput): Promise<QueueLimits> {
    this.#assertOpen();
    return setQueueLimits(this.#storage, input, () => this.#register());
  }

  /** The queue's limits as stored (`{}` when it has none). */
  async getLimits(): Promise<QueueLimits> {
    this.#assertOpen();
    return getQueueLimits(this.#storage);
  }

  /**
   * Sets which completed jobs the queue keeps, with the handler's return value as `result`:
   * `completed: { count, age }` keeps the newest `count` and none older than `age` (a queue of P
   * partitions keeps the newest ceil(count / P) of each partition: about `count` in all);
   * `completed: null` keeps none again (the default), and deletes the kept ones. A field left out
   * stays as it is. Stored with the queue: every worker and consumer obeys it at once, without
   * configuration. Kept jobs beyond a lowered `count` or `age` are removed before this returns.
   *
   * @returns the retention now in force.
   * @throws {ValidationError} a bad field, named; nothing is written.
   * @example
   * await queue.setRetention({ completed: { count: 1000, age: '1d' }, maxResultBytes: 16_384 });
   */
  async setRetention(input: RetentionInput): Promise<Retention> {
    this.#assertOpen();
    return setQueueRetention(this.#storage, input, () => this.#register());
  }

  /** The queue's retention of completed jobs (`{ maxResultBytes: 65536 }`, no `completed`, when it keeps none). */
  async getRetention(): Promise<Retention> {
    this.#assertOpen();
    return getQueueRetention(this.#storage);
  }

  /** Releases the connection (closed when no other Queue or Worker of the process uses it). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#connection.release();
  }

  /** `payloadName`: the payload as refusals name it (`jobs[3].payload` in a bulk add). */
  #encode(job: BulkJob<T>, payloadName = 'payload'): EncodedJob {
    if (job.id !== undefined) assertJobId(job.id);
    if (job.maxAttempts !== undefined) assertInteger('maxAttempts', job.maxAttempts, 1, 1_000_000);
    if (job.backoff !== undefined) assertBackoff(job.backoff);
    if (job.onExpire !== undefined) assertOnExpire(job.onExpire);
    return {
      id: job.id ?? newJobId(),
      due: toDue(job, Date.now()),
      maxAttempts: job.maxAttempts === undefined ? '' : String(job.maxAttempts),
      backoff: encodeBackoff(job.backoff),
      payloadJson: serializePayload(job.payload, this.#maxPayloadBytes, payloadName),
      expireAfterMs: job.expireAfter === undefined ? undefined : toExpireAfterMs(job.expireAfter),
      dropOnExpire: job.onExpire === 'drop',
      // The explicit parent for now; #add sets what the job stores once its send span started.
      traceparent: job.traceparent === undefined ? undefined : toTraceparent(job.traceparent),
    };
  }

  #register(): Promise<void> {
    // Remembered for admin tools (listing queues). Once per Queue object; a failure is retried next
    // time. After the partitions are known: a queue in a newer storage format gets nothing written.
    this.#registered ??= this.#storage.partitions(CREATE).then(() => this.#storage.register()).catch(error => {
      this.#registered = undefined;
      throw error;
    });
    return this.#registered;
  }

  /** Refuses an admin change of a queue that does not exist: the name is most likely misspelled. */
  async #assertExists(operation: string, hint: string): Promise<void> {
    if (await this.#storage.isRegistered(operation)) return;
    throw new NotFoundError(`Queue '${this.name}' does not exist under prefix '${this.#storage.prefix}' (no job was ever added to it); ${hint}`);
  }

  /** Runs `call` on every partition at once (they may live on different nodes). */
  async #eachPartition<R>(call: (store: PartitionStorage) => Promise<R>, options: { create: boolean } = READ): Promise<R[]> {
    return Promise.all((await this.#storage.partitions(options)).map(call));
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClosedError(`Queue ${this.name} is closed`);
  }
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** A job as `get` and `list` show it. */
function toJobInfo<T>({ job, state, dueAt, leaseUntil, deadAt, reason, expiresAt, finishedAt, resultJson, lastError }: JobSnapshot): JobInfo<T> {
  const info: JobInfo<T> = { id: job.id, payload: JSON.parse(job.payloadJson) as T, state, dueAt, attempts: job.attempts };
  if (leaseUntil !== undefined) info.leaseUntilAt = leaseUntil;
  if (deadAt !== undefined) info.deadAt = deadAt;
  if (reason !== undefined) info.reason = reason;
  if (expiresAt !== undefined) info.expiresAt = expiresAt;
  if (finishedAt !== undefined) info.finishedAt = finishedAt;
  if (resultJson) info.result = JSON.parse(resultJson);
  if (job.maxAttempts !== undefined) info.maxAttempts = job.maxAttempts;
  if (lastError !== undefined) info.lastError = lastError;
  if (job.tickAt !== undefined) info.schedule = tickOfJob(job.id, job.tickAt);
  if (job.traceparent !== undefined) info.traceparent = job.traceparent;
  return info;
}

/**
 * Names of the queues that were ever added to under `prefix` (default 'sg'), sorted.
 *
 * @example
 * const names = await listQueues({ connection: 'redis://127.0.0.1:6379' });
 */
export async function listQueues(options: { connection: ConnectionOption; prefix?: string; logger?: Logger }): Promise<string[]> {
  const { connection: option, prefix, logger } = resolveSharedOptions('listQueues', options, ['connection', 'prefix', 'logger']);
  const connection = acquireConnection(option, logger);
  try {
    return await connection.listQueues(prefix);
  } finally {
    await connection.release();
  }
}
