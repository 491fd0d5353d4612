import type { Cluster, Redis, RedisOptions } from 'ioredis';

/**
 * Where Redis is: a URL (`redis://127.0.0.1:6379`), ioredis options, or an ioredis `Redis` instance
 * that you own (sandglass never closes an instance you pass in).
 */
export type ConnectionOption = string | RedisOptions | Redis | Cluster;

/** Messages a queue or worker logs. Compatible with pino and console. */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** How long to wait before the next attempt after a failure. */
export type BackoffOption =
  /** The same delay every time. */
  | { type: 'fixed'; delayMs: number }
  /**
   * `delayMs * 2^(attempt-1)`, capped at `maxDelayMs`, then reduced by a random share of up to
   * `jitter` so that jobs that failed together do not retry together.
   */
  | { type: 'exponential'; delayMs: number; maxDelayMs?: number; jitter?: number };

/** A backoff a worker computes itself: return the delay in ms before the next attempt. */
export type BackoffFunction = (attempt: number, error: unknown) => number;

/**
 * The units of a duration text ({@link DurationText}): milliseconds, seconds, minutes, hours, days
 * (24 h), weeks (7 days); elapsed time, not calendar time. The one list of them: the parser, the
 * type and the HTTP API's and CLI's descriptions read it.
 */
export const DURATION_UNITS = ['ms', 's', 'm', 'h', 'd', 'w'] as const;

/** A unit of a duration text: one of {@link DURATION_UNITS}. */
export type DurationUnit = (typeof DURATION_UNITS)[number];

/**
 * A duration as text, as {@link parseDuration} reads it: `'250ms'`, `'30m'`, `'1h30m'`, `'1d 2h 3m'`
 * (up to three parts in the type; the parser takes any number), or digits alone for milliseconds
 * (`'1500'`). `'30 minutes'` does not type-check.
 */
export type DurationText =
  | `${number}`
  | `${number}${DurationUnit}`
  | `${number}${DurationUnit}${number}${DurationUnit}`
  | `${number}${DurationUnit}${number}${DurationUnit}${number}${DurationUnit}`;

/** A delay: milliseconds, or a {@link DurationText} such as `'30m'`. */
export type Duration = number | DurationText;

/**
 * When a job falls due: `delay` from now (on the Redis server's clock), or at `at`; never both.
 * Without either, an add is due at once; a reschedule needs one.
 */
export type When =
  | {
      /**
       * How long from now (on the Redis server's clock) the job falls due: milliseconds, or a
       * duration such as `'30m'`, `'5d'`, `'1h30m'`. Exclusive with `at`. At most ten years.
       * @default 0 (due at once)
       */
      delay: Duration;
      at?: never;
    }
  | {
      /** When the job falls due: a Date or epoch milliseconds. Exclusive with `delay`. */
      at: Date | number;
      delay?: never;
    };

/** The due time of an add: like {@link When}, but both may be left out (due at once). */
export type DueOptions = { delay?: Duration; at?: never } | { at?: Date | number; delay?: never };

/** Options of `queue.add`: a due time ({@link DueOptions}, default now) and the job's own settings. */
export type AddOptions = DueOptions & AddSettings;

/**
 * The values of `ifExists` (of `queue.add` and `queue.addBulk`): the one list of them, which the
 * library's check and the HTTP API's schemas read; {@link IfExists} is derived from it.
 */
export const IF_EXISTS_VALUES = ['keep', 'replace'] as const;
/** What adding an id that exists does: one of {@link IF_EXISTS_VALUES}. */
export type IfExists = (typeof IF_EXISTS_VALUES)[number];

/**
 * The values of `onExpire` (of a job): the one list of them, which the library's check and the
 * HTTP API's schemas read; {@link OnExpire} is derived from it.
 */
export const ON_EXPIRE_VALUES = ['dead', 'drop'] as const;
/** What an expired job becomes: one of {@link ON_EXPIRE_VALUES}. */
export type OnExpire = (typeof ON_EXPIRE_VALUES)[number];

