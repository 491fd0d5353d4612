import { tickOfJob } from '../store/tick-ids.js';
import type { JobSnapshot } from '../store/partition-storage.js';
import type { JobInfo } from '../core/types.js';

/** A job as `queue.get` and `queue.list` show it: a stored snapshot, its payload and result parsed. */
export function toJobInfo<T>({
  job,
  state,
  dueAt,
  leaseUntil,
  deadAt,
  reason,
  expiresAt,
  finishedAt,
  resultJson,
  lastError,
}: JobSnapshot): JobInfo<T> {
  const info: JobInfo<T> = { id: job.id, payload: JSON.parse(job.payloadJson) as T, state, dueAt, attempts: job.attempts };
  if (leaseUntil !== undefined) info.leaseUntilAt = leaseUntil;
  if (deadAt !== undefined) info.deadAt = deadAt;
  if (reason !== undefined) info.reason = reason;
  if (expiresAt !== undefined) info.expiresAt = expiresAt;
  if (finishedAt !== undefined) info.finishedAt = finishedAt;
  if (resultJson) info.result = JSON.parse(resultJson);
  if (job.maxAttempts !== undefined) info.maxAttempts = job.maxAttempts;
  if (lastError !== undefined) info.lastError = lastError;
  if (job.tickAt !== undefined) info.schedule = tickOfJob(job.id, job.tickAt);
  if (job.traceparent !== undefined) info.traceparent = job.traceparent;
  if (job.group !== undefined) info.group = job.group;
  return info;
}
