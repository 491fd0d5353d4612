/**
 * The JSON schemas of the HTTP API: request parts (validated by fastify's ajv on every route) and
 * the answers (documented in the OpenAPI document). Only keywords that mean the same in JSON Schema
 * draft-07 (ajv) and 2020-12 (OpenAPI 3.1) are used, so one schema serves both.
 */
import {
  CLAIM_TOKEN_PATTERN,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DURATION_UNITS,
  GROUP_RULE,
  JOB_ID_RULE,
  JOB_STATES,
  MAX_ATTEMPTS,
  MAX_CLAIM,
  MAX_CLAIM_WAIT_MS,
  MAX_DELAY_MS,
  MAX_ERROR_LENGTH,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  MAX_SCHEDULE_KEY_LENGTH,
  MIN_EVERY_MS,
  IF_EXISTS_VALUES,
  ON_EXPIRE_VALUES,
  MIN_LEASE_MS,
  QUEUE_NAME_RULE,
  SCHEDULE_CATCH_UPS,
  SCHEDULE_OVERLAPS,
  SCHEDULE_RUN_STATES,
  type GroupInfo,
  type QueueCounters,
  type QueueStats,
} from '../index.js';
import { ERROR_CODES } from './errors.js';

export type JsonSchema = { readonly [keyword: string]: unknown };

/** `(units ms s m h d w)`: the duration units, as the descriptions name them. */
const UNITS = `(units ${DURATION_UNITS.join(' ')})`;
/** `256 KiB`: the library's payload limit, which the service keeps. */
const PAYLOAD_LIMIT = `${DEFAULT_MAX_PAYLOAD_BYTES / 1024} KiB`;

const integer = (minimum: number, maximum: number, description?: string): JsonSchema => ({
  type: 'integer',
  minimum,
  maximum,
  ...(description ? { description } : {}),
});

export const queueName: JsonSchema = {
  type: 'string',
  maxLength: QUEUE_NAME_RULE.maxLength,
  pattern: QUEUE_NAME_RULE.pattern,
  description: `Queue name: ${QUEUE_NAME_RULE.description}.`,
};

export const jobId: JsonSchema = {
  type: 'string',
  minLength: JOB_ID_RULE.minLength,
  maxLength: JOB_ID_RULE.maxLength,
  pattern: JOB_ID_RULE.pattern,
  description: `Job id: ${JOB_ID_RULE.description} (in paths: RFC 3986 percent-encoded, \`a b+c\` -> \`a%20b%2Bc\`; a \`+\` is a literal plus).`,
};

/** A group name (issue 20): the library's GROUP_RULE, which its own check reads too. */
const group = (description: string): JsonSchema => ({
  type: 'string',
  minLength: GROUP_RULE.minLength,
  maxLength: GROUP_RULE.maxLength,
  pattern: GROUP_RULE.pattern,
  description: `${description}: ${GROUP_RULE.description}.`,
});

/** `{group}` of a path. */
export const groupName: JsonSchema = group('Group, RFC 3986 percent-encoded in paths (`shop 42/eu` -> `shop%2042%2Feu`)');

export const dashboardFile: JsonSchema = {
  type: 'string',
  maxLength: 200,
  description: 'A file of the dashboard folder (anything else is 404).',
};

const token: JsonSchema = {
  type: 'string',
  pattern: CLAIM_TOKEN_PATTERN,
  description: 'The fencing token of the claim: a string of 1-20 digits, sent back exactly as the claim answered it.',
};

const delay: JsonSchema = {
  type: ['integer', 'string'],
  minimum: 0,
  maximum: MAX_DELAY_MS,
  minLength: 1,
  maxLength: 64,
  description: `How long from now (Redis server clock) the job falls due: ms, or a duration such as '30m', '1h30m' ${UNITS}. At most 10 years.`,
};

const at: JsonSchema = {
  type: ['integer', 'string'],
  minimum: 0,
  format: 'date-time',
  maxLength: 64,
  description: 'When the job falls due: epoch ms, or an RFC 3339 date-time with a time zone (2030-01-01T00:00:00Z).',
};

