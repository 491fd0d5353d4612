import { newClaimId } from '../core/ids.js';
import type { Grant, LimiterStorage } from '../store/limiter-storage.js';
import type { ClaimResult, PartitionStorage } from '../store/partition-storage.js';
import type { StoredJob } from '../store/stored.js';

/** A claim of one partition, given how many jobs it may take and whether the limiter granted them. */
export type ClaimCall = (limit: number, granted: boolean) => Promise<ClaimResult>;

/** A claim through the limiter: the claim's result, and whether the limit held jobs back. */
export interface LimitedClaimResult extends ClaimResult {
  /**
   * The last time (server ms) the limiter granted less than a claim asked for: a job that fell due
   * before it waited on the limit, so its lateness is the limit's, not sandglass's. -1: never.
   */
  readonly limitedAt: number;
  /** Set when the limiter granted fewer tokens than asked: when one may be free again (server ms). */
  readonly blockedUntil?: number;
  /** Set when the limiter granted nothing: no claim was sent (a freed slot's wake-up may let it try again). */
  readonly refused?: true;
}

/**
 * A claim whose reply may never come, as the caller keeps it (ClaimLoop's `unanswered`): the
 * limiter fills in its grant as soon as the acquire answers, so that a resend of the claim reuses
 * the tokens the first send took (the slots it reserved until acquire + lease) instead of asking
 * for more, and gets back the jobs the first run took whatever the limit says now.
 */
export interface PendingClaim {
  /** A resend of a claim whose reply was lost (the same claim id). */
  readonly resend: boolean;
  /**
   * The claim's id, also its grant's id at the limiter: an acquire sent again after a lost reply
   * gets back the tokens the first send took (lua/limiter.lua), instead of finding them taken.
   */
  readonly claimId: string;
  /** The tokens the claim holds, once the acquire answered. */
  grant: Grant | undefined;
  /** What the acquire asked for. */
  wanted: number;
}

/** When a refused claim looks again if the limiter cannot say (a concurrency slot frees by a wake-up). */
const BLOCKED_RECHECK_MS = 1_000;

/** Settle sends are retried at first after this, then twice as long each time, up to SETTLE_RETRY_MAX_MS. */
const SETTLE_RETRY_MS = 50;
const SETTLE_RETRY_MAX_MS = 500;

/**
 * One consumer's view of a queue's `rate` and `concurrency` limits (queue.setLimits), which live in
 * Redis (lua/limiter.lua) and hold over every process and partition. A consumer (Worker, PullConsumer)
 * claims through `claim`: while the queue has no limits that is the partition's claim alone; once a
 * claim answers that the queue is limited, claims first take tokens from the limiter, claim at most
 * that many jobs and give back the unused ones. Jobs claimed under a `concurrency` limit hold a
 * slot until they settle (`release`) or their lease runs out; renewals move it along (`renew`).
 */
export class QueueLimiter {
  readonly #store: LimiterStorage;
  /** Whether the queue's claims go through the limiter: learned from every claim's answer. */
  active = false;
  /** Whether claimed jobs hold concurrency slots (freed when they settle). */
  slots = false;
  /** A claim through the limiter is in flight: one at a time, so grants never exceed free handlers. */
  busy = false;
  /** The last time the limiter fell short of a claim (server ms), -1 never. */
  limitedAt = -1;
  /**
   * Until when (server ms) the limiter has no token for this consumer: no partition of the queue
   * claims before, but after a freed slot's wake-up (`unblock`).
   */
  blockedUntil = 0;
  /** Freed-slot wake-ups heard so far: one heard while a refused acquire travelled makes the refusal stale. */
  #freedHeard = 0;
  readonly #reportError: (error: unknown) => void;
  #toFree: string[] = [];
  #freeScheduled = false;

  /** `store`: the queue's limiter storage (QueueStorage.limiter). */
  constructor(store: LimiterStorage, reportError: (error: unknown) => void) {
    this.#store = store;
    this.#reportError = reportError;
  }

