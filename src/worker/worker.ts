import { EventEmitter } from 'node:events';
import { retryDelayAfter } from '../core/backoff.js';
import { ClaimLoop, type ClaimHost } from './claim-loop.js';
import type { ClaimSource } from './claim-source.js';
import { acquireConnection } from '../connection/connection.js';
import { LeaseLostError, UnrecoverableError } from '../core/errors.js';
import { byStore, HeldJob, type AckListener } from './held-job.js';
import { LeaseRenewer } from './lease-renewer.js';
import type { SettleOutcome } from './settler.js';
import { Settler } from './settler.js';
import { describeThrown, UnheardFailures } from './unheard-failures.js';
import { keptResultJson } from '../flow/retention.js';
import { ConsumerTelemetry, type Processing } from '../telemetry/consumer.js';
import type { StorageConnection } from '../store/queue-storage.js';
import type { StoredJob } from '../store/stored.js';
import type { BackoffFunction, BackoffOption, Job, Logger } from '../core/types.js';
import { resolveWorkerOptions, type WorkerOptions } from './worker-options.js';
import { MAX_ERROR_LENGTH } from '../core/validate.js';

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

/**
 * Runs a handler for each job of one or more queues when it falls due. Sleeps until the next due
 * time (server clock), is woken by pub/sub when an earlier job arrives, claims jobs in batches under
 * a lease (a bounded number ahead of free handler slots: `prefetch`), renews leases while jobs are
 * held, and settles results in batches.
 *
 * The work is split three ways: the ClaimLoop decides when to claim and how much, the LeaseRenewer
 * keeps every held lease alive, and this class runs handlers, reports events and closes.
 *
 * @example
 * const worker = new Worker<{ orderId: number }>('order-timeout', async job => {
 *   await closeOrderIfUnpaid(job.payload.orderId);
 * }, { connection: 'redis://127.0.0.1:6379', concurrency: 50 });
 * worker.on('dead', (job, error) => log.error({ id: job.id, error }, 'order-timeout job dead'));
 */