const backoff: JsonSchema = {
  oneOf: [
    {
      type: 'object',
      required: ['type', 'delayMs'],
      additionalProperties: false,
      properties: { type: { const: 'fixed' }, delayMs: integer(0, MAX_DELAY_MS) },
    },
    {
      type: 'object',
      required: ['type', 'delayMs'],
      additionalProperties: false,
      properties: {
        type: { const: 'exponential' },
        delayMs: integer(0, MAX_DELAY_MS),
        maxDelayMs: integer(0, MAX_DELAY_MS),
        jitter: { type: 'number', minimum: 0, maximum: 1 },
      },
    },
  ],
  description: "Backoff between attempts; default: the consumer's (exponential from 1 s).",
};

/** A duration field of flow control: ms or duration text; the library judges the value (its ValidationError is the 400). */
const duration = (description: string): JsonSchema => ({
  type: ['integer', 'string'],
  maxLength: 64,
  description: `${description}: ms, or a duration such as '30s', '1h' ${UNITS}.`,
});

const jobFields = {
  payload: {
    description: `Any JSON value; at most ${PAYLOAD_LIMIT} of JSON. Integers beyond ±9007199254740991 (2^53 - 1) are refused with 400 VALIDATION naming their path: send them as strings.`,
  },
  delay,
  at,
  id: jobId,
  maxAttempts: integer(1, MAX_ATTEMPTS, "Deliveries before the job is dead-lettered; default: the consumer's."),
  backoff,
  expireAfter: duration(
    "A deadline: a job not started by its due time plus this is not run (see `onExpire`). Default: the queue's `expireAfter` limit, if set",
  ),
  onExpire: {
    enum: ON_EXPIRE_VALUES,
    description:
      "An expired job: 'dead' dead-letters it with reason 'expired', 'drop' deletes it; both count in `expired`. Default 'dead'.",
  },
  group: group(
    "The job's group: jobs of one group obey the group's limits and pause, and groups take turns. Default: none (the default group, which group limits and pauses do not hold back)",
  ),
};

const ifExists: JsonSchema = {
  enum: IF_EXISTS_VALUES,
  description:
    "Adding an id that exists: 'keep' changes nothing (idempotent producers), 'replace' overwrites a waiting or dead job. Default 'keep'.",
};

export const addBody: JsonSchema = {
  type: 'object',
  required: ['payload'],
  additionalProperties: false,
  properties: { ...jobFields, ifExists },
};

export const bulkBody: JsonSchema = {
  type: 'object',
  required: ['jobs'],
  additionalProperties: false,
  properties: {
    jobs: {
      type: 'array',
      maxItems: 1_000,
      items: { type: 'object', required: ['payload'], additionalProperties: false, properties: jobFields },
    },
    ifExists,
  },
};

export const rescheduleBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  maxProperties: 1,
  properties: { delay, at },
  description: 'Exactly one of `delay` and `at`.',
};

export const claimBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    max: integer(1, MAX_CLAIM, 'Jobs to claim at most. Default 1.'),
    leaseMs: integer(MIN_LEASE_MS, MAX_LEASE_MS, 'How long the claim holds the jobs. Default 30000.'),
    waitMs: integer(0, MAX_CLAIM_WAIT_MS, 'Long poll: wait up to this long for a job to fall due. Default 0.'),
  },
};

export const ackBody: JsonSchema = {
  type: 'object',
  required: ['token'],
  additionalProperties: false,
  properties: {
    token,
    result: {
      description:
        "The job's result, any JSON value: kept with the completed job while the queue keeps completed jobs (retention), as `{ resultTooLarge: true, bytes }` when over its `maxResultBytes`; ignored otherwise. Integers beyond ±9007199254740991 (2^53 - 1) are refused with 400 VALIDATION naming their path: send them as strings.",
    },
  },
};

export const failBody: JsonSchema = {
  type: 'object',
  required: ['token'],
  additionalProperties: false,
  properties: {
    token,
    error: { type: 'string', maxLength: MAX_ERROR_LENGTH, description: "Why it failed; kept as the job's lastError." },
    retryDelayMs: integer(0, MAX_DELAY_MS, 'Retry after this long instead of the backoff.'),
    dead: { type: 'boolean', description: 'Dead-letter now, skipping the remaining attempts.' },
  },
};

export const extendBody: JsonSchema = {
  type: 'object',
  required: ['token'],
  additionalProperties: false,
  properties: { token, leaseMs: integer(MIN_LEASE_MS, MAX_LEASE_MS, 'The new lease, from now. Default 30000.') },
};

