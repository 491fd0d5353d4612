// The one home of a recurring schedule's rules (issue 9): what a user may write in `schedule(key, spec)`,
// what it means once normalized, and the hash that recognises an unchanged upsert. The library, the
// HTTP API and the CLI all call resolveScheduleSpec, so they cannot drift apart.
import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { ValidationError } from '../core/errors.js';
import {
  CONTROL,
  assertBackoff,
  assertGroup,
  assertInteger,
  assertOptions,
  DEFAULT_MAX_PAYLOAD_BYTES,
  describe,
  MAX_ATTEMPTS,
  MAX_DELAY_MS,
  serializePayload,
  toDelayMs,
} from '../core/validate.js';
import { SCHEDULE_CATCH_UPS, SCHEDULE_OVERLAPS, type ScheduleRules } from '../core/types.js';

export type { ScheduleSpec } from '../core/types.js';

/** The shortest `every` accepted: 1 s. Shorter intervals would be a busy loop of jobs, not a schedule. The HTTP API's description reads it. */
export const MIN_EVERY_MS = 1_000;

/** The longest schedule key: its ticks' ids add '@', the tick's epoch ms and a partition suffix, within a job id's 200. The HTTP API's description reads it. */
export const MAX_SCHEDULE_KEY_LENGTH = 180;

/** A schedule spec after {@link resolveScheduleSpec}: validated, with defaults filled in and times as epoch ms. */
export interface ResolvedSchedule extends ScheduleRules {
  key: string;
  /** The cron pattern with single spaces between its fields; absent for an `every` schedule. */
  cron?: string;
  /** The interval in ms; absent for a cron schedule. */
  every?: number;
  /** The canonical IANA name (`'europe/berlin'` is stored as `'Europe/Berlin'`). */
  tz: string;
  /** The payload as the JSON text each tick's job carries. */
  payloadJson: string;
  /**
   * The earliest instant a tick may have, and the origin of an `every` grid (ticks at anchor + k * every):
   * `startAt`, else the time of the upsert. Not part of {@link scheduleDefinitionHash} unless it is `startAt`:
   * a later upsert of the same definition keeps the stored anchor rather than shifting the grid.
   */
  anchorMs: number;
}

const SPEC_OPTIONS = [
  'cron',
  'every',
  'tz',
  'payload',
  'startAt',
  'endAt',
  'limit',
  'overlap',
  'catchUp',
  'maxAttempts',
  'backoff',
  'group',
];
const LIMIT_MAX = 1_000_000_000;

/** Throws {@link ValidationError} unless `key` is a schedule key: 1-180 characters, no control character. */
export function assertScheduleKey(key: unknown): asserts key is string {
  // A schedule key becomes part of its ticks' job ids ("<key>@<tick ms>[~n]", at most 200 characters).
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_SCHEDULE_KEY_LENGTH || CONTROL.test(key)) {
    throw new ValidationError(
      `Expected a schedule key of 1-${MAX_SCHEDULE_KEY_LENGTH} characters without control characters, got ${describe(key)}`,
    );
  }
}

/**
 * Validates a user's schedule spec and returns it normalized. Pure: reads `nowMs` only to anchor the
 * `every` grid (when no `startAt`) and to bound times like `at` of a job (at most 10 years ahead).
 *
 * @throws {ValidationError} with a message naming the option at fault; nothing is written anywhere.
 */
export function resolveScheduleSpec(
  key: unknown,
  spec: unknown,
  nowMs: number,
  maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES,
): ResolvedSchedule {
  assertScheduleKey(key);
  if (spec === undefined) throw new ValidationError('A schedule needs a spec with `cron` or `every`');
  assertOptions('a schedule', spec, SPEC_OPTIONS);
  const s = spec as Record<string, unknown>;
  // A key present with the value undefined counts as absent, as everywhere in sandglass's options.
  if (s.cron !== undefined && s.every !== undefined) throw new ValidationError('Give either `cron` or `every` for a schedule, not both');
  if (s.cron === undefined && s.every === undefined)
    throw new ValidationError("A schedule needs `cron` (e.g. '0 9 * * *') or `every` (e.g. '5m')");

  const tz = resolveTimeZone(s.tz);
  const startAt = s.startAt === undefined ? undefined : toInstant('startAt', s.startAt, nowMs);
  const endAt = s.endAt === undefined ? undefined : toInstant('endAt', s.endAt, nowMs);
  if (startAt !== undefined && endAt !== undefined && endAt <= startAt) {
    throw new ValidationError(`Expected \`endAt\` (${endAt}) to be later than \`startAt\` (${startAt})`);
  }
  const result: ResolvedSchedule = {
    key,
    tz,
    payloadJson: serializePayload(s.payload ?? null, maxPayloadBytes),
    overlap: oneOf('overlap', s.overlap, SCHEDULE_OVERLAPS, 'allow'),
    catchUp: oneOf('catchUp', s.catchUp, SCHEDULE_CATCH_UPS, 'latest'),
    anchorMs: startAt ?? nowMs,
  };
  if (s.cron !== undefined) {
    result.cron = resolveCron(s.cron, tz, nowMs);
  } else {
    // Same reading as a delay (ms or '5m'), then the schedule's own floor.
    const every = toDelayMs(s.every, 'every');
    if (every < MIN_EVERY_MS)
      throw new ValidationError(`Expected \`every\` to be at least 1 s (${MIN_EVERY_MS} ms), got ${describe(s.every)}`);
    result.every = every;
  }
  if (startAt !== undefined) result.startAt = startAt;
  if (endAt !== undefined) result.endAt = endAt;
  if (s.group !== undefined) result.group = assertGroup(s.group);
  if (s.limit !== undefined) {
    assertInteger('limit', s.limit, 1, LIMIT_MAX);
    result.limit = s.limit;
  }
  // The rules of a job's own options (queue.ts add), so a tick's job is like any other.
  if (s.maxAttempts !== undefined) {
    assertInteger('maxAttempts', s.maxAttempts, 1, MAX_ATTEMPTS);
    result.maxAttempts = s.maxAttempts;
  }
  if (s.backoff !== undefined) {
    assertBackoff(s.backoff);
    result.backoff = { ...s.backoff }; // a copy: the caller's object may change after the upsert
  }
  return result;
}

