// Recurring schedules (issue 9): add (an idempotent upsert), ls, get, pause, resume, rm.
// Flags are only turned into the JS types of a ScheduleSpec here; the library's resolveScheduleSpec
// judges every rule (zone, pattern, one of cron and every, the 1 s floor, ranges) and its
// ValidationError is the usage error (exit 2) the user sees.
import type { Command } from 'commander';
import { NotFoundError, ValidationError, type Duration, type ScheduleInfo, type ScheduleSpec } from '../index.js';
import { findChangedNumber } from '../deploy/json-text.js';
import type { Cli } from './context.js';
import { formatEvery, formatRelative, formatTable, oneLine, printable, type Column } from './format.js';
import { parseAt } from './input.js';

interface AddFlags {
  cron?: string;
  every?: string;
  tz?: string;
  payload?: string;
  startAt?: string;
  endAt?: string;
  limit?: string;
  overlap?: string;
  catchUp?: string;
  maxAttempts?: string;
  group?: string;
}

/** Widest payload cell. */
const CELL_WIDTH = 60;

const LIST_COLUMNS: Column[] = [
  { header: 'KEY' },
  { header: 'SCHEDULE' },
  { header: 'TZ' },
  { header: 'NEXT RUN' },
  { header: 'RUNS', align: 'right' },
  { header: 'SKIPPED', align: 'right' },
  { header: 'PAUSED' },
  { header: 'LAST RUN' },
];

export function registerScheduleCommands(program: Command, cli: Cli): void {
  const schedule = program
    .command('schedule')
    .description('recurring schedules: a job per cron or interval tick (add, ls, get, pause, resume, rm)');

  schedule
    .command('add <queue> <key>')
    .description('create or change a schedule (idempotent: the same definition again changes nothing); give --cron or --every')
    .option('--cron <pattern>', "cron pattern of 5 fields (minute hour day month weekday) or 6 (seconds first), e.g. '0 9 * * *'")
    .option('--every <duration>', "interval: ms, or '30s', '5m', '1h30m' (at least 1 s)")
    .option('--tz <zone>', "IANA time zone the cron pattern is read in, e.g. Europe/Berlin (default: UTC, never this machine's zone)")
    .option('--payload <json>', "each tick's job payload, as JSON (default: null)")
    .option('--start-at <time>', 'no tick before this time: ISO 8601 or epoch ms (anchors an --every grid)')
    .option('--end-at <time>', 'no tick at or after this time: ISO 8601 or epoch ms')
    .option('--limit <n>', 'end the schedule after this many runs')
    .option('--overlap <mode>', 'allow, or skip: a tick whose previous run is still active is skipped (default: allow)')
    .option('--catch-up <mode>', 'ticks missed while no process ran: none, latest (run the last one at once) or all (default: latest)')
    .option('--max-attempts <n>', "deliveries of each tick's job before it is dead-lettered (default: the worker setting)")
    .option('--group <group>', "the group of each tick's job: the ticks follow the group's limits and pause (default: none)")
    .action(async (name: string, key: string, flags: AddFlags) => {
      const spec = toScheduleSpec(flags);
      const info = await cli.withQueue(name, queue => queue.schedule(key, spec));
      cli.result(info, formatSchedule(name, info, Date.now()));
    });

  schedule
    .command('ls <queue>')
    .description('list the schedules of a queue, by key, with their next run and last run')
    .action(async (name: string) => {
      const schedules = await cli.withQueue(name, queue => queue.listSchedules());
      cli.result({ schedules }, formatScheduleList(name, schedules));
    });

  schedule
    .command('get <queue> <key>')
    .description("show a schedule: its definition, state, last run and next 5 ticks (UTC and the schedule's zone); exit 3: not found")
    .action(async (name: string, key: string) => {
      const info = await cli.withQueue(name, queue => queue.getSchedule(key));
      if (!info) throw notFound(name, key);
      cli.result(info, formatSchedule(name, info, Date.now()));
    });

  schedule
    .command('pause <queue> <key>')
    .description('stop a schedule from creating ticks (its pending tick is removed, a running one finishes); exit 3: not found')
    .action(async (name: string, key: string) => {
      const info = await cli.withQueue(name, queue => queue.pauseSchedule(key));
      cli.result(info, `paused schedule ${key}: no ticks until 'sandglass schedule resume ${name} ${key}'`);
    });

  schedule
    .command('resume <queue> <key>')
    .description('let a paused schedule go on at its next future tick (missed ticks are not caught up); exit 3: not found')
    .action(async (name: string, key: string) => {
      const info = await cli.withQueue(name, queue => queue.resumeSchedule(key));
      cli.result(info, `resumed schedule ${key}: next run ${describeNext(info, Date.now())}`);
    });

  schedule
    .command('rm <queue> <key>')
    .description('remove a schedule and its pending tick (a running tick finishes); exit 3: not found')
    .action(async (name: string, key: string) => {
      const result = await cli.withQueue(name, queue => queue.unschedule(key));
      if (result === 'not_found') throw notFound(name, key);
      cli.result({ key, result }, `removed schedule ${key}`);
    });
}

