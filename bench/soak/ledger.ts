/**
 * The soak's ledger: what the producer added and what the worker processes reported, and the pure
 * functions that judge it (lost, early, duplicates, the limit, tick gaps). No I/O here, so that
 * test/unit/soak-ledger.test.ts can check each verdict on hand-made events.
 *
 * The worker processes report each delivery as lines on their stdout (bench/soak/worker.ts), one
 * write(2) per line, so a line written before a SIGKILL is still read by the parent; nothing of
 * the ledger lives in the Redis under test, so its `used_memory` counts only sandglass's keys.
 */
import { percentile } from '../stats.js';

/** What a job's handler does, chosen by the producer and carried in the payload. */
export type Plan = 'ok' | 'once' | 'always' | 'unrecoverable';

/** The outcome a plan must end in: completed, or in the dead letters. */
export function expectedOutcome(plan: Plan): 'completed' | 'dead' {
  return plan === 'always' || plan === 'unrecoverable' ? 'dead' : 'completed';
}

/** A handler start, as the worker process reported it. */
export interface StartEvent {
  readonly kind: 'start';
  readonly queue: string;
  readonly id: string;
  readonly attempt: number;
  readonly dueAt: number;
  /**
   * The Redis server's clock (TIME, epoch ms with the microseconds as a fraction) read first thing
   * in the handler: an upper bound of the Redis time at the start, off by at most one round trip.
   */
  readonly redisAt: number;
  /** The worker machine's clock at handler entry (Date.now()). */
  readonly localAt: number;
  /** Which worker process (its label, e.g. `A`, `B3`). */
  readonly proc: string;
}

/** A handler return (`ok`) or throw (`fail`), before the ack or fail is sent. */
export interface EndEvent {
  readonly kind: 'end';
  readonly queue: string;
  readonly id: string;
  readonly attempt: number;
  readonly localAt: number;
  readonly ok: boolean;
  readonly proc: string;
}

/** The Worker's events: `completed` (the ack landed), `retry`/`dead` (the fail landed), `stale`. */
export interface OutcomeEvent {
  readonly kind: 'completed' | 'retry' | 'dead' | 'stale';
  readonly queue: string;
  readonly id: string;
  readonly attempt: number;
  readonly proc: string;
}

export interface ErrorEvent {
  readonly kind: 'error';
  readonly message: string;
  readonly proc: string;
}

export type LedgerEvent = StartEvent | EndEvent | OutcomeEvent | ErrorEvent;

/** A worker process's memory after a forced GC (process.memoryUsage()). */
export interface MemoryReport {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
}

export type ParsedLine = LedgerEvent | { readonly kind: 'memory'; readonly memory: MemoryReport } | { readonly kind: 'ready' };

/**
 * One line of a worker process's stdout (the protocol of bench/soak/worker.ts), or undefined for
 * anything else (a library's stray output must not break the ledger; the caller counts it).
 */
export function parseLine(line: string, proc: string): ParsedLine | undefined {
  const [kind, ...fields] = line.split(' ');
  const num = (i: number) => Number(fields[i]);
  switch (kind) {
    case 'ready':
      return { kind: 'ready' };
    case 'memory':
      return { kind: 'memory', memory: JSON.parse(fields.join(' ')) as MemoryReport };
    case 'start':
      if (fields.length !== 6) return undefined;
      return {
        kind,
        queue: fields[0] as string,
        id: fields[1] as string,
        attempt: num(2),
        dueAt: num(3),
        redisAt: num(4),
        localAt: num(5),
        proc,
      };
    case 'end':
      if (fields.length !== 5) return undefined;
      return { kind, queue: fields[0] as string, id: fields[1] as string, attempt: num(2), localAt: num(3), ok: fields[4] === 'ok', proc };
    case 'completed':
    case 'retry':
    case 'dead':
    case 'stale':
      if (fields.length !== 3) return undefined;
      return { kind, queue: fields[0] as string, id: fields[1] as string, attempt: num(2), proc };
    case 'error':
      return { kind, message: fields.join(' '), proc };
    default:
      return undefined;
  }
}

