import { randomBytes, randomInt } from 'node:crypto';

// Generated ids are made here rather than by a Redis counter so that an add resent after a lost
// reply carries the same id and is deduplicated instead of creating a second job.
// Shape (19 chars): 9 of base-36 milliseconds, 4 of a per-process counter, 6 random per process.
// Ids of one process sort in creation order, so jobs due in the same millisecond keep their order.
// Two processes collide only with the same 6-char tag (1 in 2.2e9) and the same millisecond and
// counter (the counter starts at a random value): an add with a colliding id would be taken for a
// retry, so the odds are kept far below anything a fleet of producers could reach.
const PROCESS_TAG = randomBytes(5).readUIntBE(0, 5).toString(36).padStart(6, '0').slice(-6);
const COUNTER_SPACE = 36 ** 4;
let lastMs = 0;
let counter = 0;

// Claim ids: 96 random bits drawn once per process, then a counter. Unique per call like a fresh
// random id per call, without a trip into the crypto library per claim.
const CLAIM_TAG = randomBytes(12).toString('base64url');
let claimCounter = 0;

/** A unique id for one claim call (the key of its resend memo): 17+ URL-safe characters. */
export function newClaimId(): string {
  claimCounter += 1;
  return CLAIM_TAG + claimCounter.toString(36);
}

/**
 * A new unique, time-ordered job id such as `0mifxk2b400a1x7k2qz`. Strictly increasing within the
 * process: in a millisecond that already had ids the counter goes on, and if it ever ran out the id
 * borrows the next millisecond rather than wrap around (which would sort before its elders).
 */
export function newJobId(nowMs: number = Date.now()): string {
  if (nowMs > lastMs) {
    lastMs = nowMs;
    // A random start in the lower half: two processes with the same tag (1 in 2.2e9) would also
    // have to meet on the same millisecond and counter; the upper half leaves room for bursts.
    counter = randomInt(COUNTER_SPACE / 2);
  } else if (++counter === COUNTER_SPACE) {
    lastMs += 1;
    counter = 0;
  }
  return lastMs.toString(36).padStart(9, '0') + counter.toString(36).padStart(4, '0') + PROCESS_TAG;
}
