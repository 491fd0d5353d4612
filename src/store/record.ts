import { decodeBackoff } from '../backoff.js';
import type { BackoffOption } from '../types.js';

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
