// The lines of `sandglass import`: one JSON document per line. Pure, so it is unit-tested alone.
//
// Default format: each line is an envelope `{ "payload": ..., "delay"?, "at"?, "id"?, "maxAttempts"?, "group"? }`.
// An envelope was chosen over bare payloads because a dump usually needs per-job ids (so that running
// an import twice adds nothing twice) and due times. Unknown fields are refused, not ignored: a file
// of bare payload objects fed without --bare is then skipped line by line with a hint, instead of
// being imported as jobs whose payload is missing. With --bare, each line is the payload itself.
import { ValidationError, assertGroup, parseDuration, type BulkJob, type Duration } from '../index.js';
import { findChangedNumber } from '../deploy/json-text.js';
import { parseAt } from './input.js';

export type LineFormat = 'envelope' | 'bare';

/** Defaults from the command line, for lines that do not give their own due time. */
export interface LineDefaults {
  delay?: Duration;
  at?: number | Date;
}

export type ParsedLine = { job: BulkJob<unknown> } | { error: string } | { blank: true };

const ENVELOPE_FIELDS = new Set(['payload', 'delay', 'at', 'id', 'maxAttempts', 'group']);
/** The envelope, as the messages name it. */
const ENVELOPE = '{ "payload", "delay"?, "at"?, "id"?, "maxAttempts"?, "group"? }';

/** One line: a job, a reason to skip it, or a blank line (ignored, not counted). */
export function parseLine(text: string, format: LineFormat, defaults: LineDefaults = {}): ParsedLine {
  if (text.trim() === '') return { blank: true };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `not valid JSON (${(error as Error).message})` };
  }
  const changed = findChangedNumber(text, value);
  if (changed !== undefined) {
    const field = format === 'bare' ? `payload${changed.path}` : changed.path.replace(/^\./, '') || 'the line';
    return { error: `${field} ${changed.problem}` };
  }
  if (format === 'bare') return { job: { payload: value, ...defaults } as BulkJob<unknown> };
  try {
    return { job: toJob(value, defaults) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function toJob(value: unknown, defaults: LineDefaults): BulkJob<unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(
      `expected an object ${ENVELOPE.replace('"payload"', '"payload": ...')} (use --bare for lines that are payloads)`,
    );
  }
  const fields = value as Record<string, unknown>;
  const unknown = Object.keys(fields).find(key => !ENVELOPE_FIELDS.has(key));
  if (unknown !== undefined)
    throw new ValidationError(`unknown field '${unknown}': a line is ${ENVELOPE} (use --bare for lines that are payloads)`);
  if (!Object.hasOwn(fields, 'payload')) throw new ValidationError('missing "payload"');
  const { payload, delay, at, id, maxAttempts, group } = fields;
  // Loose while it is built; `delay` and `at` were checked exclusive above.
  const job: { payload: unknown; delay?: Duration; at?: number | Date; id?: string; maxAttempts?: number; group?: string } = { payload };
  if (delay !== undefined && at !== undefined) throw new ValidationError('give "delay" or "at", not both');
  if (delay !== undefined) job.delay = toDelay(delay);
  else if (at !== undefined) job.at = toAt(at);
  else Object.assign(job, defaults);
  if (id !== undefined) {
    if (typeof id !== 'string') throw new ValidationError(`"id" must be a string, got ${JSON.stringify(id)}`);
    job.id = id;
  }
  if (maxAttempts !== undefined) {
    if (typeof maxAttempts !== 'number' || !Number.isInteger(maxAttempts))
      throw new ValidationError(`"maxAttempts" must be an integer, got ${JSON.stringify(maxAttempts)}`);
    job.maxAttempts = maxAttempts;
  }
  // The library's own group rule, here so that a bad group costs its line alone and no round trip.
  if (group !== undefined) job.group = assertGroup(group);
  return job as BulkJob<unknown>;
}

/** Checked here rather than only by the library, so that the common mistake costs no extra round trip. */
function toDelay(delay: unknown): Duration {
  if (typeof delay === 'number' && Number.isFinite(delay) && delay >= 0) return delay;
  if (typeof delay === 'string') {
    try {
      parseDuration(delay);
      return delay as Duration;
    } catch {
      throw new ValidationError(`invalid "delay" ${JSON.stringify(delay)}: expected milliseconds or a duration like '30m'`);
    }
  }
  throw new ValidationError(`invalid "delay" ${JSON.stringify(delay)}: expected milliseconds >= 0 or a duration like '30m'`);
}

function toAt(at: unknown): number | Date {
  if (typeof at === 'number' && Number.isFinite(at) && at >= 0) return at;
  if (typeof at === 'string') return parseAt(at, '"at"');
  throw new ValidationError(`invalid "at" ${JSON.stringify(at)}: expected epoch milliseconds or an ISO 8601 date`);
}
