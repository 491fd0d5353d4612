// Flow control (issue 10): `limits` (rate, concurrency, default deadline) and `retention` (completed
// jobs kept). Flags are only turned into the types of LimitsInput / RetentionInput here; the
// library's setLimits / setRetention judge every value, and their ValidationError is the usage
// error (exit 2) the user sees.
import type { Command } from 'commander';
import { ValidationError, type Duration, type LimitsInput, type QueueLimits, type Retention, type RetentionInput } from '../index.js';
import type { Cli } from './context.js';
import { formatDuration, formatWindow } from './format.js';

interface LimitsFlags {
  rate?: string;
  concurrency?: string;
  expireAfter?: string;
}

interface RetentionFlags {
  count?: string;
  age?: string;
  maxResultBytes?: string;
  none?: boolean;
}

/** The word that clears a limit. */
const NONE = 'none';

export function registerFlowCommands(program: Command, cli: Cli): void {
  program
    .command('limits <queue>')
    .description(
      "show the queue's limits; with flags, change them (a flag left out keeps its limit; 'none' clears it). Every worker, pull consumer and webhook obeys them at once",
    )
    .option('--rate <max/per>', "at most <max> job starts in any sliding window of <per>: '100/1s', '5/250ms', '6000/1m'; none clears it")
    .option('--concurrency <n>', 'at most <n> jobs active at once, over every process; none clears it')
    .option(
      '--expire-after <duration>',
      "default deadline of jobs added without one: a job not started by its due time plus this is not run ('1h'); none clears it",
    )
    .action(async (name: string, flags: LimitsFlags) => {
      const input = toLimitsInput(flags);
      const limits = await cli.withQueue(name, queue => (input === undefined ? queue.getLimits() : queue.setLimits(input)));
      cli.result({ name, limits }, formatLimits(name, limits));
    });

  program
    .command('retention <queue>')
    .description('show which completed jobs the queue keeps (with their results); with flags, change it. Default: none kept')
    .option('--count <n>', 'keep the newest <n> completed jobs')
    .option('--age <duration>', "keep none older than this ('1d')")
    .option('--max-result-bytes <n>', 'the largest result JSON kept; a larger one is kept as a marker saying so (default 65536)')
    .option('--none', 'keep no completed jobs again (the kept ones are removed)')
    .action(async (name: string, flags: RetentionFlags) => {
      const input = toRetentionInput(flags);
      const retention = await cli.withQueue(name, queue => (input === undefined ? queue.getRetention() : queue.setRetention(input)));
      cli.result({ name, retention }, formatRetention(name, retention));
    });
}

/** The LimitsInput of `limits` flags; undefined when none is given (show only). */
export function toLimitsInput(flags: LimitsFlags): LimitsInput | undefined {
  const input: Record<string, unknown> = {};
  if (flags.rate !== undefined) input.rate = flags.rate === NONE ? null : parseRate(flags.rate);
  if (flags.concurrency !== undefined) input.concurrency = flags.concurrency === NONE ? null : toNumber(flags.concurrency);
  // Passed on as text: the library reads '1500' as ms and '1h' as a duration, as for --delay.
  if (flags.expireAfter !== undefined) input.expireAfter = flags.expireAfter === NONE ? null : (flags.expireAfter as Duration);
  return Object.keys(input).length === 0 ? undefined : (input as LimitsInput);
}

/** `100/1s` to `{ max: 100, per: '1s' }`; `100/s` reads as `100/1s`. The library judges both parts. */
export function parseRate(text: string): { max: number; per: Duration } {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1)
    throw new ValidationError(`Expected --rate as <max>/<per> such as 100/1s or 5/250ms, or none, got '${text.slice(0, 64)}'`);
  const per = text.slice(slash + 1).trim();
  return { max: toNumber(text.slice(0, slash)) as number, per: (/^[a-z]+$/.test(per) ? `1${per}` : per) as Duration };
}

/** The RetentionInput of `retention` flags; undefined when none is given (show only). */
export function toRetentionInput(flags: RetentionFlags): RetentionInput | undefined {
  const keep = flags.count !== undefined || flags.age !== undefined;
  if (flags.none && keep) throw new ValidationError('Give --none, or --count / --age, not both');
  const input: Record<string, unknown> = {};
  if (flags.none) input.completed = null;
  if (keep) {
    const completed: Record<string, unknown> = {};
    if (flags.count !== undefined) completed.count = toNumber(flags.count);
    if (flags.age !== undefined) completed.age = flags.age as Duration;
    input.completed = completed;
  }
  if (flags.maxResultBytes !== undefined) input.maxResultBytes = toNumber(flags.maxResultBytes);
  return Object.keys(input).length === 0 ? undefined : (input as RetentionInput);
}

/** A number when the text is one, else the text: the library names the option and the value it refuses. */
function toNumber(text: string): number | string {
  const value = Number(text);
  return text.trim() !== '' && Number.isFinite(value) ? value : text;
}

/** `100 per 1s`, `5`, `1h`; `none` for a limit not set. */
export function describeLimits(limits: QueueLimits): { rate: string; concurrency: string; expireAfter: string } {
  return {
    rate: limits.rate ? `${limits.rate.max} per ${formatWindow(limits.rate.per)}` : NONE,
    concurrency: limits.concurrency === undefined ? NONE : String(limits.concurrency),
    expireAfter: limits.expireAfter === undefined ? NONE : formatDuration(limits.expireAfter),
  };
}

/** `newest 1000, none older than 1d`; `none` when completed jobs are not kept. */
export function describeRetention(retention: Retention): string {
  const { completed } = retention;
  if (!completed) return NONE;
  const parts: string[] = [];
  if (completed.count !== undefined) parts.push(`newest ${completed.count}`);
  if (completed.age !== undefined) parts.push(`none older than ${formatDuration(completed.age)}`);
  return parts.length === 0 ? 'all' : parts.join(', ');
}

export function formatLimits(queue: string, limits: QueueLimits): string {
  const shown = describeLimits(limits);
  return keyValues([
    ['queue', queue],
    ['rate', shown.rate],
    ['concurrency', shown.concurrency],
    ['expire after', shown.expireAfter],
  ]);
}

export function formatRetention(queue: string, retention: Retention): string {
  return keyValues([
    ['queue', queue],
    ['completed kept', describeRetention(retention)],
    ['max result', `${retention.maxResultBytes} bytes`],
  ]);
}

/** Aligned `key  value` lines. */
export function keyValues(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([key]) => key.length));
  return rows.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join('\n');
}