export const retryDeadBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ids: { type: 'array', maxItems: 1_000, items: jobId, description: 'Dead letters to retry; all of them when absent.' } },
};

export const pauseBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    create: {
      type: 'boolean',
      description:
        'Pause a queue that does not exist yet (no job added): it is created, paused, and listed. Without it, an unknown queue is 404 NOT_FOUND (most likely a misspelled name).',
    },
  },
};

// --- schedules (issue 9) ----------------------------------------------------------------------
// The schema checks JSON types (and that no unknown field is sent), and bounds texts generously so
// that no parser sees a megabyte of them; every rule of a schedule (a known zone, a valid pattern, one
// of cron and every, the 1 s floor, ranges, the key's length) is judged by the library's
// resolveScheduleSpec, whose message the client gets as a 400 VALIDATION.

export const scheduleKey: JsonSchema = {
  type: 'string',
  description: `Schedule key: 1-${MAX_SCHEDULE_KEY_LENGTH} characters without control characters, RFC 3986 percent-encoded in paths (\`refund-poll:42\` -> \`refund-poll%3A42\`, \`a/b\` -> \`a%2Fb\`). Its ticks' job ids are \`<key>@<tick epoch ms>\`.`,
};

const scheduleInstant = (description: string): JsonSchema => ({
  ...at,
  description: `${description}: epoch ms, or an RFC 3339 date-time with a time zone.`,
});

export const scheduleBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    cron: {
      type: 'string',
      maxLength: 1_000,
      description: "A cron pattern of 5 fields (minute hour day-of-month month weekday) or 6 (seconds first), read in `tz`: '0 9 * * *'.",
    },
    every: {
      type: ['integer', 'string'],
      maxLength: 64,
      description: `An interval: ms, or a duration such as '5m', '1h30m' ${UNITS}; at least ${MIN_EVERY_MS / 1_000} s. Pure elapsed time (DST does not move it).`,
    },
    tz: {
      type: 'string',
      maxLength: 100,
      description: "The IANA time zone `cron` is read in ('Europe/Berlin'). Default 'UTC', never the server's zone.",
    },
    payload: {
      description: `Every tick's job payload; any JSON value, at most ${PAYLOAD_LIMIT} of JSON. Default null. Integers beyond ±9007199254740991 (2^53 - 1) are refused with 400 VALIDATION naming their path: send them as strings.`,
    },
    startAt: scheduleInstant('No tick before this instant (a tick exactly at it counts); anchors an `every` grid'),
    endAt: scheduleInstant('No tick at or after this instant'),
    limit: { type: 'integer', description: 'The number of runs (ticks created) after which the schedule ends.' },
    overlap: {
      enum: SCHEDULE_OVERLAPS,
      description: "'skip': a tick whose previous run is still active is skipped (and counted). Default 'allow'.",
    },
    catchUp: {
      enum: SCHEDULE_CATCH_UPS,
      description:
        "Ticks missed while no process ran: 'none' goes on at the next tick, 'latest' runs the most recent missed one at once, 'all' runs each (the most recent 100), oldest first. Default 'latest'.",
    },
    maxAttempts: jobFields.maxAttempts,
    backoff,
    group: group("The group of every tick's job: the ticks follow the group's limits and pause. Default: none (the default group)"),
  },
  description:
    'Exactly one of `cron` and `every`. An idempotent upsert: the same definition again changes nothing; a changed one replaces the pending tick with its first tick after now.',
};

// --- flow control (issue 10) -------------------------------------------------------------------
// As for schedules: JSON types here, every rule (ranges, durations, unknown fields of `rate`) in the
// library's setLimits / setRetention, whose ValidationError names the field.

/** The `rate` of a limits body (a queue's, a group's): `{ max, per }` or null, in the words given. */
function rateLimitInput(maxDescription: string, description: string): JsonSchema {
  return {
    type: ['object', 'null'],
    additionalProperties: false,
    properties: { max: { type: 'integer', description: maxDescription }, per: duration('The sliding window') },
    description,
  };
}

export const limitsBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    rate: rateLimitInput(
      'Job starts at most per window.',
      'At most `max` job starts in any sliding window of `per`, over every consumer of the queue. `null` clears it.',
    ),
    concurrency: { type: ['integer', 'null'], description: 'Jobs active at once at most, over every consumer. `null` clears it.' },
    expireAfter: {
      type: ['integer', 'string', 'null'],
      maxLength: 64,
      description: "The default deadline of jobs added without their own `expireAfter`: ms, or a duration such as '1h'. `null` clears it.",
    },
  },
  description: 'A limit left out is kept as it is; `null` clears it.',
};

