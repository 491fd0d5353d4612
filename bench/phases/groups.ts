/**
 * Groups (issue 20), sandglass only (BullMQ's groups are in its paid edition): each figure in
 * its own fresh private Redis with cold worker processes, judged against the bars of the issue.
 * 1. a latecomer group is not queued behind a big backlog;
 * 2. groups with backlogs from 10 to 100,000 get equal shares of the starts;
 * 3. a group's concurrency and rate hold over 3 processes, read at the handlers (the rate also in
 *    the limit's own log of claims);
 * 4. a concurrency-1 group runs in due order, one job at a time, over 3 processes;
 * 5. what groups cost: a drain of 10,000 groups against the same queue without groups, and Redis
 *    bytes per waiting grouped job against an ungrouped one. (That a queue without groups pays
 *    nothing is the enqueue and cold-drain phases, run on the commit before groups and after.)
 * The BullMQ column stays empty; each row's value is in the sandglass column.
 */
import { BARS, figure, type Figure, type PhaseOutput } from '../figures.js';
import { shortCount } from '../format.js';
import { drainReport, measureDrainCost, measureMemoryCost, memoryReport, type CostSpec } from '../groups/cost.js';
import { logSpaced, measureLatecomer, measureShares } from '../groups/fairness.js';
import { measureGroupConcurrency, measureGroupOrder, measureGroupRate, type LimitsSpec } from '../groups/limits.js';
import { ledgerDir, removeLedgers } from '../groups/spawn.js';
import type { BenchOptions } from '../options.js';

const LATECOMER_JOBS = 100;
const LATECOMER_AFTER_MS = 200;
const SHARE_GROUPS = 10;
/**
 * Handlers of the equal-share run take this long: at concurrency 50 that caps the run near 10,000
 * starts/s, so that a 3 s window holds about 30,000 starts and the three largest backlogs still have
 * work at its end. With handlers that return at once a worker starts ~36,000 jobs/s here, and only
 * the 100,000 backlog outlasts the window: a share of one group is 1 by construction.
 */
const SHARE_HANDLER_MS = 5;
const PROCESSES = 3;
const LIMIT_GROUPS = 20;
const GROUP_CONCURRENCY = 2;
/** Long enough that a group's two slots are seen overlapping, short enough for a quick drain. */
const CONCURRENCY_HANDLER_MS = 25;
const RATE = { max: 5, perMs: 1_000 };

