// Pure tick arithmetic for recurring schedules (issue 9): no Redis, no clock of its own. Every time is
// epoch ms on the server's clock, passed in by the caller.
//
// Cron and time zones: croner is asked only about *wall-clock* (naive local) times, read in UTC where no
// DST exists; turning a wall-clock time into an instant is done here, because the DST rules are
// not what the libraries do (croner, for one, drops '*/20 2 * * *' on a spring-forward night entirely and
// fires '0 * * * *' at 02:00 twice on a fall-back night). The rules:
//   - a wall-clock time that does not exist (spring forward) fires once, at the first instant after the
//     gap (02:30 on a 02:00->03:00 night fires at 03:00); several such times fire once together;
//   - a wall-clock time that occurs twice (fall back) fires once, at its first occurrence;
//   - `every` is elapsed time on a grid anchored at `anchorMs` and ignores DST.
import { Cron } from 'croner';
import type { ResolvedSchedule } from './spec.js';
import type { ScheduleCatchUp } from '../core/types.js';

/** The most ticks `catchUp: 'all'` creates at once: the most recent ones missed, oldest first. */
export const MAX_CATCH_UP_TICKS = 100;

/** The part of a {@link ResolvedSchedule} that decides its tick times. */
export type TickSpec = Pick<ResolvedSchedule, 'cron' | 'every' | 'tz' | 'startAt' | 'endAt' | 'limit' | 'anchorMs'>;

/**
 * The first tick strictly after `afterMs`, or null when there is none: the schedule reached `endAt`
 * (ticks lie in `[startAt, endAt)`), or `limit` given `runs` ticks created so far, or the cron never fires again.
 * No tick is earlier than `startAt`, else `anchorMs` (a tick exactly there counts).
 */
export function nextTickAfter(spec: TickSpec, afterMs: number, runs = 0): number | null {
  if (spec.limit !== undefined && runs >= spec.limit) return null;
  const tick = rawTickAfter(spec, Math.max(afterMs, lowerBound(spec)));
  return tick === null || (spec.endAt !== undefined && tick >= spec.endAt) ? null : tick;
}

/**
 * Up to `count` tick times at or after `fromMs`, ascending: what `ScheduleInfo.upcoming` shows. Fewer
 * when the schedule ends first (`endAt`, or `limit` given `runs` ticks created so far).
 */
export function upcomingTicks(spec: TickSpec, fromMs: number, count: number, runs = 0): number[] {
  const ticks: number[] = [];
  let after = fromMs - 1;
  for (let i = 0; i < count; i++) {
    const tick = nextTickAfter(spec, after, runs + i);
    if (tick === null) break;
    ticks.push(tick);
    after = tick;
  }
  return ticks;
}

/**
 * The ticks to create now for ticks *missed*: those after `lastTickAtMs` (the last tick created; null
 * when none was, then from `startAt`/`anchorMs` on) and at or before `nowMs`, within `[startAt, endAt)`.
 * `'none'`: none (the schedule goes on at its next future tick); `'latest'`: the most recent one;
 * `'all'`: the most recent {@link MAX_CATCH_UP_TICKS} (fewer if `limit` given `runs` allows fewer),
 * oldest first. Older ones beyond the bound are dropped: a schedule down for a year does not flood the queue.
 */
export function missedTicks(spec: TickSpec, lastTickAtMs: number | null, nowMs: number, mode: ScheduleCatchUp, runs = 0): number[] {
  if (mode === 'none') return [];
  const left = spec.limit === undefined ? Infinity : spec.limit - runs;
  const want = Math.min(mode === 'latest' ? 1 : MAX_CATCH_UP_TICKS, left);
  if (want <= 0) return [];
  const lower = Math.max(lastTickAtMs ?? -Infinity, lowerBound(spec));
  const upper = spec.endAt === undefined ? nowMs : Math.min(nowMs, spec.endAt - 1);
  if (upper <= lower) return [];
  if (spec.every !== undefined) {
    // Arithmetic on the grid: a week of a 1 s schedule is not 604,800 steps.
    const every = spec.every;
    const lastK = Math.floor((upper - spec.anchorMs) / every);
    const firstK = lower < spec.anchorMs ? 0 : Math.floor((lower - spec.anchorMs) / every) + 1;
    const ticks: number[] = [];
    for (let k = Math.max(firstK, lastK - want + 1); k <= lastK; k++) ticks.push(spec.anchorMs + k * every);
    return ticks;
  }
  // Cron: walk back from now in a window doubled until it holds enough ticks (or reaches `lower`), so a
  // long outage costs a few windows rather than every tick since the last one.
  for (let window = 60_000; ; window *= 2) {
    const from = Math.max(lower, upper - window);
    const ticks: number[] = [];
    let count = 0;
    for (let t = rawTickAfter(spec, from); t !== null && t <= upper; t = rawTickAfter(spec, t)) {
      ticks.push(t);
      if (ticks.length > want) ticks.shift();
      count++;
    }
    if (count >= want || from === lower) return ticks;
  }
}