export const retentionBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    completed: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        count: { type: 'integer', description: 'The newest this many completed jobs are kept.' },
        age: duration('None older than this is kept'),
      },
      description: 'Keep completed jobs (with their results) by count and/or age; `null` keeps none again.',
    },
    maxResultBytes: {
      type: 'integer',
      description: 'The largest result JSON kept; a larger one is kept as a `{ resultTooLarge: true, bytes }` marker. Default 65536.',
    },
  },
};

// --- groups (issue 20) ------------------------------------------------------------------------
// As for the queue's limits: JSON types here (and the group name by the library's GROUP_RULE), every
// rule of a limit (ranges, durations) and of a page in the library's setGroupLimits / listGroups,
// whose ValidationError names the field.

export const groupLimitsBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    rate: rateLimitInput(
      'Job starts of the group at most per window.',
      'At most `max` job starts of one group in any sliding window of `per`, over every consumer. `null` clears it.',
    ),
    concurrency: {
      type: ['integer', 'null'],
      description: 'Jobs of one group active at once at most, over every consumer (1: one at a time, in order). `null` clears it.',
    },
  },
  description: 'A limit left out is kept as it is; `null` clears it.',
};

export const groupsQuery = {
  properties: {
    limit: {
      type: 'string',
      pattern: `^[0-9]{1,${String(MAX_LIST_LIMIT).length}}$`,
      description: `Page size, 1-${MAX_LIST_LIMIT}. Default 50.`,
    },
    cursor: {
      type: 'string',
      minLength: 1,
      maxLength: 1_000,
      description: 'The `nextCursor` of the previous page; the first page without it.',
    },
  },
};

export const listQuery = {
  properties: {
    state: { enum: JOB_STATES, description: "'completed': kept by the queue's retention, most recent first." },
    limit: {
      type: 'string',
      pattern: `^[0-9]{1,${String(MAX_LIST_LIMIT).length}}$`,
      description: `Page size, 1-${MAX_LIST_LIMIT}. Default 100.`,
    },
    cursor: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]{1,400}$',
      description: 'The `nextCursor` of the previous page; the first page without it.',
    },
  },
  required: ['state'],
};

export const timelineQuery = {
  properties: {
    bounds: {
      type: 'string',
      pattern: '^[0-9]{1,12}(,[0-9]{1,12}){0,99}$',
      description: 'Increasing window ends in ms from now, comma-separated. Default 60000,3600000,86400000.',
    },
  },
};

// --- answers (documentation; the tests check the answers against them) ---------------------------

const epochMs = { type: 'integer', description: 'Epoch milliseconds (Redis server clock).' };

/** The request header of the add routes that carries the caller's trace context into the jobs. */
export const traceparentHeader: JsonSchema = {
  type: 'string',
  description:
    "The caller's W3C trace context: stored with the jobs added, so that their handlers' spans join the caller's trace (README, \"OpenTelemetry\"). A malformed one is ignored.",
};

/** Set on a job that was added in a trace (README, "OpenTelemetry"). */
const traceparent: JsonSchema = {
  type: 'string',
  description:
    "The W3C traceparent stored with the job: the context of the producer's span (or of the add request's `traceparent` header). Absent for a job added outside any trace. A pull consumer continues the trace from it.",
};

/** Set on a job that is a tick of a recurring schedule. */
const jobSchedule: JsonSchema = {
  type: 'object',
  required: ['key', 'tickAt'],
  properties: {
    key: { type: 'string' },
    tickAt: { ...epochMs, description: 'The tick time the job runs for (it fell due then; a missed tick run by `catchUp` starts later).' },
  },
  description: "Set when the job is a tick of a recurring schedule: the schedule's key and the tick's time.",
};

/** A job's group in an answer. */
const jobGroup: JsonSchema = { type: 'string', description: 'The group the job was added to; absent: the default group (none given).' };