  /**
   * Claims up to `want` jobs of partition `store`: through the limiter while the queue is limited.
   * A claim without tokens to a queue that became limited claims nothing and says so (claim.lua);
   * it is sent again at once, through the limiter. `probe`: the partition had nothing due at its
   * last claim, so a limited claim first looks (a claim of 0 jobs, one call) before it takes tokens:
   * an idle worker of a limited queue makes one call per safety interval, as an unlimited one does.
   * `pending`: what the caller keeps should the reply be lost; a resend of a claim that held tokens
   * reuses them, one that held none is sent direct first (the memo of its first run answers, if it ran).
   */
  async claim(
    store: PartitionStorage,
    want: number,
    leaseMs: number,
    call: ClaimCall,
    probe = false,
    pending?: PendingClaim,
  ): Promise<LimitedClaimResult> {
    const granted = pending?.grant;
    if (granted) {
      this.busy = true;
      try {
        return await this.#claimGranted(store, granted, pending.wanted, leaseMs, call);
      } finally {
        this.busy = false;
      }
    }
    const resend = pending?.resend === true;
    if (this.active && probe && !resend) {
      const look = await call(0, false);
      if (look.limited === false) this.active = false;
      if (look.nextAt === -1 || look.nextAt > look.now) return { ...look, limitedAt: this.limitedAt };
    }
    if (!this.active || resend) {
      const result = await call(want, false);
      if (result.limited !== true) return { ...result, limitedAt: this.limitedAt };
      // The queue is limited (now): this claim took nothing; claim again, through the limiter.
      this.active = true;
      if (result.jobs.length > 0) return { ...result, limitedAt: this.limitedAt };
    }
    this.busy = true;
    try {
      return await this.#claimWithTokens(store, want, leaseMs, call, pending);
    } finally {
      this.busy = false;
    }
  }

  /** A slot freed (the limiter's wake-up): claims it refused may try again now. */
  slotFreed(): void {
    this.#freedHeard += 1;
    this.blockedUntil = 0;
  }