/** Options of `queue.add` besides its due time. */
export interface AddSettings {
  /**
   * Your id for the job (1-200 characters, no control characters). Adding an id that already
   * exists does not create a second job; see `ifExists`. Default: a generated, time-ordered id.
   */
  id?: string;
  /**
   * What adding an existing id does. `'keep'` leaves the existing job untouched (idempotent
   * producers); `'replace'` overwrites its payload, due time and options if it is waiting or dead
   * (a debounce), and throws {@link ConflictError} if it is running.
   * @default 'keep'
   */
  ifExists?: IfExists;
  /** Attempts before the job is dead-lettered. Default: the worker's `maxAttempts`. */
  maxAttempts?: number;
  /** Backoff between attempts. Default: the worker's `backoff`. */
  backoff?: BackoffOption;
  /**
   * A deadline: a job not started by `dueAt + expireAfter` (server clock, checked when a worker
   * claims it) is not run; see `onExpire`. Default: the queue's `expireAfter` limit, if set.
   */
  expireAfter?: Duration;
  /**
   * What happens to an expired job: `'dead'` dead-letters it with `reason: 'expired'`, `'drop'`
   * deletes it. Both count in `counters().expired`.
   * @default 'dead'
   */
  onExpire?: OnExpire;
  /**
   * The trace context the job is added in, as a W3C `traceparent`, in place of the active
   * OpenTelemetry context: the parent of the `send` span (when a tracer provider is registered;
   * else it is stored as it is). For producers that carry a context by hand (the HTTP service
   * passes its request's `traceparent` header). A malformed one is a ValidationError.
   * Default: the active context, if there is one. See README, "OpenTelemetry".
   */
  traceparent?: string;
  /**
   * The job's group (README, "Groups"): 1-100 characters, no control characters. Claims serve the
   * groups with due jobs in turn, and each group follows its own limits (`queue.setGroupLimits`).
   * Default: the default group, which takes its turn like the others and has no group limits.
   */
  group?: string;
}

/**
 * One entry of `queue.addBulk`: the options of `add` but `ifExists`, which is an argument of the
 * whole call (`addBulk(jobs, 'replace')`).
 */
export type BulkJob<T> = DueOptions & Omit<AddSettings, 'ifExists'> & { payload: T };

/**
 * Every state a job can be in, in the order sandglass lists them (`queue.stats()`, the CLI, the
 * HTTP API, the metrics): the one list of them, {@link JobState} is derived from it. The states
 * partition a queue's jobs: a job is in exactly one.
 * @example
 * for (const state of JOB_STATES) console.log(state, (await queue.list(state, { limit: 1 })).jobs.length);
 */
export const JOB_STATES = ['delayed', 'ready', 'active', 'dead', 'completed'] as const;

/** Where a job is (one of {@link JOB_STATES}). `ready` means due but not yet claimed by a worker. */
export type JobState = (typeof JOB_STATES)[number];

/** A snapshot of a job, as `queue.get` and the dead-letter listing return it. */
export interface JobInfo<T> {
  id: string;
  payload: T;
  state: JobState;
  /** When the job falls (or fell) due, epoch ms. */
  dueAt: number;
  /** Deliveries so far. */
  attempts: number;
  /** Per-job override of the worker's `maxAttempts`, if one was given. */
  maxAttempts?: number;
  /** While active: when the current lease runs out, epoch ms (server clock). */
  leaseUntilAt?: number;
  /** While dead: when it was dead-lettered, epoch ms. */
  deadAt?: number;
  /** The message of the last failure, if the job ever failed. */
  lastError?: string;
  /** Set when the job is a tick of a recurring schedule (`queue.schedule`). */
  schedule?: JobSchedule;
  /** While dead: why. `'failed'`: out of attempts (or a lease ran out on the last one); `'expired'`: not started by its deadline (`expireAfter`). */
  reason?: 'failed' | 'expired';
  /** While waiting: the deadline (`expireAfter`) by which it must start, epoch ms. */
  expiresAt?: number;
  /** While completed (kept by `setRetention`): when it completed, epoch ms. */
  finishedAt?: number;
  /** While completed: the handler's return value (JSON), or a {@link ResultTooLarge} marker. */
  result?: unknown;
  /** The W3C traceparent stored with the job when it was added in a trace (README, "OpenTelemetry"). */
  traceparent?: string;
  /** The job's group (`add(payload, { group })`); absent for the default group. */
  group?: string;
}