export class Worker<T = unknown> extends EventEmitter<WorkerEvents<T>> {
  readonly #handler: (arg: unknown) => unknown;
  readonly #connection: StorageConnection;
  readonly #loop: ClaimLoop;
  readonly #renewer: LeaseRenewer<HeldJob<T>>;
  readonly #settler: Settler;
  readonly #logger: Logger;
  readonly #unheardFailures: UnheardFailures;
  readonly #clock: () => number;
  readonly #concurrency: number;
  readonly #batchSize: number | undefined;
  /** Jobs held at most (running and prefetched): `(concurrency + prefetch) * batch size`. */
  readonly #capacity: number;
  readonly #leaseMs: number;
  readonly #maxAttempts: number;
  readonly #backoff: BackoffOption | BackoffFunction;
  readonly #closeTimeoutMs: number;
  readonly #telemetry: ConsumerTelemetry;
  /**
   * Prefetched work waiting for a handler slot, oldest first: one job per entry, or one batch per
   * entry in batch mode (a batch stays the jobs of one claim, as without the prefetch).
   */
  readonly #waiting: (HeldJob<T> | HeldJob<T>[])[] = [];
  readonly #idleWaiters: (() => void)[] = [];
  /** "<queue>\n<problem>" of the results warned about already: one warning per queue and kind. */
  readonly #resultWarnings = new Set<string>();
  /** Hears the settler's ack outcomes (HeldJob calls it): one object, not a closure per job. */
  readonly #ackListener: AckListener<T> = { acked: (held, outcome) => this.#acked(held, outcome) };
  readonly #ready: Promise<void>;
  /** Handler calls running. */
  #busySlots = 0;
  /** Jobs in running handler calls. */
  #runningJobs = 0;
  /** A pump of the claim loop is queued (see #afterRun). */
  #pumpQueued = false;
  readonly #pumpOnce = (): void => {
    this.#pumpQueued = false;
    this.#loop.pump();
  };
  /** Inside #startWaiting (see there). */
  #starting = false;
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
    this.#capacity = (resolved.concurrency + resolved.prefetch) * (resolved.batchSize ?? 1);
    this.#closeTimeoutMs = resolved.closeTimeoutMs;
    this.#handler = handler as (arg: unknown) => unknown;
    this.#logger = resolved.logger;
    this.#unheardFailures = new UnheardFailures(this.#logger);
    this.#clock = resolved.clock;
    const reportError = (error: unknown): void => this.#reportError(error);

    this.#connection = acquireConnection(resolved.connection, this.#logger);
    this.#settler = new Settler(reportError, this.#clock);
    this.#renewer = new LeaseRenewer<HeldJob<T>>(
      this.#leaseMs,
      this.#clock,
      held => this.#leaseLost(held),
      reportError,
      (store, renewed) => {
        const limiter = renewed[0]?.source.limiter;
        if (limiter?.slots)
          limiter.renew(
            store,
            renewed.map(held => held.stored.token),
            this.#leaseMs,
          );
      },
    );
    const host: ClaimHost = {
      room: () => this.#capacity - this.#renewer.size,
      hungry: () => this.#waiting.length === 0 && this.#busySlots < this.#concurrency,
      idle: () => (this.#concurrency - this.#busySlots - this.#waiting.length) * (this.#batchSize ?? 1),
      deliver: (source, jobs, leaseFrom, limitedAt) => this.#deliver(source, jobs, leaseFrom, limitedAt),
      reportError,
    };
    this.#loop = new ClaimLoop(this.#connection, host, {
      capacity: this.#capacity,
      batchSize: resolved.batchSize ?? 1,
      leaseMs: this.#leaseMs,
      maxAttempts: this.#maxAttempts,
      safetyIntervalMs: resolved.safetyIntervalMs,
      clock: this.#clock,
      priority: resolved.priority,
    });
    this.#telemetry = new ConsumerTelemetry(resolved.tracingParent, () => this.#loop.serverNow());
    this.#ready = this.#loop.start(resolved.names, resolved.prefix, resolved.partitions);
    this.#ready.catch(() => undefined);
  }

  /** Resolves once the worker listens for wake-ups (it claims due jobs from the start). */
  waitUntilReady(): Promise<void> {
    return this.#ready;
  }

  /** Jobs whose handlers are running now. */
  get runningCount(): number {
    return this.#runningJobs;
  }

  /**
   * Stops claiming, hands prefetched jobs back at once, waits up to `closeTimeoutMs` for running
   * handlers, then aborts the rest (`job.signal`) and hands their jobs back so they are delivered
   * again at once, not after the lease.
   */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  // --- running ----------------------------------------------------------------------------

  /**
   * Takes the jobs of a claim: holds them all first (so that the room the claim loop sees counts
   * them, even if a handler finishes at once and claims more), then starts what free slots there
   * are; the rest waits (the prefetch).
   */
  #deliver(source: ClaimSource, jobs: StoredJob[], leaseFrom: number, limitedAt: number): void {
    const leaseUntil = leaseFrom + this.#leaseMs;
    const size = this.#batchSize;
    // A loop and a method, no closure: a claim's jobs are held one by one.
    if (size === undefined) {
      for (let i = 0; i < jobs.length; i++) this.#waiting.push(this.#hold(source, jobs[i] as StoredJob, leaseUntil, limitedAt));
    } else {
      for (let i = 0; i < jobs.length; i += size) {
        const batch: HeldJob<T>[] = [];
        for (let k = i; k < Math.min(i + size, jobs.length); k++)
          batch.push(this.#hold(source, jobs[k] as StoredJob, leaseUntil, limitedAt));
        this.#waiting.push(batch);
      }
    }
    this.#startWaiting();
  }

  /** A claimed job, held under its lease (renewed from now on) until it settles. */
  #hold(source: ClaimSource, stored: StoredJob, leaseUntil: number, limitedAt: number): HeldJob<T> {
    const held = new HeldJob<T>(source, stored, this.#maxAttempts, leaseUntil, this.#ackListener, limitedAt);
    this.#renewer.hold(held);
    return held;
  }

  /**
   * A slot freed: start the next prefetched work at once. A prefetched job whose lease is gone, or
   * may have run out unrenewed (renewals failing), does not start: another worker may hold it. It is
   * handed back (fenced by its token: a no-op if it is no longer ours) so that it runs again at once
   * instead of waiting out the lease and losing an attempt to the reaper.
   */
  #startWaiting(): void {
    // Not re-entered: a handler that returns at once finishes inside #run and calls back here; the
    // loop below goes on instead, so a long prefetch of such handlers never deepens the stack.
    if (this.#starting) return;
    this.#starting = true;
    let expired: HeldJob<T>[] | undefined;
    try {
      while (!this.#closing && this.#busySlots < this.#concurrency && this.#waiting.length > 0) {
        const next = this.#waiting.shift() as HeldJob<T> | HeldJob<T>[];
        const now = this.#clock();
        if (!Array.isArray(next)) {
          if (next.canStart(now)) this.#run(next);
          else (expired ??= []).push(next);
          continue;
        }
        const batch: HeldJob<T>[] = [];
        for (const held of next) {
          if (held.canStart(now)) batch.push(held);
          else (expired ??= []).push(held);
        }
        if (batch.length > 0) this.#run(batch);
      }
    } finally {
      this.#starting = false;
    }
    if (expired) void this.#handBack(expired, 'waited in the prefetch past its lease (renewals failed)');
  }

  /**
   * Calls the handler with one job or a batch. Not an async function: per job, `then` with two
   * small closures costs less than an async frame and its awaits, and a handler that returns a
   * plain value finishes at once.
   */
  #run(unit: HeldJob<T> | HeldJob<T>[]): void {
    this.#busySlots += 1;
    this.#runningJobs += Array.isArray(unit) ? unit.length : 1;
    let result: unknown;
    const arg = Array.isArray(unit) ? unit.map(held => held.job) : unit.job;
    // Undefined unless an OpenTelemetry provider is registered: then the call runs as it always did.
    const processing = this.#telemetry.start(arg);
    try {
      result = processing === undefined ? this.#handler(arg) : this.#telemetry.run(processing, this.#handler, arg);
      if (isThenable(result)) {
        result.then(
          value => this.#ran(unit, true, value, processing),
          (error: unknown) => this.#ran(unit, false, error, processing),
        );
        return;
      }
    } catch (error) {
      this.#ran(unit, false, error, processing);
      return;
    }
    this.#ran(unit, true, result, processing);
  }

  /** The handler settled: free the slot, start the next prefetched work, then settle this one. */
  #ran(unit: HeldJob<T> | HeldJob<T>[], ok: boolean, outcome: unknown, processing: Processing | undefined): void {
    if (processing !== undefined) this.#telemetry.finish(processing, ok, outcome);
    this.#busySlots -= 1;
    if (Array.isArray(unit)) {
      this.#runningJobs -= unit.length;
      for (const held of unit) this.#finished(held);
      this.#startWaiting();
      // A batch keeps per-job results only from an array of one result per job, in order.
      const results = ok && Array.isArray(outcome) && outcome.length === unit.length ? (outcome as unknown[]) : undefined;
      for (let i = 0; i < unit.length; i++) {
        const held = unit[i] as HeldJob<T>;
        if (ok) this.#complete(held, outcome, results?.[i]);
        else this.#fail(held, outcome);
      }
    } else {
      this.#runningJobs -= 1;
      this.#finished(unit);
      this.#startWaiting();
      if (ok) this.#complete(unit, outcome, outcome);
      else this.#fail(unit, outcome);
    }
    this.#afterRun();
  }

  /**
   * A job's handler is done (or it will not run here): its lease is no longer renewed, and its
   * concurrency slot, if the queue has that limit, frees now: the limit counts running handlers,
   * not acks in flight.
   */
  #finished(held: HeldJob<T>): void {
    this.#renewer.drop(held);
    held.source.limiter.release(held.store, held.stored.token);
  }

  #afterRun(): void {
    // Room freed: claim more while the acks travel. Once for all the handlers that end in this
    // wave of microtasks (a claim's worth of them end together), not once per job: the claims it
    // sends are the same (each asks for up to a claim's worth) and leave in the same turn.
    if (!this.#pumpQueued) {
      this.#pumpQueued = true;
      // A reaction to a settled promise, not queueMicrotask (which wraps each callback for async hooks).
      void SETTLED.then(this.#pumpOnce);
    }
    if (this.#runningJobs === 0 && this.#idleWaiters.length > 0) this.#idleWaiters.splice(0).forEach(wake => wake());
  }

  /**
   * Acks a job whose handler resolved with `result` (`kept`: the job's own part of it, in batch
   * mode). Only while its queue keeps completed jobs does the result travel with the ack (and cost
   * a JSON.stringify); otherwise the ack is the same as without retention.
   */
  #complete(held: HeldJob<T>, result: unknown, kept: unknown): void {
    if (held.released) return; // handed back by close(): the next delivery owns the outcome
    held.result = result;
    const maxResultBytes = held.source.maxResultBytes;
    if (maxResultBytes === 0) {
      this.#settler.ack(held.store, held);
      return;
    }
    const { json, tooLargeBytes, notJson } = keptResultJson(kept, maxResultBytes);
    held.keptResult = json;
    if (tooLargeBytes !== undefined) {
      this.#warnResult(
        held,
        'too large',
        `its result is ${tooLargeBytes} bytes of JSON, over the queue's maxResultBytes (${maxResultBytes}): kept as { resultTooLarge: true, bytes }`,
      );
    } else if (notJson !== undefined) {
      this.#warnResult(held, 'not JSON', `its result cannot be written as JSON (${notJson}): kept without a result`);
    }
    this.#settler.keep(held.store, held);
  }

  /** A kept result that could not be kept as it was: the job completes; the logger hears it once per queue and kind. */
  #warnResult(held: HeldJob<T>, problem: string, what: string): void {
    const key = `${held.source.queue}\n${problem}`;
    if (this.#resultWarnings.has(key)) return;
    this.#resultWarnings.add(key);
    this.#logger.warn(
      `sandglass worker: job ${held.stored.id} of queue ${held.source.queue} completed, but ${what} (said once per worker and queue)`,
    );
  }

  /**
   * The script decides: 'applied' when this token completed the job (now, or before a lost reply);
   * 'stale' when another delivery holds or completed it, 'not-found' when it is gone altogether.
   * Never judged from this process's clock: a process frozen before it sent the ack cannot know.
   */
  #acked(held: HeldJob<T>, outcome: SettleOutcome): void {
    if (outcome === 'applied') this.#emitSafely('completed', held.job, held.result);
    else if (outcome === 'stale' || outcome === 'not-found') this.#emitSafely('stale', held.job);
  }

  #fail(held: HeldJob<T>, error: unknown): void {
    if (held.released) return;
    const { job, stored } = held;
    const retryDelayMs = retryDelayAfter(job.attempt, job.maxAttempts, stored.backoff ?? this.#backoff, error, {
      dead: error instanceof UnrecoverableError,
    });
    const dead = retryDelayMs === -1;
    const message = describeError(error);
    this.#settler.fail(held.store, {
      settleEntry: { id: stored.id, token: stored.token, retryDelayMs, message },
      settleGiveUpAt: held.leaseUntilLocal,
      settled: outcome => {
        if (outcome === 'stale') this.#emitSafely('stale', job);
        if (outcome !== 'applied') return;
        // Whole ms, like every instant sandglass gives (the clock offset is an average, so fractional).
        const retryAt = dead ? undefined : Math.ceil(this.#loop.serverNow()) + retryDelayMs;
        const heard = this.listenerCount('failed') > 0 || (dead && this.listenerCount('dead') > 0);
        this.#emitSafely('failed', job, error, retryAt);
        if (dead) this.#emitSafely('dead', job, error);
        // Nobody listens: the logger says it (rate-limited), so that failures are never silent by default.
        if (!heard)
          this.#unheardFailures.report({
            queue: job.queue,
            id: job.id,
            attempt: job.attempt,
            maxAttempts: job.maxAttempts,
            error,
            retryAt,
          });
      },
    });
  }

  /** The renewer found a lease gone: a running handler is told; a prefetched job will not start. */
  #leaseLost(held: HeldJob<T>): void {
    held.lost = true;
    held.job.abort(new LeaseLostError(`Lost the lease of job ${held.stored.id}: it ran out and the job was taken back`));
  }

  // --- closing ----------------------------------------------------------------------------

  async #close(): Promise<void> {
    this.#closing = true;
    const stopped = this.#loop.stop();
    // Prefetched jobs go back at once, while running handlers finish: another worker starts them now.
    const handedBack = this.#handBack(this.#takeWaiting(), 'was prefetched and never started: the worker closed');
    if (this.#runningJobs > 0) {
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, this.#closeTimeoutMs);
        this.#idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await Promise.all([stopped, handedBack]);
    await this.#handBack([...this.#renewer.entries()], 'was still running when close() stopped waiting');
    this.#renewer.stop();
    await this.#settler.drain(this.#closeTimeoutMs);
    await this.#connection.release();
  }

  #takeWaiting(): HeldJob<T>[] {
    return this.#waiting.splice(0).flat();
  }

  /** Hands jobs back (one release per partition) so they are delivered again at once, not after the lease. */
  async #handBack(held: HeldJob<T>[], why: string): Promise<void> {
    if (held.length === 0) return;
    for (const entry of held) {
      entry.released = true;
      this.#finished(entry);
      entry.job.abort(new LeaseLostError(`Job ${entry.stored.id} ${why}; it was handed back`));
    }
    await Promise.all([...byStore(held)].map(([store, leases]) => store.release(leases).catch(error => this.#reportError(error))));
  }

  #reportError(error: unknown): void {
    const wrapped = error instanceof Error ? error : new Error(String(error));
    if (this.listenerCount('error') > 0) this.emit('error', wrapped);
    else this.#logger.error(`sandglass worker: ${wrapped.message}`);
  }

  /** Emits only when someone listens: most workers do not listen to 'completed', and each emit costs. */
  #emitSafely<E extends 'completed' | 'failed' | 'dead' | 'stale'>(event: E, ...args: WorkerEvents<T>[E]): void {
    if (this.listenerCount(event) === 0) return;
    try {
      (this.emit as (event: E, ...args: WorkerEvents<T>[E]) => boolean)(event, ...args);
    } catch (error) {
      this.#reportError(error);
    }
  }
}

/** What a pump queued for after the current microtasks hangs on (see #afterRun). */
const SETTLED = Promise.resolve();

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}

/** What is kept of a failure in the dead letters: the stack when there is one, bounded. */
function describeError(error: unknown): string {
  const text = describeThrown(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}...` : text;
}