/** The fields of a group of `queue.listGroups()`: the compiler holds them to the library's GroupInfo. */
const groupInfoFields = {
  group: { type: 'string' },
  waiting: { type: 'integer', description: 'Jobs of the group waiting: delayed or ready.' },
  ready: { type: 'integer', description: 'Jobs of the group due now, not claimed (part of `waiting`).' },
  active: { type: 'integer', description: 'Jobs of the group claimed now.' },
  limited: { type: 'boolean', description: "Held back by the group's concurrency or rate limit right now." },
  paused: { type: 'boolean', description: 'Paused: none of its jobs is claimed until it is resumed.' },
} satisfies Record<keyof GroupInfo, JsonSchema>;

/** The fields of a rate or concurrency limit as answered (ms), shared by the queue's and the groups' limits. */
const rateLimit: JsonSchema = {
  type: 'object',
  required: ['max', 'per'],
  properties: { max: { type: 'integer' }, per: { type: 'integer', description: 'The window, ms.' } },
};

/** The fields of `queue.stats()`: the compiler holds them to the library's QueueStats, none missing, none extra. */
const statsFields = {
  delayed: { type: 'integer' },
  ready: { type: 'integer' },
  active: { type: 'integer' },
  dead: { type: 'integer' },
  paused: { type: 'boolean' },
  limited: { type: 'integer', description: "Due now but held back by the queue's rate or concurrency limit (part of `ready`)." },
  completed: { type: 'integer', description: 'Completed jobs kept by the retention.' },
} satisfies Record<keyof QueueStats, JsonSchema>;

/** The running totals of `queue.counters()`, held to the library's QueueCounters the same way. */
const counterFields = {
  added: { type: 'integer' },
  claimed: { type: 'integer' },
  completed: { type: 'integer' },
  retried: { type: 'integer' },
  dead: { type: 'integer' },
  reaped: { type: 'integer' },
  stale: { type: 'integer' },
  ticks: { type: 'integer' },
  ticksSkipped: { type: 'integer' },
  expired: { type: 'integer' },
} satisfies Record<keyof QueueCounters, JsonSchema>;