/** Everything known about one job. */
export interface JobRecord {
  readonly queue: string;
  readonly id: string;
  /** Set for jobs the producer added; a schedule's ticks are known from their starts only. */
  plan: Plan | undefined;
  readonly starts: StartEvent[];
  readonly ends: EndEvent[];
  readonly outcomes: OutcomeEvent[];
}

export function jobKey(queue: string, id: string): string {
  return `${queue}/${id}`;
}

/** The events of a run, by job, with the worker kills. */
export class Ledger {
  readonly jobs = new Map<string, JobRecord>();
  /** Worker process label -> when it was seen dead after a SIGKILL (local epoch ms). */
  readonly kills = new Map<string, number>();
  readonly errors: ErrorEvent[] = [];

  #job(queue: string, id: string): JobRecord {
    const key = jobKey(queue, id);
    let job = this.jobs.get(key);
    if (!job) {
      job = { queue, id, plan: undefined, starts: [], ends: [], outcomes: [] };
      this.jobs.set(key, job);
    }
    return job;
  }

  /** The producer is about to add this job (recorded before the add, so a lost add is a lost job). */
  expect(queue: string, id: string, plan: Plan): void {
    this.#job(queue, id).plan = plan;
  }

  record(event: LedgerEvent): void {
    if (event.kind === 'error') {
      this.errors.push(event);
      return;
    }
    const job = this.#job(event.queue, event.id);
    if (event.kind === 'start') job.starts.push(event);
    else if (event.kind === 'end') job.ends.push(event);
    else job.outcomes.push(event);
  }

  killed(proc: string, at: number): void {
    this.kills.set(proc, at);
  }
}

/** At most this many ids of each failure are kept in the verdict (the counts are exact). */
const EXAMPLES = 20;

export interface Verdict {
  readonly jobs: number;
  readonly ticks: number;
  readonly starts: number;
  readonly completed: number;
  readonly deadAsPlanned: number;
  /** Jobs that neither completed nor are dead letters at the end. */
  readonly lost: number;
  /** Completed when the plan said dead, or dead when it said completed. */
  readonly wrongOutcome: number;
  /** Handler starts with the Redis clock before the job's dueAt. */
  readonly early: number;
  /** A start again of a job whose previous start was in a process SIGKILLed before it ended. */
  readonly redeliveredAfterKill: number;
  /** A start again that neither a failure nor a kill explains (or after a landed ack). */
  readonly unexplainedDuplicates: number;
  readonly stale: number;
  /** Tick times missing between the first and the last tick seen (the schedule runs every `tickEveryMs`). */
  readonly ticksMissing: number;
  readonly examples: Readonly<Record<'lost' | 'wrongOutcome' | 'early' | 'unexplainedDuplicates' | 'ticksMissing', string[]>>;
}

/**
 * Judges the ledger after the drain. `deadIds` holds the keys (`jobKey`) of every job in the dead
 * letters at the end (read from Redis); a job is completed when one of its handler runs returned
 * (an ack that landed as the process was killed, with no `completed` line, counts: had it not
 * landed, the lease would have run out and the job would have started again).
 */
