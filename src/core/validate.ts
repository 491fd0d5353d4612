import { parseDuration } from './duration.js';
import { PayloadTooLargeError, ValidationError } from './errors.js';
import { findBigInt, findNonFiniteNumber, findUnsafeIntegerLiteral, UNSAFE_INTEGER } from './json-numbers.js';
import { normalizeTraceparent } from './traceparent.js';
import {
  IF_EXISTS_VALUES,
  JOB_STATES,
  ON_EXPIRE_VALUES,
  type BackoffOption,
  type IfExists,
  type JobState,
  type OnExpire,
} from './types.js';

/** The longest delay accepted: ten years. Anything larger is almost surely a unit mistake. */
export const MAX_DELAY_MS = 10 * 365 * 86_400_000;
/** @default 256 KiB */
export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;
/** The most attempts `maxAttempts` may allow: of a job, of a schedule's ticks, of a Worker's or PullConsumer's default. */
export const MAX_ATTEMPTS = 1_000_000;
/** The largest page of a listing: the most `limit` of `queue.list` (and `listDead`) may ask for. */
export const MAX_LIST_LIMIT = 1_000;

/**
 * The longest failure text kept as a job's `lastError`, in characters: `consumer.fail` cuts a
 * longer `error` to it, a Worker cuts a longer error's stack to it (marking the cut with `...`),
 * and the HTTP API's fail refuses a longer `error` (400 VALIDATION).
 */
export const MAX_ERROR_LENGTH = 4_096;

const MAX_QUEUE_NAME_LENGTH = 100;

/**
 * The rule for queue names (and key prefixes), in one place: the library, the HTTP API's schemas,
 * the service's settings, webhook bindings and the dashboard's form (served the pattern by the
 * service) all use it. Names become part of Redis keys, channel names and URLs, so they keep to a
 * safe alphabet and keep out `{`, `}` (hash tags) and `:` (key separators).
 */
export const QUEUE_NAME_RULE = {
  /** A regular expression source, valid as it is in JavaScript (any flags), JSON Schema and an HTML `pattern` attribute. */
  pattern: `^[A-Za-z0-9][A-Za-z0-9._\\-]{0,${MAX_QUEUE_NAME_LENGTH - 1}}$`,
  maxLength: MAX_QUEUE_NAME_LENGTH,
  description: `1-${MAX_QUEUE_NAME_LENGTH} characters from A-Z a-z 0-9 . _ - (starting with a letter or digit)`,
} as const;
const QUEUE_NAME = new RegExp(QUEUE_NAME_RULE.pattern);

/** Whether `name` follows {@link QUEUE_NAME_RULE}. */
export function isQueueName(name: unknown): name is string {
  return typeof name === 'string' && QUEUE_NAME.test(name);
}
// Ids are hash fields and set members, never key names, so any printable text is safe.
// eslint-disable-next-line no-control-regex
export const CONTROL = /[\u0000-\u001f\u007f]/;

const MAX_JOB_ID_LENGTH = 200;

/**
 * The rule for job ids, in one place: the library's check and the HTTP API's schema both read it. Ids are hash fields and set members, never part of a key name, so any text
 * without control characters is safe.
 */
export const JOB_ID_RULE = {
  /** A regular expression source, valid as it is in JavaScript (any flags) and JSON Schema: no control character. */
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
  minLength: 1,
  /** Counted as a JavaScript string's `length` (UTF-16 code units) by the library, whose check has the last word. */
  maxLength: MAX_JOB_ID_LENGTH,
  description: `1-${MAX_JOB_ID_LENGTH} characters without control characters`,
} as const;
const JOB_ID = new RegExp(JOB_ID_RULE.pattern);

/** The longest group name (`queue.add(payload, { group })`). */
export const MAX_GROUP_LENGTH = 100;

/**
 * The rule for group names, in one place: the library's check and the HTTP API's schema both read
 * it. A group's name is part of key names (after the partition's hash tag, so it never moves a key
 * to another Cluster slot); no control character, as in ids.
 */
