/**
 * The storage of one queue partition as the rest of the library sees it: what a second backend
 * implements. Every result is a domain value (a due time, a lease end, an outcome by name);
 * how a backend keeps them (sorted-set scores, status codes, a far-future tier) stays behind it.
 * `PartitionStore` (Redis + Lua) is the implementation. Each promise of the doc comments below is
 * a case of the conformance suite test/conformance/partition-storage.ts: the checklist a second
 * backend passes (test/scripts/storage-conformance.test.ts runs it against Redis).
 */
import type { StoredDefinition, StoredJob, StoredSchedule } from './stored.js';
import type { CancelResult, GroupInfo, GroupLimits, GroupTotals, IfExists, JobState, RescheduleResult } from '../core/types.js';
import type { Due } from '../core/validate.js';

/** A job ready to be written by `add`, validated and encoded by the Queue. */
export interface EncodedJob {
  readonly id: string;
  readonly due: Due;
  /** '' for the worker's default. */
  readonly maxAttempts: string;
  /** '' for the worker's default, else `backoff.ts` encoding. */
  readonly backoff: string;
  readonly payloadJson: string;
  /** The job's own deadline (`expireAfter`, ms after its due time); undefined for the queue's default, if any. */
  readonly expireAfterMs?: number | undefined;
  /** `onExpire: 'drop'`: an expired job is deleted rather than dead-lettered (also under the queue's default deadline). */
  readonly dropOnExpire?: boolean;
  /**
   * The W3C traceparent stored with the job (the last field of its record's header, lua/includes/records.lua);
   * undefined for none. Set by the Queue once its `send` span has started, after validation.
   */
  traceparent?: string | undefined;
  /** The job's group (lua/includes/groups.lua); undefined for the default group. */
  readonly group?: string | undefined;
}

/**
 * Outcome of adding one job: written new, kept (one existed, `ifExists: 'keep'`), replaced, refused
 * because a worker holds it (not replaced), or refused because a job of that id completed moments
 * ago (within 60 to 90 s: a resent add after a lost reply must not run it twice, see add.lua), or
 * refused because the job is a schedule's pending tick (a replace would stop the schedule).
 */
export type AddStatus = 'added' | 'kept' | 'replaced' | 'running' | 'completed-recently' | 'tick';

export interface AddOutcome {
  /** Server time of the call, ms. */
  readonly now: number;
  /** One per job, in the order given. */
  readonly statuses: AddStatus[];
  /** Replicas that confirmed the write, when replication was asked for. */
  readonly acknowledged?: number;
}

/** A claim's (id, fencing token) pair: the proof of holding a lease. */
export interface LeaseRef {
  readonly id: string;
  readonly token: string;
}

export interface FailEntry extends LeaseRef {
  /** Delay before the next attempt, or -1 to dead-letter the job. */
  readonly retryDelayMs: number;
  readonly message: string;
}

/** A fail that an earlier send applied (its reply was lost): what that send did. */
export type ResentFail =
  | { readonly index: number; readonly result: 'dead' }
  /** `retryAt`: the retry's due time (server ms) while the job still waits for it. */
  | { readonly index: number; readonly result: 'retried'; readonly retryAt: number | undefined };

/** What a fail call did: the server's now, the positions refused as stale, and the resends. */
export interface FailResult {
  readonly now: number;
  readonly stale: number[];
  readonly resent: ResentFail[];
}

export interface ClaimResult {
  /** Server time of the call, ms. */
  readonly now: number;
  /** When to claim again (server ms): now when more is due, -1 when nothing is waiting. */
  readonly nextAt: number;
  readonly jobs: StoredJob[];
  /** Keys of schedules whose next tick the caller should create or whose tick list it should refill (lua/includes/schedules.lua, "Schedules"). */
  readonly tend: string[];
  /** Whether the partition has schedules; undefined when the call did not read it (an idle one not asked). */
  readonly scheduled: boolean | undefined;
  /**
   * Whether the queue has rate or concurrency limits; undefined when the call did not read it (an
   * idle one). A call without the limiter's tokens to a limited queue claims nothing (lua/claim.lua).
   */
  readonly limited: boolean | undefined;
  /**
   * The queue's retention of completed jobs, as the call read it: its `maxResultBytes` while it
   * keeps them (acks should carry results), 0 when it keeps none, undefined when the call did not
   * read it (an idle one, or the answer to a resend).
   */
  readonly maxResultBytes: number | undefined;
}