export function judge(ledger: Ledger, deadIds: ReadonlySet<string>, tickEveryMs: number): Verdict {
  const examples = {
    lost: [] as string[],
    wrongOutcome: [] as string[],
    early: [] as string[],
    unexplainedDuplicates: [] as string[],
    ticksMissing: [] as string[],
  };
  const note = (list: string[], text: string) => {
    if (list.length < EXAMPLES) list.push(text);
  };
  let jobs = 0;
  let ticks = 0;
  let starts = 0;
  let completed = 0;
  let deadAsPlanned = 0;
  let lost = 0;
  let wrongOutcome = 0;
  let early = 0;
  let redeliveredAfterKill = 0;
  let unexplainedDuplicates = 0;
  let stale = 0;
  const tickTimes = new Map<string, number[]>();
  for (const [key, job] of ledger.jobs) {
    const tickAt = job.plan === undefined ? tickTime(job.id) : undefined;
    if (job.plan === undefined && tickAt === undefined) {
      // Started, yet neither added by the producer nor a tick: something ran that nobody added.
      wrongOutcome += 1;
      note(examples.wrongOutcome, `${key}: started but never added`);
      continue;
    }
    if (tickAt !== undefined) {
      ticks += 1;
      const list = tickTimes.get(job.queue) ?? [];
      list.push(tickAt);
      tickTimes.set(job.queue, list);
    } else jobs += 1;
    starts += job.starts.length;
    stale += job.outcomes.filter(o => o.kind === 'stale').length;

    for (const start of job.starts) {
      if (start.redisAt < start.dueAt) {
        early += 1;
        note(
          examples.early,
          `${key} attempt ${start.attempt}: started at ${start.redisAt.toFixed(3)} on the Redis clock, due ${start.dueAt}`,
        );
      }
    }
    const duplicates = classifyRestarts(job, ledger.kills);
    redeliveredAfterKill += duplicates.afterKill;
    if (duplicates.unexplained.length > 0) {
      unexplainedDuplicates += duplicates.unexplained.length;
      for (const text of duplicates.unexplained) note(examples.unexplainedDuplicates, `${key}: ${text}`);
    }

    const ranToSuccess = job.ends.some(end => end.ok) || job.outcomes.some(o => o.kind === 'completed');
    const isDead = deadIds.has(key);
    const expected = expectedOutcome(job.plan ?? 'ok');
    if (ranToSuccess && isDead) {
      wrongOutcome += 1;
      note(examples.wrongOutcome, `${key}: ran to success and is a dead letter`);
    } else if (ranToSuccess) {
      if (expected === 'completed') completed += 1;
      else {
        wrongOutcome += 1;
        note(examples.wrongOutcome, `${key}: plan ${job.plan} completed`);
      }
    } else if (isDead) {
      if (expected === 'dead') deadAsPlanned += 1;
      else {
        wrongOutcome += 1;
        note(examples.wrongOutcome, `${key}: plan ${job.plan ?? 'tick'} is a dead letter after ${job.starts.length} start(s)`);
      }
    } else {
      lost += 1;
      note(examples.lost, `${key}: plan ${job.plan ?? 'tick'}, ${job.starts.length} start(s), never completed and not a dead letter`);
    }
  }
  let ticksMissing = 0;
  for (const [queue, times] of tickTimes) {
    for (const gap of tickGaps(times, tickEveryMs)) {
      ticksMissing += gap.missing;
      note(examples.ticksMissing, `${queue}: ${gap.missing} tick(s) missing after ${gap.after}`);
    }
  }
  return {
    jobs,
    ticks,
    starts,
    completed,
    deadAsPlanned,
    lost,
    wrongOutcome,
    early,
    redeliveredAfterKill,
    unexplainedDuplicates,
    stale,
    ticksMissing,
    examples,
  };
}

/**
 * Sorts out a job's starts after its first: explained by the previous run failing (a retry), or by
 * the previous run's process being SIGKILLed before it ended (the lease ran out: an allowed
 * duplicate); anything else, or any start after an ack that landed, is unexplained.
 */
