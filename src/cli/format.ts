// Human output: durations a person reads at a glance, aligned tables, one job as key-value lines.
// Pure functions, so they are unit-tested without Redis.
import type { JobInfo } from '../index.js';

/**
 * A duration as the dashboard shows it (dashboard/dom.js `fmtDuration`, the same rule; a unit test
 * holds the two together): `350 ms`, `12.3 s`, `29 min 59 s`, `1 h 30 min`, `1126 d 3 h`. Two units
 * at most, days the largest, rounded down, so that a job added with `--delay 30m` shows
 * `29 min 59 s` a moment later, never `30 min`.
 */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.floor(abs)} ms`;
  if (abs < 60_000) return `${(Math.floor(abs / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(abs / 1_000);
  const pair = (big: number, bigUnit: string, small: number, smallUnit: string) =>
    small ? `${big} ${bigUnit} ${small} ${smallUnit}` : `${big} ${bigUnit}`;
  if (abs < 3_600_000) return pair(Math.floor(s / 60), 'min', s % 60, 's');
  if (abs < 86_400_000) return pair(Math.floor(s / 3_600), 'h', Math.floor((s % 3_600) / 60), 'min');
  return pair(Math.floor(s / 86_400), 'd', Math.floor((s % 86_400) / 3_600), 'h');
}

/**
 * A schedule's interval as the dashboard shows it (dashboard/schedule-text.js `fmtEvery`), in the
 * units `every` is written in, exact: `5m`, `1h30m`, `1.5s`, `1d`.
 */
export function formatEvery(ms: number): string {
  let rest = ms;
  if (!Number.isFinite(rest) || rest <= 0) return `${String(ms)} ms`;
  let text = '';
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  if (rest > 0) text += `${Number((rest / 1000).toFixed(3))}s`;
  return text;
}

const WINDOW_NAMES: Record<number, string> = { 1_000: 'second', 60_000: 'minute', 3_600_000: 'hour', 86_400_000: 'day' };

/** A rate's window as the dashboard names it (`fmtWindow`): `second`, `minute`, `hour`, `day`, else a duration. */
export function formatWindow(ms: number): string {
  return WINDOW_NAMES[ms] ?? formatDuration(ms);
}

/** `in 29 min 59 s` for a future instant, `3 min 2 s ago` for a past one, `now` within a millisecond. */
export function formatRelative(atMs: number, nowMs: number): string {
  const delta = atMs - nowMs;
  if (Math.abs(delta) < 1) return 'now';
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(-delta)} ago`;
}

export interface Column {
  header: string;
  /** Numbers read best right-aligned. @default 'left' */
  align?: 'left' | 'right';
}

/** Rows under headers, each column as wide as its widest cell, two spaces apart, no trailing blanks. */
export function formatTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((column, i) => Math.max(column.header.length, ...rows.map(row => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    columns
      .map((column, i) => {
        const cell = cells[i] ?? '';
        const width = widths[i] as number;
        return column.align === 'right' ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return [line(columns.map(column => column.header)), ...rows.map(line)].join('\n');
}

// Job data and errors are written to a terminal: control characters (ESC starts a terminal command,
// so does the C1 character U+009B) must never reach it as they are.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const CONTROL_OR_NEWLINE = /[\u0000-\u001f\u007f-\u009f]+/g;

/** Text safe to print: control characters other than newline and tab become `?`. */
export function printable(text: string): string {
  return text.replace(CONTROL, '?');
}

/** Text on one line and at most `max` characters: control characters become spaces, the rest is cut with `...`. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(CONTROL_OR_NEWLINE, ' ').trim();
  return flat.length > max ? `${flat.slice(0, Math.max(0, max - 3))}...` : flat;
}

/** Where a job stands, in words: `due in 29m 59s`, `due 2s ago`, `lease ends in 25s`, `dead since 3m ago`. */
export function describeTiming(job: JobInfo<unknown>, nowMs: number): string {
  if (job.state === 'active' && job.leaseUntilAt !== undefined) return `lease ends ${formatRelative(job.leaseUntilAt, nowMs)}`;
  if (job.state === 'dead' && job.deadAt !== undefined)
    return `${job.reason === 'expired' ? 'expired, ' : ''}died ${formatRelative(job.deadAt, nowMs)}`;
  if (job.state === 'completed' && job.finishedAt !== undefined) return `finished ${formatRelative(job.finishedAt, nowMs)}`;
  return `due ${formatRelative(job.dueAt, nowMs)}`;
}

/** One job as aligned `key  value` lines (the full payload, pretty-printed). */
export function formatJob(queue: string, job: JobInfo<unknown>, nowMs: number): string {
  const attempts = job.maxAttempts === undefined ? String(job.attempts) : `${job.attempts} of ${job.maxAttempts}`;
  const rows: [string, string][] = [
    ['id', job.id],
    ['queue', queue],
    ['state', `${job.state} (${describeTiming(job, nowMs)})`],
    ['due at', new Date(job.dueAt).toISOString()],
    ['attempts', attempts],
  ];
  if (job.expiresAt !== undefined)
    rows.push([
      'expires at',
      `${new Date(job.expiresAt).toISOString()} (${formatRelative(job.expiresAt, nowMs)}; not run if not started by then)`,
    ]);
  if (job.leaseUntilAt !== undefined) rows.push(['lease until', new Date(job.leaseUntilAt).toISOString()]);
  if (job.deadAt !== undefined) rows.push(['dead since', new Date(job.deadAt).toISOString()]);
  if (job.reason !== undefined)
    rows.push(['reason', job.reason === 'expired' ? 'expired: not started by its deadline' : 'failed: out of attempts']);
  if (job.finishedAt !== undefined) rows.push(['finished at', new Date(job.finishedAt).toISOString()]);
  rows.push(['payload', indent(printable(JSON.stringify(job.payload, null, 2)))]);
  if (job.lastError !== undefined) rows.push(['last error', indent(printable(job.lastError))]);
  if (job.state === 'completed') rows.push(['result', indent(printable(JSON.stringify(job.result, null, 2) ?? 'none'))]);
  return rows.map(([key, value]) => `${key.padEnd(KEY_WIDTH)}  ${value}`).join('\n');
}

/** The longest key of {@link formatJob} ('lease until'). */
const KEY_WIDTH = 11;

function indent(text: string): string {
  return text.split('\n').join(`\n${' '.repeat(KEY_WIDTH + 2)}`);
}