/**
 * The spec of `schedule add` from its flags: text turned into the types the library takes, nothing
 * judged (an unset flag stays absent, so the library's defaults apply).
 */
export function toScheduleSpec(flags: AddFlags): ScheduleSpec {
  const spec: Record<string, unknown> = {};
  if (flags.cron !== undefined) spec.cron = flags.cron;
  // Passed on as text: the library reads '1500' as ms and '5m' as a duration, as for --delay.
  if (flags.every !== undefined) spec.every = flags.every as Duration;
  if (flags.tz !== undefined) spec.tz = flags.tz;
  if (flags.payload !== undefined) spec.payload = parseJsonFlag('--payload', flags.payload);
  if (flags.startAt !== undefined) spec.startAt = parseAt(flags.startAt, '--start-at');
  if (flags.endAt !== undefined) spec.endAt = parseAt(flags.endAt, '--end-at');
  if (flags.limit !== undefined) spec.limit = toNumber(flags.limit);
  if (flags.overlap !== undefined) spec.overlap = flags.overlap;
  if (flags.catchUp !== undefined) spec.catchUp = flags.catchUp;
  if (flags.maxAttempts !== undefined) spec.maxAttempts = toNumber(flags.maxAttempts);
  if (flags.group !== undefined) spec.group = flags.group;
  return spec as ScheduleSpec;
}

/** A number when the text is one ('10', '1.5', '1e3'), else the text: the library names the option and the value it refuses. */
function toNumber(text: string): number | string {
  const value = Number(text);
  return text.trim() !== '' && Number.isFinite(value) ? value : text;
}

function parseJsonFlag(flag: string, text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError(`${flag} is not valid JSON: ${(error as Error).message}; give JSON such as '{"refundId":42}' or '"text"'`);
  }
  const changed = findChangedNumber(text, value);
  if (changed !== undefined) throw new ValidationError(`${flag} is not valid: payload${changed.path} ${changed.problem}`);
  return value;
}

function notFound(queue: string, key: string): NotFoundError {
  return new NotFoundError(`No schedule '${key}' in queue '${queue}'`);
}

/** `cron 0 9 * * *` or `every 5m`. */
export function describeRule(info: ScheduleInfo<unknown>): string {
  if (info.cron !== undefined) return `cron ${info.cron}`;
  return `every ${formatEvery(info.every ?? 0)}`;
}

/** Where a schedule stands: `active`, `paused`, or `ended` (limit or endAt reached). */
function describeState(info: ScheduleInfo<unknown>): 'active' | 'paused' | 'ended' {
  if (info.paused) return 'paused';
  return info.nextAt === null ? 'ended' : 'active';
}