/** Kept instead of a handler's result whose JSON exceeds the queue's `maxResultBytes`. */
export interface ResultTooLarge {
  readonly resultTooLarge: true;
  /** The size of the result's JSON, bytes. */
  readonly bytes: number;
}

/**
 * Limits a queue's workers obey, stored with the queue (`queue.setLimits`): every Worker,
 * PullConsumer and webhook binding of any process follows them, across all partitions.
 */
export interface QueueLimits {
  /** At most `max` job starts in any sliding window of `per` ms. */
  rate?: { max: number; per: number };
  /** At most this many jobs active at once. */
  concurrency?: number;
  /** The default deadline (ms) of jobs added without their own `expireAfter`. */
  expireAfter?: number;
}

/** The argument of `queue.setLimits`: a limit left out is kept as it is; `null` clears it. */
export interface LimitsInput {
  rate?: { max: number; per: Duration } | null;
  concurrency?: number | null;
  expireAfter?: Duration | null;
}

/** Which completed jobs a queue keeps (`queue.setRetention`). */
export interface Retention {
  /** Completed jobs kept: the newest `count`, and none older than `age` ms. Absent: none kept. */
  completed?: { count?: number; age?: number };
  /** The largest result JSON kept, bytes; a larger one is kept as a {@link ResultTooLarge} marker. @default 65536 */
  maxResultBytes: number;
}

/** The argument of `queue.setRetention`: `completed: null` keeps none again. */
export interface RetentionInput {
  completed?: { count?: number; age?: Duration } | null;
  maxResultBytes?: number;
}

/** Counts of jobs by state, as `queue.stats()` returns them. */
export interface QueueStats {
  /** Waiting for their due time. */
  delayed: number;
  /** Due but not yet claimed. */
  ready: number;
  /** Claimed by a worker under a lease. */
  active: number;
  /** Out of attempts (dead letters). */
  dead: number;
  /** Whether workers are kept from claiming (`queue.pause()`). */
  paused: boolean;
  /** Due now but held back by the queue's `rate` or `concurrency` limit (part of `ready`). */
  limited: number;
  /** Completed and kept (`setRetention`). */
  completed: number;
}

/** Running totals since the queue was first used, as `queue.counters()` returns them. */
export interface QueueCounters {
  added: number;
  claimed: number;
  completed: number;
  retried: number;
  dead: number;
  /** Leases that ran out (a worker died or froze) and were taken back. */
  reaped: number;
  /** Acks or fails rejected because the sender no longer held the lease. */
  stale: number;
  /** Jobs created by the queue's schedules (one per tick; also counted in `added`). */
  ticks: number;
  /** Schedule ticks skipped by `overlap: 'skip'`. */
  ticksSkipped: number;
  /** Jobs not started by their deadline (`expireAfter`): dead-lettered or dropped. */
  expired: number;
}

/** What a handler receives. */
export interface Job<T> {
  /** The job's id. */
  readonly id: string;
  /** The queue it came from. */
  readonly queue: string;
  /** The payload as added (a JSON round trip of it). */
  readonly payload: T;
  /** When the job fell due, epoch ms on the Redis server's clock. */
  readonly dueAt: number;
  /** Which delivery this is, 1-based. */
  readonly attempt: number;
  /** The attempts allowed before the job is dead-lettered. */
  readonly maxAttempts: number;
  /** Aborted when the lease is lost or the worker stops waiting for the handler on close. */
  readonly signal: AbortSignal;
  /** Set when the job is a tick of a recurring schedule: the schedule's key and the tick's time. */
  readonly schedule?: JobSchedule;
  /**
   * True when the job fell due while the queue's `rate` or `concurrency` limit was holding claims
   * back: its lateness (start minus `dueAt`) is the limit's doing, not sandglass's.
   */
  readonly heldByLimit?: boolean;
  /**
   * The W3C traceparent stored with the job when it was added in a trace: the producer's `send`
   * span (README, "OpenTelemetry"). Absent for a job added outside any trace.
   */
  readonly traceparent?: string;
  /** The job's group (`add(payload, { group })`); absent for a job of the default group. */
  readonly group?: string;
}

