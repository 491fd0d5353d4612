import { EventEmitter } from 'node:events';
import { retryDelayAfter } from './backoff.js';
import { acquireConnection, type ConnectionLease } from './connection.js';
import { ClaimedJob } from './claimed-job.js';
import { newClaimId } from './ids.js';
import { ConflictError, LeaseLostError, UnrecoverableError } from './errors.js';
import { Settler } from './settler.js';
import { PartitionStore, type LeaseRef } from './store/partition-store.js';
import { QueuePartitions } from './store/partitions.js';
import { claimedJobFields, type StoredJob } from './store/record.js';
import type { BackoffFunction, BackoffOption, Job, Logger } from './types.js';
import { MAX_CLAIM, resolveWorkerOptions, type WorkerOptions } from './worker-options.js';

export type { WorkerOptions } from './worker-options.js';

/** Handles one job: resolve to ack it, throw to fail it (retry with backoff, then dead letter). */
export type Processor<T> = (job: Job<T>) => unknown;
/** Handles a batch of due jobs at once (`batch` option): resolve acks all, throw fails all. */
export type BatchProcessor<T> = (jobs: Job<T>[]) => unknown;

/** Events of a Worker and their arguments. */
export interface WorkerEvents<T> {
  /** The handler resolved and the ack landed. */
  completed: [job: Job<T>, result: unknown];
  /** The handler threw; `retryAt` is when it runs again (server ms), undefined when it went dead. */
  failed: [job: Job<T>, error: unknown, retryAt: number | undefined];
  /** The job ran out of attempts (or threw UnrecoverableError) and is now a dead letter. */
  dead: [job: Job<T>, error: unknown];
  /** The worker's ack or fail was refused: it had lost the lease, and another delivery owns (or completed) the job. */
  stale: [job: Job<T>];
  /** A Redis call failed; the worker retries on its own. */
  error: [error: Error];
}

interface Source {
  readonly queue: string;
  readonly store: PartitionStore;
  /** When to claim from this partition next, server ms. */
  nextAt: number;
  /** The earliest wake-up heard since the last claim was sent: its reply cannot know of it. */
  heardAt: number;
  /** Claims of this partition in flight. */
  inFlight: number;
  /** Whether a lease renewal of this partition is in flight (one at a time). */
  renewing: boolean;
  /** Whether the last claim came back with all it asked for (more is likely due). */
  lastFull: boolean;
  /** The last claim whose reply arrived: its resend memo can go. */
  answeredClaimId: string | undefined;
  /**
   * The last claim whose reply never came (timed out, connection lost), and when it was first sent:
   * the next claim of the partition resends it, so that jobs it may have taken come back now, not
   * after their lease (which began after that first send).
   */
  unanswered: { claimId: string; firstSentAt: number } | undefined;
  errorDelayMs: number;
}

interface Running<T> {
  readonly source: Source;
  readonly stored: StoredJob;
  readonly job: ClaimedJob<T>;
  /** Local time at which the lease runs out unless renewed. */
  leaseUntilLocal: number;
  /** Handed back by close(): its outcome is no longer ours to report. */
  released: boolean;
}

/** A claim in flight and the capacity it holds for the jobs it may bring. */
interface ClaimSlot {
  readonly limit: number;
  /** Counted in `#reservedJobs`: until it answers or `CLAIM_PATIENCE_MS` have passed (never for a probe). */
  reserving: boolean;
}

/** Claims that hold capacity at once: two, so that Redis prepares the next batch while this process runs the last. */
const MAX_RESERVING_CLAIMS = 2;
/**
 * How long a claim holds capacity while it has not answered. A claim stuck on a slow or dead node
 * (until the call timeout, or until a Cluster failover ends) then stops holding back the other
 * partitions; if its jobs arrive after all, those there is no room for are handed back at once.
 */
const CLAIM_PATIENCE_MS = 500;
const REAP_LIMIT = 100;

/**
 * Runs a handler for each job of one or more queues when it falls due. Sleeps until the next due
 * time (server clock), is woken by pub/sub when an earlier job arrives, claims jobs in batches under
 * a lease, renews leases while handlers run, and settles results in batches.
 *
 * @example
 * const worker = new Worker<{ orderId: number }>('order-timeout', async job => {
 *   await closeOrderIfUnpaid(job.payload.orderId);
 * }, { connection: 'redis://127.0.0.1:6379', concurrency: 50 });
 * worker.on('dead', (job, error) => log.error({ id: job.id, error }, 'order-timeout job dead'));
 */
