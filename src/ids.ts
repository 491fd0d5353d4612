import { randomBytes } from 'node:crypto';

// Generated ids are made here rather than by a Redis counter so that an add resent after a lost
// reply carries the same id and is deduplicated instead of creating a second job.
// Shape: 9 chars of base-36 milliseconds, 4 of a per-process counter, 4 random per process. Ids of
// one process sort in creation order, so jobs due in the same millisecond keep their order.
const PROCESS_TAG = randomBytes(4).readUInt32BE(0).toString(36).padStart(7, '0').slice(-4);
let counter = 0;

/** A new unique, time-ordered job id such as `0mifxk2b40001x7k2`. */
export function newJobId(nowMs: number = Date.now()): string {
  counter = (counter + 1) % 1_679_616; // 36^4
  return nowMs.toString(36).padStart(9, '0') + counter.toString(36).padStart(4, '0') + PROCESS_TAG;
}