/** One job and its state at the moment it was read. */
export interface JobSnapshot {
  readonly state: JobState;
  readonly job: StoredJob;
  /** When the job falls (or fell) due, ms. */
  readonly dueAt: number;
  /** The deadline by which it must start, ms: only for a waiting job with one (`expireAfter`). */
  readonly expiresAt?: number;
  /** Why it is dead: only for `dead`. */
  readonly reason?: 'failed' | 'expired';
  /** End of the current lease, ms: only for `active`. */
  readonly leaseUntil?: number;
  /** When it was dead-lettered, ms: only for `dead`. */
  readonly deadAt?: number;
  /** When it completed, ms: only for `completed`. */
  readonly finishedAt?: number;
  /** The result's JSON, only for `completed` ('' when none was kept). */
  readonly resultJson?: string;
  readonly lastError: string | undefined;
}

/**
 * A position in a state's list order: the time the state is ordered by (due time for delayed and
 * ready, lease end for active, dead-lettered at for dead, finished at for completed) and the id,
 * for ties.
 */
export interface ListPosition {
  readonly at: number;
  readonly id: string;
}

export interface ListResult {
  readonly now: number;
  /** How many jobs the page held, records lost or not (tells whether there may be more). */
  readonly count: number;
  /** The page in the state's order (records lost between reading the order and the record are left out). */
  readonly entries: JobSnapshot[];
}

export interface PartitionStats {
  readonly now: number;
  /** Waiting, not yet due. */
  readonly delayed: number;
  /** Waiting, due at or before now. */
  readonly ready: number;
  readonly active: number;
  readonly dead: number;
  readonly paused: boolean;
  /** When the queue's limiter last granted less than a claim asked for (partition 0 only), ms; -1: never. */
  readonly limitedAt: number;
  /** Completed jobs kept (and not older than the retention's age). */
  readonly completed: number;
  /** Running totals (added, claimed, completed, ...) by name. */
  readonly counters: Record<string, number>;
}

export interface DueHistogram {
  readonly now: number;
  /** Due at or before now. */
  readonly ready: number;
  /** One count per window ending at each bound (ms from now), then the count after the last bound. */
  readonly counts: number[];
}

/** A change of one schedule, applied atomically with the tick jobs it creates or removes (scheduleWrite.lua). */
export type ScheduleWrite =
  | (StoredDefinition & {
      readonly op: 'put';
      readonly key: string;
      /** The generation read, null when the schedule did not exist. */
      readonly gen: number | null;
      readonly overlapSkip: boolean;
      /** The first tick's entry; null when the schedule has no tick at all. */
      readonly first: string | null;
      readonly ticks: readonly string[];
      readonly complete: boolean;
    })
  | {
      readonly op: 'advance';
      readonly key: string;
      readonly gen: number;
      readonly head: string;
      /** Entries to create now, oldest first (missed ticks caught up, or the next one). */
      readonly create: readonly string[];
      readonly ticks: readonly string[];
      readonly complete: boolean;
      /** No tick follows: the schedule ended. */
      readonly ended: boolean;
    }
  | {
      readonly op: 'resume';
      readonly key: string;
      readonly gen: number;
      readonly first: string | null;
      readonly ticks: readonly string[];
      readonly complete: boolean;
    }
  | { readonly op: 'pause' | 'remove'; readonly key: string };

export interface ScheduleWriteResult {
  readonly status: 'written' | 'same' | 'conflict' | 'not_found' | 'removed';
  /** Server time of the call, ms. */
  readonly now: number;
  /** The schedule after the call (before it, for 'removed'); null when there is none. */
  readonly schedule: StoredSchedule | null;
}

