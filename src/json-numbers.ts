/**
 * JSON numbers beyond the range of a double (`1e400`, `-1e400`, 309 digits) parse as ±Infinity,
 * which `JSON.stringify` writes as `null`: a job would silently get `null` where its sender wrote a
 * number. JSON text that comes from outside (the CLI's payloads and import lines, HTTP bodies) is
 * checked with {@link findOutOfRangeNumber} after parsing, so it is refused with the field's path.
 */

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
 * The path of the first number of `value` that is not finite (NaN, ±Infinity), which
 * `JSON.stringify` would write as `null`; undefined when there is none.
 */
export function findNonFiniteNumber(value: unknown): string | undefined {
  // Iterative, so that any nesting depth is safe.
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0) {
    const [item, path] = stack.pop() as [unknown, string];
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) return path;
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}[${i}]`]);
    } else if (typeof item === 'object' && item !== null) {
      const entries = Object.entries(item);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        stack.push([child, /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`]);
      }
    }
  }
  return undefined;
}