/**
 * A group's limits (`queue.setGroupLimits`): they hold for the whole queue, every Worker,
 * PullConsumer and webhook binding of any process, as the queue's own limits do, and combine with
 * them (both must have room).
 */
export interface GroupLimits {
  /** At most `max` starts of the group's jobs in any sliding window of `per` ms (on the Redis server's clock). */
  rate?: { max: number; per: number };
  /** At most this many of the group's jobs active at once; 1 runs them one at a time, in due order. */
  concurrency?: number;
}

/** The argument of `queue.setGroupLimits`: a limit left out is kept as it is; `null` clears it. */
export interface GroupLimitsInput {
  rate?: { max: number; per: Duration } | null;
  concurrency?: number | null;
}

/** The limits in force for one group (`queue.getGroupLimits`) and where they come from. */
export interface GroupLimitsInfo extends GroupLimits {
  /** `'group'`: the group's own (`setGroupLimits(limits, { group })`); `'default'`: the queue's default for every group. */
  readonly source: 'group' | 'default';
}

/** One group of a queue as `queue.listGroups` answers it. */
export interface GroupInfo {
  readonly group: string;
  /** Its jobs waiting (delayed and ready). */
  readonly waiting: number;
  /** Of those, the ones due now. */
  readonly ready: number;
  /** Its jobs running now. */
  readonly active: number;
  /** Whether its concurrency or rate limit holds it back right now. */
  readonly limited: boolean;
  readonly paused: boolean;
}

/** A page of `queue.listGroups`: the groups with waiting or running jobs, busiest (most jobs) first. */
export interface GroupPage {
  readonly groups: GroupInfo[];
  /** Pass it as `cursor` for the next page; absent on the last one. */
  readonly nextCursor?: string;
}

/** The groups of a queue in numbers (`queue.groupTotals`, the service's /metrics). */
export interface GroupTotals {
  /** Groups with waiting or running jobs. */
  readonly withWork: number;
  /** Groups held back by their concurrency limit right now. */
  readonly held: number;
  /** Groups paused (`queue.pauseGroup`). */
  readonly paused: number;
}

/**
 * Options of the calls that find a job by id (`queue.get`, `cancel`, `reschedule`): its `group`, when
 * known, takes the call straight to the group's partition; without it a partitioned queue looks in
 * the id's partition, then in the others.
 */
export interface ByIdOptions {
  group?: string;
}

/** The answer of `queue.cancel`. */
export type CancelResult = 'cancelled' | 'running' | 'not_found';

/** The answer of `queue.reschedule`. */
export type RescheduleResult = 'rescheduled' | 'running' | 'not_found';

/** Which schedule tick a job is: its schedule's key and the tick time (epoch ms) it runs for. */
export interface JobSchedule {
  readonly key: string;
  /** The tick's time, epoch ms: the job fell due then (a missed tick run by `catchUp` starts later). */
  readonly tickAt: number;
}

/**
 * The values of a schedule's `overlap` ({@link ScheduleSpec}): the one list of them, which the
 * library's check and the HTTP API's schemas read; {@link ScheduleOverlap} is derived from it.
 */
export const SCHEDULE_OVERLAPS = ['allow', 'skip'] as const;
/** What a schedule does when a tick's previous run is still active: one of {@link SCHEDULE_OVERLAPS}. */
export type ScheduleOverlap = (typeof SCHEDULE_OVERLAPS)[number];

/**
 * The values of a schedule's `catchUp` ({@link ScheduleSpec}): the one list of them, which the
 * library's check and the HTTP API's schemas read; {@link ScheduleCatchUp} is derived from it.
 */
export const SCHEDULE_CATCH_UPS = ['none', 'latest', 'all'] as const;
/** Which missed ticks a schedule runs: one of {@link SCHEDULE_CATCH_UPS}. */
export type ScheduleCatchUp = (typeof SCHEDULE_CATCH_UPS)[number];