export class Worker<T = unknown> extends EventEmitter<WorkerEvents<T>> {
  readonly #handler: (arg: unknown) => unknown;
  readonly #sources: Source[] = [];
  readonly #connection: ConnectionLease;
  readonly #settler: Settler;
  readonly #logger: Logger;
  readonly #clock: () => number;
  readonly #concurrency: number;
  readonly #batchSize: number | undefined;
  readonly #leaseMs: number;
  readonly #maxAttempts: number;
  readonly #backoff: BackoffOption | BackoffFunction;
  readonly #closeTimeoutMs: number;
  readonly #safetyIntervalMs: number;
  readonly #running = new Map<string, Running<T>>();
  readonly #idleWaiters: (() => void)[] = [];
  readonly #unlisteners: Promise<() => Promise<void>>[] = [];
  readonly #ready: Promise<void>;
  #busySlots = 0;
  #offsetMs = 0;
  #cursor = 0;
  /** Claims in flight that still hold capacity (see ClaimSlot). */
  #reservingClaims = 0;
  /** Jobs that in-flight claims may bring: counted as taken so that claims never exceed capacity. */
  #reservedJobs = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Local time the armed timer fires at. */
  #timerAt = 0;
  #renewTimer: NodeJS.Timeout;
  #closing = false;
  #closed: Promise<void> | undefined;

  // The batch overload comes first: when no overload matches, the compiler reports the last one,
  // and for the common single-job handler that names the wrong option (`concurency`) instead of
  // complaining that the handler is not a BatchProcessor.
  constructor(queues: string | readonly string[], handler: BatchProcessor<T>, options: WorkerOptions & { batch: { size: number } });
  constructor(queues: string | readonly string[], handler: Processor<T>, options: WorkerOptions & { batch?: undefined });
  constructor(queues: string | readonly string[], handler: Processor<T> | BatchProcessor<T>, options: WorkerOptions) {
    super();
    const resolved = resolveWorkerOptions(queues, handler, options);
    this.#concurrency = resolved.concurrency;
    this.#leaseMs = resolved.leaseMs;
    this.#maxAttempts = resolved.maxAttempts;
    this.#backoff = resolved.backoff;
    this.#batchSize = resolved.batchSize;
    this.#closeTimeoutMs = resolved.closeTimeoutMs;
    this.#safetyIntervalMs = resolved.safetyIntervalMs;
    this.#handler = handler as (arg: unknown) => unknown;
    this.#logger = resolved.logger;
    this.#clock = resolved.clock;
    const { names, prefix } = resolved;

    this.#connection = acquireConnection(resolved.connection, this.#logger);
    this.#settler = new Settler(error => this.#reportError(error), this.#clock);
    this.#ready = this.#start(names, prefix, resolved.partitions);
    this.#ready.catch(() => undefined);
    this.#renewTimer = setInterval(() => void this.#renewLeases(), Math.floor(this.#leaseMs / 3));
    this.#renewTimer.unref();
  }

  /**
   * Learns each queue's partitions (retrying while Redis is unreachable), subscribes to their wake
   * channels, then looks at all of them: a job added before the subscription woke nobody.
   */
  async #start(names: readonly string[], prefix: string, partitions: number | undefined): Promise<void> {
    for (const queue of names) {
      const layout = new QueuePartitions(this.#connection.client, prefix, queue, partitions);
      for (let delayMs = 100; ; delayMs = Math.min(5_000, delayMs * 2)) {
        if (this.#closing) return;
        try {
          for (const store of await layout.all({ create: true })) this.#sources.push(this.#newSource(queue, store));
          break;
        } catch (error) {
          this.#reportError(error);
          if (error instanceof ConflictError) throw error; // a partition count mismatch will not heal
          await new Promise(resolve => setTimeout(resolve, delayMs));
        }
      }
    }
    for (const source of this.#sources) {
      const unlisten = this.#connection.waker.listen(source.store.keys.wakeChannel, dueAt => this.#onWake(source, dueAt));
      this.#unlisteners.push(unlisten);
    }
    this.#pump();
    await Promise.all(this.#unlisteners);
    for (const source of this.#sources) this.#onWake(source, Number.NaN);
  }

  #newSource(queue: string, store: PartitionStore): Source {
    return { queue, store, nextAt: 0, heardAt: Number.POSITIVE_INFINITY, inFlight: 0, renewing: false, lastFull: false, answeredClaimId: undefined, unanswered: undefined, errorDelayMs: 0 };
  }

  /** Resolves once the worker listens for wake-ups (it claims due jobs from the start). */
  waitUntilReady(): Promise<void> {
    return this.#ready;
  }

  /** Jobs whose handlers are running now. */
  get runningCount(): number {
    return this.#running.size;
  }

  /**
   * Stops claiming, waits up to `closeTimeoutMs` for running handlers, then aborts the rest
   * (`job.signal`) and hands their jobs back so they are delivered again at once, not after the lease.
   */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  // --- claiming ---------------------------------------------------------------------------

  #serverNow(): number {
    return this.#clock() + this.#offsetMs;
  }

  /** Jobs the worker can take now: free handler slots, minus what in-flight claims may bring. */
  #freeJobs(): number {
    return (this.#concurrency - this.#busySlots) * (this.#batchSize ?? 1) - this.#reservedJobs;
  }

  #onWake(source: Source, dueAt: number): void {
    const at = Number.isNaN(dueAt) ? 0 : dueAt;
    source.nextAt = Math.min(source.nextAt, at);
    source.heardAt = Math.min(source.heardAt, at);
    this.#pump();
  }

