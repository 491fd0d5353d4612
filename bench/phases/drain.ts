/**
 * Figure 2, warmed and in-process: drain of already-due jobs with a no-op handler, the worker in
 * the bench's own process after a warm-up (so higher than a deployment sees: the deployment-shaped
 * figure is phases/cold-drain.ts). N due jobs are loaded first (not timed),
 * then one worker starts and the clock runs until the last completion. Both libraries use the same
 * concurrency (one row per concurrency, each judged); sandglass batch mode is an extra,
 * informational row against BullMQ at the first concurrency.
 */
import { type LibraryName } from '../drivers/types.js';
import { BARS, figure, type Figure, type PhaseOutput } from '../figures.js';
import { shortCount } from '../format.js';
import { timeDrain, warmUp } from '../measure.js';
import type { BenchOptions } from '../options.js';
import { withSession } from '../session.js';
import { median } from '../stats.js';

interface Variant {
  readonly key: string;
  readonly library: LibraryName;
  readonly concurrency: number;
  readonly batchSize?: number;
}

export async function drainPhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const variants = variantsOf(options);
  const samples: Record<string, number[]> = Object.fromEntries(variants.map(v => [v.key, []]));
  // Variants alternate within each repetition, so drifting load on the machine hits all alike.
  for (let rep = 0; rep < options.reps; rep++) {
    for (const variant of variants) {
      const rate = await measureDrain(variant, options);
      samples[variant.key]?.push(rate);
      log(`drain ${variant.key} rep ${rep + 1}: ${Math.round(rate)} jobs/s`);
    }
  }
  const rate = (key: string) => median(samples[key] ?? []);
  const jobs = shortCount(options.drainJobs);
  const figures: Figure[] = options.drainConcurrencies.map(concurrency =>
    figure({
      id: `drain-c${concurrency}`,
      label: `warmed in-process drain, ${jobs} due jobs, no-op, concurrency ${concurrency}`,
      unit: 'jobs/s',
      sandglass: rate(`sandglass-c${concurrency}`),
      bullmq: rate(`bullmq-c${concurrency}`),
      bar: BARS.ratioAtLeast(5),
    }),
  );
  const first = options.drainConcurrencies[0] as number;
  figures.push(
    figure({
      id: 'drain-batch',
      label: `  same, sandglass batch { size: ${options.batchSize} }, concurrency ${first}`,
      unit: 'jobs/s',
      sandglass: rate('sandglass-batch'),
      bullmq: rate(`bullmq-c${first}`),
      note: `informational: BullMQ open source has no batch handler; its column repeats the concurrency-${first} row`,
    }),
  );
  return {
    figures,
    details: { jobs: options.drainJobs, concurrencies: options.drainConcurrencies, batchSize: options.batchSize, samples },
  };
}

function variantsOf(options: BenchOptions): Variant[] {
  const variants: Variant[] = options.drainConcurrencies.flatMap(concurrency =>
    (['sandglass', 'bullmq'] as const).map(library => ({ key: `${library}-c${concurrency}`, library, concurrency })),
  );
  variants.push({
    key: 'sandglass-batch',
    library: 'sandglass',
    concurrency: options.drainConcurrencies[0] as number,
    batchSize: options.batchSize,
  });
  return variants;
}

async function measureDrain(variant: Variant, options: BenchOptions): Promise<number> {
  return withSession(variant.library, async ({ driver }) => {
    await warmUp(driver, options.warmupJobs, variant.concurrency, options.chunk, options.stallMs);
    await driver.addJobs('drain', options.drainJobs, 0, options.chunk);
    const waiting = await driver.countWaiting('drain');
    if (waiting !== options.drainJobs)
      throw new Error(`${variant.library}: loaded ${options.drainJobs} due jobs but ${waiting} are waiting`);
    return timeDrain(driver, 'drain', options.drainJobs, {
      concurrency: variant.concurrency,
      stallMs: options.stallMs,
      ...(variant.batchSize === undefined ? {} : { batchSize: variant.batchSize }),
    });
  });
}
