// One BullMQ job (its hash) as a sandglass job, or the reason it is not moved.
import type { BackoffOption, BulkJob } from '../core/types.js';
import { MAX_ATTEMPTS } from '../core/validate.js';
import { dueOfDelayedScore } from './bullmq-layout.js';

/** The fields of a BullMQ job hash a migration reads, in this order (one HMGET per job). */
export const JOB_FIELDS = [
  'data',
  'opts',
  'timestamp',
  'delay',
  'atm',
  'attemptsMade',
  'parentKey',
  'parent',
  'rjk',
  'repeatJobKey',
] as const;

/** Where a job was found: it decides its due time. */
export type BullMQSource = 'delayed' | 'prioritized' | 'wait' | 'paused';

/** A BullMQ job mapped: the sandglass job to add, or why it is skipped. */
export type MappedJob = { readonly job: BulkJob<unknown> } | { readonly skip: string };

interface BullMQOpts {
  attempts?: unknown;
  backoff?: unknown;
  repeat?: { every?: unknown; pattern?: unknown } | undefined;
}

/**
 * Maps one BullMQ job. `fields` are the values of {@link JOB_FIELDS} (null for a missing field; all
 * null when the hash is gone). `score` is its score in the delayed ZSET, for a delayed job.
 */
export function mapBullMQJob(id: string, fields: readonly (string | null)[], source: BullMQSource, score: number | undefined): MappedJob {
  const [data, optsText, timestamp, delay, atm, attemptsMade, parentKey, parent, rjk, repeatJobKey] = fields;
  if (fields.every(value => value === null)) return { skip: 'gone: its hash was deleted while the migration ran' };
  const opts = parseOpts(optsText ?? null);
  const repeatKey = rjk ?? repeatJobKey;
  if (repeatKey) return { skip: repeatableReason(repeatKey, opts) };
  if (parentKey || parent) {
    return {
      skip: `part of a flow (child of ${parentKey ?? 'a parent job'}): sandglass has no flows; add it yourself where its parent's logic runs`,
    };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(data ?? '{}');
  } catch {
    return { skip: 'its data is not JSON' };
  }
  const made = Number(atm ?? attemptsMade ?? 0) || 0;
  const attempts = typeof opts.attempts === 'number' && Number.isInteger(opts.attempts) && opts.attempts > 0 ? opts.attempts : 1;
  // The attempts BullMQ had left: a job that failed twice of five gets three more in sandglass.
  const maxAttempts = Math.min(MAX_ATTEMPTS, Math.max(1, attempts - made));
  const job: { -readonly [K in keyof BulkJob<unknown>]: BulkJob<unknown>[K] } = { id, payload, maxAttempts };
  const backoff = mapBackoff(opts.backoff);
  if (backoff) job.backoff = backoff;
  if (source === 'delayed') {
    const due = score !== undefined && Number.isFinite(score) ? dueOfDelayedScore(score) : Number(timestamp) + (Number(delay) || 0);
    if (Number.isFinite(due)) job.at = due;
  }
  return { job: job as BulkJob<unknown> };
}

function parseOpts(text: string | null): BullMQOpts {
  if (text === null) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? (parsed as BullMQOpts) : {};
  } catch {
    return {};
  }
}

/** BullMQ's backoff (`5000`, `{ type, delay, jitter? }`) as sandglass's; a custom strategy gives undefined (the worker's own). */
export function mapBackoff(backoff: unknown): BackoffOption | undefined {
  if (typeof backoff === 'number') return backoff >= 0 ? { type: 'fixed', delayMs: Math.round(backoff) } : undefined;
  if (typeof backoff !== 'object' || backoff === null) return undefined;
  const { type, delay, jitter } = backoff as { type?: unknown; delay?: unknown; jitter?: unknown };
  if (typeof delay !== 'number' || !(delay >= 0)) return undefined;
  const delayMs = Math.round(delay);
  if (type === 'fixed') return { type: 'fixed', delayMs };
  if (type !== 'exponential') return undefined;
  return typeof jitter === 'number' && jitter > 0 && jitter <= 1
    ? { type: 'exponential', delayMs, jitter }
    : { type: 'exponential', delayMs };
}

/** The skip reason of a repeatable job: what to call instead, with its every / pattern when BullMQ stored them. */
function repeatableReason(repeatKey: string, opts: BullMQOpts): string {
  const every = opts.repeat?.every;
  const pattern = opts.repeat?.pattern;
  const spec =
    typeof every === 'number'
      ? `{ every: ${every} }`
      : typeof pattern === 'string'
        ? `{ cron: ${JSON.stringify(pattern)} }`
        : '{ every: <ms> } or { cron: <pattern> }';
  return `repeatable (repeat key ${repeatKey}): recreate it as a sandglass schedule, queue.schedule(${JSON.stringify(scheduleKeyOf(repeatKey))}, ${spec})`;
}

/** A schedule key for a BullMQ repeat key: its first part (the scheduler id or job name). */
function scheduleKeyOf(repeatKey: string): string {
  const first = repeatKey.split(':')[0] ?? repeatKey;
  return first.length > 0 ? first : repeatKey;
}