  /**
   * Sends claims while there is room and a partition is due, then sleeps until the next due time.
   * Up to two claims hold capacity at once, each for at most half of it, so that Redis prepares the
   * next batch while this process runs the last one. Each partition has one claim in flight, a second
   * only while its claims come back full (otherwise the second would most likely find nothing): a
   * partition whose node is slow or dead holds back itself, and the others only for CLAIM_PATIENCE_MS.
   */
  #pump(): void {
    if (this.#closing) return;
    const now = this.#serverNow();
    const count = this.#sources.length;
    if (count === 0) return; // still learning the partitions
    const batchSize = this.#batchSize ?? 1;
    const perClaim = Math.min(MAX_CLAIM, Math.max(batchSize, Math.ceil((this.#concurrency * batchSize) / MAX_RESERVING_CLAIMS)));
    let sent = true;
    while (sent && this.#reservingClaims < MAX_RESERVING_CLAIMS) {
      sent = false;
      // Start each round at the next partition, so that one busy queue cannot starve the others.
      this.#cursor = (this.#cursor + 1) % count;
      for (let k = 0; k < count && this.#reservingClaims < MAX_RESERVING_CLAIMS; k++) {
        const source = this.#sources[(this.#cursor + k) % count] as Source;
        const free = this.#freeJobs();
        // With a claim in flight, wait until a whole batch is free: claiming each slot as it frees
        // would shred the batches into claims of one job.
        if (free <= 0 || (this.#reservingClaims > 0 && free < perClaim)) break;
        if (source.nextAt > now || source.inFlight >= (source.lastFull ? 2 : 1)) continue;
        void this.#claim(source, Math.min(free, perClaim));
        sent = true;
      }
    }
    this.#armTimer();
  }

  async #claim(source: Source, limit: number): Promise<void> {
    // A resend answers with what the first run took (if it ran) instead of claiming more, whatever
    // the order the two reach Redis in: jobs beyond the room there is now are handed back below.
    const resent = source.unanswered;
    source.unanswered = undefined;
    const claimId = resent?.claimId ?? newClaimId();
    const sentAt = this.#clock();
    // Leases are counted from the first send: the first run may have taken the jobs then.
    const leaseFrom = resent?.firstSentAt ?? sentAt;
    source.heardAt = Number.POSITIVE_INFINITY;
    source.inFlight += 1;
    // A partition whose last claim failed (its node away, or failing over) sends probes that hold no
    // capacity: they would hold back the healthy partitions each time. A probe that brings jobs there
    // is no room for hands them back.
    const slot: ClaimSlot = { limit, reserving: source.errorDelayMs === 0 };
    if (slot.reserving) {
      this.#reservingClaims += 1;
      this.#reservedJobs += limit;
    }
    const patience = setTimeout(() => {
      this.#unreserve(slot);
      this.#pump();
    }, CLAIM_PATIENCE_MS);
    let result;
    try {
      // Hand the last answered claim's memo over for deletion, once (if this call fails, it expires).
      const answeredClaimId = source.answeredClaimId;
      source.answeredClaimId = undefined;
      result = await source.store.claim(limit, this.#leaseMs, REAP_LIMIT, this.#maxAttempts, { claimId, answeredClaimId });
    } catch (error) {
      this.#reportError(error);
      source.unanswered = { claimId, firstSentAt: leaseFrom };
      // Short and capped: a claim refused at once (BUSY, LOADING) is retried every 0.25 s at most, so
      // due jobs start within a quarter second once Redis serves again. An unreachable Redis does not
      // spin: such a call only fails after the call timeout or the client's own retries (seconds).
      source.errorDelayMs = Math.min(250, source.errorDelayMs === 0 ? 50 : source.errorDelayMs * 2);
      source.nextAt = Math.min(this.#serverNow() + source.errorDelayMs, source.heardAt);
      source.lastFull = false;
    } finally {
      clearTimeout(patience);
      source.inFlight -= 1;
    }
    this.#unreserve(slot);
    if (!result) {
      // Only now, with this claim no longer in flight, can the timer be armed for the retry
      // (a partition with a claim in flight is left to that claim's reply).
      this.#pump();
      return;
    }
    const receivedAt = this.#clock();
    // Only a claim that took jobs left a memo to delete.
    if (result.jobs.length > 0) source.answeredClaimId = claimId;
    source.errorDelayMs = 0;
    source.lastFull = result.jobs.length === limit;
    // The server's clock, seen from here: its `now` was read about halfway through the round trip.
    this.#offsetMs = result.now - (sentAt + receivedAt) / 2;
    const later = result.now + this.#safetyIntervalMs;
    const reported = result.nextAt === -1 ? later : Math.min(later, Math.max(result.nextAt, result.jobs.length > 0 ? result.nextAt : result.now + 1));
    source.nextAt = Math.min(reported, source.heardAt);
    if (this.#closing) {
      // Claimed while close() began: hand them straight back.
      if (result.jobs.length > 0) await source.store.release(result.jobs).catch(error => this.#reportError(error));
      return;
    }
    let jobs = result.jobs;
    if (jobs.length > this.#freeJobs()) {
      // A claim past its patience, a probe or a resend: the capacity went to other partitions
      // meanwhile, or the first run took more. Hand back what there is no room for.
      const room = Math.max(0, this.#freeJobs());
      void source.store.release(jobs.slice(room)).catch(error => this.#reportError(error));
      jobs = jobs.slice(0, room);
    }
    const size = this.#batchSize ?? 1;
    // The lease began on the server after `leaseFrom`: counting from it errs on the early side.
    for (let i = 0; i < jobs.length; i += size) void this.#run(source, jobs.slice(i, i + size), leaseFrom);
    this.#pump();
  }

  #unreserve(slot: ClaimSlot): void {
    if (!slot.reserving) return;
    slot.reserving = false;
    this.#reservingClaims -= 1;
    this.#reservedJobs -= slot.limit;
  }

  // --- running ----------------------------------------------------------------------------

  async #run(source: Source, batch: StoredJob[], claimedAt: number): Promise<void> {
    this.#busySlots += 1;
    const entries = batch.map(stored => this.#track(source, stored, claimedAt));
    let ok = true;
    let outcome: unknown;
    try {
      const jobs = entries.map(entry => entry.job);
      outcome = await this.#handler(this.#batchSize === undefined ? jobs[0] : jobs);
    } catch (error) {
      ok = false;
      outcome = error;
    }
    this.#busySlots -= 1;
    for (const entry of entries) this.#running.delete(this.#key(entry.source, entry.stored));
    await Promise.all(entries.map(entry => (ok ? this.#complete(entry, outcome) : this.#fail(entry, outcome))));
    if (this.#running.size === 0) this.#idleWaiters.splice(0).forEach(wake => wake());
  }

  #track(source: Source, stored: StoredJob, claimedAt: number): Running<T> {
    const job = new ClaimedJob<T>(claimedJobFields<T>(source.queue, stored, this.#maxAttempts));
    const entry: Running<T> = { source, stored, job, leaseUntilLocal: claimedAt + this.#leaseMs, released: false };
    this.#running.set(this.#key(source, stored), entry);
    return entry;
  }

  /**
   * Running jobs are keyed by claim (partition and fencing token), not by job id: a worker that
   * lost a lease while its handler kept going may claim the same job again, and then holds both.
   */
  #key(source: Source, stored: StoredJob): string {
    return `${source.store.keys.due}\n${stored.token}`;
  }

  async #complete(entry: Running<T>, result: unknown): Promise<void> {
    if (entry.released) return; // handed back by close(): the next delivery owns the outcome
    const settled = this.#settler.ack(entry.source.store, entry.stored, entry.leaseUntilLocal);
    this.#pump(); // the slot is free: claim more while the ack travels
    // The script decides: 'applied' when this token completed the job (now, or before a lost reply);
    // 'stale' when another delivery holds or completed it, 'not-found' when it is gone altogether.
    // Never judged from this process's clock: a process frozen before it sent the ack cannot know.
    const outcome = await settled;
    if (outcome === 'applied') this.#emitSafely('completed', entry.job, result);
    else if (outcome === 'stale' || outcome === 'not-found') this.#emitSafely('stale', entry.job);
  }

  async #fail(entry: Running<T>, error: unknown): Promise<void> {
    if (entry.released) return;
    const { job, stored } = entry;
    const retryDelayMs = retryDelayAfter(job.attempt, job.maxAttempts, stored.backoff ?? this.#backoff, error, { dead: error instanceof UnrecoverableError });
    const dead = retryDelayMs === -1;
    const message = describeError(error);
    const settled = this.#settler.fail(entry.source.store, { id: stored.id, token: stored.token, retryDelayMs, message }, entry.leaseUntilLocal);
    this.#pump();
    const outcome = await settled;
    if (outcome === 'stale') this.#emitSafely('stale', job);
    if (outcome !== 'applied') return;
    // Whole ms, like every instant sandglass gives (the clock offset is an average, so fractional).
    this.#emitSafely('failed', job, error, dead ? undefined : Math.ceil(this.#serverNow()) + retryDelayMs);
    if (dead) this.#emitSafely('dead', job, error);
  }

  async #renewLeases(): Promise<void> {
    if (this.#running.size === 0) return;
    const bySource = new Map<Source, Running<T>[]>();
    for (const entry of this.#running.values()) {
      if (entry.released) continue;
      const list = bySource.get(entry.source) ?? [];
      list.push(entry);
      bySource.set(entry.source, list);
    }
    // Partitions at once, each renewal on its own: a partition whose node is slow or dead must not
    // hold back the renewals of the others (their leases would run out).
    const renewals = [...bySource].map(async ([source, entries]) => {
      if (source.renewing) return;
      source.renewing = true;
      const sentAt = this.#clock();
      try {
        const lost = new Set(await source.store.extend(this.#leaseMs, entries.map(entry => entry.stored)));
        for (const [index, entry] of entries.entries()) {
          if (lost.has(index)) entry.job.abort(new LeaseLostError(`Lost the lease of job ${entry.stored.id}: it ran out and the job was taken back`));
          else entry.leaseUntilLocal = sentAt + this.#leaseMs;
        }
      } catch (error) {
        this.#reportError(error);
      } finally {
        source.renewing = false;
      }
    });
    await Promise.all(renewals);
  }

  // --- closing ----------------------------------------------------------------------------

  #armTimer(): void {
    if (this.#closing) return;
    const now = this.#serverNow();
    let next = now + this.#safetyIntervalMs;
    // A partition with a claim in flight is looked at again when the reply arrives.
    if (this.#freeJobs() > 0) for (const source of this.#sources) if (source.inFlight === 0) next = Math.min(next, source.nextAt);
    const delayMs = Math.max(0, Math.ceil(next - now));
    const fireAt = this.#clock() + delayMs;
    // Called after every job: keep the armed timer when it fires at the same moment anyway.
    if (this.#timer && Math.abs(this.#timerAt - fireAt) <= 1) return;
    clearTimeout(this.#timer);
    this.#timerAt = fireAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#pump();
    }, delayMs);
  }

  async #close(): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#timer);
    const unlisteners = await Promise.allSettled(this.#unlisteners);
    await Promise.all(unlisteners.map(result => (result.status === 'fulfilled' ? result.value() : undefined)));
    if (this.#running.size > 0) {
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, this.#closeTimeoutMs);
        this.#idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await this.#releaseRunning();
    clearInterval(this.#renewTimer);
    await this.#settler.drain(this.#closeTimeoutMs);
    await this.#connection.release();
  }

  async #releaseRunning(): Promise<void> {
    const bySource = new Map<Source, LeaseRef[]>();
    for (const entry of this.#running.values()) {
      entry.released = true;
      entry.job.abort(new LeaseLostError(`Worker closed before job ${entry.stored.id} finished; it was handed back`));
      bySource.set(entry.source, [...(bySource.get(entry.source) ?? []), entry.stored]);
    }
    for (const [source, leases] of bySource) await source.store.release(leases).catch(error => this.#reportError(error));
  }

  #reportError(error: unknown): void {
    const wrapped = error instanceof Error ? error : new Error(String(error));
    if (this.listenerCount('error') > 0) this.emit('error', wrapped);
    else this.#logger.error(`sandglass worker: ${wrapped.message}`);
  }

  #emitSafely<E extends 'completed' | 'failed' | 'dead' | 'stale'>(event: E, ...args: WorkerEvents<T>[E]): void {
    try {
      (this.emit as (event: E, ...args: WorkerEvents<T>[E]) => boolean)(event, ...args);
    } catch (error) {
      this.#reportError(error);
    }
  }
}

/** What is kept of a failure in the dead letters: the stack when there is one, bounded. */
function describeError(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return text.length > 4_096 ? `${text.slice(0, 4_096)}...` : text;
}
