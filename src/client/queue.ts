import { acquireConnection } from '../connection/connection.js';
import { ClosedError, NotFoundError, ValidationError } from '../core/errors.js';
import { purgeDeadJobs, retryDeadJobs } from './dead-letters.js';
import { encodeAdd, encodeBulk } from './encode-job.js';
import { toJobInfo } from './job-info.js';
import { decodeCursor, readPage, type JobPage, type ListOptions } from './list-page.js';
import { resolveQueueOptions, type QueueOptions } from './queue-options.js';
import { assertHistogramBounds, totalCounters, totalHistogram, totalStats } from './queue-totals.js';
import { writeJobs, type WriteTally } from './write-jobs.js';
import { AddCoalescer } from './add-coalescer.js';
import { QueueGroups } from './queue-groups.js';
import { getQueueLimits, setQueueLimits } from '../flow/queue-limits.js';
import { getQueueRetention, setQueueRetention } from '../flow/queue-retention.js';
import { QueueSchedules } from '../schedules/queue-schedules.js';
import type { EncodedJob, PartitionStorage } from '../store/partition-storage.js';
import type { QueueStorage, StorageConnection } from '../store/queue-storage.js';
import type {
  AddOptions,
  BulkJob,
  IfExists,
  CancelResult,
  JobInfo,
  JobState,
  LimitsInput,
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
  ByIdOptions,
  GroupLimits,
  GroupLimitsInfo,
  GroupLimitsInput,
  GroupPage,
  GroupTotals,
} from '../core/types.js';
import { endSend, startSend } from '../telemetry/telemetry.js';
import {
  MAX_LIST_LIMIT,
  assertGroup,
  assertIfExists,
  assertInteger,
  assertJobId,
  assertJobState,
  assertOptions,
  toDue,
} from '../core/validate.js';
import { partitionOf } from '../store/placement.js';

export type { QueueOptions } from './queue-options.js';
export type { JobPage, ListOptions } from './list-page.js';

