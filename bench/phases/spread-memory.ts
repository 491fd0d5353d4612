/**
 * Redis bytes per waiting job with the due times a delay queue really holds (issue 8): delays
 * log-uniform from 1 minute to 30 days, the same seeded list for both libraries, loaded into a
 * fresh server per library and repetition; `used_memory` read just before and after the load.
 * (The enqueue phase keeps the single-delay figure: every job due a day away.)
 */
import { LIBRARIES, PAYLOAD_BYTES, type LibraryName } from '../drivers/types.js';
import { logUniformDelays, SPREAD_MAX_MS, SPREAD_MIN_MS, SPREAD_SEED } from '../delays.js';
import { BARS, figure, type PhaseOutput } from '../figures.js';
import { shortCount } from '../format.js';
import type { BenchOptions } from '../options.js';
import { usedMemory } from '../servers.js';
import { withSession } from '../session.js';
import { median, percentile, perSecond } from '../stats.js';

interface SpreadSample {
  readonly bytesPerJob: number;
  readonly jobsPerSecond: number;
}

/** Jobs added to another queue first, so that script loading is not inside the memory delta. */
const WARMUP_JOBS = 1_000;

export async function spreadMemoryPhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const jobs = options.spreadJobs;
  const delays = logUniformDelays(jobs);
  const samples: Record<LibraryName, SpreadSample[]> = { sandglass: [], bullmq: [] };
  for (let rep = 0; rep < options.reps; rep++) {
    for (const library of rep % 2 === 0 ? LIBRARIES : [...LIBRARIES].reverse()) {
      const sample = await measureSpread(library, delays, options);
      samples[library].push(sample);
      log(
        `spread memory ${library} rep ${rep + 1}: ${Math.round(sample.bytesPerJob)} bytes/job, added at ${Math.round(sample.jobsPerSecond)} jobs/s`,
      );
    }
  }
  const mid = (library: LibraryName, pick: (s: SpreadSample) => number) => median(samples[library].map(pick));
  const sorted = [...delays].sort((a, b) => a - b);
  const hours = (ms: number) => Math.round((ms / 3_600_000) * 100) / 100;
  return {
    figures: [
      figure({
        id: 'memory-spread',
        label: `Redis bytes per waiting job, ${shortCount(jobs)} due 1 min..30 days (${PAYLOAD_BYTES} B payload)`,
        unit: 'bytes',
        sandglass: mid('sandglass', s => s.bytesPerJob),
        bullmq: mid('bullmq', s => s.bytesPerJob),
        bar: BARS.ratioAtMost(0.25, '<= 1/4 of BullMQ'),
        note: `delays log-uniform (seed ${SPREAD_SEED}, the same for both); used_memory delta / jobs; BullMQ includes its events stream (capped near 10k entries)`,
      }),
      figure({
        id: 'enqueue-spread',
        label: '  add rate of those jobs',
        unit: 'jobs/s',
        sandglass: mid('sandglass', s => s.jobsPerSecond),
        bullmq: mid('bullmq', s => s.jobsPerSecond),
      }),
    ],
    details: {
      jobs,
      chunk: options.chunk,
      payloadBytes: PAYLOAD_BYTES,
      delays: {
        minMs: SPREAD_MIN_MS,
        maxMs: SPREAD_MAX_MS,
        seed: SPREAD_SEED,
        p10Hours: hours(percentile(sorted, 10)),
        p50Hours: hours(percentile(sorted, 50)),
        p90Hours: hours(percentile(sorted, 90)),
      },
      samples,
    },
  };
}

async function measureSpread(library: LibraryName, delays: readonly number[], options: BenchOptions): Promise<SpreadSample> {
  return withSession(library, async ({ driver, probe }) => {
    await driver.addJobsWithDelays('warmup', delays.slice(0, WARMUP_JOBS), options.chunk);
    const before = await usedMemory(probe);
    const started = performance.now();
    await driver.addJobsWithDelays('spread', delays, options.chunk);
    const jobsPerSecond = perSecond(delays.length, performance.now() - started);
    const after = await usedMemory(probe);
    const waiting = await driver.countWaiting('spread');
    if (waiting !== delays.length) throw new Error(`${library}: added ${delays.length} jobs but ${waiting} are waiting`);
    return { bytesPerJob: (after - before) / delays.length, jobsPerSecond };
  });
}