export const components: Record<string, JsonSchema> = {
  Error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: { enum: Object.keys(ERROR_CODES) }, message: { type: 'string' } },
      },
    },
  },
  JobInfo: {
    type: 'object',
    required: ['id', 'payload', 'state', 'dueAt', 'attempts'],
    properties: {
      id: { type: 'string' },
      payload: {},
      state: { enum: JOB_STATES },
      dueAt: epochMs,
      attempts: { type: 'integer' },
      maxAttempts: { type: 'integer' },
      leaseUntilAt: epochMs,
      deadAt: epochMs,
      lastError: { type: 'string' },
      schedule: jobSchedule,
      reason: {
        enum: ['failed', 'expired'],
        description: "While dead: 'failed' (out of attempts) or 'expired' (not started by its deadline).",
      },
      expiresAt: { ...epochMs, description: 'While waiting: the deadline by which it must start (`expireAfter`).' },
      finishedAt: { ...epochMs, description: 'While completed: when it completed.' },
      result: { description: "While completed: the handler's return value (JSON), or `{ resultTooLarge: true, bytes }`." },
      traceparent,
      group: jobGroup,
    },
  },
  PulledJob: {
    type: 'object',
    required: ['id', 'queue', 'payload', 'dueAt', 'attempt', 'maxAttempts', 'token', 'leaseUntilAt'],
    properties: {
      id: { type: 'string' },
      queue: { type: 'string' },
      payload: {},
      dueAt: epochMs,
      attempt: { type: 'integer', description: 'Which delivery this is, 1-based.' },
      maxAttempts: { type: 'integer' },
      token,
      leaseUntilAt: epochMs,
      schedule: jobSchedule,
      heldByLimit: {
        const: true,
        description:
          "Present (true) when the job fell due while the queue's rate or concurrency limit held claims back: its lateness is the limit's doing.",
      },
      traceparent,
      group: jobGroup,
    },
  },
  ScheduleInfo: {
    type: 'object',
    required: ['key', 'tz', 'payload', 'paused', 'nextAt', 'upcoming', 'lastTickAt', 'runs', 'skipped', 'overlap', 'catchUp', 'lastRun'],
    properties: {
      key: scheduleKey,
      cron: { type: 'string', description: 'The pattern, fields separated by single spaces (a cron schedule).' },
      every: { type: 'integer', description: 'The interval in ms (an `every` schedule).' },
      tz: { type: 'string', description: 'The canonical IANA name.' },
      payload: {},
      paused: { type: 'boolean' },
      nextAt: {
        type: ['integer', 'null'],
        description: 'The next tick (epoch ms); null while paused and once the schedule ended (`limit` or `endAt` reached).',
      },
      upcoming: {
        type: 'array',
        maxItems: 5,
        items: { type: 'integer' },
        description: 'The next (up to) 5 tick times, epoch ms, from `nextAt` on; empty when `nextAt` is null.',
      },
      lastTickAt: {
        type: ['integer', 'null'],
        description: 'The time of the last tick that started (its job was claimed); null before the first.',
      },
      runs: { type: 'integer', description: 'Ticks created so far (each one job).' },
      skipped: { type: 'integer', description: "Ticks skipped by `overlap: 'skip'`." },
      startAt: epochMs,
      endAt: epochMs,
      limit: { type: 'integer' },
      overlap: { enum: SCHEDULE_OVERLAPS },
      catchUp: { enum: SCHEDULE_CATCH_UPS },
      maxAttempts: { type: 'integer' },
      backoff,
      group: { type: 'string', description: "The group of every tick's job; absent: the default group." },
      lastRun: {
        type: ['object', 'null'],
        required: ['id', 'tickAt', 'state'],
        properties: {
          id: jobId,
          tickAt: epochMs,
          state: {
            enum: SCHEDULE_RUN_STATES,
            description: "'waiting': failed, to be retried; 'done': completed, or gone (a completed job is remembered 60 to 90 s).",
          },
        },
        description: 'The job of the last tick that started, and where it is now; null before the first start.',
      },
    },
  },
  QueueStats: { type: 'object', required: Object.keys(statsFields), properties: statsFields },
  QueueCounters: { type: 'object', required: Object.keys(counterFields), properties: counterFields },
  QueueLimits: {
    type: 'object',
    properties: {
      rate: rateLimit,
      concurrency: { type: 'integer' },
      expireAfter: { type: 'integer', description: 'The default deadline, ms.' },
    },
    description: 'Only the limits set are present.',
  },
  GroupLimits: {
    type: 'object',
    properties: { rate: rateLimit, concurrency: { type: 'integer' } },
    description: 'Only the limits set are present.',
  },
  GroupLimitsInfo: {
    type: 'object',
    required: ['source'],
    properties: {
      rate: rateLimit,
      concurrency: { type: 'integer' },
      source: {
        enum: ['group', 'default'],
        description: "'group': the group's own override is in force; 'default': the default of every group (`/group-limits`).",
      },
    },
    description: 'The limits in force (only those set are present), and where they come from.',
  },
  GroupInfo: { type: 'object', required: Object.keys(groupInfoFields), properties: groupInfoFields },
  Retention: {
    type: 'object',
    required: ['maxResultBytes'],
    properties: {
      completed: {
        type: 'object',
        properties: { count: { type: 'integer' }, age: { type: 'integer', description: 'ms' } },
        description: 'Absent: no completed job is kept.',
      },
      maxResultBytes: { type: 'integer' },
    },
  },
};

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