export const GROUP_RULE = {
  /** A regular expression source, valid as it is in JavaScript and JSON Schema: no control character. */
  pattern: JOB_ID_RULE.pattern,
  minLength: 1,
  /** Counted as a JavaScript string's `length` (UTF-16 code units). */
  maxLength: MAX_GROUP_LENGTH,
  description: `1-${MAX_GROUP_LENGTH} characters without control characters`,
} as const;

/**
 * Checks a group name against {@link GROUP_RULE} and returns it. `name`: the option the message names.
 * @throws {ValidationError} naming `name` and what is allowed.
 */
export function assertGroup(group: unknown, name = 'group'): string {
  if (typeof group !== 'string' || group.length > GROUP_RULE.maxLength || !JOB_ID.test(group)) {
    throw new ValidationError(`Expected \`${name}\` to be a group name of ${GROUP_RULE.description}, got ${describe(group)}`);
  }
  return group;
}

export function assertQueueName(name: unknown): asserts name is string {
  if (!isQueueName(name)) throw new ValidationError(`Expected a queue name of ${QUEUE_NAME_RULE.description}, got ${describe(name)}`);
}

/** Throws {@link ValidationError} unless `id` follows {@link JOB_ID_RULE}. */
export function assertJobId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.length > JOB_ID_RULE.maxLength || !JOB_ID.test(id)) {
    throw new ValidationError(`Expected a job id of ${JOB_ID_RULE.description}, got ${describe(id)}`);
  }
}

/** Throws {@link ValidationError} unless `state` is one of {@link JOB_STATES} (the `state` of `queue.list`). */
export function assertJobState(state: unknown): asserts state is JobState {
  if (!(JOB_STATES as readonly unknown[]).includes(state))
    throw new ValidationError(`Expected \`state\` to be ${choices(JOB_STATES)}, got ${String(state)}`);
}

/** A list of choices as a message quotes them: `'a', 'b' or 'c'`. */
function choices(values: readonly string[]): string {
  const quoted = values.map(value => `'${value}'`);
  return quoted.length < 2 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
}

/**
 * Throws {@link ValidationError} unless `value` is an integer from `min` to `max` (at most
 * `Number.MAX_SAFE_INTEGER`, so NaN, Infinity, fractions and unsafe integers are all refused), with
 * the message every sandglass option uses: ``Expected `name` to be an integer from min to max, got ...``.
 */
export function assertInteger(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ValidationError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
}

/**
 * Throws {@link ValidationError} unless `options` is undefined or a plain object whose keys are all
 * in `known`: a misspelled option (`dealy`) or one of a later version must not be ignored silently.
 */
export function assertOptions(where: string, options: unknown, known: readonly string[]): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(`Expected the options of ${where} to be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new ValidationError(`Unknown option \`${key.slice(0, 60)}\` of ${where} (known: ${known.join(', ')})`);
  }
}

/** When a job falls due: either `delayMs` from the server's now, or the absolute `atMs`. */
export type Due = { delayMs: number } | { atMs: number };

/**
 * The due time of an add or reschedule. `at` may be in the past (due at once) but not more than
 * {@link MAX_DELAY_MS} ahead of `nowMs`, which also keeps it inside the range of a Date and of a
 * safe integer; a fractional `at` or `delay` is rounded up (never early).
 */
export function toDue(options: { delay?: unknown; at?: unknown }, nowMs: number): Due {
  const { delay, at } = options;
  if (delay !== undefined && at !== undefined) throw new ValidationError('Give either `delay` or `at`, not both');
  if (at !== undefined) {
    const atMs = at instanceof Date ? at.getTime() : at;
    if (typeof atMs !== 'number' || !Number.isFinite(atMs) || atMs < 0) {
      throw new ValidationError(`Expected \`at\` to be a valid Date or epoch milliseconds >= 0, got ${describe(at)}`);
    }
    // Compared as numbers and quoted as numbers: a Date built from atMs could be out of range.
    if (atMs > nowMs + MAX_DELAY_MS)
      throw new ValidationError(`\`at\` of ${atMs} is more than 10 years away (at most ${nowMs + MAX_DELAY_MS} now)`);
    return { atMs: Math.ceil(atMs) };
  }
  return { delayMs: toDelayMs(delay ?? 0, 'delay') };
}

