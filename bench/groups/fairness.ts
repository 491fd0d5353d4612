/**
 * Fairness between groups, each measured with one cold worker process at concurrency 50 whose
 * handler reads the payload:
 * - the latecomer: a small group added while a big one drains is not queued behind it;
 * - equal shares: groups with backlogs from tens to a hundred thousand each get the same starts.
 */
import { withSession } from '../session.js';
import { percentile, sleep } from '../stats.js';
import { equalShares, monotonicUs, type GroupLedger, type GroupShare } from './ledger.js';
import { addAll, groupJobs, openQueue } from './load.js';
import { startGroupWorker, whileRunning } from './spawn.js';

const CONCURRENCY = 50;
/** The whole run of one worker process, at most. */
const PROCESS_TIMEOUT_MS = 120_000;

export interface LatecomerSpec {
  /** Due jobs of group A before the worker starts. */
  readonly backlog: number;
  /** Jobs of group B, added at once, due now. */
  readonly jobs: number;
  /** How long after A's first start B is added. */
  readonly afterMs: number;
}

export interface LatecomerResult {
  /** From the moment B's addBulk was sent to the start of B's last job, ms (p100). */
  readonly lastStartMs: number;
  readonly medianStartMs: number;
  /** How long the addBulk call of B took, ms. */
  readonly addCallMs: number;
  /** A's jobs not yet started when B's last job started (read from the handler starts). */
  readonly aNotStarted: number;
  /** A's waiting jobs as Redis counted them when the parent saw B done (a little later). */
  readonly aWaitingAfter: number;
  readonly bStarted: number;
  readonly command: string;
}

export async function measureLatecomer(spec: LatecomerSpec, dir: string): Promise<LatecomerResult> {
  return withSession('sandglass', async ({ server }) => {
    const queue = openQueue(server.url, 'latecomer');
    try {
      await addAll(queue, groupJobs('A', spec.backlog));
      const worker = startGroupWorker(
        { url: server.url, queue: queue.name, concurrency: CONCURRENCY, handlerMs: 0, timeoutMs: PROCESS_TIMEOUT_MS },
        dir,
      );
      const { value, ledgers } = await whileRunning([worker], async () => {
        const firstUs = await worker.firstStart;
        await sleep(Math.max(0, spec.afterMs - (monotonicUs() - firstUs) / 1000));
        const addAtUs = monotonicUs();
        await queue.addBulk(groupJobs('B', spec.jobs));
        const addCallMs = (monotonicUs() - addAtUs) / 1000;
        return { addAtUs, addCallMs, aWaitingAfter: await untilGroupGone(queue, 'B', 10_000) };
      });
      const { addAtUs, addCallMs, aWaitingAfter } = value;
      const ledger = ledgers[0] as GroupLedger;
      const bStarts = ledger.runs.filter(run => run.group === 'B').map(run => (run.startUs - addAtUs) / 1000);
      if (bStarts.length !== spec.jobs) throw new Error(`latecomer: ${bStarts.length} of B's ${spec.jobs} jobs started`);
      bStarts.sort((a, b) => a - b);
      const lastStartMs = bStarts[bStarts.length - 1] as number;
      const lastUs = addAtUs + lastStartMs * 1000;
      const aStarted = ledger.runs.filter(run => run.group === 'A' && run.startUs <= lastUs).length;
      return {
        lastStartMs,
        medianStartMs: percentile(bStarts, 50),
        addCallMs,
        aNotStarted: spec.backlog - aStarted,
        aWaitingAfter,
        bStarted: bStarts.length,
        command: worker.command,
      };
    } finally {
      await queue.close();
    }
  });
}

/** Waits until `group` has no waiting or running job; returns group A's waiting jobs then. */
async function untilGroupGone(queue: ReturnType<typeof openQueue>, group: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { groups } = await queue.listGroups({ limit: 10 });
    if (!groups.some(info => info.group === group)) return groups.find(info => info.group === 'A')?.waiting ?? 0;
    if (Date.now() > deadline) throw new Error(`latecomer: group ${group} still has jobs ${timeoutMs} ms after its add`);
    await sleep(20);
  }
}

export interface SharesSpec {
  /** Each group's due jobs before the worker starts. */
  readonly backlogs: readonly number[];
  /** The window of starts judged, from the first start. */
  readonly windowMs: number;
  /** How long each handler takes after reading its payload, ms. */
  readonly handlerMs: number;
}

export interface SharesResult {
  readonly shares: GroupShare[];
  /** Handler starts per second in the window, all groups. */
  readonly startsPerSecond: number;
  readonly command: string;
}

/** `count` backlogs spaced evenly on a log scale from `min` to `max`, rounded. */
export function logSpaced(count: number, min: number, max: number): number[] {
  return Array.from({ length: count }, (_, k) => Math.round(min * (max / min) ** (k / (count - 1))));
}

export async function measureShares(spec: SharesSpec, dir: string): Promise<SharesResult> {
  return withSession('sandglass', async ({ server }) => {
    const queue = openQueue(server.url, 'shares');
    const backlogs = new Map(spec.backlogs.map(backlog => [`tenant-${backlog}`, backlog]));
    try {
      for (const [group, backlog] of backlogs) await addAll(queue, groupJobs(group, backlog));
      const worker = startGroupWorker(
        { url: server.url, queue: queue.name, concurrency: CONCURRENCY, handlerMs: spec.handlerMs, timeoutMs: PROCESS_TIMEOUT_MS },
        dir,
      );
      const { value: firstUs, ledgers } = await whileRunning([worker], async () => {
        const first = await worker.firstStart;
        await sleep(spec.windowMs + 100);
        return first;
      });
      const ledger = ledgers[0] as GroupLedger;
      const toUs = firstUs + spec.windowMs * 1000;
      const inWindow = ledger.runs.filter(run => run.startUs < toUs).length;
      return {
        shares: equalShares(ledger.runs, backlogs, firstUs, toUs),
        startsPerSecond: inWindow / (spec.windowMs / 1000),
        command: worker.command,
      };
    } finally {
      await queue.close();
    }
  });
}