export function classifyRestarts(job: JobRecord, kills: ReadonlyMap<string, number>): { afterKill: number; unexplained: string[] } {
  const starts = [...job.starts].sort((a, b) => a.localAt - b.localAt);
  let afterKill = 0;
  const unexplained: string[] = [];
  for (let i = 1; i < starts.length; i += 1) {
    const previous = starts[i - 1] as StartEvent;
    const start = starts[i] as StartEvent;
    const same = (e: { attempt: number; proc: string }) => e.attempt === previous.attempt && e.proc === previous.proc;
    const acked = job.outcomes.some(o => o.kind === 'completed' && same(o));
    const failed = job.ends.some(e => !e.ok && same(e));
    const killedAt = kills.get(previous.proc);
    const killedAfter = killedAt !== undefined && killedAt >= previous.localAt && killedAt <= start.localAt;
    if (acked)
      unexplained.push(
        `started again (attempt ${start.attempt}, ${start.proc}) after its ack landed (attempt ${previous.attempt}, ${previous.proc})`,
      );
    else if (failed) continue;
    else if (killedAfter) afterKill += 1;
    else
      unexplained.push(
        `started again (attempt ${start.attempt}, ${start.proc}) while attempt ${previous.attempt} in ${previous.proc} neither failed nor was killed`,
      );
  }
  return { afterKill, unexplained };
}

/** The tick time of a schedule tick's id (`<key>@<tickAt>`, maybe `~<n>` after), else undefined. */
export function tickTime(id: string): number | undefined {
  const match = /@(\d+)(?:~\d+)?$/.exec(id);
  return match ? Number(match[1]) : undefined;
}

/** Runs of missing tick times between the first and the last of `times` (any order). */
export function tickGaps(times: readonly number[], everyMs: number): { after: number; missing: number }[] {
  const sorted = [...new Set(times)].sort((a, b) => a - b);
  const gaps: { after: number; missing: number }[] = [];
  for (let i = 1; i < sorted.length; i += 1) {
    const step = (sorted[i] as number) - (sorted[i - 1] as number);
    const missing = Math.round(step / everyMs) - 1;
    if (missing > 0) gaps.push({ after: sorted[i - 1] as number, missing });
  }
  return gaps;
}

/**
 * The most handlers running at once, from [start, end] intervals (ms). An end at the same ms as a
 * start counts first: a slot freed and taken again within one ms is not an overlap.
 */
export function maxOverlap(intervals: readonly { readonly from: number; readonly to: number }[]): number {
  const edges: [number, number][] = [];
  for (const { from, to } of intervals) edges.push([from, 1], [to, -1]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let most = 0;
  for (const [, delta] of edges) {
    running += delta;
    most = Math.max(most, running);
  }
  return most;
}

/** The most of `times` (ms) in any window [t, t + windowMs). */
export function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last += 1) {
    while ((sorted[last] as number) - (sorted[first] as number) >= windowMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** Lateness (start minus due, on the Redis clock, ms) of a set of starts: p50, p99, max. */
export function lateness(starts: readonly StartEvent[]): { count: number; p50: number; p99: number; max: number } {
  const sorted = starts.map(s => s.redisAt - s.dueAt).sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : Number.NaN,
  };
}

/**
 * Heap growth of a long-lived process after the warm-up: the last sample against the first one
 * taken at or after `fromMs` into the run; undefined when the run is too short to say (fewer than
 * `minSpanMs` between the two).
 */
export function heapGrowth(
  samples: readonly { readonly atMs: number; readonly heapUsed: number | undefined }[],
  fromMs: number,
  minSpanMs: number,
): { from: number; to: number; growth: number } | undefined {
  const known = samples.filter((s): s is { atMs: number; heapUsed: number } => s.heapUsed !== undefined);
  const base = known.find(s => s.atMs >= fromMs);
  const last = known[known.length - 1];
  if (!base || !last || last.atMs - base.atMs < minSpanMs) return undefined;
  return { from: base.heapUsed, to: last.heapUsed, growth: last.heapUsed / base.heapUsed - 1 };
}

/** Redis memory at the end against the start: a leak fails, less than at the start is fine. */
export function memoryBack(startBytes: number, endBytes: number, tolerance: number): { ok: boolean; change: number } {
  return { ok: endBytes <= startBytes * (1 + tolerance), change: endBytes / startBytes - 1 };
}
