import { DEFAULT_BACKOFF, backoffDelayMs } from './backoff.js';
import { acquireConnection, type ConnectionLease } from './connection.js';
import { ClosedError, ValidationError } from './errors.js';
import { defaultLogger } from './logger.js';
import { PartitionStore } from './store/partition-store.js';
import type { BackoffOption, ConnectionOption, Logger } from './types.js';
import { assertBackoff, assertInteger, assertJobId, assertQueueName } from './validate.js';

/** Options of `new PullConsumer`. */
export interface PullConsumerOptions {
  /** Where Redis is: URL, ioredis options, or an ioredis instance you own. */
  connection: ConnectionOption;
  /** @default 'sg' */
  prefix?: string;
  /** Deliveries before a job is dead-lettered (a job's own `maxAttempts` wins). @default 3 */
  maxAttempts?: number;
  /** Delay before a failed job's next attempt (a job's own `backoff` wins). Default: exponential from 1 s. */
  backoff?: BackoffOption;
  logger?: Logger;
}

/** A job taken by `PullConsumer.claim`: settle it with its `id` and `token` before `leaseUntilAt`. */
export interface PulledJob<T> {
  readonly id: string;
  readonly queue: string;
  readonly payload: T;
  readonly dueAt: number;
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The fencing token of this claim: ack, fail and extend need it. */
  readonly token: string;
  /** When the lease runs out (server clock, epoch ms) unless extended. */
  readonly leaseUntilAt: number;
}

const REAP_LIMIT = 100;
const MAX_WAIT_MS = 60_000;

/**
 * Takes due jobs on request instead of running a handler: for consumers that are not a Node
 * process (the HTTP API's pull endpoints, SQS-style). Each claimed job carries a fencing token;
 * `ack`, `fail` and `extend` with a token that lost its lease answer `'stale'` and change nothing.
 * `claim` can long-poll: it waits for a job to fall due, woken by the same pub/sub as workers.
 */
export class PullConsumer<T = unknown> {
  readonly queue: string;
  readonly #connection: ConnectionLease;
  readonly #store: PartitionStore;
  readonly #maxAttempts: number;
  readonly #backoff: BackoffOption;
  readonly #sleepers = new Set<() => void>();
  #listening: Promise<() => Promise<void>> | undefined;
  #closed = false;