// Ticks are >= startAt (the anchor when none), so the search starts just before it.
function lowerBound(spec: TickSpec): number {
  return (spec.startAt ?? spec.anchorMs) - 1;
}

/** The next tick after `afterMs` of the bare pattern or grid, ignoring startAt, endAt and limit. */
function rawTickAfter(spec: TickSpec, afterMs: number): number | null {
  if (spec.every !== undefined) {
    if (afterMs < spec.anchorMs) return spec.anchorMs;
    return spec.anchorMs + (Math.floor((afterMs - spec.anchorMs) / spec.every) + 1) * spec.every;
  }
  if (spec.cron === undefined) throw new TypeError('A schedule has either `cron` or `every`');
  // The wall-clock times up to maxWallClockUpTo(afterMs) have all fired (or were due) by afterMs; the
  // first matching one after it is the next tick, at its first instant.
  const wall = naiveCron(spec.cron).nextRun(new Date(maxWallClockUpTo(spec.tz, afterMs)));
  return wall === null ? null : firstInstantOf(spec.tz, wall.getTime());
}

const crons = new Map<string, Cron>();
// The pattern read in UTC: its answers are wall-clock times written as if they were UTC instants.
function naiveCron(pattern: string): Cron {
  let cron = crons.get(pattern);
  if (cron === undefined) {
    cron = new Cron(pattern, { timezone: 'UTC', paused: true });
    if (crons.size > 1_000) crons.clear();
    crons.set(pattern, cron);
  }
  return cron;
}

const formats = new Map<string, Intl.DateTimeFormat>();
/** The zone's UTC offset in ms at instant `t` (wall clock = t + offset). */
function offsetAt(tz: string, t: number): number {
  if (tz === 'UTC') return 0;
  let format = formats.get(tz);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    formats.set(tz, format);
  }
  const p: Record<string, string> = {};
  for (const part of format.formatToParts(new Date(t))) p[part.type] = part.value;
  const year = p.era === 'BC' || p.era === 'B' ? 1 - Number(p.year) : Number(p.year);
  const wall = Date.UTC(year, Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  return wall - Math.floor(t / 1000) * 1000;
}

// Clocks go back by an hour (rarely two); a 6 h look-back covers every fall-back in the tz database
// save date-line moves, which are far rarer than one per 6 h anyway.
const LOOK_BACK_MS = 6 * 3_600_000;

/** The latest wall-clock time shown at any instant up to `t`: after a fall-back, the clock shows less than it did. */
function maxWallClockUpTo(tz: string, t: number): number {
  const now = offsetAt(tz, t);
  const before = offsetAt(tz, t - LOOK_BACK_MS);
  if (before <= now) return t + now;
  // The clock went back in (t - 6 h, t]: find the first instant at the new offset; just before it the clock showed the most.
  let lo = t - LOOK_BACK_MS;
  let hi = t;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAt(tz, mid) === before) lo = mid;
    else hi = mid;
  }
  return Math.max(t + now, lo + before);
}

/** The first instant the wall clock shows `wall`; for a time in a spring-forward gap, the first instant after the gap. */
function firstInstantOf(tz: string, wall: number): number {
  const offsets = new Set([offsetAt(tz, wall - 36 * 3_600_000), offsetAt(tz, wall), offsetAt(tz, wall + 36 * 3_600_000)]);
  let first = Infinity;
  for (const offset of offsets) if (offsetAt(tz, wall - offset) === offset) first = Math.min(first, wall - offset);
  if (first !== Infinity) return first;
  // In a gap: the first instant whose wall clock is past `wall` is the moment the clocks jumped.
  let lo = wall - Math.max(...offsets);
  let hi = wall - Math.min(...offsets);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (mid + offsetAt(tz, mid) > wall) hi = mid;
    else lo = mid;
  }
  return hi;
}
