import { ValidationError } from './errors.js';
import { DURATION_UNITS, type DurationUnit } from './types.js';

const UNIT_MS: Record<DurationUnit, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

// One or more `<number><unit>` parts, e.g. '1h30m', '1.5s', '5d'. The `ms` package handles single
// units only ('1h30m' is undefined there), and a permissive parser would accept typos as zero.
// The alternation is DURATION_UNITS in its order, `ms` before `m` and `s`: '250ms' is one part.
const PART = new RegExp(`(\\d+(?:\\.\\d+)?)(${DURATION_UNITS.join('|')})`, 'y');
// A number without a unit is milliseconds, as a number is: `'1500'` and `1500` mean the same in the
// library, the HTTP API and the CLI (`--delay 1500`), the one rule for every place a delay is given.
const BARE_MS = /^\d+(?:\.\d+)?$/;

/**
 * Parses a human duration such as `'30m'`, `'5d'`, `'1h30m'` or `'250ms'` into milliseconds.
 * Units: ms, s, m, h, d, w. Spaces between parts are allowed. Digits without a unit (`'1500'`)
 * are milliseconds.
 *
 * @throws {ValidationError} when the text is not a duration.
 */
export function parseDuration(text: string): number {
  if (typeof text !== 'string') throw new ValidationError(`Expected a duration text like '30m' or '1h30m', got ${typeof text}`);
  const compact = text.replace(/\s+/g, '');
  if (compact.length === 0) throw new ValidationError(`Expected a duration like '30m' or '1h30m', got '${text.slice(0, 64)}'`);
  if (BARE_MS.test(compact)) return Math.round(Number(compact));
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < compact.length) {
    const match = PART.exec(compact);
    if (!match) throw new ValidationError(`Expected a duration like '30m' or '1h30m', got '${text.slice(0, 64)}'`);
    total += Number(match[1]) * UNIT_MS[match[2] as DurationUnit];
  }
  return Math.round(total);
}