/** Reads never create a queue (no key is written by a GET of an unknown name); adds and pauses do. */
const READ = { create: false } as const;
const CREATE = { create: true } as const;
const LIST_OPTIONS = ['limit', 'cursor'];

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
  readonly #groups: QueueGroups;
  readonly #schedules: QueueSchedules;
  readonly #maxPayloadBytes: number;
  readonly #waitForReplicas: { replicas: number; timeoutMs: number } | undefined;
  /** Concurrent single adds share one call per partition (add-coalescer.ts). */
  readonly #coalescer: AddCoalescer;
  #registered: Promise<void> | undefined;
  #closed = false;

  constructor(name: string, options: QueueOptions) {
    // Every option is checked before the connection is taken: a refusal leaves nothing open.
    const resolved = resolveQueueOptions(name, options);
    this.name = resolved.name;
    this.#maxPayloadBytes = resolved.maxPayloadBytes;
    this.#waitForReplicas = resolved.waitForReplicas;
    this.#coalescer = new AddCoalescer(resolved.waitForReplicas);
    this.#connection = acquireConnection(resolved.connection, resolved.logger);
    this.#storage = this.#connection.queue(resolved.prefix, resolved.name, resolved.partitions);
    this.#schedules = new QueueSchedules(this.#storage, resolved.maxPayloadBytes, () => this.#register());
    this.#groups = new QueueGroups(this.#storage, () => this.#register());
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
    const { job, ifExists } = encodeAdd(payload, options, this.#maxPayloadBytes);
    const [id] = await this.#add([job], ifExists, false);
    return id as string;
  }

  /**
   * Adds many jobs with one round trip per chunk of 500. Every entry is validated before anything
   * is written, so a bad entry rejects the whole call and writes nothing.
   *
   * @returns the ids, in the order of `jobs`.
   */
  async addBulk(jobs: readonly BulkJob<T>[], ifExists: IfExists = 'keep'): Promise<string[]> {
    this.#assertOpen();
    return this.#add(encodeBulk(jobs, this.#maxPayloadBytes), ifExists, true);
  }

  /**
   * `addBulk`, and how many of the jobs were written and how many existed already (not written):
   * for migrateFromBullMQ's report. Not part of the public API.
   * @internal
   */
  async addBulkTallied(jobs: readonly BulkJob<T>[], ifExists: IfExists = 'keep'): Promise<WriteTally> {
    this.#assertOpen();
    const tally: WriteTally = { written: 0, existing: 0 };
    await this.#add(encodeBulk(jobs, this.#maxPayloadBytes), ifExists, true, tally);
    return tally;
  }

  /**
   * Writes validated jobs inside the PRODUCER span `send <queue>` (one per call, and per explicit
   * `traceparent`: telemetry.ts), each job storing its span's context.
   */
  async #add(encoded: EncodedJob[], ifExists: unknown, bulk: boolean, tally?: WriteTally): Promise<string[]> {
    assertIfExists(ifExists);
    const spans = startSend(this.name, encoded, bulk);
    try {
      const ids = await this.#write(encoded, ifExists, bulk, tally);
      endSend(spans);
      return ids;
    } catch (error) {
      endSend(spans, error);
      throw error;
    }
  }

  /** Writes validated jobs (write-jobs.ts), once the partitions are known and the queue recorded. */
  async #write(encoded: readonly EncodedJob[], ifExists: IfExists, bulk: boolean, tally?: WriteTally): Promise<string[]> {
    const [stores] = await Promise.all([this.#storage.partitions(CREATE), this.#register()]);
    // One job of queue.add: it may share a call with the concurrent adds to its partition.
    if (!bulk && encoded.length === 1) return [await this.#coalescer.add(stores, encoded[0] as EncodedJob, ifExists)];
    return writeJobs(stores, encoded, ifExists, this.#waitForReplicas, tally);
  }

  /**
   * The job with this id, or null when it does not exist (never added, cancelled, or completed and
   * not kept). A completed job kept by `setRetention` has state `'completed'`, `finishedAt` and
   * `result` (absent when the handler returned nothing, or nothing JSON can hold).
   */
  async get(id: string, options?: ByIdOptions): Promise<JobInfo<T> | null> {
    this.#assertOpen();
    assertJobId(id);
    const raw = await this.#byId(
      'get',
      id,
      options,
      store => store.get(id),
      found => found !== null,
    );
    return raw ? toJobInfo<T>(raw) : null;
  }

  /**
   * Cancels a waiting (or dead) job.
   * @returns `'cancelled'`; `'running'` when a worker holds it (it is not interrupted);
   *   `'not_found'` when there is no such job, or it completed (a kept completed job stays kept).
   */
  async cancel(id: string, options?: ByIdOptions): Promise<CancelResult> {
    this.#assertOpen();
    assertJobId(id);
    return this.#byId(
      'cancel',
      id,
      options,
      store => store.cancel(id),
      result => result !== 'not_found',
    );
  }

  /**
   * Moves a waiting job to a new due time in one atomic step. A dead job is revived at that time
   * with a fresh set of attempts.
   * @returns `'rescheduled'`, `'running'` (unchanged) or `'not_found'` (also for a completed job, kept or not).
   */
  async reschedule(id: string, when: When, options?: ByIdOptions): Promise<RescheduleResult> {
    this.#assertOpen();
    assertJobId(id);
    assertOptions('queue.reschedule', when, ['delay', 'at']);
    if (when?.delay === undefined && when?.at === undefined) throw new ValidationError('Expected `delay` or `at`');
    const due = toDue(when, Date.now());
    const { result } = await this.#byId(
      'reschedule',
      id,
      options,
      store => store.reschedule(id, due),
      found => found.result !== 'not_found',
    );
    return result;
  }

  /** Counts of jobs by state, read atomically on the server's clock. */
  async stats(): Promise<QueueStats> {
    this.#assertOpen();
    return totalStats(await this.#eachPartition(store => store.stats()));
  }

  /** Running totals since the queue was first used (for metrics). */
  async counters(): Promise<QueueCounters> {
    this.#assertOpen();
    return totalCounters(await this.#eachPartition(store => store.stats()));
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
    assertJobState(state);
    if (typeof options === 'object' && options !== null && Object.hasOwn(options, 'offset')) {
      throw new ValidationError('`offset` is not an option of queue.list: page with `cursor`, the `nextCursor` of the previous page');
    }
    assertOptions('queue.list', options, LIST_OPTIONS);
    const limit = options?.limit ?? 100;
    assertInteger('limit', limit, 1, MAX_LIST_LIMIT);
    const after = options?.cursor === undefined ? undefined : decodeCursor(options.cursor);
    return readPage<T>(await this.#storage.partitions(READ), state, after, limit);
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
  async dueHistogram(
    boundsMs: readonly number[],
  ): Promise<{ now: number; ready: number; buckets: { untilMs: number; count: number }[]; later: number }> {
    this.#assertOpen();
    assertHistogramBounds(boundsMs);
    return totalHistogram(boundsMs, await this.#eachPartition(store => store.dueHistogram(boundsMs)));
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
    return retryDeadJobs(this.#storage, ids);
  }

  /** Deletes all dead letters. @returns how many were deleted. */
  async purgeDead(): Promise<number> {
    this.#assertOpen();
    return purgeDeadJobs(this.#storage);
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

  /**
   * Sets group limits, stored with the queue (README, "Groups"): without `group`, the default of
   * every group; with it, that group's own (which starts from the default in force, and replaces it
   * for that group). They hold for the whole queue, every Worker, PullConsumer and webhook binding
   * of every process, and combine with the queue's own limits. A limit left out is kept; `null`
   * clears it. `concurrency: 1` runs the group's jobs one at a time, in due order.
   * @returns the limits now in force (for the group, or the default).
   * @throws {ValidationError} a bad limit or group name; nothing is written.
   * @example
   * await queue.setGroupLimits({ concurrency: 2, rate: { max: 10, per: '1s' } });
   * await queue.setGroupLimits({ concurrency: 1 }, { group: 'shop-42' });
   */
  async setGroupLimits(input: GroupLimitsInput, options?: { group?: string }): Promise<GroupLimits> {
    this.#assertOpen();
    return this.#groups.setLimits(input, options);
  }

  /** Removes a group's own limits: it follows the default again. */
  async clearGroupLimits(options: { group: string }): Promise<void> {
    this.#assertOpen();
    return this.#groups.clearLimits(options);
  }

  /** The limits in force for `group` (its own, else the default), or the default without `group`. */
  async getGroupLimits(options?: { group?: string }): Promise<GroupLimitsInfo> {
    this.#assertOpen();
    return this.#groups.getLimits(options);
  }

  /** Pauses a group: none of its jobs starts until `resumeGroup` (they stay waiting; running ones finish). */
  async pauseGroup(group: string): Promise<void> {
    this.#assertOpen();
    return this.#groups.setPaused(group, true);
  }

  /** Resumes a paused group. */
  async resumeGroup(group: string): Promise<void> {
    this.#assertOpen();
    return this.#groups.setPaused(group, false);
  }

  /**
   * A page of the queue's groups with waiting or running jobs, busiest (most jobs) first: each with
   * its waiting, ready and active counts, and whether a limit holds it back or it is paused.
   * @example
   * for (let page = await queue.listGroups(); ; page = await queue.listGroups({ cursor: page.nextCursor })) {
   *   console.log(page.groups);
   *   if (!page.nextCursor) break;
   * }
   */
  async listGroups(options?: { limit?: number; cursor?: string }): Promise<GroupPage> {
    this.#assertOpen();
    return this.#groups.list(options);
  }

  /** How many groups have work, are held by their concurrency limit, or are paused (for metrics). */
  async groupTotals(): Promise<GroupTotals> {
    this.#assertOpen();
    return this.#groups.totals();
  }

  /** Releases the connection (closed when no other Queue or Worker of the process uses it). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#connection.release();
  }

  #register(): Promise<void> {
    // Remembered for admin tools (listing queues). Once per Queue object; a failure is retried next
    // time. After the partitions are known: a queue in a newer storage format gets nothing written.
    this.#registered ??= this.#storage
      .partitions(CREATE)
      .then(() => this.#storage.register())
      .catch(error => {
        this.#registered = undefined;
        throw error;
      });
    return this.#registered;
  }

  /** Refuses an admin change of a queue that does not exist: the name is most likely misspelled. */
  async #assertExists(operation: string, hint: string): Promise<void> {
    if (await this.#storage.isRegistered(operation)) return;
    throw new NotFoundError(
      `Queue '${this.name}' does not exist under prefix '${this.#storage.prefix}' (no job was ever added to it); ${hint}`,
    );
  }

  /**
   * Runs a by-id operation where the job lives: in its group's partition when `group` is given, else
   * in its id's, and on a partitioned queue, when that partition does not have it, in the others
   * (a grouped job lives in its group's partition). `found` tells an answer that found the job.
   */
  async #byId<R>(
    operation: string,
    id: string,
    options: ByIdOptions | undefined,
    call: (store: PartitionStorage) => Promise<R>,
    found: (result: R) => boolean,
  ): Promise<R> {
    assertOptions(`queue.${operation} (options)`, options, ['group']);
    if (options?.group !== undefined) return call(await this.#groups.partitionOf(assertGroup(options.group)));
    const stores = await this.#storage.partitions(READ);
    const home = stores[partitionOf(id, stores.length)] as PartitionStorage;
    const first = await call(home);
    if (found(first) || stores.length === 1) return first;
    for (const store of stores) {
      if (store === home) continue;
      const other = await call(store);
      if (found(other)) return other;
    }
    return first;
  }

  /** Runs `call` on every partition at once (they may live on different nodes). */
  async #eachPartition<R>(call: (store: PartitionStorage) => Promise<R>, options: { create: boolean } = READ): Promise<R[]> {
    return Promise.all((await this.#storage.partitions(options)).map(call));
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClosedError(`Queue ${this.name} is closed`);
  }
}