/**
 * A stable hash (sha1 hex) of a schedule's definition: equal for two upserts that mean the same
 * schedule, different when any rule of it changed. Keys are written in a fixed order, and `anchorMs`
 * counts only through `startAt` (an anchor taken from the upsert time differs between upserts).
 */
export function scheduleDefinitionHash(spec: ResolvedSchedule): string {
  const b = spec.backoff;
  const canonical = [
    spec.key,
    spec.cron ?? null,
    spec.every ?? null,
    spec.tz,
    spec.payloadJson,
    spec.startAt ?? null,
    spec.endAt ?? null,
    spec.limit ?? null,
    spec.overlap,
    spec.catchUp,
    spec.maxAttempts ?? null,
    b === undefined
      ? null
      : [b.type, b.delayMs, 'maxDelayMs' in b ? (b.maxDelayMs ?? null) : null, 'jitter' in b ? (b.jitter ?? null) : null],
    // Only when set: the hash of every schedule made before groups existed stays as it was.
    ...(spec.group === undefined ? [] : [{ group: spec.group }]),
  ];
  return createHash('sha1').update(JSON.stringify(canonical)).digest('hex');
}

/** Validates an IANA zone name and returns its canonical spelling; `undefined` means UTC. */
function resolveTimeZone(tz: unknown): string {
  if (tz === undefined) return 'UTC';
  // Offsets such as '+01:00' are accepted by some Node versions' Intl only: keep to names, the same everywhere.
  if (typeof tz !== 'string' || !/^[A-Za-z]/.test(tz))
    throw new ValidationError(`Expected \`tz\` to be an IANA time zone name like 'Europe/Berlin', got ${describe(tz)}`);
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    throw new ValidationError(`Unknown time zone \`tz\` ${describe(tz)}: expected an IANA name like 'Europe/Berlin' or 'UTC'`);
  }
}

function resolveCron(cron: unknown, tz: string, nowMs: number): string {
  if (typeof cron !== 'string') throw new ValidationError(`Expected \`cron\` to be a pattern like '0 9 * * *', got ${describe(cron)}`);
  const fields = cron.trim().split(/\s+/);
  // croner also reads a 7th (year) field and nicknames like '@daily': the contract is 5 or 6 fields only.
  if (fields.length !== 5 && fields.length !== 6) {
    throw new ValidationError(
      `Expected \`cron\` to have 5 fields (minute hour day month weekday) or 6 (with seconds first), got ${describe(cron)}`,
    );
  }
  // Read as croner reads it by default, as Vixie cron does: a day of month and a weekday both given
  // ('0 0 13 * 5') match either one (the 13th or a Friday).
  const pattern = fields.join(' ');
  let next: Date | null;
  try {
    next = new Cron(pattern, { timezone: tz, paused: true }).nextRun(new Date(nowMs));
  } catch (error) {
    throw new ValidationError(`Invalid \`cron\` ${describe(cron)}: ${(error as Error).message.replace(/^CronPattern: /, '')}`);
  }
  // A pattern that never fires (e.g. '0 0 30 2 *', February 30th) is a mistake, not a schedule.
  if (next === null) throw new ValidationError(`\`cron\` ${describe(cron)} never fires`);
  return pattern;
}

/** An instant given as a Date or epoch ms, as `at` of a job: >= 0, at most 10 years ahead, rounded up. */
function toInstant(name: string, value: unknown, nowMs: number): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new ValidationError(`Expected \`${name}\` to be a valid Date or epoch milliseconds >= 0, got ${describe(value)}`);
  }
  if (ms > nowMs + MAX_DELAY_MS)
    throw new ValidationError(`\`${name}\` of ${ms} is more than 10 years away (at most ${nowMs + MAX_DELAY_MS} now)`);
  return Math.ceil(ms);
}

function oneOf<T extends string>(name: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T))
    throw new ValidationError(`Expected \`${name}\` to be ${allowed.map(a => `'${a}'`).join(' or ')}, got ${describe(value)}`);
  return value as T;
}
