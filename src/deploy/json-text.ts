/**
 * JSON text from outside (an HTTP body, the CLI's payload arguments and import lines), checked
 * after parsing for numbers the parse changed: beyond the range of a double (`1e400`, `-1e400`,
 * 309 digits), which parse as ±Infinity, and integers beyond ±(2^53 - 1), which parse rounded. The
 * rules themselves are core/json-numbers.ts's, which the library uses too.
 */
import { findNonFiniteNumber, findUnsafeIntegerLiteral, UNSAFE_INTEGER } from '../core/json-numbers.js';

/** Text that may hold an overflowing number: an exponent after a digit, or 309 digits in a row. */
const MAY_OVERFLOW = /\d[eE]\+?\d|\d{309}/;

/** The words every refusal uses after the path. */
export const OUT_OF_RANGE = 'is a number out of range (beyond ±1.7976931348623157e308)';

/**
 * The path of the first number of `value` that overflowed when `text` was parsed (`''` for the
 * value itself, `.payload.n`, `[3]`), or undefined when there is none. Reads `value` only when
 * `text` could hold such a number, so that common bodies cost one regular expression test.
 */
export function findOutOfRangeNumber(text: string, value: unknown): string | undefined {
  return MAY_OVERFLOW.test(text) ? findNonFiniteNumber(value) : undefined;
}

/**
 * The first number that parsing `text` into `value` changed, as its path and the words of the
 * refusal (`{ path: '.payload.orderId', problem: UNSAFE_INTEGER }`), or undefined when every number
 * is kept: the one check of parsed user JSON that the HTTP body parser and the CLI's payload flags
 * and import lines share.
 */
export function findChangedNumber(text: string, value: unknown): { path: string; problem: string } | undefined {
  const overflow = findOutOfRangeNumber(text, value);
  if (overflow !== undefined) return { path: overflow, problem: OUT_OF_RANGE };
  const unsafe = findUnsafeIntegerLiteral(text);
  if (unsafe !== undefined) return { path: unsafe, problem: UNSAFE_INTEGER };
  return undefined;
}
