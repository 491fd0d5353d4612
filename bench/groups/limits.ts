/**
 * Group limits over several cold worker processes, read from the handlers' own starts and ends
 * (one monotonic clock for all processes): a group's concurrency, a group's rate, and a
 * concurrency-1 group run in due order.
 */
import type { Redis } from 'ioredis';
import type { BulkJob } from '../../src/index.js';
import { PAYLOAD, type Payload } from '../drivers/types.js';
import { withSession } from '../session.js';
import {
  busiestWindow,
  busiestWindowTimes,
  mergeRuns,
  mostAtOnce,
  orderOf,
  runsByGroup,
  type HandlerRun,
  type MergedRun,
} from './ledger.js';
import { addAll, drained, groupJobs, openQueue } from './load.js';
import { startGroupWorker, whileRunning, type GroupWorkerSpec } from './spawn.js';

const PROCESS_TIMEOUT_MS = 180_000;
const DRAIN_TIMEOUT_MS = 120_000;

export interface LimitsSpec {
  readonly processes: number;
  /** Handlers at once in each process. */
  readonly concurrency: number;
  readonly groups: number;
  readonly jobsPerGroup: number;
}

/** Starts the processes, adds the jobs once all listen, waits for the drain, returns every run. */
async function runOver(
  url: string,
  queueName: string,
  spec: Pick<LimitsSpec, 'processes' | 'concurrency'>,
  handlerMs: number,
  jobs: readonly BulkJob<Payload>[],
  dir: string,
  watch?: { start(): void; stop(): Promise<void> },
): Promise<{ runs: MergedRun[]; command: string }> {
  const queue = openQueue(url, queueName);
  try {
    const workerSpec: GroupWorkerSpec = { url, queue: queueName, concurrency: spec.concurrency, handlerMs, timeoutMs: PROCESS_TIMEOUT_MS };
    const workers = Array.from({ length: spec.processes }, () => startGroupWorker(workerSpec, dir));
    const { ledgers } = await whileRunning(workers, async () => {
      await Promise.all(workers.map(worker => worker.ready));
      watch?.start();
      try {
        await addAll(queue, jobs, false);
        await drained(queue, DRAIN_TIMEOUT_MS);
      } finally {
        await watch?.stop();
      }
    });
    const runs = mergeRuns(ledgers);
    const ids = new Set(runs.map(run => run.id));
    if (runs.length !== jobs.length || ids.size !== jobs.length)
      throw new Error(`${queueName}: ${runs.length} handler runs of ${ids.size} jobs, expected each of ${jobs.length} once`);
    return { runs, command: (workers[0] as { command: string }).command };
  } finally {
    await queue.close();
  }
}

function tenantJobs(spec: LimitsSpec): BulkJob<Payload>[] {
  return Array.from({ length: spec.groups }, (_, g) => groupJobs(`tenant-${g}`, spec.jobsPerGroup)).flat();
}

export interface ConcurrencyResult {
  readonly limit: number;
  /** The most handlers of one group running at once, over all processes. */
  readonly mostOfOneGroup: number;
  /** The most handlers running at once, all groups. */
  readonly mostOverall: number;
  readonly drainMs: number;
  readonly command: string;
}

export async function measureGroupConcurrency(spec: LimitsSpec, limit: number, handlerMs: number, dir: string): Promise<ConcurrencyResult> {
  return withSession('sandglass', async ({ server }) => {
    const queue = openQueue(server.url, 'group-concurrency');
    await queue.setGroupLimits({ concurrency: limit });
    await queue.close();
    const { runs, command } = await runOver(server.url, 'group-concurrency', spec, handlerMs, tenantJobs(spec), dir);
    const byGroup = runsByGroup(runs);
    return {
      limit,
      mostOfOneGroup: Math.max(...[...byGroup.values()].map(mostAtOnce)),
      mostOverall: mostAtOnce(runs),
      drainMs: span(runs),
      command,
    };
  });
}

export interface RateResult {
  readonly max: number;
  readonly perMs: number;
  /** The most starts of one group in any window of `perMs` at the handlers. */
  readonly busiestWindow: number;
  /** The same in windows 50 ms shorter (a handler starts a few ms after its claim). */
  readonly busiestShorterWindow: number;
  readonly shorterWindowMs: number;
  /** The most claims of one group in any window of `perMs` as the limit logged them (Redis clock, ms). */
  readonly busiestClaimWindow: number;
  /** Claims read from the limit's log, all groups (each job's claim once: jobs in all). */
  readonly claimsSeen: number;
  /** The shortest time from a group's first start to its last, ms (jobsPerGroup at max/per needs about (jobs/max - 1) * per). */
  readonly shortestGroupSpanMs: number;
  /** The starts of the busiest `perMs` window, ms after the group's first start (which group: `busiestGroup`). */
  readonly busiestStartsMs: number[];
  readonly busiestGroup: string;
  readonly command: string;
}

