import { decodeBackoff } from '../backoff.js';
import type { BackoffOption, Job } from '../types.js';

/** A job record as stored in the partition's `jobs` hash, decoded (see lua/lib.lua). */
export interface StoredJob {
  readonly id: string;
  /** Deliveries so far (a claim counts one). */
  readonly attempts: number;
  /** The fencing token of the current claim (its lease, lua/lib.lua); '0' when not active. */
  readonly token: string;
  /** When the job fell due; only known while it is active or dead (a waiting job's is its `due` score). */
  readonly dueAt: number | undefined;
  readonly maxAttempts: number | undefined;
  readonly backoff: BackoffOption | undefined;
  readonly payloadJson: string;
}

const HEADER = /^(\d+),(\d+),(\d*),(\d*),([^\n]*)\n/;

/**
 * The jobs of a claim reply (claim.lua): `dueList` "<id>\t<dueAt>\t..." and `records`
 * "<record>\t...", in the same order. A record is as stored: it does not count the delivery under
 * way (attempt = its attempts + 1) and its token and due time are the lease's. Tokens are
 * `tokens[k]` when given (the answer to a resent claim), else `firstToken + k`.
 */
export function decodeClaimed(dueList: string, records: string, firstToken: number, tokens?: readonly string[]): StoredJob[] {
  const out: StoredJob[] = [];
  if (dueList === '') return out;
  const due = dueList.split('\t');
  const recs = records.split('\t');
  if (due.length !== 2 * recs.length) throw new Error('A claim reply is malformed');
  for (let k = 0; k < recs.length; k++) {
    const id = due[2 * k] as string;
    const record = recs[k] as string;
    // "attempts,token,dueAt,maxAttempts,backoff\n": the lease's token and due time replace the record's.
    const headerEnd = record.indexOf('\n');
    const c1 = record.indexOf(',');
    const c3 = record.indexOf(',', record.indexOf(',', c1 + 1) + 1);
    const c4 = record.indexOf(',', c3 + 1);
    if (headerEnd < 0 || c1 < 0 || c4 < 0 || c4 > headerEnd) throw new Error(`Job ${id} has a malformed record`);
    const maxAttempts = record.slice(c3 + 1, c4);
    const backoff = record.slice(c4 + 1, headerEnd);
    out.push({
      id,
      attempts: Number(record.slice(0, c1)) + 1,
      token: tokens ? (tokens[k] as string) : String(firstToken + k),
      dueAt: Number(due[2 * k + 1]),
      maxAttempts: maxAttempts === '' ? undefined : Number(maxAttempts),
      backoff: backoff === '' ? undefined : decodeBackoff(backoff),
      payloadJson: record.slice(headerEnd + 1),
    });
  }
  return out;
}

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
    dueAt: stored.dueAt as number, // a claim always answers with the due score it took the job at
    attempt: stored.attempts,
    maxAttempts: stored.maxAttempts ?? defaultMaxAttempts,
  };
}
