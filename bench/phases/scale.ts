/**
 * Figure 6: add and claim throughput with many jobs waiting, against an empty queue on the same
 * server. A queue is loaded with far-future jobs (1M for each library by default; `--scale-waiting`
 * sets the sandglass count, e.g. 10M, while BullMQ keeps its own); then each repetition measures, in alternating order, adds into
 * that queue and into a fresh empty one, and the drain of due jobs from each.
 */
import os from 'node:os';
import type { Redis } from 'ioredis';
import { FAR_FUTURE_MS, LIBRARIES, type Driver, type LibraryName } from '../drivers/types.js';
import { BARS, figure, type PhaseOutput } from '../figures.js';
import { shortCount } from '../format.js';
import { timeAdd, timeDrain, warmUp } from '../measure.js';
import type { BenchOptions } from '../options.js';
import { usedMemory } from '../servers.js';
import { withSession } from '../session.js';
import { median, perSecond } from '../stats.js';

const LOADED = 'loaded';

interface ScaleSample {
  readonly waiting: number;
  readonly loadJobsPerSecond: number;
  readonly bytesPerJobAtScale: number;
  readonly addEmpty: number[];
  readonly addLoaded: number[];
  readonly claimEmpty: number[];
  readonly claimLoaded: number[];
}

export async function scalePhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const results = {} as Record<LibraryName, ScaleSample>;
  for (const library of LIBRARIES) {
    const waiting = library === 'sandglass' ? options.scale.sandglassWaiting : options.scale.bullmqWaiting;
    results[library] = await measureScale(library, waiting, options, log);
  }
  const sg = results.sandglass;
  const bull = results.bullmq;
  const sameCount = sg.waiting === bull.waiting;
  const where = sameCount ? `${shortCount(sg.waiting)} waiting` : `${shortCount(sg.waiting)} waiting (BullMQ: ${shortCount(bull.waiting)})`;
  const ratio = (loaded: number[], empty: number[]) => median(loaded) / median(empty);
  const scaleNote = sameCount
    ? {}
    : { note: `BullMQ measured with ${shortCount(bull.waiting)} waiting jobs, not ${shortCount(sg.waiting)}` };
  return {
    figures: [
      figure({
        id: 'scale-add-empty',
        label: `add ${shortCount(options.scale.addJobs)} delayed, empty queue`,
        unit: 'jobs/s',
        sandglass: median(sg.addEmpty),
        bullmq: median(bull.addEmpty),
      }),
      figure({
        id: 'scale-add-loaded',
        label: `add ${shortCount(options.scale.addJobs)} delayed, ${where}`,
        unit: 'jobs/s',
        sandglass: median(sg.addLoaded),
        bullmq: median(bull.addLoaded),
        ...scaleNote,
      }),
      figure({
        id: 'scale-add-ratio',
        label: '  add: loaded / empty',
        unit: 'ratio',
        sandglass: ratio(sg.addLoaded, sg.addEmpty),
        bullmq: ratio(bull.addLoaded, bull.addEmpty),
        noRatio: true,
        bar: BARS.atLeast(0.8, 'within 20% of empty'),
      }),
      figure({
        id: 'scale-claim-empty',
        label: `drain ${shortCount(options.scale.claimJobs)} due, empty queue`,
        unit: 'jobs/s',
        sandglass: median(sg.claimEmpty),
        bullmq: median(bull.claimEmpty),
      }),
      figure({
        id: 'scale-claim-loaded',
        label: `drain ${shortCount(options.scale.claimJobs)} due, ${where}`,
        unit: 'jobs/s',
        sandglass: median(sg.claimLoaded),
        bullmq: median(bull.claimLoaded),
        ...scaleNote,
      }),
      figure({
        id: 'scale-claim-ratio',
        label: '  claim: loaded / empty',
        unit: 'ratio',
        sandglass: ratio(sg.claimLoaded, sg.claimEmpty),
        bullmq: ratio(bull.claimLoaded, bull.claimEmpty),
        noRatio: true,
        bar: BARS.atLeast(0.8, 'within 20% of empty'),
      }),
    ],
    details: { addJobs: options.scale.addJobs, claimJobs: options.scale.claimJobs, concurrency: options.concurrency, results },
  };
}

