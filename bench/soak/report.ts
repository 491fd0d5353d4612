/** The soak's samples table on stdout and its checks. */
import type { MemoryReport } from './ledger.js';

/** One row of the table: taken every 10 s. */
export interface Sample {
  /** Since the steady load started, ms (negative: never; the drain continues the clock). */
  readonly atMs: number;
  readonly phase: 'load' | 'drain' | 'end';
  readonly added: number;
  readonly started: number;
  readonly completed: number;
  readonly retried: number;
  readonly dead: number;
  /** delayed + ready + active of both queues, from `stats()`. */
  readonly waiting: number;
  /** Lateness on the Redis clock of the main queue's starts (jobs and ticks) since the previous sample. */
  readonly latenessP99Ms: number;
  readonly latenessMaxMs: number;
  /** The same on the limited queue (its lateness is mostly the limit's doing). */
  readonly limitedLatenessP99Ms: number;
  /** The long-lived worker process (A) and the one restarted every minute (B). */
  readonly workerA: MemoryReport | undefined;
  readonly workerB: MemoryReport | undefined;
  readonly redisUsedMemory: number;
  readonly restarts: number;
}

export interface Check {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

const MB = 1_048_576;

function mb(bytes: number | undefined): string {
  return bytes === undefined ? '-' : (bytes / MB).toFixed(1);
}

function ms(value: number): string {
  return Number.isFinite(value) ? String(Math.round(value)) : '-';
}

const HEADERS = [
  't (s)',
  'phase',
  'added',
  'started',
  'completed',
  'retried',
  'dead',
  'waiting',
  'late p99 ms',
  'late max ms',
  'limited p99 ms',
  'A rss MB',
  'A heap MB',
  'B rss MB',
  'B heap MB',
  'Redis MB',
  'restarts',
];

export function sampleCells(s: Sample): string[] {
  return [
    (s.atMs / 1000).toFixed(0),
    s.phase,
    String(s.added),
    String(s.started),
    String(s.completed),
    String(s.retried),
    String(s.dead),
    String(s.waiting),
    ms(s.latenessP99Ms),
    ms(s.latenessMaxMs),
    ms(s.limitedLatenessP99Ms),
    mb(s.workerA?.rss),
    mb(s.workerA?.heapUsed),
    mb(s.workerB?.rss),
    mb(s.workerB?.heapUsed),
    (s.redisUsedMemory / MB).toFixed(2),
    String(s.restarts),
  ];
}

/** A Markdown table (it pastes into the README as it is). */
export function formatTable(samples: readonly Sample[]): string[] {
  const rows = samples.map(sampleCells);
  const widths = HEADERS.map((header, column) => Math.max(header.length, ...rows.map(row => (row[column] as string).length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => (i === 1 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join(' | ')} |`;
  return [line(HEADERS), `|${widths.map((w, i) => (i === 1 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.map(line)];
}

export function formatChecks(checks: readonly Check[]): string[] {
  return checks.map(check => `${check.ok ? 'PASS' : 'FAIL'}  ${check.name}: ${check.detail}`);
}
