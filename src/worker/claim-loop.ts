import { ConflictError, IncompatibleStorageError } from '../core/errors.js';
import { newClaimId } from '../core/ids.js';
import { canClaim, newGroup, splitRound, type QueueGroup, type QueuePriority } from './priority.js';
import { QueueLimiter, type PendingClaim } from '../flow/limiter.js';
import type { StorageConnection } from '../store/queue-storage.js';
import type { Unlisten } from '../store/wake-channel.js';
import { tendInBackground } from '../schedules/schedules.js';
import type { StoredJob } from '../store/stored.js';
import { ClaimCapacity, MAX_RESERVING_CLAIMS, type ClaimRoom } from './claim-capacity.js';
import { newSource, takeResend, type ClaimSource } from './claim-source.js';
import { ClaimTimer, heardWake, limitHolds, nextClaimAt, slotFreed } from './claim-timing.js';

/** What the loop claims for: the owner of the capacity and of the jobs. */
export interface ClaimHost extends ClaimRoom {
  /**
   * Jobs the free handler slots can start now, beyond the claimed ones waiting. A queue with limits
   * claims no more than that: a token is a start, so a limited queue has no prefetch.
   */
  idle(): number;
  /**
   * Claimed jobs, never more than `room()` allowed; their leases began after `leaseFrom` (local ms).
   * `limitedAt`: the last time the queue's limit held claims back (server ms, -1 never): a job due
   * before it waited on the limit.
   */
  deliver(source: ClaimSource, jobs: StoredJob[], leaseFrom: number, limitedAt: number): void;
  reportError(error: unknown): void;
}

export interface ClaimLoopOptions {
  /** Jobs the host holds at most (running and prefetched): claims never take beyond it. */
  readonly capacity: number;
  /** Jobs per handler call (1 outside batch mode): a claim never asks for fewer. */
  readonly batchSize: number;
  readonly leaseMs: number;
  readonly maxAttempts: number;
  readonly safetyIntervalMs: number;
  readonly clock: () => number;
  /** How claims are shared between the queues (see QueuePriority); without it (one queue), its partitions take turns. */
  readonly priority?: QueuePriority | undefined;
}

/**
 * How long a claim holds capacity while it has not answered. A claim stuck on a slow or dead node
 * (until the call timeout, or until a Cluster failover ends) then stops holding back the other
 * partitions; if its jobs arrive after all, those there is no room for are handed back at once.
 */
const CLAIM_PATIENCE_MS = 500;
const REAP_LIMIT = 100;
/** Workers create the queues they serve (their partition count is stored then). */
const CREATE = { create: true } as const;

/**
 * The claiming half of a Worker: learns the queues' partitions, listens for their wake-ups, sends
 * claims while the host has room and a partition is due, and otherwise sleeps until the next due
 * time (server clock). It knows nothing of handlers: the host says how much room it has and takes
 * what the claims bring.
 */
export class ClaimLoop {
  readonly sources: ClaimSource[] = [];
  readonly #connection: StorageConnection;
  readonly #host: ClaimHost;
  readonly #options: ClaimLoopOptions;
  readonly #capacity: ClaimCapacity;
  readonly #unlisteners: Promise<Unlisten>[] = [];
  /** Each queue's partitions and share, in the order of the worker's queue list (under priorities only). */
  readonly #groups: QueueGroup[] = [];
  /** All partitions, taking turns: the loop without priorities. */
  #all: QueueGroup = newGroup(0, 0, 1);
  #offsetMs = 0;
  readonly #timer: ClaimTimer;
  #stopped = false;
  /** Claims in flight (stop() waits for them). */
  readonly #claims = new Set<Promise<void>>();

  constructor(connection: StorageConnection, host: ClaimHost, options: ClaimLoopOptions) {
    this.#connection = connection;
    this.#host = host;
    this.#options = options;
    this.#capacity = new ClaimCapacity(host, options.capacity, options.batchSize, options.priority);
    this.#timer = new ClaimTimer(options.clock, () => this.pump());
  }