  constructor(queue: string, options: PullConsumerOptions) {
    assertQueueName(queue);
    if (!options?.connection) throw new ValidationError('Expected `connection`: a Redis URL, ioredis options or an ioredis instance');
    const prefix = options.prefix ?? 'sg';
    assertQueueName(prefix);
    this.#maxAttempts = options.maxAttempts ?? 3;
    assertInteger('maxAttempts', this.#maxAttempts, 1, 1_000_000);
    this.#backoff = options.backoff ?? DEFAULT_BACKOFF;
    assertBackoff(this.#backoff);
    this.queue = queue;
    this.#connection = acquireConnection(options.connection, options.logger ?? defaultLogger);
    this.#store = new PartitionStore(this.#connection.client, prefix, queue, 0);
  }

  /**
   * Claims up to `max` due jobs under a lease of `leaseMs`. With `waitMs`, waits up to that long
   * for the first job to fall due (long poll); returns an empty array when none did.
   */
  async claim(options: { max?: number; leaseMs?: number; waitMs?: number; signal?: AbortSignal } = {}): Promise<PulledJob<T>[]> {
    this.#assertOpen();
    const max = options.max ?? 1;
    const leaseMs = options.leaseMs ?? 30_000;
    const waitMs = options.waitMs ?? 0;
    assertInteger('max', max, 1, 1_000);
    assertInteger('leaseMs', leaseMs, 200, 86_400_000);
    assertInteger('waitMs', waitMs, 0, MAX_WAIT_MS);
    const deadline = Date.now() + waitMs;
    for (;;) {
      const result = await this.#store.claim(max, leaseMs, REAP_LIMIT, this.#maxAttempts);
      if (result.jobs.length > 0) {
        return result.jobs.map(job => ({
          id: job.id,
          queue: this.queue,
          payload: JSON.parse(job.payloadJson) as T,
          dueAt: job.dueAt as number,
          attempt: job.attempts,
          maxAttempts: job.maxAttempts ?? this.#maxAttempts,
          token: job.token,
          leaseUntilAt: result.now + leaseMs,
        }));
      }
      if (Date.now() >= deadline || options.signal?.aborted || this.#closed) return [];
      // Subscribe before sleeping; a first subscription may have missed a wake-up, so look again.
      if (await this.#listen()) continue;
      const offsetMs = result.now - Date.now();
      const dueLocal = result.nextAt === -1 ? Number.POSITIVE_INFINITY : result.nextAt - offsetMs;
      await this.#sleep(Math.min(deadline, dueLocal) - Date.now(), options.signal);
    }
  }

  /** Completes a claimed job. `'stale'` when the token no longer holds the lease (nothing changed). */
  async ack(id: string, token: string): Promise<'acked' | 'stale'> {
    this.#assertOpen();
    assertLease(id, token);
    const stale = await this.#store.ack([{ id, token }]);
    return stale.length > 0 ? 'stale' : 'acked';
  }

  /**
   * Fails a claimed job: it is retried after `retryDelayMs` (default: the backoff), or
   * dead-lettered when out of attempts or when `dead` is true. `'stale'` when the token lost the lease.
   */
  async fail(id: string, token: string, options: { error?: string; retryDelayMs?: number; dead?: boolean } = {}): Promise<{ result: 'retried' | 'dead' | 'stale'; retryAt?: number }> {
    this.#assertOpen();
    assertLease(id, token);
    if (options.retryDelayMs !== undefined) assertInteger('retryDelayMs', options.retryDelayMs, 0, 10 * 365 * 86_400_000);
    const current = await this.#store.get(id);
    if (!current || current.state !== 'active' || current.job.token !== token) return { result: 'stale' };
    const maxAttempts = current.job.maxAttempts ?? this.#maxAttempts;
    const dead = options.dead === true || current.job.attempts >= maxAttempts;
    const retryDelayMs = dead ? -1 : (options.retryDelayMs ?? backoffDelayMs(current.job.backoff ?? this.#backoff, current.job.attempts, options.error));
    const message = (options.error ?? 'failed by the consumer').slice(0, 4_096);
    const { now, stale } = await this.#store.fail([{ id, token, retryDelayMs, message }]);
    if (stale.length > 0) return { result: 'stale' };
    return dead ? { result: 'dead' } : { result: 'retried', retryAt: now + retryDelayMs };
  }

  /** Renews a claimed job's lease to `leaseMs` from now. `'stale'` when the token lost the lease. */
  async extend(id: string, token: string, leaseMs = 30_000): Promise<{ result: 'extended' | 'stale'; leaseUntilAt?: number }> {
    this.#assertOpen();
    assertLease(id, token);
    assertInteger('leaseMs', leaseMs, 200, 86_400_000);
    const sentAt = Date.now();
    const lost = await this.#store.extend(leaseMs, [{ id, token }]);
    return lost.length > 0 ? { result: 'stale' } : { result: 'extended', leaseUntilAt: sentAt + leaseMs };
  }

  /** Wakes pending long polls (they return what they have) and releases the connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const wake of this.#sleepers) wake();
    const unlisten = await this.#listening?.catch(() => undefined);
    await unlisten?.();
    await this.#connection.release();
  }

  /** Subscribes to the wake channel once; true the first time (the caller should look again). */
  async #listen(): Promise<boolean> {
    if (this.#listening) {
      await this.#listening;
      return false;
    }
    this.#listening = this.#connection.waker.listen(this.#store.keys.wakeChannel, () => {
      for (const wake of this.#sleepers) wake();
    });
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
  if (typeof token !== 'string' || !/^\d{1,20}$/.test(token)) throw new ValidationError(`Expected \`token\` to be the claim's token (digits), got ${String(token)}`);
}
