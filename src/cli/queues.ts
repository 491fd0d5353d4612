// Whole queues: stats (one or all), ls by state, pause, resume.
import type { Command } from 'commander';
import {
  JOB_STATES,
  MAX_LIST_LIMIT,
  NotFoundError,
  type JobInfo,
  type JobState,
  type QueueCounters,
  type QueueLimits,
  type QueueStats,
} from '../index.js';
import { closeWithin } from '../deploy/close-within.js';
import type { Cli } from './context.js';
import { describeLimits, describeRetention } from './flow.js';
import { formatRelative, formatTable, oneLine, type Column } from './format.js';
import { choiceArgument, integerArgument } from './input.js';

/** Widest payload or error cell in a list, so that a row fits a wide terminal. */
const CELL_WIDTH = 60;

const STATS_COLUMNS: Column[] = [
  { header: 'QUEUE' },
  { header: 'DELAYED', align: 'right' },
  { header: 'READY', align: 'right' },
  { header: 'LIMITED', align: 'right' },
  { header: 'ACTIVE', align: 'right' },
  { header: 'DEAD', align: 'right' },
  { header: 'PAUSED' },
];

export function registerQueueCommands(program: Command, cli: Cli): void {
  program
    .command('stats [queue]')
    .description('job counts by state; with a queue also its running totals and next due time; without, every queue')
    .action(async (name: string | undefined) => {
      if (name === undefined) await statsOfAll(cli);
      else await statsOfOne(cli, name);
    });

  program
    .command('ls <queue>')
    .description(
      'list jobs in one state: delayed and ready soonest first, active by lease end, dead and completed (kept by the retention) newest first',
    )
    .option('--state <state>', `one of ${JOB_STATES.join(', ')}`, choiceArgument(JOB_STATES), 'delayed')
    .option('--limit <n>', `how many (1-${MAX_LIST_LIMIT})`, integerArgument(1, MAX_LIST_LIMIT), 20)
    .option('--cursor <cursor>', 'start after the page that printed this cursor (its nextCursor)')
    .action(async (name: string, flags: { state: JobState; limit: number; cursor?: string }) => {
      const page = await cli.withQueue(name, queue => queue.list(flags.state, { limit: flags.limit, cursor: flags.cursor }));
      cli.result(page, formatJobList(page, flags, Date.now(), `sandglass ls ${name} --state ${flags.state} --limit ${flags.limit}`));
    });

  program
    .command('pause <queue>')
    .description('stop workers from claiming jobs of the queue (running jobs carry on); exit 3: no such queue')
    .option('--create', 'pause a queue that has no job yet: it is created (listed by stats) and paused')
    .action(async (name: string, flags: { create?: boolean }) => {
      await cli.withQueue(name, queue =>
        queue.pause({ create: flags.create === true }).catch((error: unknown) => {
          if (!(error instanceof NotFoundError)) throw error;
          // The library's refusal, with the CLI's way to say `{ create: true }`.
          throw new NotFoundError(
            `Queue '${name}' does not exist under prefix '${cli.options.prefix}' (no job was ever added to it); check the name, or add --create to pause it before its first job`,
          );
        }),
      );
      cli.result({ name, paused: true }, `paused ${name}: workers claim nothing until 'sandglass resume ${name}'`);
    });

  program
    .command('resume <queue>')
    .description('let workers claim again; they are woken at once; exit 3: no such queue')
    .action(async (name: string) => {
      await cli.withQueue(name, queue => queue.resume());
      cli.result({ name, paused: false }, `resumed ${name}`);
    });
}

async function statsOfAll(cli: Cli): Promise<void> {
  const names = await cli.queueNames();
  const queues = names.map(name => cli.openQueue(name));
  try {
    const all = await Promise.all(queues.map(async queue => ({ name: queue.name, stats: await queue.stats() })));
    // The COMPLETED column only where some queue keeps completed jobs: most keep none.
    const kept = all.some(({ stats }) => stats.completed > 0);
    const human =
      all.length === 0
        ? `(no queues under prefix '${cli.options.prefix}')`
        : formatTable(
            statsColumns(kept),
            all.map(({ name, stats }) => statsRow(name, stats, kept)),
          );
    cli.result({ queues: all }, human);
  } finally {
    await Promise.all(queues.map(queue => closeWithin(queue, 1_000)));
  }
}

async function statsOfOne(cli: Cli, name: string): Promise<void> {
  const { stats, counters, nextDueAt, limits, retention } = await cli.withQueue(name, async queue => {
    const [stats, counters, next, limits, retention] = await Promise.all([
      queue.stats(),
      queue.counters(),
      queue.list('ready', { limit: 1 }),
      queue.getLimits(),
      queue.getRetention(),
    ]);
    const first = next.jobs[0] ?? (stats.delayed > 0 ? (await queue.list('delayed', { limit: 1 })).jobs[0] : undefined);
    return { stats, counters, nextDueAt: first?.dueAt ?? null, limits, retention };
  });
  const totals = Object.keys(counters) as (keyof QueueCounters)[];
  const kept = retention.completed !== undefined || stats.completed > 0;
  const human = [
    formatTable(statsColumns(kept), [statsRow(name, stats, kept)]),
    '',
    `next due: ${nextDueAt === null ? 'nothing waiting' : formatRelative(nextDueAt, Date.now())}`,
    `limits: ${describeLimitsLine(limits)}`,
    `completed kept: ${describeRetention(retention)}`,
    '',
    formatTable(
      totals.map(key => ({ header: counterHeader(key), align: 'right' })),
      [totals.map(key => String(counters[key]))],
    ),
  ];
  cli.result({ name, stats, counters, nextDueAt, limits, retention }, human);
}

