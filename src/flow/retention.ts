/**
 * The rules of keeping completed jobs (`queue.setRetention`), in one place: what `setRetention`
 * accepts, the form stored in every partition's `meta` (field `retain`, lua/includes/retention.lua),
 * and the JSON kept of a handler's result. The scripts enforce the stored retention (ack keeps and
 * trims, the reads hide what is older than `age`); this module only speaks for the client side.
 */
import { ValidationError } from '../core/errors.js';
import type { Retention, RetentionInput } from '../core/types.js';
import { assertInteger, assertOptions, describe, toDelayMs, toJson } from '../core/validate.js';

/** The largest result JSON kept by default, bytes (64 KiB). */
export const DEFAULT_MAX_RESULT_BYTES = 65_536;
/** Completed jobs a queue keeps at most per partition: `completed.count` is 1 to this. */
export const MAX_KEPT_COUNT = 1_000_000;
/** The largest `maxResultBytes` accepted (16 MiB): a kept result lives in Redis memory. */
export const MAX_RESULT_BYTES = 16 * 1024 * 1024;

/** What a queue that never called `setRetention` has: no completed job kept. */
export const NO_RETENTION: Retention = { maxResultBytes: DEFAULT_MAX_RESULT_BYTES };

/**
 * The retention after `input` is applied to `current`: a field left out stays as it is,
 * `completed: null` keeps none again.
 *
 * @throws {ValidationError} naming the option: an unknown field, `completed` without `count` and
 *   `age`, a `count` outside 1-1,000,000, an `age` that is not a duration of 1 ms to 10 years, a
 *   `maxResultBytes` outside 1-16 MiB.
 */
export function mergeRetention(current: Retention, input: RetentionInput): Retention {
  if (input === undefined || input === null)
    throw new ValidationError(`Expected the retention to be an object such as { completed: { count: 1000 } }, got ${describe(input)}`);
  assertOptions('queue.setRetention', input, ['completed', 'maxResultBytes']);
  const next: Retention = { ...current };
  if (input.maxResultBytes !== undefined) {
    assertInteger('maxResultBytes', input.maxResultBytes, 1, MAX_RESULT_BYTES);
    next.maxResultBytes = input.maxResultBytes;
  }
  const completed = input.completed;
  if (completed === null) {
    delete next.completed;
  } else if (completed !== undefined) {
    assertOptions('`completed`', completed, ['count', 'age']);
    if (completed.count === undefined && completed.age === undefined) {
      throw new ValidationError('Expected `completed` to have `count`, `age` or both (or to be null to keep no completed jobs)');
    }
    const kept: { count?: number; age?: number } = {};
    if (completed.count !== undefined) {
      assertInteger('completed.count', completed.count, 1, MAX_KEPT_COUNT);
      kept.count = completed.count;
    }
    if (completed.age !== undefined) {
      const age = toDelayMs(completed.age, 'completed.age');
      if (age < 1) throw new ValidationError(`Expected \`completed.age\` to be at least 1 ms, got ${describe(completed.age)}`);
      kept.age = age;
    }
    next.completed = kept;
  }
  return next;
}

/**
 * The `meta` field `retain` of each of a queue's `partitions`:
 * "<share>,<ageMs>,<maxResultBytes>,<count>", count and age '' when not set. A partition keeps its
 * share of the count, ceil(count / partitions): the queue keeps the newest of each partition,
 * about `count` in all (at most `count + partitions - 1`), without a script reading another partition.
 */
export function encodeRetention(retention: Retention, partitions: number): string {
  const { completed, maxResultBytes } = retention;
  const count = completed?.count;
  return `${count === undefined ? '' : Math.ceil(count / partitions)},${completed?.age ?? ''},${maxResultBytes},${count ?? ''}`;
}

/** The retention of a stored `retain` field ('' or malformed: none). */
export function decodeRetention(value: string): Retention {
  const match = /^\d*,(\d*),(\d+),(\d*)$/.exec(value);
  if (!match) return NO_RETENTION;
  const [, age, maxResultBytes, count] = match as unknown as [string, string, string, string];
  const retention: Retention = { maxResultBytes: Number(maxResultBytes) };
  if (count !== '' || age !== '') {
    retention.completed = {};
    if (count !== '') retention.completed.count = Number(count);
    if (age !== '') retention.completed.age = Number(age);
  }
  return retention;
}

/**
 * The JSON kept of a result: '' for none (`undefined`, or what JSON cannot hold at all: a function,
 * a symbol), the marker `{ resultTooLarge: true, bytes }` (src/core/types.ts ResultTooLarge; ack.lua
 * writes the same) for JSON over `maxBytes`. A value JSON would not keep as it is (a BigInt, a cycle,
 * a throwing toJSON, NaN, an integer beyond 2^53: validate.ts toJson) keeps none either, and says
 * why in `notJson`. The job completes either way.
 */
export function keptResultJson(value: unknown, maxBytes: number): { json: string; tooLargeBytes?: number; notJson?: string } {
  if (value === undefined) return { json: '' };
  let json: string | undefined;
  try {
    json = toJson(value, 'result');
  } catch (error) {
    return { json: '', notJson: error instanceof Error ? error.message : String(error) };
  }
  return json === undefined ? { json: '' } : cappedResultJson(json, maxBytes);
}

/** The JSON kept of a result whose JSON is `json`: itself, or the too-large marker over `maxBytes`. */
export function cappedResultJson(json: string, maxBytes: number): { json: string; tooLargeBytes?: number } {
  // A UTF-16 unit is at most 3 bytes of UTF-8: short JSON needs no count.
  if (json.length * 3 <= maxBytes) return { json };
  const bytes = Buffer.byteLength(json);
  if (bytes <= maxBytes) return { json };
  return { json: `{"resultTooLarge":true,"bytes":${bytes}}`, tooLargeBytes: bytes };
}
