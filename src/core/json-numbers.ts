/**
 * Numbers that JSON does not keep as they were written, found with the field's path so that
 * they are refused rather than changed silently:
 * - not finite (NaN, ±Infinity, also what `1e400` parses as), which `JSON.stringify` writes as
 *   `null` ({@link findNonFiniteNumber});
 * - integers beyond ±(2^53 - 1) (`9007199254740993`, a Java `long` order id): JavaScript, and every
 *   reader that parses JSON numbers as doubles, rounds them to a neighbour
 *   ({@link findUnsafeIntegerLiteral}, on the text: after parsing, the digits are gone).
 * The library (validate.ts) and the checks of parsed outside text (deploy/json-text.ts, for the
 * HTTP body parser and the CLI) both use these, so the rules live here once.
 */

/**
 * The path of the first number of `value` that is not finite (NaN, ±Infinity), which
 * `JSON.stringify` would write as `null`; undefined when there is none.
 */
export function findNonFiniteNumber(value: unknown): string | undefined {
  return findPath(value, item => typeof item === 'number' && !Number.isFinite(item));
}

/** The path of the first BigInt of `value` (which `JSON.stringify` throws on); undefined when there is none. */
export function findBigInt(value: unknown): string | undefined {
  return findPath(value, item => typeof item === 'bigint');
}

/**
 * The path of the first item of `value`, in document order, for which `test` holds. Iterative, so
 * that any nesting depth is safe; an object met twice (a cycle) is read once.
 */
function findPath(value: unknown, test: (item: unknown) => boolean): string | undefined {
  const seen = new Set<object>();
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0) {
    const [item, path] = stack.pop() as [unknown, string];
    if (test(item)) return path;
    if (typeof item !== 'object' || item === null || seen.has(item)) continue;
    seen.add(item);
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}[${i}]`]);
    } else {
      const entries = Object.entries(item);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        stack.push([child, path + segment(key)]);
      }
    }
  }
  return undefined;
}

/** A key as a path segment: `.orderId`, or `["order id"]` when it is not an identifier. */
function segment(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** The words every refusal of an unsafe integer uses after the path. */
export const UNSAFE_INTEGER =
  'is an integer beyond ±9007199254740991 (2^53 - 1), which JSON numbers do not keep exact (JavaScript and other readers round it to a neighbour): send it as a string';

/** The digits of `Number.MAX_SAFE_INTEGER`: an integer literal of 16 digits is unsafe when above them. */
const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER);
/** Text that may hold an unsafe integer literal: 16 digits in a row (a shorter integer is always safe). */
const MAY_BE_UNSAFE = new RegExp(`\\d{${MAX_SAFE_DIGITS.length}}`);

/**
 * The path (`''` for the value itself, `.payload.orderId`, `.jobs[1].payload.ids[0]`) of the first
 * integer literal of the JSON text `text` beyond ±(2^53 - 1), or undefined when there is none. An
 * integer literal is a number written without a fraction and without an exponent: `1e20`, `0.5` and
 * `12345678901234567890.0` are not (they say "a double", and get the nearest one), `9007199254740993`
 * is. `text` must be valid JSON (parse it first). One pass, only when the text has 16 digits in a
 * row, so common bodies cost one regular expression test.
 */
export function findUnsafeIntegerLiteral(text: string): string | undefined {
  if (!MAY_BE_UNSAFE.test(text)) return undefined;
  // One frame per open container: its path, and where in it the scan is.
  const frames: { path: string; array: boolean; index: number; key: string; expectKey: boolean }[] = [];
  const here = (): string => {
    const top = frames[frames.length - 1];
    if (top === undefined) return '';
    return top.path + (top.array ? `[${top.index}]` : segment(top.key));
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const top = frames[frames.length - 1];
    if (c === 0x22) {
      // A string: skip it; read it only when it is a key.
      const start = i;
      for (i++; text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      if (top !== undefined && !top.array && top.expectKey) {
        top.key = JSON.parse(text.slice(start, i + 1)) as string;
        top.expectKey = false;
      }
    } else if (c === 0x7b || c === 0x5b) {
      frames.push({ path: here(), array: c === 0x5b, index: 0, key: '', expectKey: c === 0x7b });
    } else if (c === 0x7d || c === 0x5d) {
      frames.pop();
    } else if (c === 0x2c) {
      if (top === undefined) continue;
      if (top.array) top.index++;
      else top.expectKey = true;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = c === 0x2d ? i + 1 : i;
      let end = start;
      while (end < text.length && text.charCodeAt(end) >= 0x30 && text.charCodeAt(end) <= 0x39) end++;
      const next = text.charCodeAt(end);
      const integer = next !== 0x2e && next !== 0x65 && next !== 0x45; // no '.', 'e' or 'E' follows the digits
      const digits = end - start;
      // JSON has no leading zeros, so more digits is a larger number, and equal lengths compare as text.
      if (integer && (digits > MAX_SAFE_DIGITS.length || (digits === MAX_SAFE_DIGITS.length && text.slice(start, end) > MAX_SAFE_DIGITS)))
        return here();
      // Skip the rest of the number (fraction, exponent): its digits are not a new token.
      while (end < text.length && /[\d.eE+-]/.test(text[end] as string)) end++;
      i = end - 1;
    }
  }
  return undefined;
}
