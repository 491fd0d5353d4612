/**
 * The stored shapes of the storage seam: a job and a schedule as every backend answers them,
 * decoded. The interface side of the codecs (src/store/redis/record.ts and schedule-record.ts read
 * them from Redis); a leaf beside placement.ts, importing only core types.
 */
import type { BackoffOption, ScheduleRunState } from '../core/types.js';

/** A job record as stored in its partition, decoded (see lua/includes/records.lua). */
export interface StoredJob {
  readonly id: string;
  /** Deliveries so far (a claim counts one). */
  readonly attempts: number;
  /** The fencing token of the current claim (its lease, lua/includes/leases.lua); '0' when not active. */
  readonly token: string;
  /** When the job fell due; only known while it is active or dead (a waiting job's is its `due` score). */
  readonly dueAt: number | undefined;
  readonly maxAttempts: number | undefined;
  readonly backoff: BackoffOption | undefined;
  /** The tick time, for a schedule's tick job (the header's 6th field); else undefined. */
  readonly tickAt: number | undefined;
  /** The W3C traceparent of the job's producer, when it was added in a trace (the header's last field); else undefined. */
  readonly traceparent: string | undefined;
  /** The job's group (lua/includes/groups.lua); undefined for the default group. */
  readonly group?: string | undefined;
  readonly payloadJson: string;
}

/** Where the last started tick's job is (lua/includes/schedules.lua lastRunState); '' when no tick started yet. */
export type LastRunState = '' | ScheduleRunState;

/** A schedule's definition as stored: what its tick jobs are made of, and the spec (JSON) ticks are computed from. */
export interface StoredDefinition {
  /** scheduleDefinitionHash of the definition. */
  readonly hash: string;
  /** Of each tick's job: '' for the worker's default. */
  readonly maxAttempts: string;
  /** Of each tick's job, `backoff.ts` encoding; '' for the worker's default. */
  readonly backoff: string;
  readonly limit: number | undefined;
  readonly payloadJson: string;
  /** The group of the schedule's ticks (README, "Groups"); undefined for the default group. */
  readonly group?: string | undefined;
  readonly specJson: string;
}

/** A schedule record, decoded. Entries are "<tickAt>[~<n>]": a tick's job id is "<key>@<entry>" (tick-ids.ts). */
export interface StoredSchedule extends StoredDefinition {
  readonly key: string;
  /** Bumped by every change of the definition or of paused (compare-and-set). */
  readonly gen: number;
  /** Ticks created. */
  readonly runs: number;
  readonly skipped: number;
  readonly paused: boolean;
  /** The head tick started and no tick follows it (`limit` or `endAt` reached). */
  readonly ended: boolean;
  /** The head tick started but the next one could not be created by the claim: a client must (catchUp). */
  readonly stalled: boolean;
  /** The entry of the last tick created, '' before the first. */
  readonly head: string;
  /** The next entries after `head`, computed ahead by a client. */
  readonly ticks: readonly string[];
  /** No tick follows `ticks` (the schedule ends after them). */
  readonly complete: boolean;
  /** The last tick whose job started. */
  readonly last: { readonly tickAt: number; readonly id: string } | null;
  readonly lastRunState: LastRunState;
}