  /**
   * Learns each queue's partitions (retrying while Redis is unreachable), subscribes to their wake
   * channels, then looks at all of them: a job added before the subscription woke nobody.
   */
  async start(names: readonly string[], prefix: string, partitions: number | undefined): Promise<void> {
    const { priority } = this.#options;
    // The subscriptions to make once every queue's partitions are known: partitions', then limiters'.
    const partitionWakes: (() => Promise<Unlisten>)[] = [];
    const limiterWakes: (() => Promise<Unlisten>)[] = [];
    for (const [index, queue] of names.entries()) {
      const start = this.sources.length;
      const storage = this.#connection.queue(prefix, queue, partitions);
      for (let delayMs = 100; ; delayMs = Math.min(5_000, delayMs * 2)) {
        if (this.#stopped) return;
        try {
          const stores = await storage.partitions(CREATE);
          const limiter = new QueueLimiter(await storage.limiter(CREATE), error => this.#host.reportError(error));
          limiterWakes.push(() => storage.listenLimiter(() => this.#onSlotFreed(limiter)));
          for (const store of stores) {
            const source = newSource(queue, store, stores.length, limiter);
            this.sources.push(source);
            partitionWakes.push(() => storage.listenPartition(store.partition, dueAt => this.#onWake(source, dueAt)));
          }
          break;
        } catch (error) {
          this.#host.reportError(error);
          // A partition count mismatch, a queue in a newer storage format: neither will heal.
          if (error instanceof ConflictError || error instanceof IncompatibleStorageError) throw error;
          await new Promise(resolve => setTimeout(resolve, delayMs));
        }
      }
      if (priority) this.#groups.push(newGroup(start, this.sources.length, 'weights' in priority ? (priority.weights[index] ?? 1) : 1));
    }
    // stop() may have run while the partitions were read: subscribing now would open a pub/sub
    // connection after the worker let its connection go, and keep the process alive.
    if (this.#stopped) return;
    this.#all = newGroup(0, this.sources.length, 1);
    for (const listen of [...partitionWakes, ...limiterWakes]) this.#unlisteners.push(listen());
    this.pump();
    await Promise.all(this.#unlisteners);
    for (const source of this.sources) this.#onWake(source, Number.NaN);
  }

  /**
   * Stops claiming and unsubscribes, then waits for the claims in flight: they hand back what they
   * bring, before the caller lets the connection go (else those jobs would wait out their lease).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer.clear();
    const unlisteners = await Promise.allSettled(this.#unlisteners);
    await Promise.all(unlisteners.map(result => (result.status === 'fulfilled' ? result.value() : undefined)));
    await Promise.allSettled(this.#claims);
  }

  /** Sends a claim (#claim), remembered until it settled so that stop() can wait for it. */
  #send(source: ClaimSource, limit: number, group?: QueueGroup): void {
    const claim = this.#claim(source, limit, group);
    this.#claims.add(claim);
    void claim.finally(() => this.#claims.delete(claim));
  }

  /** Now on the Redis server's clock, as last seen from here. */
  serverNow(): number {
    return this.#options.clock() + this.#offsetMs;
  }

  /** A slot of a full concurrency limit freed (or tokens came back): the partitions it refused try again. */
  #onSlotFreed(limiter: QueueLimiter): void {
    slotFreed(this.sources, limiter);
    this.pump();
  }

  #onWake(source: ClaimSource, dueAt: number): void {
    heardWake(source, dueAt);
    this.pump();
  }

  /**
   * Sends claims while there is room worth a claim (ClaimCapacity.claimable) and a partition is due, then sleeps
   * until the next due time. Up to two claims hold capacity at once, each for at most half of it, so that Redis prepares the
   * next batch while this process runs the last one. Each partition has one claim in flight, a second
   * only while its claims come back full (otherwise the second would most likely find nothing): a
   * partition whose node is slow or dead holds back itself, and the others only for CLAIM_PATIENCE_MS.
   * Called whenever room frees up: cheap when there is nothing to do.
   */
  pump(): void {
    if (this.#stopped) return;
    if (this.sources.length === 0) return; // still learning the partitions
    const now = this.serverNow();
    const { priority } = this.#options;
    if (priority === undefined) this.#takeTurns(this.#all, now);
    else if ('weights' in priority) this.#shareByWeight(now);
    else this.#serveInOrder(now);
    this.#armTimer();
  }

  /**
   * Claims from the group's partitions in turn while there is room worth a claim, one claim's worth
   * each. Each round starts at the next partition, so that one busy partition cannot starve the others.
   */
  #takeTurns(group: QueueGroup, now: number): void {
    const { start } = group;
    const count = group.end - start;
    const perClaim = this.#capacity.claimSize;
    let sent = true;
    while (sent && this.#capacity.reservingClaims < MAX_RESERVING_CLAIMS) {
      sent = false;
      group.cursor = (group.cursor + 1) % count;
      for (let k = 0; k < count && this.#capacity.reservingClaims < MAX_RESERVING_CLAIMS; k++) {
        const source = this.sources[start + ((group.cursor + k) % count)] as ClaimSource;
        const free = this.#capacity.freeJobs();
        if (!this.#capacity.claimable(free)) break;
        if (source.nextAt > now || source.inFlight >= (source.lastFull ? 2 : 1) || limitHolds(source, now, this.#host)) continue;
        this.#send(source, Math.min(free, perClaim));
        sent = true;
      }
    }
  }

  /**
   * `strictPriority`: claims only from the first queue (in the worker's order) that has a due
   * partition. A queue counts as due until a claim of it comes back with less than it asked for, so
   * a lower queue is claimed from only once every queue before it had nothing more due; a wake-up
   * of a higher queue takes over at the next claim. While the due queue's claims are in flight,
   * nothing else is claimed: their replies pump again (a claim that hangs past CLAIM_PATIENCE_MS
   * stops holding the later queues back, see #isDue).
   */
  #serveInOrder(now: number): void {
    for (const group of this.#groups) {
      if (!this.#isDue(group, now)) continue;
      this.#takeTurns(group, now);
      return;
    }
  }

  /**
   * `weights`: rounds of one claim's worth (in handler calls), split between the queues that have
   * due work by weight (splitRound), one claim per queue and round. A queue with nothing due is left
   * out, so its share goes to the others. A round is sent whole or not at all: while a queue with a
   * share in it has all its due partitions' claims in flight, the round waits for their replies
   * (one round trip), so that no queue runs ahead of the others in the order jobs start.
   */
  #shareByWeight(now: number): void {
    const unit = this.#options.batchSize;
    const groups = this.#groups;
    while (this.#capacity.reservingClaims < this.#capacity.maxReserving) {
      const free = this.#capacity.freeJobs();
      if (!this.#capacity.claimable(free)) return;
      for (const group of groups) group.due = this.#isDue(group, now);
      if (!splitRound(groups, Math.max(1, Math.floor(Math.min(free, this.#capacity.claimSize) / unit)))) return;
      for (const group of groups) if (group.share > 0 && !this.#hasClaimable(group, now)) return;
      for (const group of groups) {
        if (group.share === 0) continue;
        const source = this.#nextClaimable(group, now) as ClaimSource;
        const limit = Math.min(this.#capacity.freeJobs(), group.share * unit);
        if (limit <= 0) break;
        group.pass += limit / unit / group.weight;
        this.#send(source, limit, group);
      }
    }
  }

  /**
   * Whether any partition of the group is due (a claim of it may be in flight). A partition whose
   * claim has hung past CLAIM_PATIENCE_MS (its node slow or away) does not count: it must not hold
   * the other queues back until the call times out.
   */
  #isDue(group: QueueGroup, now: number): boolean {
    for (let i = group.start; i < group.end; i++) {
      const source = this.sources[i] as ClaimSource;
      if (source.nextAt <= now && source.waitedOut === 0 && !limitHolds(source, now, this.#host)) return true;
    }
    return false;
  }

  #hasClaimable(group: QueueGroup, now: number): boolean {
    for (let i = group.start; i < group.end; i++) if (this.#canClaim(this.sources[i] as ClaimSource, now)) return true;
    return false;
  }

  #canClaim(source: ClaimSource, now: number): boolean {
    return canClaim(source, now) && !limitHolds(source, now, this.#host);
  }

  /** The group's next partition (in turn) that a claim may be sent to now. */
  #nextClaimable(group: QueueGroup, now: number): ClaimSource | undefined {
    const count = group.end - group.start;
    for (let k = 1; k <= count; k++) {
      const source = this.sources[group.start + ((group.cursor + k) % count)] as ClaimSource;
      if (!this.#canClaim(source, now)) continue;
      group.cursor = (group.cursor + k) % count;
      return source;
    }
    return undefined;
  }

  /** `group`: the share this claim was charged to (under weights), refunded for the jobs it does not bring. */
  async #claim(source: ClaimSource, limit: number, group?: QueueGroup): Promise<void> {
    // A resend answers with what the first run took (if it ran) instead of claiming more, whatever
    // the order the two reach Redis in: jobs beyond the room there is now are handed back below.
    const { clock, leaseMs, maxAttempts } = this.#options;
    const sentAt = clock();
    const resent = takeResend(source, sentAt, leaseMs);
    const claimId = resent?.claimId ?? newClaimId();
    // Leases are counted from the first send: the first run may have taken the jobs then.
    const leaseFrom = resent?.firstSentAt ?? sentAt;
    // The limiter records the tokens it takes here, so that a resend reuses them.
    const pending: PendingClaim = { resend: resent !== undefined, claimId, grant: resent?.grant, wanted: resent?.wanted ?? limit };
    // Whether a job fell due since the last claim found nothing: a limited queue then takes tokens at once.
    const woken = source.heardAt !== Number.POSITIVE_INFINITY;
    source.heardAt = Number.POSITIVE_INFINITY;
    source.inFlight += 1;
    // A partition whose last claim failed (its node away, or failing over) sends probes that hold no
    // capacity: they would hold back the healthy partitions each time. A probe that brings jobs there
    // is no room for hands them back.
    const slot = this.#capacity.reserve(limit, source.errorDelayMs === 0);
    let waitedOut = false;
    const patience = setTimeout(() => {
      this.#capacity.unreserve(slot);
      waitedOut = true;
      source.waitedOut += 1;
      this.pump();
    }, CLAIM_PATIENCE_MS);
    let result;
    try {
      // Hand the last answered claim's memo over for deletion, once (if this call fails, it expires).
      const answeredClaimId = source.answeredClaimId;
      source.answeredClaimId = undefined;
      const { store, askSchedules } = source;
      // A limited queue starts no more than its free handlers can (no prefetch: a token is a start).
      const want = source.limiter.active ? Math.max(1, Math.min(limit, this.#host.idle())) : limit;
      result = await source.limiter.claim(
        store,
        want,
        leaseMs,
        (n, granted) => store.claim(n, leaseMs, REAP_LIMIT, maxAttempts, { claimId, answeredClaimId }, askSchedules, granted),
        source.lastEmpty && !woken,
        pending,
      );
    } catch (error) {
      this.#host.reportError(error);
      source.unanswered.push({ claimId, firstSentAt: leaseFrom, grant: pending.grant, wanted: pending.wanted });
      // Short and capped: a claim refused at once (BUSY, LOADING) is retried every 0.25 s at most, so
      // due jobs start within a quarter second once Redis serves again. An unreachable Redis does not
      // spin: such a call only fails after the call timeout or the client's own retries (seconds).
      source.errorDelayMs = Math.min(250, source.errorDelayMs === 0 ? 50 : source.errorDelayMs * 2);
      source.nextAt = Math.min(this.serverNow() + source.errorDelayMs, source.heardAt);
      source.lastFull = false;
      if (group) group.pass -= limit / this.#options.batchSize / group.weight;
    } finally {
      clearTimeout(patience);
      source.inFlight -= 1;
      if (waitedOut) source.waitedOut -= 1;
    }
    this.#capacity.unreserve(slot);
    if (!result) {
      // Only now, with this claim no longer in flight, can the timer be armed for the retry
      // (a partition with a claim in flight is left to that claim's reply).
      this.pump();
      return;
    }
    const receivedAt = clock();
    // Only a claim that took jobs left a memo to delete.
    if (result.jobs.length > 0) source.answeredClaimId = claimId;
    source.errorDelayMs = 0;
    if (result.scheduled !== undefined) source.askSchedules = result.scheduled;
    if (result.maxResultBytes !== undefined) source.maxResultBytes = result.maxResultBytes;
    if (result.tend.length > 0) tendInBackground(source, result.tend, error => this.#host.reportError(error));
    source.lastFull = result.jobs.length === limit;
    // Under weights a claim is a queue's share of a round of ClaimCapacity.claimSize.
    if (source.lastFull && (limit === this.#capacity.claimSize || group)) this.#capacity.grow();
    else if (group) group.pass -= (limit - result.jobs.length) / this.#options.batchSize / group.weight;
    // The server's clock, seen from here: its `now` was read about halfway through the round trip.
    this.#offsetMs = result.now - (sentAt + receivedAt) / 2;
    const later = result.now + this.#options.safetyIntervalMs;
    const reported =
      result.nextAt === -1 ? later : Math.min(later, Math.max(result.nextAt, result.jobs.length > 0 ? result.nextAt : result.now + 1));
    source.nextAt = Math.min(reported, source.heardAt);
    // Refused by the limit: due again when a token is (a freed slot wakes it sooner); a job added
    // meanwhile cannot be claimed before that either.
    source.limitBlocked = result.refused === true;
    source.lastEmpty = result.jobs.length === 0 && result.refused === undefined && (result.nextAt === -1 || result.nextAt > result.now);
    let jobs = result.jobs;
    if (this.#stopped) {
      // Claimed while the worker began closing: hand them straight back, their slots with them.
      await source.limiter.handBack(source.store, jobs).catch(error => this.#host.reportError(error));
      return;
    }
    const room = this.#capacity.freeJobs();
    if (jobs.length > room) {
      // A claim past its patience, a probe or a resend: the capacity went to other partitions
      // meanwhile, or the first run took more. Hand back what there is no room for.
      const fits = Math.max(0, room);
      void source.limiter.handBack(source.store, jobs.slice(fits)).catch(error => this.#host.reportError(error));
      jobs = jobs.slice(0, fits);
    }
    // The lease began on the server after `leaseFrom`: counting from it errs on the early side.
    if (jobs.length > 0) this.#host.deliver(source, jobs, leaseFrom, result.limitedAt);
    this.pump();
  }

  #armTimer(): void {
    if (this.#stopped) return;
    const now = this.serverNow();
    let next = now + this.#options.safetyIntervalMs;
    // Without room worth a claim, the next finished job looks again: a timer for a partition already
    // due would fire every millisecond and find nothing to do until then.
    if (this.#capacity.claimable(this.#capacity.freeJobs()))
      next = nextClaimAt(this.sources, now, next, this.#options.priority !== undefined, this.#host);
    this.#timer.arm(Math.max(0, Math.ceil(next - now)));
  }
}