export async function groupsPhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const sizes = options.groups;
  const dir = ledgerDir();
  try {
    const latecomer = await measureLatecomer({ backlog: sizes.latecomerBacklog, jobs: LATECOMER_JOBS, afterMs: LATECOMER_AFTER_MS }, dir);
    log(
      `groups latecomer: B's last start ${latecomer.lastStartMs.toFixed(1)} ms after its add (median ${latecomer.medianStartMs.toFixed(1)}), A had ${latecomer.aNotStarted} not started`,
    );
    const backlogs = logSpaced(SHARE_GROUPS, 10, sizes.largestBacklog);
    const shares = await measureShares({ backlogs, windowMs: sizes.shareWindowMs, handlerMs: SHARE_HANDLER_MS }, dir);
    const judged = shares.shares.filter(share => share.ofEqualShare !== null).map(share => share.ofEqualShare as number);
    log(
      `groups shares: ${shares.shares.map(s => `${s.backlog}:${s.starts}${s.hadWorkThroughout ? '' : '(ran out)'}`).join(' ')}; ${Math.round(shares.startsPerSecond)} starts/s`,
    );
    const limitsSpec: LimitsSpec = {
      processes: PROCESSES,
      concurrency: 20,
      groups: LIMIT_GROUPS,
      jobsPerGroup: sizes.concurrencyJobsPerGroup,
    };
    const concurrency = await measureGroupConcurrency(limitsSpec, GROUP_CONCURRENCY, CONCURRENCY_HANDLER_MS, dir);
    log(
      `groups concurrency ${GROUP_CONCURRENCY}: at most ${concurrency.mostOfOneGroup} of one group at once (${concurrency.mostOverall} overall)`,
    );
    const rate = await measureGroupRate({ ...limitsSpec, jobsPerGroup: sizes.rateJobsPerGroup }, RATE.max, RATE.perMs, dir);
    log(
      `groups rate ${RATE.max}/${RATE.perMs} ms: busiest ${RATE.perMs} ms window of starts ${rate.busiestWindow}, of ${rate.shorterWindowMs} ms ${rate.busiestShorterWindow}; of claims (Redis clock) ${rate.busiestClaimWindow}`,
    );
    const order = await measureGroupOrder({ processes: PROCESSES, concurrency: 10 }, sizes.orderJobs, dir);
    log(
      `groups order: in order ${order.inOrder}, no overlap ${order.noOverlap}, ${order.processes} processes, ${order.drainMs.toFixed(0)} ms`,
    );
    const costSpec: CostSpec = {
      jobs: sizes.costJobs,
      groups: sizes.costGroups,
      reps: sizes.costReps,
      concurrency: 50,
      stallMs: options.stallMs,
    };
    const drain = await measureDrainCost(costSpec, log);
    const memory = await measureMemoryCost(costSpec, log);
    // The same jobs in a tenth as many groups (100 a group): what a job costs, with the per-group
    // part (its entry in group:jobs and groups, its queue key) spread over more jobs.
    const denser = await measureMemoryCost({ ...costSpec, groups: Math.max(1, Math.round(sizes.costGroups / 10)) }, log);

    const yes = (flag: boolean) => (flag ? 1 : 0);
    const figures: Figure[] = [
      figure({
        id: 'groups-latecomer',
        label: `groups: ${LATECOMER_JOBS} jobs of group B added ${LATECOMER_AFTER_MS} ms into A's drain of ${shortCount(sizes.latecomerBacklog)}, 1 process c50: B's add to its last start`,
        unit: 'ms',
        sandglass: latecomer.lastStartMs,
        bullmq: null,
        bar: BARS.atMost(1_000, '<= 1 s'),
        note: `p100 of B's starts after its addBulk was sent (median ${latecomer.medianStartMs.toFixed(1)} ms; the addBulk call took ${latecomer.addCallMs.toFixed(1)} ms); A's jobs not yet started at B's last start: ${latecomer.aNotStarted} (Redis counted ${latecomer.aWaitingAfter} waiting when the bench saw B done)`,
      }),
      figure({
        id: 'groups-latecomer-a-left',
        label: "  A's jobs not yet started at B's last start",
        unit: 'jobs',
        sandglass: latecomer.aNotStarted,
        bullmq: null,
        bar: BARS.atLeast(1, '> 0 (A still waiting)'),
      }),
      figure({
        id: 'groups-share-min',
        label: `groups: ${SHARE_GROUPS} groups of 10..${shortCount(sizes.largestBacklog)} due jobs, 1 process c50, handlers of ${SHARE_HANDLER_MS} ms, first ${sizes.shareWindowMs / 1000} s: lowest starts / equal share`,
        unit: 'x',
        sandglass: Math.min(...judged),
        bullmq: null,
        noRatio: true,
        bar: BARS.between(0.8, 1.2, '0.8..1.2'),
        note: `equal share = the starts of the groups that had work during the whole window / their count; ${shares.shares.length - judged.length} groups that ran out inside the window are left out of both; ${Math.round(shares.startsPerSecond)} starts/s`,
      }),
      figure({
        id: 'groups-share-max',
        label: '  highest starts / equal share',
        unit: 'x',
        sandglass: Math.max(...judged),
        bullmq: null,
        noRatio: true,
        bar: BARS.between(0.8, 1.2, '0.8..1.2'),
      }),
      figure({
        id: 'groups-share-judged',
        label: '  groups with work during the whole window (judged)',
        unit: 'groups',
        sandglass: judged.length,
        bullmq: null,
        bar: BARS.atLeast(2, '>= 2 (one group is its own equal share)'),
      }),
      figure({
        id: 'groups-concurrency',
        label: `groups: ${LIMIT_GROUPS} groups x ${sizes.concurrencyJobsPerGroup}, group concurrency ${GROUP_CONCURRENCY}, ${PROCESSES} processes c20: most of one group at once`,
        unit: 'handlers',
        sandglass: concurrency.mostOfOneGroup,
        bullmq: null,
        bar: BARS.atMost(GROUP_CONCURRENCY, `<= ${GROUP_CONCURRENCY}`),
        note: `handlers of ${CONCURRENCY_HANDLER_MS} ms; read from the handlers' starts and ends on one monotonic clock; ${concurrency.mostOverall} handlers at once overall`,
      }),
      figure({
        id: 'groups-rate',
        label: `groups: ${LIMIT_GROUPS} groups x ${sizes.rateJobsPerGroup}, group rate ${RATE.max}/1s, ${PROCESSES} processes: most starts of one group in 1 s`,
        unit: 'starts',
        sandglass: rate.busiestWindow,
        bullmq: null,
        // The limit is a guarantee where it is kept: the claims, on the Redis clock (the next figure).
        // A handler starts a few ms after its claim, by a lag that differs from job to job: paced
        // claims exactly per / max apart can put max + 1 starts into a window measured here.
        note: `(info) measured at the handlers' starts, a few ms after the claims the limit counts (on the Redis clock); the busiest window's starts (${rate.busiestGroup}, ms after its first start): ${rate.busiestStartsMs.join(', ')}; the shortest first-to-last span of a group: ${(rate.shortestGroupSpanMs / 1000).toFixed(1)} s`,
      }),
      figure({
        id: 'groups-rate-claims',
        label: "  same, at the claims (the limit's own log, Redis clock)",
        unit: 'claims',
        sandglass: rate.busiestClaimWindow,
        bullmq: null,
        bar: BARS.atMost(RATE.max, `<= ${RATE.max}`),
        note: `read from the group's rate window in Redis every 100 ms while the queue drained; ${rate.claimsSeen} claims seen of ${LIMIT_GROUPS * sizes.rateJobsPerGroup} jobs`,
      }),
      figure({
        id: 'groups-rate-shorter',
        label: `  same, in any ${rate.shorterWindowMs} ms window`,
        unit: 'starts',
        sandglass: rate.busiestShorterWindow,
        bullmq: null,
        bar: BARS.atMost(RATE.max, `<= ${RATE.max}`),
      }),
      figure({
        id: 'groups-order',
        label: `groups: a concurrency-1 group of ${order.jobs} jobs (and 5 other groups), ${PROCESSES} processes c10: in due order`,
        unit: '1 = yes',
        sandglass: yes(order.inOrder),
        bullmq: null,
        noRatio: true,
        bar: BARS.holds('yes'),
        note: `its runs by start time are its jobs in due order, ties in the order added${order.firstOutOfOrder ? ` (first out of order: ${order.firstOutOfOrder})` : ''}; ${order.processes} processes ran some; ${order.drainMs.toFixed(0)} ms`,
      }),
      figure({
        id: 'groups-order-no-overlap',
        label: '  one at a time (each starts after the one before ended)',
        unit: '1 = yes',
        sandglass: yes(order.noOverlap),
        bullmq: null,
        noRatio: true,
        bar: BARS.holds('yes'),
      }),
      figure({
        id: 'groups-drain-ratio',
        label: `groups cost: deployment drain of ${shortCount(sizes.costJobs)} due jobs in ${shortCount(sizes.costGroups)} groups / the same without groups, cold process c50`,
        unit: 'x',
        sandglass: drain.ratio,
        bullmq: null,
        noRatio: true,
        bar: BARS.atLeast(0.7, '>= 0.7x'),
        note: `medians of ${sizes.costReps} alternating runs: ${Math.round(drain.grouped)} jobs/s grouped, ${Math.round(drain.ungrouped)} without groups; Redis CPU per job ${drain.groupedRedisUs.toFixed(1)} us grouped, ${drain.ungroupedRedisUs.toFixed(1)} us without (by command: after the table)`,
      }),
      figure({ id: 'groups-drain-grouped', label: '  grouped drain', unit: 'jobs/s', sandglass: drain.grouped, bullmq: null }),
      figure({
        id: 'groups-drain-ungrouped',
        label: '  the same queue without groups',
        unit: 'jobs/s',
        sandglass: drain.ungrouped,
        bullmq: null,
      }),
      figure({
        id: 'groups-memory-ratio',
        label: `groups cost: Redis bytes per waiting job, ${shortCount(sizes.costJobs)} due 1 min..30 days in ${shortCount(Math.max(1, Math.round(sizes.costGroups / 10)))} groups (shop-N, ${Math.round(sizes.costJobs / Math.max(1, Math.round(sizes.costGroups / 10)))} a group) / without groups`,
        unit: 'x',
        sandglass: denser.ratio,
        bullmq: null,
        noRatio: true,
        bar: BARS.atMost(1.1, '<= 1.1x'),
        note: `used_memory delta / jobs, medians of ${sizes.costReps}: ${denser.grouped.toFixed(1)} bytes grouped, ${denser.ungrouped.toFixed(1)} without groups (the delays of the spread-memory phase)`,
      }),
      figure({
        id: 'groups-memory-ratio-sparse',
        label: `  the same in ${shortCount(sizes.costGroups)} groups (${Math.round(sizes.costJobs / sizes.costGroups)} a group)`,
        unit: 'x',
        sandglass: memory.ratio,
        bullmq: null,
        noRatio: true,
        note: `${memory.grouped.toFixed(1)} bytes grouped, ${memory.ungrouped.toFixed(1)} without groups: a group's own entries (group:jobs, groups, its queue key) cost about ${(((memory.grouped - denser.grouped) * sizes.costJobs) / (sizes.costGroups - Math.max(1, Math.round(sizes.costGroups / 10)))).toFixed(0)} bytes, spread over its jobs`,
      }),
      figure({ id: 'groups-memory-grouped', label: '  grouped', unit: 'bytes', sandglass: memory.grouped, bullmq: null }),
      figure({ id: 'groups-memory-ungrouped', label: '  without groups', unit: 'bytes', sandglass: memory.ungrouped, bullmq: null }),
    ];
    return {
      figures,
      details: { sizes, latecomer, shares, concurrency, rate, order, drain, memory, denser },
      report: [...drainReport(drain), ...memoryReport(memory)],
    };
  } finally {
    removeLedgers(dir);
  }
}
