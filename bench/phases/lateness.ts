/**
 * Figure 3: lateness (handler start minus due time) under a steady 1,000 jobs/s. A producer in this
 * process adds the jobs that are owed every few milliseconds, each due `delayMs` later; one worker
 * records lateness in its handler (Date.now(), so 1 ms resolution). Jobs added during the warm-up
 * seconds are not counted. Redis runs with its default `hz 10`: BullMQ waits for delayed jobs with
 * blocking-pop timeouts, whose precision depends on it (DESIGN.md: p99 about 90 ms at hz 10).
 */
import { LIBRARIES, type Driver, type LibraryName } from '../drivers/types.js';
import { BARS, figure, type PhaseOutput } from '../figures.js';
import { Progress, warmUp } from '../measure.js';
import type { BenchOptions, LatencyWorkload } from '../options.js';
import { withSession } from '../session.js';
import { percentile, perSecond, sleep } from '../stats.js';

/** How often the producer tops up: 1,000 jobs/s arrive in groups of about 5. */
const PRODUCER_TICK_MS = 5;

interface LatenessSample {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly min: number;
  readonly mean: number;
  readonly measuredJobs: number;
  readonly achievedRate: number;
}

export async function latenessPhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const results = {} as Record<LibraryName, LatenessSample>;
  for (const library of LIBRARIES) {
    results[library] = await measureLateness(library, options);
    const r = results[library];
    log(
      `lateness ${library}: p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms over ${r.measuredJobs} jobs at ${Math.round(r.achievedRate)} jobs/s`,
    );
  }
  const { rate, durationMs, delayMs } = options.latency;
  const label = `lateness at ${rate} jobs/s for ${durationMs / 1000} s`;
  const row = (key: 'p50' | 'p99' | 'max', bar?: ReturnType<typeof BARS.atMost>) =>
    figure({
      id: `lateness-${key}`,
      label: `${label}, ${key}`,
      unit: 'ms',
      sandglass: results.sandglass[key],
      bullmq: results.bullmq[key],
      ...(bar ? { bar } : {}),
    });
  return {
    figures: [row('p50'), row('p99', BARS.atMost(5, 'p99 <= 5 ms')), row('max')],
    details: { rate, durationMs, warmupMs: options.latency.warmupMs, delayMs, concurrency: options.concurrency, resolutionMs: 1, results },
  };
}

async function measureLateness(library: LibraryName, options: BenchOptions): Promise<LatenessSample> {
  return withSession(library, async ({ driver }) => {
    await warmUp(driver, options.warmupJobs, options.concurrency, options.chunk, options.stallMs);
    const load = options.latency;
    const samples: { dueAt: number; lateness: number }[] = [];
    const progress = new Progress();
    const errors: Error[] = [];
    const worker = await driver.startWorker('lateness', {
      concurrency: options.concurrency,
      onStart: (dueAt, startedAt) => samples.push({ dueAt, lateness: startedAt - dueAt }),
      onCompleted: () => progress.increment(),
      onError: error => errors.push(error),
    });
    try {
      const { added, startedAt } = await produceSteadily(driver, 'lateness', load);
      await progress.reach(added, options.stallMs + load.delayMs);
      if (errors[0]) throw errors[0];
      return summarize(samples, startedAt, load);
    } finally {
      await worker.close();
    }
  });
}

/** Adds, every tick, the jobs owed at `rate` since the start; one add call in flight at a time. */
async function produceSteadily(driver: Driver, queue: string, load: LatencyWorkload): Promise<{ added: number; startedAt: number }> {
  const startedAt = Date.now();
  const totalMs = load.warmupMs + load.durationMs;
  let added = 0;
  for (let elapsed = 0; elapsed < totalMs; elapsed = Date.now() - startedAt) {
    const owed = Math.floor((load.rate * elapsed) / 1000) - added;
    if (owed > 0) {
      await driver.addJobs(queue, owed, load.delayMs, owed);
      added += owed;
    }
    await sleep(PRODUCER_TICK_MS);
  }
  return { added, startedAt };
}

function summarize(samples: readonly { dueAt: number; lateness: number }[], startedAt: number, load: LatencyWorkload): LatenessSample {
  // Only jobs added after the warm-up: their due time is at least start + warm-up + delay.
  const firstDue = startedAt + load.warmupMs + load.delayMs;
  const measured = samples.filter(sample => sample.dueAt >= firstDue).map(sample => sample.lateness);
  if (measured.length === 0) throw new Error('no job was measured');
  const sorted = measured.sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] as number,
    min: sorted[0] as number,
    mean: sorted.reduce((sum, value) => sum + value, 0) / sorted.length,
    measuredJobs: sorted.length,
    achievedRate: perSecond(sorted.length, load.durationMs),
  };
}
