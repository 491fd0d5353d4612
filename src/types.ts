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

/** A unit of a duration text: milliseconds, seconds, minutes, hours, days, weeks. */
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd' | 'w';

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
  ifExists?: 'keep' | 'replace';
  /** Attempts before the job is dead-lettered. Default: the worker's `maxAttempts`. */
  maxAttempts?: number;
  /** Backoff between attempts. Default: the worker's `backoff`. */
  backoff?: BackoffOption;
}

/**
 * One entry of `queue.addBulk`: the options of `add` but `ifExists`, which is an argument of the
 * whole call (`addBulk(jobs, 'replace')`).
 */
export type BulkJob<T> = DueOptions & Omit<AddSettings, 'ifExists'> & { payload: T };

/** Where a job is. `ready` means due but not yet claimed by a worker. */
export type JobState = 'delayed' | 'ready' | 'active' | 'dead';

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
}

/** The answer of `queue.cancel`. */
export type CancelResult = 'cancelled' | 'running' | 'not_found';

/** The answer of `queue.reschedule`. */
export type RescheduleResult = 'rescheduled' | 'running' | 'not_found';
