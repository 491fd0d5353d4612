import { decodeBackoff } from '../backoff.js';
import type { BackoffOption, Job } from '../types.js';

/** A job record as stored in the partition's `jobs` hash, decoded (see lua/lib.lua). */
export interface StoredJob {
  readonly id: string;
  /** Deliveries so far (a claim counts one). */
  readonly attempts: number;
  /** The fencing token of the current claim; '0' when not active. */
  readonly token: string;
  /** When the job fell due; only known while it is active or dead (a waiting job's is its `due` score). */
  readonly dueAt: number | undefined;
  readonly maxAttempts: number | undefined;
  readonly backoff: BackoffOption | undefined;
  readonly payloadJson: string;
}

const HEADER = /^(\d+),(\d+),(\d*),(\d*),([^\n]*)\n/;

export function decodeRecord(id: string, record: string): StoredJob {
  const match = HEADER.exec(record);
  if (!match) throw new Error(`Job ${id} has a malformed record`);
  const [header, attempts, token, dueAt, maxAttempts, backoff] = match as unknown as [string, string, string, string, string, string];
  return {
    id,
    attempts: Number(attempts),
    token,
    dueAt: dueAt === '' ? undefined : Number(dueAt),
    maxAttempts: maxAttempts === '' ? undefined : Number(maxAttempts),
    backoff: decodeBackoff(backoff),
    payloadJson: record.slice(header.length),
  };
}

/**
 * The `Job` fields of a claimed record, for a Worker's handler and a PullConsumer's caller alike.
 * `defaultMaxAttempts` is the consumer's, for jobs added without their own.
 */
export function claimedJobFields<T>(queue: string, stored: StoredJob, defaultMaxAttempts: number): Omit<Job<T>, 'signal'> {
  return {
    id: stored.id,
    queue,
    payload: JSON.parse(stored.payloadJson) as T,
    dueAt: stored.dueAt as number, // claim always copies the due score into the record
    attempt: stored.attempts,
    maxAttempts: stored.maxAttempts ?? defaultMaxAttempts,
  };
}