async function measureScale(
  library: LibraryName,
  waiting: number,
  options: BenchOptions,
  log: (message: string) => void,
): Promise<ScaleSample> {
  return withSession(library, async ({ driver, probe }) => {
    await warmUp(driver, options.warmupJobs, options.concurrency, options.chunk, options.stallMs);
    const memoryBefore = await usedMemory(probe);
    const loadJobsPerSecond = await loadGuarded(driver, probe, waiting, options, log);
    const bytesPerJobAtScale = ((await usedMemory(probe)) - memoryBefore) / waiting;
    log(
      `scale ${library}: loaded ${waiting} far-future jobs at ${Math.round(loadJobsPerSecond)} jobs/s, ${Math.round(bytesPerJobAtScale)} bytes/job`,
    );
    const sample: ScaleSample = {
      waiting,
      loadJobsPerSecond,
      bytesPerJobAtScale,
      addEmpty: [],
      addLoaded: [],
      claimEmpty: [],
      claimLoaded: [],
    };
    for (let rep = 0; rep < options.reps; rep++) {
      // Alternate which side goes first, so that a trend in machine load does not favour one.
      const sides = rep % 2 === 0 ? (['empty', 'loaded'] as const) : (['loaded', 'empty'] as const);
      for (const side of sides) {
        const queue = side === 'loaded' ? LOADED : `empty-${rep}`;
        const add = await timeAdd(driver, queue, options.scale.addJobs, FAR_FUTURE_MS, options.chunk);
        const claim = await drainDue(driver, side === 'loaded' ? LOADED : `empty-claim-${rep}`, options);
        (side === 'loaded' ? sample.addLoaded : sample.addEmpty).push(add);
        (side === 'loaded' ? sample.claimLoaded : sample.claimEmpty).push(claim);
        log(`scale ${library} rep ${rep + 1} ${side}: add ${Math.round(add)} jobs/s, claim ${Math.round(claim)} jobs/s`);
      }
    }
    return sample;
  });
}

/** Share of the machine's available memory a load may be projected to take. */
const MEMORY_HEADROOM = 0.7;
/** Jobs loaded before the projection, and per progress line. */
const LOAD_STEP = 1_000_000;

/**
 * Loads `waiting` far-future jobs in steps, and after the first step projects the server's memory
 * at the full count from the bytes per job so far (x1.25 for hash tables doubling as they grow):
 * a load that would not fit the machine's available memory stops before it swaps or gets killed.
 * Returns jobs/s over the whole load.
 */
async function loadGuarded(
  driver: Driver,
  probe: Redis,
  waiting: number,
  options: BenchOptions,
  log: (message: string) => void,
): Promise<number> {
  const startMemory = await usedMemory(probe);
  const started = performance.now();
  for (let loaded = 0; loaded < waiting;) {
    const step = Math.min(LOAD_STEP, waiting - loaded);
    await driver.addJobs(LOADED, step, FAR_FUTURE_MS, options.chunk);
    loaded += step;
    if (loaded < waiting) {
      const bytesPerJob = ((await usedMemory(probe)) - startMemory) / loaded;
      const projected = bytesPerJob * (waiting - loaded) * 1.25;
      const available = os.freemem();
      log(
        `scale ${driver.library}: ${loaded} of ${waiting} loaded, ${Math.round(bytesPerJob)} bytes/job, ${(projected / 1e9).toFixed(1)} GB more projected, ${(available / 1e9).toFixed(1)} GB available`,
      );
      if (projected > available * MEMORY_HEADROOM)
        throw new Error(
          `${driver.library}: ${waiting} waiting jobs would need about ${(projected / 1e9).toFixed(1)} GB more, beyond ${MEMORY_HEADROOM * 100}% of the ${(available / 1e9).toFixed(1)} GB available`,
        );
    }
  }
  const rate = perSecond(waiting, performance.now() - started);
  const counted = await driver.countWaiting(LOADED);
  if (counted !== waiting) throw new Error(`${driver.library}: loaded ${waiting} jobs but ${counted} are waiting`);
  return rate;
}

/** Loads due jobs into `queue` (untimed) and times their drain while the far-future ones stay put. */
async function drainDue(driver: Driver, queue: string, options: BenchOptions): Promise<number> {
  const count = options.scale.claimJobs;
  await driver.addJobs(queue, count, 0, options.chunk);
  return timeDrain(driver, queue, count, { concurrency: options.concurrency, stallMs: options.stallMs });
}
