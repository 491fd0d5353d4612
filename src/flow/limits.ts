/**
 * The rules of a queue's limits (`queue.setLimits`): what a valid limit is and how a change merges
 * into the stored ones. The library, the HTTP API and the CLI all come through here.
 */
import { ValidationError } from '../core/errors.js';
import type { Duration, LimitsInput, QueueLimits } from '../core/types.js';
import { assertInteger, assertOptions, describe, toDelayMs, toExpireAfterMs } from '../core/validate.js';

/**
 * The most starts a `rate` window may hold: the limiter keeps one entry per start of the window
 * (a sliding-window log), so this bounds its memory (~6 MB) and a claim's cost.
 */
export const MAX_RATE = 100_000;
/** The longest `rate` window: 1 day. */
export const MAX_RATE_WINDOW_MS = 86_400_000;
/** The highest `concurrency` limit. */
export const MAX_CONCURRENCY = 100_000;

const LIMIT_OPTIONS = ['rate', 'concurrency', 'expireAfter'];

/**
 * The limits after applying `input` to `current`: a limit left out is kept, `null` clears it.
 * @throws {ValidationError} a bad limit (nothing is to be written then).
 */
export function mergeLimits(current: QueueLimits, input: LimitsInput): QueueLimits {
  assertOptions('queue.setLimits', input, LIMIT_OPTIONS);
  if (input === undefined || input === null)
    throw new ValidationError("queue.setLimits needs an object such as { rate: { max: 100, per: '1s' } }");
  const next: QueueLimits = mergeRateAndConcurrency(current, input);
  const { expireAfter } = input;
  if (expireAfter === null) delete next.expireAfter;
  else if (expireAfter !== undefined) next.expireAfter = toExpireAfterMs(expireAfter);
  return next;
}

/**
 * `rate` and `concurrency` of `input` applied to `current` (left out: kept; `null`: cleared): the
 * rule a queue's limits and a group's share (group-limits.ts).
 * @throws {ValidationError} a bad rate or concurrency.
 */
export function mergeRateAndConcurrency<L extends { rate?: { max: number; per: number }; concurrency?: number }>(
  current: L,
  input: { rate?: { max: number; per: Duration } | null; concurrency?: number | null },
): L {
  const next: L = { ...current };
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

/**
 * Checks a rate `{ max, per }` and returns it with `per` in ms: at most `max` (1-100,000) starts in
 * any window of `per` (ms or a duration text, 1 ms to 1 day). The one rule of a rate: of a queue's
 * `rate` limit (`queue.setLimits`) and of the HTTP service's webhook bindings; for a rate of one's
 * own (a setting read from a file) to be judged the same way. `name` is the option the messages name.
 * @throws {ValidationError} naming `name` and what is wrong.
 * @example
 * resolveRate({ max: 100, per: '1s' }); // { max: 100, per: 1000 }
 */
export function resolveRate(rate: unknown, name = 'rate'): { max: number; per: number } {
  if (typeof rate !== 'object' || rate === null || Array.isArray(rate)) {
    throw new ValidationError(`Expected \`${name}\` to be { max, per } (such as { max: 100, per: '1s' }), got ${describe(rate)}`);
  }
  assertOptions(`\`${name}\``, rate, ['max', 'per']);
  const { max, per } = rate as { max?: unknown; per?: unknown };
  assertInteger(`${name}.max`, max, 1, MAX_RATE);
  if (per === undefined) throw new ValidationError(`\`${name}.per\` is missing: the window, such as '1s' or 60000`);
  const perMs = toDelayMs(per, `${name}.per`);
  if (perMs < 1 || perMs > MAX_RATE_WINDOW_MS) {
    throw new ValidationError(`Expected \`${name}.per\` to be from 1 ms to 1 day (${MAX_RATE_WINDOW_MS} ms), got ${describe(per)}`);
  }
  return { max, per: perMs };
}