export const answers = {
  id: { type: 'object', required: ['id'], properties: { id: jobId } },
  ids: { type: 'object', required: ['ids'], properties: { ids: { type: 'array', items: jobId } } },
  job: ref('JobInfo'),
  jobs: {
    type: 'object',
    required: ['jobs', 'nextCursor'],
    properties: {
      jobs: { type: 'array', items: ref('JobInfo') },
      nextCursor: { type: ['string', 'null'], description: 'Pass it as `cursor` for the next page; null on the last page.' },
    },
  },
  claimed: { type: 'object', required: ['jobs'], properties: { jobs: { type: 'array', items: ref('PulledJob') } } },
  result: (...values: string[]): JsonSchema => ({ type: 'object', required: ['result'], properties: { result: { enum: values } } }),
  failed: {
    type: 'object',
    required: ['result'],
    properties: {
      result: { enum: ['retried', 'dead'] },
      retryAt: {
        ...epochMs,
        description: 'When the next attempt falls due (when retried; absent on a resent fail whose retry another claim has taken).',
      },
    },
  },
  extended: { type: 'object', required: ['result', 'leaseUntilAt'], properties: { result: { const: 'extended' }, leaseUntilAt: epochMs } },
  queues: {
    type: 'object',
    required: ['queues'],
    properties: {
      queues: {
        type: 'array',
        items: { type: 'object', required: ['name', 'stats'], properties: { name: queueName, stats: ref('QueueStats') } },
      },
    },
  },
  queue: {
    type: 'object',
    required: ['name', 'stats', 'counters'],
    properties: { name: queueName, stats: ref('QueueStats'), counters: ref('QueueCounters') },
  },
  timeline: {
    type: 'object',
    required: ['now', 'ready', 'buckets', 'later'],
    properties: {
      now: epochMs,
      ready: { type: 'integer', description: 'Due now, not yet claimed.' },
      buckets: {
        type: 'array',
        items: { type: 'object', required: ['untilMs', 'count'], properties: { untilMs: { type: 'integer' }, count: { type: 'integer' } } },
      },
      later: { type: 'integer', description: 'Due after the last bound.' },
    },
  },
  activity: {
    type: 'object',
    required: ['windowMs', 'stepMs', 'points'],
    properties: {
      windowMs: { type: 'integer' },
      stepMs: { type: 'integer' },
      points: {
        type: 'array',
        items: {
          type: 'object',
          required: ['at', 'delivered', 'failed', 'latenessP50Ms', 'latenessP99Ms'],
          properties: {
            at: { type: 'integer', description: "Start of the second, epoch ms (this process's clock)." },
            delivered: { type: 'integer', description: 'Jobs claimed by pull consumers or delivered by webhooks.' },
            failed: { type: 'integer', description: 'Attempts failed (pull fail, webhook failure).' },
            latenessP50Ms: { type: ['number', 'null'] },
            latenessP99Ms: { type: ['number', 'null'] },
          },
        },
      },
    },
  },
  moved: { type: 'object', required: ['moved'], properties: { moved: { type: 'integer' } } },
  deleted: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'integer' } } },
  paused: { type: 'object', required: ['paused'], properties: { paused: { type: 'boolean' } } },
  status: { type: 'object', required: ['status'], properties: { status: { type: 'string' } } },
  schedule: ref('ScheduleInfo'),
  limits: ref('QueueLimits'),
  retention: ref('Retention'),
  groupLimits: ref('GroupLimits'),
  groupLimitsInfo: ref('GroupLimitsInfo'),
  groups: {
    type: 'object',
    required: ['groups'],
    properties: {
      groups: { type: 'array', items: ref('GroupInfo'), description: 'Groups with waiting or running jobs, busiest (most jobs) first.' },
      nextCursor: { type: 'string', description: 'Pass it as `cursor` for the next page; absent on the last page.' },
    },
  },
  info: {
    type: 'object',
    required: ['version', 'prefix', 'redis', 'access'],
    properties: {
      access: {
        type: 'object',
        required: ['name', 'scopes', 'queues'],
        description: "What the caller's token may do: its name (null: the service has no token), scopes and queue patterns.",
        properties: {
          name: { type: ['string', 'null'] },
          scopes: {
            type: 'array',
            items: { enum: ['produce', 'consume', 'read', 'admin'] },
            description: 'Every scope it has; `admin` brings the three others.',
          },
          queues: { type: 'array', items: { type: 'string' }, description: 'Queue patterns (`*`: any characters); `["*"]`: every queue.' },
        },
      },
      version: { type: 'string', description: "sandglass's version." },
      prefix: { type: 'string', description: 'The prefix of the Redis keys the service reads and writes.' },
      redis: {
        type: 'object',
        required: ['mode', 'nodes', 'tls'],
        description: 'Which Redis: never a password or user name.',
        properties: {
          mode: { enum: ['single', 'cluster', 'sentinel'] },
          nodes: {
            type: 'array',
            items: { type: 'string' },
            description: '`host:port` or a socket path: the server (single), the startup nodes (cluster), the sentinels (sentinel).',
          },
          tls: { type: 'boolean' },
          db: { type: 'integer', description: 'The database number (single, sentinel).' },
          name: { type: 'string', description: "The master's name (sentinel)." },
        },
      },
    },
  },
  schedules: {
    type: 'object',
    required: ['schedules'],
    properties: { schedules: { type: 'array', items: ref('ScheduleInfo'), description: 'Sorted by key.' } },
  },
} satisfies Record<string, JsonSchema | ((...values: string[]) => JsonSchema)>;