/** Milliseconds from a delay option: a number of ms, or a duration text ({@link parseDuration}). */
export function toDelayMs(delay: unknown, name: string): number {
  let ms = delay;
  if (typeof delay === 'string') {
    try {
      ms = parseDuration(delay);
    } catch (error) {
      // The parser's message says what a duration looks like; this one also says which option it was.
      throw new ValidationError(`\`${name}\`: ${(error as Error).message}`);
    }
  }
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new ValidationError(`Expected \`${name}\` to be milliseconds >= 0 or a duration like '30m', got ${describe(delay)}`);
  }
  if (ms > MAX_DELAY_MS) throw new ValidationError(`\`${name}\` of ${ms} ms is more than 10 years (${MAX_DELAY_MS} ms)`);
  return Math.ceil(ms);
}

/**
 * A deadline (`expireAfter`, of a job or the queue's default in `setLimits`): milliseconds or a duration text, from 1 ms to
 * {@link MAX_DELAY_MS}; a fraction is rounded up (a deadline is never shorter than asked).
 */
export function toExpireAfterMs(value: unknown, name = 'expireAfter'): number {
  const ms = toDelayMs(value, name);
  if (ms < 1) throw new ValidationError(`Expected \`${name}\` to be at least 1 ms, got ${describe(value)}`);
  return ms;
}

/** What an expired job becomes (`onExpire`): dead-lettered or dropped, one of {@link ON_EXPIRE_VALUES}. */
export function assertOnExpire(value: unknown, name = 'onExpire'): asserts value is OnExpire {
  if (!(ON_EXPIRE_VALUES as readonly unknown[]).includes(value))
    throw new ValidationError(`Expected \`${name}\` to be ${choices(ON_EXPIRE_VALUES)}, got ${describe(value)}`);
}

/** What adding an existing id does (`ifExists` of `queue.add` and `addBulk`): one of {@link IF_EXISTS_VALUES}. */
export function assertIfExists(value: unknown): asserts value is IfExists {
  if (!(IF_EXISTS_VALUES as readonly unknown[]).includes(value))
    throw new ValidationError(`Expected \`ifExists\` to be ${choices(IF_EXISTS_VALUES)}, got ${String(value)}`);
}

/**
 * A job's explicit trace context (`traceparent` of `add`): a W3C `traceparent` (traceparent.ts),
 * returned in the version-00 form it is stored in. A malformed one is refused here, before anything
 * is written (the HTTP service, where the value comes from a request header, ignores a malformed one
 * instead, as the W3C specification asks of a receiver).
 */
export function toTraceparent(value: unknown, name = 'traceparent'): string {
  const normalized = normalizeTraceparent(value);
  if (normalized === undefined) {
    throw new ValidationError(
      `Expected \`${name}\` to be a W3C traceparent such as '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', got ${describe(value)}`,
    );
  }
  return normalized;
}

/**
 * Serializes a payload, refusing what JSON cannot carry ({@link toJson}) and what is over the size
 * limit. `root` names the payload in messages (`payload`, `jobs[3].payload` in a bulk add).
 */
export function serializePayload(payload: unknown, maxBytes: number, root = 'payload'): string {
  const json = toJson(payload, root, 'Payload is not JSON-serializable');
  if (json === undefined) throw new ValidationError(`Payload is not JSON-serializable: got ${describe(payload)}`);
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) throw new PayloadTooLargeError(bytes, maxBytes);
  return json;
}