function describeNext(info: ScheduleInfo<unknown>, nowMs: number): string {
  if (info.nextAt === null) return info.paused ? 'none (paused)' : 'none (ended)';
  // A pending tick already due (waiting for a worker) reads 'due 3s ago'.
  const when = formatRelative(info.nextAt, nowMs);
  return `${new Date(info.nextAt).toISOString()} (${info.nextAt <= nowMs ? `due ${when}` : when})`;
}

/**
 * An instant as the schedule's zone shows it: `2027-03-28 03:00:00 Europe/Berlin (+02:00)`. The
 * offset is printed because a wall time alone is ambiguous on the night the clocks fall back; it is
 * computed from the wall time (ICU spells a zone's offset differently between Node versions).
 */
export function formatInZone(atMs: number, tz: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(atMs));
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find(p => p.type === type)?.value ?? '00';
  const [year, month, day, hour, minute, second] = (['year', 'month', 'day', 'hour', 'minute', 'second'] as const).map(part);
  const wallMs = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second));
  const offsetMinutes = Math.round((wallMs - Math.floor(atMs / 1_000) * 1_000) / 60_000);
  const abs = Math.abs(offsetMinutes);
  const offset = `${offsetMinutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${year}-${month}-${day} ${hour}:${minute}:${second} ${tz} (${offset})`;
}

/** The schedules of a queue as a table, or a note when there are none. */
export function formatScheduleList(queue: string, schedules: readonly ScheduleInfo<unknown>[]): string {
  if (schedules.length === 0) return `(no schedules in queue '${queue}')`;
  const rows = schedules.map(info => [
    oneLine(info.key, CELL_WIDTH),
    describeRule(info),
    info.tz,
    info.nextAt === null ? `- (${describeState(info)})` : new Date(info.nextAt).toISOString(),
    String(info.runs),
    String(info.skipped),
    info.paused ? 'yes' : 'no',
    info.lastRun === null ? '-' : info.lastRun.state,
  ]);
  return formatTable(LIST_COLUMNS, rows);
}

/** One schedule as aligned `key  value` lines, with its next ticks in UTC and in its own zone. */
export function formatSchedule(queue: string, info: ScheduleInfo<unknown>, nowMs: number): string {
  const rows: [string, string][] = [
    ['key', info.key],
    ['queue', queue],
    ['schedule', describeRule(info)],
    ['time zone', info.tz],
    ['state', describeState(info)],
    ['next run', describeNext(info, nowMs)],
  ];
  if (info.upcoming.length > 0)
    rows.push(['upcoming', info.upcoming.map(at => `${new Date(at).toISOString()}  ${formatInZone(at, info.tz)}`).join('\n')]);
  rows.push(['runs', info.limit === undefined ? String(info.runs) : `${info.runs} of ${info.limit}`]);
  rows.push(['skipped', String(info.skipped)]);
  if (info.lastRun !== null)
    rows.push(['last run', `${info.lastRun.id} (${info.lastRun.state}), tick ${new Date(info.lastRun.tickAt).toISOString()}`]);
  else rows.push(['last run', 'none yet']);
  if (info.startAt !== undefined) rows.push(['starts at', new Date(info.startAt).toISOString()]);
  if (info.endAt !== undefined) rows.push(['ends at', new Date(info.endAt).toISOString()]);
  rows.push(['overlap', info.overlap]);
  rows.push(['catch up', info.catchUp]);
  if (info.maxAttempts !== undefined) rows.push(['max attempts', String(info.maxAttempts)]);
  if (info.backoff !== undefined) rows.push(['backoff', JSON.stringify(info.backoff)]);
  if (info.group !== undefined) rows.push(['group', info.group]);
  rows.push(['payload', printable(JSON.stringify(info.payload, null, 2))]);
  const width = Math.max(...rows.map(([key]) => key.length));
  const indent = `\n${' '.repeat(width + 2)}`;
  return rows.map(([key, value]) => `${key.padEnd(width)}  ${value.split('\n').join(indent)}`).join('\n');
}