  async #claimWithTokens(
    store: PartitionStorage,
    want: number,
    leaseMs: number,
    call: ClaimCall,
    pending: PendingClaim | undefined,
  ): Promise<LimitedClaimResult> {
    const heard = this.#freedHeard;
    const grant = await this.#store.acquire(want, leaseMs, pending?.claimId ?? newClaimId());
    this.slots = grant.concurrency;
    this.limitedAt = grant.limitedAt;
    if (!grant.rate && !grant.concurrency) {
      // The limits were cleared: this claim's partition says so too, and the next one goes direct.
      this.active = false;
      const result = await call(want, true);
      return { ...result, limitedAt: this.limitedAt };
    }
    if (grant.count === 0) {
      // A slot freed while the refusal travelled: its message came before the refusal could wait for it.
      const blockedUntil = this.#freedHeard !== heard ? grant.now : grant.retryAt === -1 ? grant.now + BLOCKED_RECHECK_MS : grant.retryAt;
      this.blockedUntil = blockedUntil;
      return {
        now: grant.now,
        nextAt: blockedUntil,
        jobs: [],
        tend: [],
        scheduled: undefined,
        limited: true,
        maxResultBytes: undefined,
        limitedAt: this.limitedAt,
        blockedUntil,
        refused: true,
      };
    }
    if (pending) {
      pending.grant = grant;
      pending.wanted = want;
    }
    return this.#claimGranted(store, grant, want, leaseMs, call);
  }

  /**
   * The claim under `grant` (fresh, or kept from a claim whose reply was lost), then its settle.
   * A failed claim keeps the tokens: the caller resends it with them.
   */
  async #claimGranted(store: PartitionStorage, grant: Grant, want: number, leaseMs: number, call: ClaimCall): Promise<LimitedClaimResult> {
    const result = await call(grant.count, true);
    if (result.limited === false) this.active = false;
    let jobs = result.jobs;
    const used = jobs.length;
    if (used < grant.count || grant.concurrency || grant.count < want) {
      const members = grant.concurrency ? jobs.map(job => slotOf(store, job.token)) : [];
      // Before the jobs start: a job that settles at once frees the slot this names, and a job
      // runs only under a slot of its own, renewed with its lease.
      const missing = await this.#settle(grant, used, want, members, result.now + leaseMs);
      if (missing.length > 0) {
        const without = new Set(missing);
        const handBack = jobs.filter((_, index) => without.has(index));
        jobs = jobs.filter((_, index) => !without.has(index));
        // Due again at once, the attempt not counted; should this fail too, they wait for their lease.
        await store.release(handBack).catch(this.#reportError);
      }
    }
    const blocked = grant.count < want && grant.retryAt !== -1 ? { blockedUntil: grant.retryAt } : {};
    this.blockedUntil = blocked.blockedUntil ?? 0;
    return { ...result, jobs, limitedAt: this.limitedAt, ...blocked };
  }

  /**
   * Settles a grant; returns the positions in `members` that hold no slot. Under a concurrency
   * limit a failed send is retried (settle is safe to resend) until half a lease has passed: until
   * then no job starts, since one that ran under the grant's reserved slots would outlive them
   * (they end at acquire + lease and renewals do not move them), and other workers would then get
   * its slot. Given up, every job is reported without a slot (handed back). Without a concurrency
   * limit a failed settle only leaves the rate's unused tokens taken until they leave the window.
   */
  async #settle(grant: Grant, used: number, wanted: number, members: string[], deadline: number): Promise<number[]> {
    const giveUpAt = Date.now() + (deadline - grant.now) / 2;
    for (let delayMs = SETTLE_RETRY_MS; ; delayMs = Math.min(SETTLE_RETRY_MAX_MS, delayMs * 2)) {
      try {
        return await this.#store.settle(grant, used, wanted, members, deadline);
      } catch (error) {
        this.#reportError(error);
        if (!grant.concurrency) return [];
        if (Date.now() + delayMs >= giveUpAt) return members.map((_, index) => index);
      }
      await new Promise(resolve => setTimeout(resolve, delayMs));
    }
  }

  /**
   * Hands back jobs claimed from `store` that will not run here (the worker closing, no room left),
   * their concurrency slots with them: in the same call on partition 0, where the limiter lives,
   * else freed after the release.
   */
  async handBack(store: PartitionStorage, jobs: readonly StoredJob[]): Promise<void> {
    if (jobs.length === 0) return;
    if (this.slots && store.partition === 0) {
      await store.release(jobs, true);
      return;
    }
    try {
      await store.release(jobs);
    } finally {
      // Freed also when the release failed: these jobs do not run here either way.
      for (const job of jobs) this.release(store, job.token);
    }
  }

  /** The job (claimed from `store` under `token`) settled or was handed back: its slot frees. Batched per event-loop turn. */
  release(store: PartitionStorage, token: string): void {
    if (!this.slots) return;
    this.#toFree.push(slotOf(store, token));
    if (this.#freeScheduled) return;
    this.#freeScheduled = true;
    setImmediate(() => {
      this.#freeScheduled = false;
      const members = this.#toFree;
      this.#toFree = [];
      this.#store.free(members).catch(this.#reportError);
    });
  }

  /** Leases of these jobs were renewed for `leaseMs`: so are their slots. */
  renew(store: PartitionStorage, tokens: readonly string[], leaseMs: number): void {
    if (!this.slots || tokens.length === 0) return;
    this.#store
      .renew(
        leaseMs,
        tokens.map(token => slotOf(store, token)),
      )
      .catch(this.#reportError);
  }
}

/** A claimed job's concurrency slot: its partition and its token (unique in the partition). */
function slotOf(store: PartitionStorage, token: string): string {
  return `${store.partition}:${token}`;
}
