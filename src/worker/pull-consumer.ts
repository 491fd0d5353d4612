import type { Span } from '@opentelemetry/api';
import { retryDelayAfter } from '../core/backoff.js';
import { newClaimId } from '../core/ids.js';
import { acquireConnection } from '../connection/connection.js';
import { ClosedError, NotFoundError, ValidationError } from '../core/errors.js';
import { resolvePullConsumerOptions, type PullConsumerOptions } from './pull-consumer-options.js';
import { MAX_CLAIM } from './worker-options.js';
import { assertLeaseMs } from '../core/role-options.js';
import type { PartitionStorage } from '../store/partition-storage.js';
import type { QueueStorage, StorageConnection } from '../store/queue-storage.js';
import type { Unlisten } from '../store/wake-channel.js';
import { QueueLimiter, type LimitedClaimResult } from '../flow/limiter.js';
import { claimedJobFields } from './claimed-job.js';
import { cappedResultJson, MAX_RESULT_BYTES } from '../flow/retention.js';
import { tendInBackground } from '../schedules/schedules.js';
import { linkJob, startSettle, withSpan } from '../telemetry/telemetry.js';
import type { BackoffOption, Job, Logger } from '../core/types.js';
import { MAX_DELAY_MS, MAX_ERROR_LENGTH, assertInteger, assertJobId, assertOptions, toJson } from '../core/validate.js';

export type { PullConsumerOptions } from './pull-consumer-options.js';

/** A job taken by `PullConsumer.claim`: settle it with its `id` and `token` before `leaseUntilAt`. */
export interface PulledJob<T> extends Omit<Job<T>, 'signal'> {
  /** The fencing token of this claim: ack, fail and extend need it. */
  readonly token: string;
  /** When the lease runs out (server clock, epoch ms) unless extended. */
  readonly leaseUntilAt: number;
}

const REAP_LIMIT = 100;
/** Settling a job never creates its queue: an ack to a misspelled queue finds nothing. */
const SETTLE = { create: false };
/** A claim creates the queue (its partition count is stored then), as a Worker does. */
const CLAIM = { create: true } as const;
/** The longest long poll of `consumer.claim` (`waitMs`, and the HTTP API's claim): a minute. */
export const MAX_CLAIM_WAIT_MS = 60_000;
/**
 * The form of a claim's fencing token, as `ack`, `fail` and `extend` check it (and the HTTP API's
 * schemas): decimal digits, enough for any value of the queue's 64-bit token sequence. A regular
 * expression source, valid as it is in JavaScript and JSON Schema.
 */
export const CLAIM_TOKEN_PATTERN = '^[0-9]{1,20}$';
const CLAIM_TOKEN = new RegExp(CLAIM_TOKEN_PATTERN);

/**
 * Takes due jobs on request instead of running a handler: for consumers that are not a Node
 * process (the HTTP API's pull endpoints, SQS-style). Each claimed job carries a fencing token;
 * `ack`, `fail` and `extend` with a token that lost its lease answer `'stale'` and change nothing.
 * `claim` can long-poll: it waits for a job to fall due, woken by the same pub/sub as workers.
 */
export class PullConsumer<T = unknown> {
  readonly queue: string;
  readonly #connection: StorageConnection;
  readonly #storage: QueueStorage;
  #cursor = 0;
  /** Per partition, the last claim whose reply arrived: its resend memo can go. */
  readonly #answered = new Map<PartitionStorage, string>();
  /** Partitions a claim said have no schedules: their idle claims need not ask (lua/claim.lua ARGV[7]). */
  readonly #withoutSchedules = new Set<PartitionStorage>();
  /** Per partition, the queue's retention as the last claim that read it said (ClaimResult.maxResultBytes). */
  readonly #maxResultBytes = new Map<PartitionStorage, number>();
  readonly #maxAttempts: number;
  readonly #backoff: BackoffOption;
  readonly #logger: Logger;
  readonly #sleepers = new Set<() => void>();
  /** The queue's limits (made by the first claim, once the queue's partitions are known). */
  #limiter: QueueLimiter | undefined;
  #listening: Promise<Unlisten[]> | undefined;
  #closed = false;

