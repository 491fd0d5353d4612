import { encodeBackoff } from '../core/backoff.js';
import { newJobId } from '../core/ids.js';
import type { EncodedJob } from '../store/partition-storage.js';
import { ValidationError } from '../core/errors.js';
import type { AddOptions, BulkJob } from '../core/types.js';
import {
  MAX_ATTEMPTS,
  assertBackoff,
  assertGroup,
  assertInteger,
  assertJobId,
  assertOnExpire,
  assertOptions,
  serializePayload,
  toDue,
  toExpireAfterMs,
  toTraceparent,
} from '../core/validate.js';

/** Option names, refused when unknown: a misspelled `dealy` must not add a job due at once. */
const ADD_OPTIONS = ['delay', 'at', 'id', 'ifExists', 'maxAttempts', 'backoff', 'expireAfter', 'onExpire', 'traceparent', 'group'];
const BULK_FIELDS = ['payload', 'delay', 'at', 'id', 'maxAttempts', 'backoff', 'expireAfter', 'onExpire', 'traceparent', 'group'];

/** The job of `queue.add(payload, options)`, encoded, and its `ifExists` (checked by the write). */
export function encodeAdd<T>(payload: T, options: AddOptions, maxPayloadBytes: number): { job: EncodedJob; ifExists: unknown } {
  assertOptions('queue.add', options, ADD_OPTIONS);
  const { ifExists = 'keep', ...rest } = options ?? {};
  return { job: encodeJob({ ...rest, payload } as BulkJob<T>, maxPayloadBytes), ifExists };
}

/** The jobs of `queue.addBulk`, every entry checked and encoded before anything is written. */
export function encodeBulk<T>(jobs: readonly BulkJob<T>[], maxPayloadBytes: number): EncodedJob[] {
  if (!Array.isArray(jobs)) throw new ValidationError('Expected `jobs` to be an array');
  return jobs.map((job: unknown, index) => {
    if (typeof job === 'object' && job !== null && Object.hasOwn(job, 'ifExists')) {
      throw new ValidationError(
        `\`jobs[${index}].ifExists\` is not an option of one entry: give it for the whole call, addBulk(jobs, 'replace')`,
      );
    }
    assertOptions(`queue.addBulk (jobs[${index}])`, job, BULK_FIELDS);
    try {
      return encodeJob(job as BulkJob<T>, maxPayloadBytes, `jobs[${index}].payload`);
    } catch (error) {
      // Which entry of a thousand was refused: the field checks name the field, this names the entry.
      const entry = `jobs[${index}]`;
      if (!(error instanceof ValidationError) || error.message.includes(entry)) throw error;
      throw new ValidationError(`In ${entry}: ${error.message}`, { cause: error });
    }
  });
}

/**
 * A job of `queue.add` or `addBulk`, validated and encoded for the storage (due time on this
 * process's clock, payload as JSON within `maxPayloadBytes`). `payloadName`: the payload as
 * refusals name it (`jobs[3].payload` in a bulk add).
 */
export function encodeJob<T>(job: BulkJob<T>, maxPayloadBytes: number, payloadName = 'payload'): EncodedJob {
  if (job.id !== undefined) assertJobId(job.id);
  if (job.maxAttempts !== undefined) assertInteger('maxAttempts', job.maxAttempts, 1, MAX_ATTEMPTS);
  if (job.backoff !== undefined) assertBackoff(job.backoff);
  if (job.onExpire !== undefined) assertOnExpire(job.onExpire);
  const group =
    job.group === undefined
      ? undefined
      : assertGroup(job.group, payloadName === 'payload' ? 'group' : payloadName.replace(/payload$/, 'group'));
  return {
    id: job.id ?? newJobId(),
    due: toDue(job, Date.now()),
    maxAttempts: job.maxAttempts === undefined ? '' : String(job.maxAttempts),
    backoff: encodeBackoff(job.backoff),
    payloadJson: serializePayload(job.payload, maxPayloadBytes, payloadName),
    expireAfterMs: job.expireAfter === undefined ? undefined : toExpireAfterMs(job.expireAfter),
    dropOnExpire: job.onExpire === 'drop',
    // The explicit parent for now; the Queue sets what the job stores once its send span started.
    traceparent: job.traceparent === undefined ? undefined : toTraceparent(job.traceparent),
    group,
  };
}