/**
 * Where the job of a schedule's last started tick is (`lastRun.state` of {@link ScheduleInfo}): the
 * one list of them, which the HTTP API's schema reads; {@link ScheduleRunState} is derived from it.
 */
export const SCHEDULE_RUN_STATES = ['active', 'waiting', 'dead', 'done'] as const;
/** One of {@link SCHEDULE_RUN_STATES}. */
export type ScheduleRunState = (typeof SCHEDULE_RUN_STATES)[number];

/**
 * A recurring schedule, as given to `queue.schedule(key, spec)`: exactly one of `cron` and `every`.
 * Each tick arrives as an ordinary job of the queue (retries, dead letters, leases and batch mode
 * apply) with `job.schedule` set.
 */
export interface ScheduleSpec {
  /** A cron pattern of 5 fields (minute hour day-of-month month weekday) or 6 (seconds first). */
  cron?: string;
  /**
   * The group of each tick's job (README, "Groups"): the ticks take their turn and follow the
   * group's limits like the group's other jobs. Default: the default group.
   */
  group?: string;
  /** An interval in ms or a duration text such as `'5m'`; at least 1 s. */
  every?: number | Duration;
  /** The IANA time zone `cron` is read in. Accepted with `every`, where it changes nothing. @default 'UTC' (never the machine's zone) */
  tz?: string;
  /** The payload of every tick's job; anything JSON can carry. @default null */
  payload?: unknown;
  /** No tick before this instant; a tick exactly at `startAt` counts. Anchors an `every` grid (else the first upsert does). */
  startAt?: Date | number;
  /** No tick at or after this instant. */
  endAt?: Date | number;
  /** The number of runs (ticks created) after which the schedule ends. */
  limit?: number;
  /** `'skip'`: a tick whose previous run is still active is skipped (and counted in `skipped`). @default 'allow' */
  overlap?: ScheduleOverlap;
  /**
   * Ticks missed while no job could be created for them (every process down longer than an
   * interval): `'none'` goes on at the next future tick, `'latest'` runs the most recent missed tick
   * at once, `'all'` runs every missed tick (the most recent 100), oldest first. @default 'latest'
   */
  catchUp?: ScheduleCatchUp;
  /** As for a job: the attempts of each tick's job. */
  maxAttempts?: number;
  /** As for a job: the backoff between a tick job's attempts. */
  backoff?: BackoffOption;
}

/** A schedule's rules besides its pattern, as stored and shown: times in epoch ms, defaults filled in. */
export interface ScheduleRules {
  /** The group of each tick's job (README, "Groups"); absent: the default group. */
  group?: string;
  startAt?: number;
  endAt?: number;
  limit?: number;
  overlap: ScheduleOverlap;
  catchUp: ScheduleCatchUp;
  maxAttempts?: number;
  backoff?: BackoffOption;
}

/** A schedule as `queue.getSchedule` and `queue.listSchedules` show it. Times are epoch ms. */
export interface ScheduleInfo<T = unknown> extends ScheduleRules {
  key: string;
  cron?: string;
  /** The interval in ms (an `every` schedule). */
  every?: number;
  tz: string;
  payload: T;
  paused: boolean;
  /** The next tick's time; null while paused and once the schedule ended (`limit` or `endAt` reached). */
  nextAt: number | null;
  /** The next (up to) 5 tick times, from `nextAt` on; empty when `nextAt` is null. */
  upcoming: number[];
  /** The time of the last tick that started (its job was claimed); null before the first. */
  lastTickAt: number | null;
  /** Ticks created so far (each one job). */
  runs: number;
  /** Ticks skipped by `overlap: 'skip'`. */
  skipped: number;
  /**
   * The job of the last tick that started, and where it is now: `'active'` (running), `'waiting'`
   * (failed, to be retried), `'dead'`, or `'done'` (completed, or gone: a completed job is remembered
   * 60 to 90 s). Null before the first start.
   */
  lastRun: { id: string; tickAt: number; state: ScheduleRunState } | null;
}

/** The answer of `queue.unschedule`. */
export type UnscheduleResult = 'removed' | 'not_found';