export interface PartitionStorage {
  /** Which partition of its queue this is, 0-based (partition 0 also holds the queue's limiter). */
  readonly partition: number;
  /** Adds jobs; with `replication`, waits for that many replicas to confirm the write. */
  add(jobs: readonly EncodedJob[], ifExists: IfExists, replication?: { replicas: number; timeoutMs: number }): Promise<AddOutcome>;
  /**
   * Reaps expired leases, then claims up to `limit` due jobs. Safe to resend under the same
   * `claimId`. `askSchedules`: an idle call also reports the partition's schedules (`scheduled`,
   * stalled ones in `tend`); a call that finds work always does. Callers ask until told there are none.
   */
  claim(
    limit: number,
    leaseMs: number,
    reapLimit: number,
    defaultMaxAttempts: number,
    ids: { claimId: string; answeredClaimId: string | undefined },
    askSchedules?: boolean,
    granted?: boolean,
  ): Promise<ClaimResult>;
  /**
   * Completes jobs; the positions refused as stale (another lease) and as not found. `results`
   * (one JSON text per lease, '' for none) is sent only when the queue keeps completed jobs.
   */
  ack(leases: readonly LeaseRef[], results?: readonly string[]): Promise<{ stale: number[]; notFound: number[] }>;
  /** Schedules retries or dead-letters; the positions refused, and those an earlier send applied (with its outcome). */
  fail(entries: readonly FailEntry[]): Promise<FailResult>;
  /** Renews leases; the positions this caller no longer holds. */
  extend(leaseMs: number, leases: readonly LeaseRef[]): Promise<number[]>;
  /** `extend`, with the server's now at which the new leases began. */
  extendAt(leaseMs: number, leases: readonly LeaseRef[]): Promise<{ now: number; lost: number[] }>;
  /**
   * Hands leases back (the jobs are due again at once, the attempt not counted); how many were
   * released. `freeSlots`: their slots at the queue's concurrency limit are freed in the same call
   * (partition 0 only, where the limiter lives).
   */
  release(leases: readonly LeaseRef[], freeSlots?: boolean): Promise<number>;
  cancel(id: string): Promise<CancelResult>;
  /** Moves a waiting (or dead) job to a new due time; `dueAt` is that time when rescheduled. */
  reschedule(id: string, due: Due): Promise<{ result: RescheduleResult; dueAt: number }>;
  get(id: string): Promise<JobSnapshot | null>;
  stats(): Promise<PartitionStats>;
  /** Up to `limit` jobs in one state after `after` (or from the start), in the state's order. */
  listJobs(state: JobState, after: ListPosition | undefined, limit: number): Promise<ListResult>;
  /** Counts of waiting jobs: ready, then one per window ending at each bound (ms from now), then the rest. */
  dueHistogram(boundsMs: readonly number[]): Promise<DueHistogram>;
  /** Moves the given dead jobs, or up to `limit` of the oldest, back to due now; how many moved. */
  retryDead(ids: readonly string[], limit: number): Promise<number>;
  /** Deletes up to `limit` dead jobs; how many were deleted. */
  purgeDead(limit: number): Promise<number>;
  setPaused(paused: boolean): Promise<void>;
  /**
   * Stores the partition's retention (`retain`, the `meta` form of src/flow/retention.ts; '' leaves it
   * as it is), then removes up to `limit` kept completed jobs beyond it (0: none). Returns the
   * stored form ('' when none) and how many it removed.
   */
  retention(retain: string, limit: number): Promise<{ retain: string; removed: number }>;
  /** One schedule (by key) or all of the partition's, with the server's now. */
  readSchedules(key?: string): Promise<{ now: number; schedules: StoredSchedule[] }>;
  writeSchedule(write: ScheduleWrite): Promise<ScheduleWriteResult>;
  /** Stores the default limits of every group of the partition (`{}`: none); every partition of a queue gets the same. */
  setDefaultGroupLimits(limits: GroupLimits): Promise<void>;
  /** Stores group `group`'s own limits, or removes them (`undefined`: it follows the default again). */
  setGroupLimits(group: string, limits: GroupLimits | undefined): Promise<void>;
  /** The group's own limits (undefined when it has none, or no group is asked) and the partition's default. */
  readGroupLimits(group: string | undefined): Promise<{ own: GroupLimits | undefined; fallback: GroupLimits }>;
  /** Pauses or resumes a group of the partition; whether that changed anything. */
  setGroupPaused(group: string, paused: boolean): Promise<boolean>;
  /** Up to `limit` groups with waiting or running jobs from rank `from` on, busiest first, and how many there are. */
  listGroups(from: number, limit: number): Promise<{ total: number; groups: GroupInfo[] }>;
  groupTotals(): Promise<GroupTotals>;
}
