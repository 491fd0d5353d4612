/**
 * The rules of group limits (`queue.setGroupLimits`): what a valid limit is and how a change merges
 * into the stored ones; the same bounds as a queue's own rate and concurrency (limits.ts). The
 * library, the HTTP API and the CLI all come through here.
 */
import { ValidationError } from '../core/errors.js';
import type { GroupLimits, GroupLimitsInput } from '../core/types.js';
import { assertInteger, assertOptions } from '../core/validate.js';
import { MAX_CONCURRENCY, resolveRate } from './limits.js';

const GROUP_LIMIT_OPTIONS = ['rate', 'concurrency'];

/**
 * The limits after applying `input` to `current`: a limit left out is kept, `null` clears it.
 * @throws {ValidationError} a bad limit (nothing is to be written then).
 */
export function mergeGroupLimits(current: GroupLimits, input: GroupLimitsInput): GroupLimits {
  if (input === undefined || input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ValidationError("queue.setGroupLimits needs an object such as { concurrency: 2, rate: { max: 10, per: '1s' } }");
  }
  assertOptions('queue.setGroupLimits', input, GROUP_LIMIT_OPTIONS);
  const next: GroupLimits = { ...current };
  const { rate, concurrency } = input;
  if (rate === null) delete next.rate;
  else if (rate !== undefined) next.rate = resolveRate(rate);
  if (concurrency === null) delete next.concurrency;
  else if (concurrency !== undefined) {
    assertInteger('concurrency', concurrency, 1, MAX_CONCURRENCY);
    next.concurrency = concurrency;
  }
  return next;
}
