/**
 * The rules of group limits (`queue.setGroupLimits`): what a valid limit is and how a change merges
 * into the stored ones; the same rule as a queue's own rate and concurrency (limits.ts). The
 * library, the HTTP API and the CLI all come through here.
 */
import { ValidationError } from '../core/errors.js';
import type { GroupLimits, GroupLimitsInput } from '../core/types.js';
import { assertOptions } from '../core/validate.js';
import { mergeRateAndConcurrency } from './limits.js';

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
  return mergeRateAndConcurrency(current, input);
}
