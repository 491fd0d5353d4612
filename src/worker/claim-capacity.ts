/**
 * The claim loop's account of capacity: how many jobs a claim asks for, how much of the host's room
 * the claims in flight hold (so that claims never take beyond it), and whether the room left is
 * worth a claim now.
 */
import type { QueuePriority } from './priority.js';
import { MAX_CLAIM } from './worker-options.js';

/** What the account reads of the claim loop's host (see ClaimHost). */
export interface ClaimRoom {
  /** Jobs the host can take now (its capacity minus the jobs it holds). */
  room(): number;
  /** Whether a handler slot is free with no claimed job waiting for it: a claim is needed now. */
  hungry(): boolean;
}

/** A claim in flight and the capacity it holds for the jobs it may bring. */
export interface ClaimSlot {
  readonly limit: number;
  /** Counted in `#reservedJobs`: until it answers or `CLAIM_PATIENCE_MS` have passed (never for a probe). */
  reserving: boolean;
}

/**
 * Claims that hold capacity at once: two, so that Redis prepares the next batch while this process
 * runs the last (each asks for half the capacity; with the prefetch, that is a whole round of handlers).
 */
export const MAX_RESERVING_CLAIMS = 2;
/** The size of a fresh loop's first claims (at least one batch), before they grow (see #claimSize). */
const FIRST_CLAIM = 100;

/** The capacity a ClaimLoop's claims hold and the size they ask for (one per loop). */
export class ClaimCapacity {
  readonly #host: ClaimRoom;
  /** Jobs the host holds at most (ClaimLoopOptions.capacity). */
  readonly #capacity: number;
  readonly #perClaim: number;
  /**
   * Jobs a claim asks for now: starts at about one round of handler calls and doubles with each full
   * claim up to `#perClaim`. A cold process answers a small first claim much sooner (decoding and
   * starting a thousand jobs in unoptimized code takes tens of ms, and Redis runs the second claim
   * before the first jobs' acks), so the first handlers start and finish early.
   */
  #claimSize: number;
  /**
   * Claims that may hold capacity at once. Under weights a round is one claim per queue, so each
   * queue gets two: Redis prepares the next round while this process runs the last.
   */
  readonly maxReserving: number;
  /** Claims in flight that still hold capacity (see ClaimSlot). */
  #reservingClaims = 0;
  /** Jobs that in-flight claims may bring: counted as taken so that claims never exceed capacity. */
  #reservedJobs = 0;

  constructor(host: ClaimRoom, capacity: number, batchSize: number, priority: QueuePriority | undefined) {
    this.#host = host;
    this.#capacity = capacity;
    this.#perClaim = Math.min(MAX_CLAIM, Math.max(batchSize, Math.ceil(capacity / MAX_RESERVING_CLAIMS)));
    this.#claimSize = Math.min(this.#perClaim, Math.max(batchSize, FIRST_CLAIM));
    const weights = priority !== undefined && 'weights' in priority ? priority.weights : undefined;
    this.maxReserving = MAX_RESERVING_CLAIMS * (weights?.length ?? 1);
  }

  /** Jobs a claim asks for now (see #claimSize). */
  get claimSize(): number {
    return this.#claimSize;
  }

  /** Claims in flight that still hold capacity (see ClaimSlot). */
  get reservingClaims(): number {
    return this.#reservingClaims;
  }

  /** A claim came back full: the next ones ask for twice as many, up to `#perClaim`. */
  grow(): void {
    this.#claimSize = Math.min(this.#perClaim, 2 * this.#claimSize);
  }

  /** Jobs the loop may claim now: the host's room, minus what in-flight claims may bring. */
  freeJobs(): number {
    return this.#host.room() - this.#reservedJobs;
  }

  /**
   * Whether `free` room is worth a claim now. A whole claim's worth always is. Less only when no
   * claim is in flight and either the host holds at most one claim's worth (the prefetch is topped
   * up) or a handler slot has nothing to run. Otherwise, while a claim travels or the prefetch still
   * feeds the handlers, claiming each slot as it frees would shred the batches into claims of one
   * job (a round trip each), where waiting for a whole claim's worth costs the handlers nothing.
   */
  claimable(free: number): boolean {
    if (free <= 0) return false;
    const size = this.#claimSize;
    if (free >= size) return true;
    if (this.#reservingClaims > 0) return false;
    return free >= this.#capacity - size || this.#host.hungry();
  }

  /** The slot of a claim sent for `limit` jobs, holding capacity if `reserving`. */
  reserve(limit: number, reserving: boolean): ClaimSlot {
    const slot: ClaimSlot = { limit, reserving };
    if (slot.reserving) {
      this.#reservingClaims += 1;
      this.#reservedJobs += limit;
    }
    return slot;
  }

  /** The claim answered or ran out of patience: its slot holds capacity no longer (once). */
  unreserve(slot: ClaimSlot): void {
    if (!slot.reserving) return;
    slot.reserving = false;
    this.#reservingClaims -= 1;
    this.#reservedJobs -= slot.limit;
  }
}