  constructor(queue: string, options: PullConsumerOptions) {
    // Every option is checked before the connection is taken: a refusal leaves nothing open.
    const resolved = resolvePullConsumerOptions(queue, options);
    this.queue = resolved.queue;
    this.#maxAttempts = resolved.maxAttempts;
    this.#backoff = resolved.backoff;
    this.#logger = resolved.logger;
    this.#connection = acquireConnection(resolved.connection, resolved.logger);
    this.#storage = this.#connection.queue(resolved.prefix, resolved.queue, resolved.partitions);
  }

  /**
   * Claims up to `max` due jobs under a lease of `leaseMs`. With `waitMs`, waits up to that long
   * for the first job to fall due (long poll); returns an empty array when none did.
   */
  async claim(options: { max?: number; leaseMs?: number; waitMs?: number; signal?: AbortSignal } = {}): Promise<PulledJob<T>[]> {
    this.#assertOpen();
    assertOptions('consumer.claim', options, ['max', 'leaseMs', 'waitMs', 'signal']);
    const max = options.max ?? 1;
    const leaseMs = options.leaseMs ?? 30_000;
    const waitMs = options.waitMs ?? 0;
    assertInteger('max', max, 1, MAX_CLAIM);
    assertLeaseMs(leaseMs);
    assertInteger('waitMs', waitMs, 0, MAX_CLAIM_WAIT_MS);
    const deadline = Date.now() + waitMs;
    const stores = await this.#storage.partitions(CLAIM);
    const limiterStorage = await this.#storage.limiter(CLAIM);
    const limiter = (this.#limiter ??= new QueueLimiter(limiterStorage, error =>
      this.#logger.error(`sandglass: the limiter of ${this.queue}: ${(error as Error).message}`),
    ));
    for (;;) {
      const result = await this.#claimAny(stores, limiter, max, leaseMs);
      if (result.jobs.length > 0) {
        return result.jobs.map(job => {
          const pulled = {
            ...claimedJobFields<T>(this.queue, job, this.#maxAttempts),
            token: job.token,
            leaseUntilAt: result.now + leaseMs,
          };
          // Set only when true: most jobs never wait on a limit.
          return (job.dueAt as number) <= result.limitedAt ? { ...pulled, heldByLimit: true } : pulled;
        });
      }
      if (Date.now() >= deadline || options.signal?.aborted || this.#closed) return [];
      // Subscribe before sleeping; a first subscription may have missed a wake-up, so look again.
      if (await this.#listen(stores)) continue;
      const offsetMs = result.now - Date.now();
      const dueLocal = result.nextAt === -1 ? Number.POSITIVE_INFINITY : result.nextAt - offsetMs;
      await this.#sleep(Math.min(deadline, dueLocal) - Date.now(), options.signal);
    }
  }

  /**
   * Completes a claimed job: `'acked'`, also when this token already completed it (an ack resent
   * after a lost reply, within a minute). `'stale'` when the token does not hold the job: the lease ran
   * out and another claim holds it or completed it (nothing changed).
   *
   * `result`: kept as the job's `result` while the queue keeps completed jobs (`queue.setRetention`),
   * as JSON; over the queue's `maxResultBytes` the marker `{ resultTooLarge: true, bytes }` is kept
   * instead. A result JSON would not keep as it is (a BigInt, a cycle, NaN or ±Infinity, an integer
   * beyond ±(2^53 - 1)) is refused before anything is written: ack again without it, or send such
   * numbers as strings.
   *
   * @throws {ValidationError} a result JSON would not keep as it is (the message names its path).
   * @throws {NotFoundError} no such job, and none with this id completed in the last minute (a
   *   wrong queue or id, or a job cancelled or purged).
   */
  async ack(id: string, token: string, options: { result?: unknown } = {}): Promise<'acked' | 'stale'> {
    this.#assertOpen();
    assertLease(id, token);
    assertOptions('consumer.ack', options, ['result']);
    // Judged whether or not the queue keeps results now, so that an ack does not start failing when retention is turned on.
    const resultJson = options.result === undefined ? undefined : toJson(options.result, 'result');
    return withSpan(startSettle(this.queue, 'ack', id), () => this.#ack(id, token, resultJson));
  }

  async #ack(id: string, token: string, resultJson: string | undefined): Promise<'acked' | 'stale'> {
    const store = await this.#storage.partitionFor(id, SETTLE);
    // Sent unless a claim said the queue keeps nothing; the script applies the cap the consumer may not know.
    const maxResultBytes = this.#maxResultBytes.get(store);
    const results =
      resultJson === undefined || maxResultBytes === 0
        ? undefined
        : [cappedResultJson(resultJson, maxResultBytes ?? MAX_RESULT_BYTES).json];
    const { stale, notFound } = await store.ack([{ id, token }], results);
    this.#limiter?.release(store, token);
    if (notFound.length > 0)
      throw new NotFoundError(
        `No job ${id} in queue ${this.queue} to ack: it does not exist, and none with this id completed in the last minute`,
      );
    return stale.length > 0 ? 'stale' : 'acked';
  }

  /**
   * Fails a claimed job: it is retried after `retryDelayMs` (default: the backoff), or
   * dead-lettered when out of attempts or when `dead` is true. `'stale'` when the token does not
   * hold the job (counted in `stale`, as a stale ack is). A fail sent again with the same token
   * within 90 s (its reply was lost) answers as the first send did, and changes nothing: its
   * `retryAt` is the retry's due time while the job still waits for it, absent once a claim took it.
   */
  async fail(
    id: string,
    token: string,
    options: { error?: string; retryDelayMs?: number; dead?: boolean } = {},
  ): Promise<{ result: 'retried' | 'dead' | 'stale'; retryAt?: number }> {
    this.#assertOpen();
    assertLease(id, token);
    assertOptions('consumer.fail', options, ['error', 'retryDelayMs', 'dead']);
    if (options.retryDelayMs !== undefined) assertInteger('retryDelayMs', options.retryDelayMs, 0, MAX_DELAY_MS);
    if (options.error !== undefined && typeof options.error !== 'string')
      throw new ValidationError(`Expected \`error\` to be a string, got ${typeof options.error}`);
    if (options.dead !== undefined && typeof options.dead !== 'boolean')
      throw new ValidationError(`Expected \`dead\` to be a boolean, got ${typeof options.dead}`);
    const span = startSettle(this.queue, 'fail', id);
    return withSpan(span, () => this.#fail(id, token, options, span));
  }

  async #fail(
    id: string,
    token: string,
    options: { error?: string; retryDelayMs?: number; dead?: boolean },
    span: Span | undefined,
  ): Promise<{ result: 'retried' | 'dead' | 'stale'; retryAt?: number }> {
    const store = await this.#storage.partitionFor(id, SETTLE);
    // Read to decide retry or dead; the script checks the token again, and refuses (and counts) a
    // token that does not hold the job, also when this read already saw it so.
    const current = await store.get(id);
    const job = current?.job;
    linkJob(span, job?.traceparent);
    const retryDelayMs = job
      ? retryDelayAfter(job.attempts, job.maxAttempts ?? this.#maxAttempts, job.backoff ?? this.#backoff, options.error, {
          dead: options.dead,
          retryDelayMs: options.retryDelayMs,
        })
      : -1;
    const message = (options.error ?? 'failed by the consumer').slice(0, MAX_ERROR_LENGTH);
    const { now, stale, resent } = await store.fail([{ id, token, retryDelayMs, message }]);
    this.#limiter?.release(store, token);
    if (stale.length > 0) return { result: 'stale' };
    // A resend after a lost reply: the first send decided, from the attempt count it read then.
    const first = resent[0];
    if (first !== undefined)
      return first.result === 'dead' || first.retryAt === undefined
        ? { result: first.result }
        : { result: 'retried', retryAt: first.retryAt };
    return retryDelayMs === -1 ? { result: 'dead' } : { result: 'retried', retryAt: now + retryDelayMs };
  }

  /**
   * Renews a claimed job's lease to `leaseMs` from now. `'stale'` when the token lost the lease.
   * `leaseUntilAt` is on the Redis server's clock, as `claim` gives it.
   */
  async extend(id: string, token: string, leaseMs = 30_000): Promise<{ result: 'extended' | 'stale'; leaseUntilAt?: number }> {
    this.#assertOpen();
    assertLease(id, token);
    assertLeaseMs(leaseMs);
    const store = await this.#storage.partitionFor(id, SETTLE);
    const { now, lost } = await store.extendAt(leaseMs, [{ id, token }]);
    if (lost.length === 0) this.#limiter?.renew(store, [token], leaseMs);
    return lost.length > 0 ? { result: 'stale' } : { result: 'extended', leaseUntilAt: now + leaseMs };
  }

  /** Wakes pending long polls (they return what they have) and releases the connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const wake of this.#sleepers) wake();
    const unlisteners = await this.#listening?.catch(() => undefined);
    await Promise.all((unlisteners ?? []).map(unlisten => unlisten()));
    await this.#connection.release();
  }

  /**
   * Claims from the partitions in turn, starting after the one used last, until one has due jobs;
   * answers with that claim, or with an empty one whose `nextAt` is the earliest of all.
   */
  async #claimAny(stores: readonly PartitionStorage[], limiter: QueueLimiter, max: number, leaseMs: number): Promise<LimitedClaimResult> {
    let earliest: LimitedClaimResult | undefined;
    for (let k = 0; k < stores.length; k++) {
      this.#cursor = (this.#cursor + 1) % stores.length;
      const store = stores[this.#cursor] as PartitionStorage;
      const claimId = newClaimId();
      const answeredClaimId = this.#answered.get(store);
      this.#answered.delete(store);
      const askSchedules = !this.#withoutSchedules.has(store);
      const result = await limiter.claim(store, max, leaseMs, (n, granted) =>
        store.claim(n, leaseMs, REAP_LIMIT, this.#maxAttempts, { claimId, answeredClaimId }, askSchedules, granted),
      );
      if (result.maxResultBytes !== undefined) this.#maxResultBytes.set(store, result.maxResultBytes);
      if (result.scheduled === false) this.#withoutSchedules.add(store);
      else if (result.scheduled === true) this.#withoutSchedules.delete(store);
      if (result.tend.length > 0)
        tendInBackground({ store, count: stores.length }, result.tend, error =>
          this.#logger.error(
            `sandglass: creating the next tick of a schedule of ${this.queue} failed (a later claim or upsert retries): ${(error as Error).message}`,
          ),
        );
      if (result.jobs.length > 0) this.#answered.set(store, claimId);
      if (result.jobs.length > 0) return result;
      // Refused by the queue's limit: so would the other partitions be, until `nextAt`.
      if (result.refused) return result;
      if (!earliest || (result.nextAt !== -1 && (earliest.nextAt === -1 || result.nextAt < earliest.nextAt))) earliest = result;
    }
    return earliest as LimitedClaimResult;
  }

  /** Subscribes to the partitions' wake channels once; true the first time (the caller should look again). */
  async #listen(stores: readonly PartitionStorage[]): Promise<boolean> {
    if (this.#listening) {
      await this.#listening;
      return false;
    }
    const wakeAll = () => {
      for (const wake of this.#sleepers) wake();
    };
    const subscriptions = stores.map(store => this.#storage.listenPartition(store.partition, wakeAll));
    // A freed slot of a full concurrency limit wakes long polls too.
    if (this.#limiter) subscriptions.push(this.#storage.listenLimiter(wakeAll));
    this.#listening = Promise.all(subscriptions);
    await this.#listening;
    return true;
  }

  #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise(resolve => {
      const done = () => {
        clearTimeout(timer);
        this.#sleepers.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.#sleepers.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClosedError(`PullConsumer of ${this.queue} is closed`);
  }
}

function assertLease(id: string, token: string): void {
  assertJobId(id);
  if (typeof token !== 'string' || !CLAIM_TOKEN.test(token))
    throw new ValidationError(`Expected \`token\` to be the claim's token (digits), got ${String(token)}`);
}