/** A counter's column header: its words in capitals, joined by `_` (`ticksSkipped` -> `TICKS_SKIPPED`), one token per column. */
function counterHeader(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

function statsColumns(kept: boolean): Column[] {
  return kept ? [...STATS_COLUMNS.slice(0, -1), { header: 'COMPLETED', align: 'right' }, ...STATS_COLUMNS.slice(-1)] : STATS_COLUMNS;
}

function statsRow(name: string, stats: QueueStats, kept: boolean): string[] {
  const counts = [stats.delayed, stats.ready, stats.limited, stats.active, stats.dead, ...(kept ? [stats.completed] : [])];
  return [name, ...counts.map(String), stats.paused ? 'yes' : 'no'];
}

/** `rate 100 per 1s, concurrency 5, expire after 1h`, or `none`. */
function describeLimitsLine(limits: QueueLimits): string {
  const shown = describeLimits(limits);
  const parts = [
    limits.rate ? `rate ${shown.rate}` : undefined,
    limits.concurrency === undefined ? undefined : `concurrency ${shown.concurrency}`,
    limits.expireAfter === undefined ? undefined : `expire after ${shown.expireAfter}`,
  ].filter(part => part !== undefined);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

/** A table whose columns suit the state: due time for waiting jobs, lease end for active ones, death and error for dead ones. */
export function formatJobList(
  { jobs, nextCursor }: { jobs: readonly JobInfo<unknown>[]; nextCursor: string | null },
  page: { state: JobState; cursor?: string },
  nowMs: number,
  command: string,
): string {
  if (jobs.length === 0) return page.cursor === undefined ? `(no ${page.state} jobs)` : `(no more ${page.state} jobs)`;
  // Waiting jobs with a deadline get an EXPIRES column (before PAYLOAD); most pages have none.
  const layout =
    (page.state === 'delayed' || page.state === 'ready') && jobs.some(job => job.expiresAt !== undefined)
      ? WAITING_WITH_DEADLINE
      : LIST_LAYOUTS[page.state];
  const lines = [
    formatTable(
      layout.columns,
      jobs.map(job => layout.row(job, nowMs)),
    ),
  ];
  if (nextCursor !== null) lines.push(`(more with: ${command} --cursor ${nextCursor})`);
  return lines.join('\n');
}

interface ListLayout {
  columns: Column[];
  row(job: JobInfo<unknown>, nowMs: number): string[];
}

const attempts = (job: JobInfo<unknown>) => (job.maxAttempts === undefined ? String(job.attempts) : `${job.attempts}/${job.maxAttempts}`);
const payload = (job: JobInfo<unknown>) => oneLine(JSON.stringify(job.payload), CELL_WIDTH);
const firstLine = (text: string | undefined) => oneLine((text ?? '').split('\n')[0] ?? '', CELL_WIDTH);

const WAITING: ListLayout = {
  columns: [{ header: 'ID' }, { header: 'DUE' }, { header: 'ATTEMPTS', align: 'right' }, { header: 'PAYLOAD' }],
  row: (job, nowMs) => [job.id, formatRelative(job.dueAt, nowMs), attempts(job), payload(job)],
};

const WAITING_WITH_DEADLINE: ListLayout = {
  columns: [{ header: 'ID' }, { header: 'DUE' }, { header: 'EXPIRES' }, { header: 'ATTEMPTS', align: 'right' }, { header: 'PAYLOAD' }],
  row: (job, nowMs) => [
    job.id,
    formatRelative(job.dueAt, nowMs),
    job.expiresAt === undefined ? '-' : formatRelative(job.expiresAt, nowMs),
    attempts(job),
    payload(job),
  ],
};

/** A dead job's ERROR cell: its last error, or why it died without one (an expired job never ran). */
const deathCause = (job: JobInfo<unknown>) =>
  job.lastError === undefined && job.reason === 'expired' ? 'expired (not started by its deadline)' : firstLine(job.lastError);

const LIST_LAYOUTS: Record<JobState, ListLayout> = {
  delayed: WAITING,
  ready: WAITING,
  active: {
    columns: [{ header: 'ID' }, { header: 'LEASE ENDS' }, { header: 'ATTEMPT', align: 'right' }, { header: 'PAYLOAD' }],
    row: (job, nowMs) => [job.id, formatRelative(job.leaseUntilAt ?? job.dueAt, nowMs), attempts(job), payload(job)],
  },
  dead: {
    columns: [{ header: 'ID' }, { header: 'DIED' }, { header: 'ATTEMPTS', align: 'right' }, { header: 'ERROR' }],
    row: (job, nowMs) => [job.id, formatRelative(job.deadAt ?? job.dueAt, nowMs), attempts(job), oneLine(deathCause(job), CELL_WIDTH)],
  },
  completed: {
    columns: [{ header: 'ID' }, { header: 'FINISHED' }, { header: 'ATTEMPTS', align: 'right' }, { header: 'RESULT' }],
    row: (job, nowMs) => [
      job.id,
      formatRelative(job.finishedAt ?? job.dueAt, nowMs),
      attempts(job),
      oneLine(JSON.stringify(job.result) ?? '', CELL_WIDTH),
    ],
  },
};
