/**
 * Figure 2: drain of already-due jobs with a no-op handler. N due jobs are loaded first (not timed),
 * then one worker starts and the clock runs until the last completion. Both libraries use the same
 * concurrency; sandglass batch mode is an extra, informational row against the same BullMQ figure.
 */
import { LIBRARIES, type LibraryName } from '../drivers/types.js';
import { BARS, figure, type PhaseOutput } from '../figures.js';
import { shortCount } from '../format.js';
import { timeDrain, warmUp } from '../measure.js';
import type { BenchOptions } from '../options.js';
import { withSession } from '../session.js';
import { median } from '../stats.js';

type Variant = LibraryName | 'sandglass-batch';
const VARIANTS: readonly Variant[] = [...LIBRARIES, 'sandglass-batch'];

export async function drainPhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const samples: Record<Variant, number[]> = { sandglass: [], bullmq: [], 'sandglass-batch': [] };
  for (let rep = 0; rep < options.reps; rep++) {
    for (const variant of VARIANTS) {
      const rate = await measureDrain(variant, options);
      samples[variant].push(rate);
      log(`drain ${variant} rep ${rep + 1}: ${Math.round(rate)} jobs/s`);
    }
  }
  const bullmq = median(samples.bullmq);
  const jobs = shortCount(options.drainJobs);
  return {
    figures: [
      figure({
        id: 'drain',
        label: `drain ${jobs} due jobs, no-op, concurrency ${options.concurrency}`,
        unit: 'jobs/s',
        sandglass: median(samples.sandglass),
        bullmq,
        bar: BARS.ratioAtLeast(5),
      }),
      figure({
        id: 'drain-batch',
        label: `  same, sandglass batch { size: ${options.batchSize} }`,
        unit: 'jobs/s',
        sandglass: median(samples['sandglass-batch']),
        bullmq,
        note: 'informational: BullMQ open source has no batch handler; its column repeats the row above',
      }),
    ],
    details: { jobs: options.drainJobs, concurrency: options.concurrency, batchSize: options.batchSize, samples },
  };
}

async function measureDrain(variant: Variant, options: BenchOptions): Promise<number> {
  const library: LibraryName = variant === 'bullmq' ? 'bullmq' : 'sandglass';
  return withSession(library, async ({ driver }) => {
    await warmUp(driver, options.warmupJobs, options.concurrency, options.chunk, options.stallMs);
    await driver.addJobs('drain', options.drainJobs, 0, options.chunk);
    const waiting = await driver.countWaiting('drain');
    if (waiting !== options.drainJobs) throw new Error(`${library}: loaded ${options.drainJobs} due jobs but ${waiting} are waiting`);
    return timeDrain(driver, 'drain', options.drainJobs, {
      concurrency: options.concurrency,
      stallMs: options.stallMs,
      ...(variant === 'sandglass-batch' ? { batchSize: options.batchSize } : {}),
    });
  });
}