/**
 * `JSON.stringify(value)` (undefined for what JSON has no text for: undefined, a function, a
 * symbol), refusing with a {@link ValidationError} that names the path from `root` what the JSON
 * would not keep as it is, so that a job's data is never changed silently:
 * - a BigInt, a cycle, a throwing `toJSON` (JSON.stringify throws);
 * - NaN and ±Infinity (JSON.stringify writes them as `null`);
 * - an integer beyond ±(2^53 - 1): JSON.stringify writes any number from 2^53 to 1e21 as digits
 *   (`9007199254740992`, `12345678901234567000`), which another reader takes for an exact integer
 *   although it is a rounded double; the caller sends such an id as a string. From 1e21 on, numbers
 *   are written with an exponent (`1e+21`), as doubles, and kept.
 * The HTTP service applies the same integer rule to the text of a request ({@link findUnsafeIntegerLiteral}).
 */
export function toJson(value: unknown, root: string, what = `\`${root}\` is not JSON-serializable`): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    const bigint = findBigInt(value);
    if (bigint !== undefined)
      throw new ValidationError(`${what}: ${root}${bigint} is a BigInt, which JSON cannot carry: send it as a string`);
    throw new ValidationError(`${what}: ${(error as Error).message}`);
  }
  if (json === undefined) return undefined;
  // Only JSON that holds a null can hold a NaN or ±Infinity, so common values skip the walk.
  if (json.includes('null')) {
    const path = findNonFiniteNumber(value);
    if (path !== undefined) throw new ValidationError(`${what}: ${root}${path} is a number JSON cannot carry (NaN or ±Infinity)`);
  }
  const unsafe = findUnsafeIntegerLiteral(json);
  if (unsafe !== undefined) throw new ValidationError(`${what}: ${root}${unsafe} ${UNSAFE_INTEGER}`);
  return json;
}

export function assertBackoff(backoff: unknown, name = 'backoff'): asserts backoff is BackoffOption {
  const b = backoff as { type?: unknown; delayMs?: unknown; maxDelayMs?: unknown; jitter?: unknown } | null;
  if (typeof b !== 'object' || b === null || (b.type !== 'fixed' && b.type !== 'exponential')) {
    throw new ValidationError(`Expected \`${name}\` to be { type: 'fixed' | 'exponential', delayMs }, got ${describe(backoff)}`);
  }
  assertOptions(`\`${name}\``, b, b.type === 'fixed' ? ['type', 'delayMs'] : ['type', 'delayMs', 'maxDelayMs', 'jitter']);
  assertInteger(`${name}.delayMs`, b.delayMs, 0, MAX_DELAY_MS);
  if (b.maxDelayMs !== undefined) assertInteger(`${name}.maxDelayMs`, b.maxDelayMs, 0, MAX_DELAY_MS);
  if (b.jitter !== undefined && (typeof b.jitter !== 'number' || !(b.jitter >= 0 && b.jitter <= 1))) {
    throw new ValidationError(`Expected \`${name}.jitter\` to be a number from 0 to 1, got ${describe(b.jitter)}`);
  }
}

/**
 * A value quoted in an error message, the one rule for every surface (library, HTTP, CLI, the
 * tokens file): a string in quotes, JSON-escaped (a newline shows as \n) and cut at 60 characters,
 * with its length (`withLength`, or always when it was cut); other values by kind. Never throws
 * (no Date formatting).
 */
export function describe(value: unknown, withLength = true): string {
  if (typeof value === 'string') {
    const long = value.length > 60;
    const text = JSON.stringify(long ? value.slice(0, 60) : value).slice(1, -1);
    return `'${text}${long ? '...' : ''}'${withLength || long ? ` (${value.length} characters)` : ''}`;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (value instanceof Date) return `Date(${value.getTime()})`; // getTime, never toISOString: it throws out of range
  return Array.isArray(value) ? 'an array' : `an object`;
}
