/**
 * The claim loop's state of each partition it claims from, and the bookkeeping of the claims whose
 * reply never came: the partition's next claims resend them, so that the jobs they may have taken
 * come back before their lease runs out.
 */
import type { QueueLimiter } from '../flow/limiter.js';
import type { Grant } from '../store/limiter-storage.js';
import type { PartitionStorage } from '../store/partition-storage.js';

/** One partition this loop claims from, and the state of its claims. */
export interface ClaimSource {
  readonly queue: string;
  readonly store: PartitionStorage;
  /** The queue's partition count (a schedule's tick ids are placed by it). */
  readonly count: number;
  /** When to claim from this partition next, server ms. */
  nextAt: number;
  /** The earliest wake-up heard since the last claim was sent: its reply cannot know of it. */
  heardAt: number;
  /** Claims of this partition in flight. */
  inFlight: number;
  /** Claims of this partition in flight for longer than CLAIM_PATIENCE_MS (its node slow or away). */
  waitedOut: number;
  /** Whether the last claim came back with all it asked for (more is likely due). */
  lastFull: boolean;
  /** Whether the last claim found nothing due (a limited queue then looks before it takes tokens). */
  lastEmpty: boolean;
  /** The last claim whose reply arrived: its resend memo can go. */
  answeredClaimId: string | undefined;
  /**
   * The claims whose reply never came (timed out, connection lost), oldest first, each with when
   * it was first sent and the limiter's tokens it held: the next claims of the partition resend
   * them one by one, so that jobs they may have taken come back now, not after their lease (which
   * began after that first send). Two may be lost at once (a partition whose claims came back full
   * has two in flight).
   */
  readonly unanswered: UnansweredClaim[];
  errorDelayMs: number;
  /** Whether idle claims should ask about the partition's schedules: until a claim says it has none. */
  askSchedules: boolean;
  /** The queue's limits, shared by its partitions (a claim of a limited queue goes through it). */
  readonly limiter: QueueLimiter;
  /** The limiter refused this partition's last claim: a freed slot (its wake-up) makes it due again. */
  limitBlocked: boolean;
  /**
   * The queue's retention of completed jobs as the last claim that read it said: its maxResultBytes
   * while it keeps them (acks carry results), 0 while it keeps none (acks as ever).
   */
  maxResultBytes: number;
}

/** A claim whose reply never came (see ClaimSource.unanswered). */
export interface UnansweredClaim {
  readonly claimId: string;
  /** Local ms: its jobs' leases began after it. */
  readonly firstSentAt: number;
  /** The limiter's tokens it held (a resend reuses them), if its acquire had answered. */
  readonly grant: Grant | undefined;
  readonly wanted: number;
}

/** A fresh partition's state: due at once, nothing in flight, asking about schedules until a claim says it has none. */
export function newSource(queue: string, store: PartitionStorage, count: number, limiter: QueueLimiter): ClaimSource {
  return {
    queue,
    store,
    count,
    nextAt: 0,
    heardAt: Number.POSITIVE_INFINITY,
    inFlight: 0,
    waitedOut: 0,
    lastFull: false,
    answeredClaimId: undefined,
    unanswered: [],
    errorDelayMs: 0,
    askSchedules: true,
    limiter,
    limitBlocked: false,
    lastEmpty: false,
    maxResultBytes: 0,
  };
}

/**
 * The unanswered claim the source's next claim resends, taken off the list; the oldest first.
 * `sentAt`: local ms, when the next claim is sent.
 */
export function takeResend(source: ClaimSource, sentAt: number, leaseMs: number): UnansweredClaim | undefined {
  // One sent a lease ago or more took nothing that is still held (nor holds tokens still): let it go.
  while (source.unanswered.length > 0 && sentAt - (source.unanswered[0] as UnansweredClaim).firstSentAt >= leaseMs)
    source.unanswered.shift();
  return source.unanswered.shift();
}
