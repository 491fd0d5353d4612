/**
 * The storage of one queue's limiter (`queue.setLimits`: a `rate` and a `concurrency` limit that
 * hold over every process and partition), as the roles see it: what a second backend would
 * implement, its contract checked by test/conformance/limiter-storage.ts. `LimiterStore`
 * (store/redis/limiter-store.ts, lua/limiter.lua in partition 0's slot) is the implementation.
 *
 * A claim through the limiter asks for tokens (`acquire`), claims at most that many jobs, then
 * `settle`s: unused tokens go back, and under a concurrency limit each claimed job holds a slot,
 * named by a member the caller makes unique per job of the queue, until it is freed or its deadline
 * passes.
 */
import type { QueueLimits } from '../core/types.js';

/** Tokens `acquire` granted, and what the limiter said about the queue. */
export interface Grant {
  /** Server time of the call, ms. */
  readonly now: number;
  readonly id: string;
  /** Tokens granted: the claim may take this many jobs. */
  readonly count: number;
  /** When a token may be free again if fewer than asked were granted (server ms); -1 otherwise. */
  readonly retryAt: number;
  /** Whether the queue has a `rate` limit. */
  readonly rate: boolean;
  /** Whether the queue has a `concurrency` limit (claimed jobs hold slots until they settle). */
  readonly concurrency: boolean;
  /** The last time the limit held work back (server ms), -1 if never. */
  readonly limitedAt: number;
}

export interface LimiterStorage {
  /**
   * Asks for `want` tokens: at most `want`, fewer when the rate's window or the free slots allow
   * fewer (a grant's slots last `leaseMs` unless settled). A queue without limits grants `want`
   * and says so (`rate` and `concurrency` false). Sent again under the same `id` (its reply was
   * lost), it answers with the tokens the first send took instead of taking more.
   */
  acquire(want: number, leaseMs: number, id: string): Promise<Grant>;
  /**
   * After the claim: gives back the tokens it did not use (`used` of `grant.count` were), and
   * `members` (one per claimed job, under a concurrency limit) hold the slots until `deadline`
   * (server ms). `wanted`: what the acquire asked for (all tokens used of fewer than wanted: the
   * limit held work back, `limitedAt`). Safe to resend. Returns the positions in `members` that
   * hold no slot (the grant's ran out first).
   */
  settle(grant: Grant, used: number, wanted: number, members: readonly string[], deadline: number): Promise<number[]>;
  /** Frees the slots of jobs that settled; a member that holds none is ignored. */
  free(members: readonly string[]): Promise<void>;
  /** Moves the slots of jobs whose leases were renewed to now + `leaseMs` (server clock). */
  renew(leaseMs: number, members: readonly string[]): Promise<void>;
  /** The limits as stored (`{}` when there are none). */
  read(): Promise<QueueLimits>;
  /**
   * Stores `limits` (the whole set: a limit left out is cleared) for every partition of the queue:
   * from the next claim on, claims of a limited queue go through the limiter, and jobs added
   * without a deadline get `expireAfter`. Writing the same limits again completes a write that
   * stopped half way.
   */
  write(limits: QueueLimits): Promise<void>;
}