export async function measureGroupRate(spec: LimitsSpec, max: number, perMs: number, dir: string): Promise<RateResult> {
  return withSession('sandglass', async ({ server, probe }) => {
    const queue = openQueue(server.url, 'group-rate');
    await queue.setGroupLimits({ rate: { max, per: perMs } });
    await queue.close();
    const jobs = tenantJobs(spec);
    const claims = new ClaimLog(probe, 'group-rate', [...new Set(jobs.map(job => job.group as string))]);
    const { runs, command } = await runOver(server.url, 'group-rate', spec, 0, jobs, dir, claims);
    const byGroup = [...runsByGroup(runs)].map(([group, list]) => ({ group, times: list.map(run => run.startUs) }));
    const windows = byGroup.map(({ group, times }) => ({
      group,
      first: Math.min(...times),
      inWindow: busiestWindowTimes(times, perMs * 1000),
    }));
    const worst = windows.reduce((a, b) => (b.inWindow.length > a.inWindow.length ? b : a));
    const shorterWindowMs = perMs - 50;
    const claimTimes = [...claims.byGroup().values()];
    return {
      max,
      perMs,
      busiestWindow: worst.inWindow.length,
      busiestShorterWindow: Math.max(...byGroup.map(({ times }) => busiestWindow(times, shorterWindowMs * 1000))),
      shorterWindowMs,
      busiestClaimWindow: Math.max(...claimTimes.map(times => busiestWindow(times, perMs))),
      claimsSeen: claimTimes.reduce((sum, times) => sum + times.length, 0),
      shortestGroupSpanMs: Math.min(...byGroup.map(({ times }) => (Math.max(...times) - Math.min(...times)) / 1000)),
      busiestStartsMs: worst.inWindow.map(us => Math.round((us - worst.first) / 100) / 10),
      busiestGroup: worst.group,
      command,
    };
  });
}

/**
 * The claims of each group as its rate limit logs them, read from Redis while the queue drains:
 * the group's window `<prefix>:{<queue>:0}:group:r:<group>` (README, "Redis keys": fencing token
 * -> claimed at, Redis ms; a one-partition queue). An entry stays until it is a window (1 s here)
 * old, so reads every 100 ms see every claim.
 */
class ClaimLog {
  readonly #seen = new Map<string, Map<string, number>>();
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly probe: Redis,
    private readonly queue: string,
    private readonly groups: readonly string[],
  ) {}

  start(): void {
    this.#timer = setInterval(() => {
      this.#reading = this.#reading.then(() => this.#read());
    }, 100);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#reading;
    await this.#read();
  }

  /** Claim times (ms) by group. */
  byGroup(): Map<string, number[]> {
    return new Map([...this.#seen].map(([group, tokens]) => [group, [...tokens.values()]]));
  }

  async #read(): Promise<void> {
    const pipeline = this.probe.pipeline();
    for (const group of this.groups) pipeline.zrange(`sg:{${this.queue}:0}:group:r:${group}`, 0, -1, 'WITHSCORES');
    const replies = (await pipeline.exec()) ?? [];
    replies.forEach(([error, reply], k) => {
      if (error) throw error;
      const group = this.groups[k] as string;
      const tokens = this.#seen.get(group) ?? new Map<string, number>();
      this.#seen.set(group, tokens);
      const flat = reply as string[];
      for (let i = 0; i < flat.length; i += 2) tokens.set(flat[i] as string, Number(flat[i + 1]));
    });
  }
}

export interface OrderResult {
  readonly jobs: number;
  /** The group's runs, ordered by their start, are its jobs in due order (ties: in the order added). */
  readonly inOrder: boolean;
  /** Each of its runs started after the one before it ended. */
  readonly noOverlap: boolean;
  readonly firstOutOfOrder?: string;
  /** How many processes ran some of its jobs. */
  readonly processes: number;
  readonly drainMs: number;
  readonly command: string;
}

/** The group that must run in order, and the noise around it. */
const ORDERED = 'orders-of-shop-7';
const NOISE_GROUPS = 5;
const NOISE_JOBS = 200;

export async function measureGroupOrder(
  spec: Pick<LimitsSpec, 'processes' | 'concurrency'>,
  jobs: number,
  dir: string,
): Promise<OrderResult> {
  return withSession('sandglass', async ({ server }) => {
    const queue = openQueue(server.url, 'group-order');
    await queue.setGroupLimits({ concurrency: 1 }, { group: ORDERED });
    await queue.close();
    // Due order by time (ten jobs a millisecond), and jobs of one due time in the order they were
    // added; other groups' jobs around them.
    const at = Date.now() + 200;
    const ordered: BulkJob<Payload>[] = Array.from({ length: jobs }, (_, n) => ({
      id: `o-${n}`,
      payload: PAYLOAD,
      group: ORDERED,
      at: at + Math.floor(n / 10),
    }));
    const noise = Array.from({ length: NOISE_JOBS }, (_, n) => ({ payload: PAYLOAD, group: `noise-${n % NOISE_GROUPS}`, at }));
    const { runs, command } = await runOver(server.url, 'group-order', spec, 0, [...noise, ...ordered], dir);
    const own = runs.filter(run => run.group === ORDERED);
    const order = orderOf(
      own,
      ordered.map(job => job.id as string),
    );
    return {
      jobs,
      ...order,
      processes: new Set(own.map(run => run.process)).size,
      drainMs: span(own),
      command,
    };
  });
}

/** From the first start to the last end, ms. */
function span(runs: readonly HandlerRun[]): number {
  const first = Math.min(...runs.map(run => run.startUs));
  const last = Math.max(...runs.map(run => run.endUs ?? run.startUs));
  return (last - first) / 1000;
}
