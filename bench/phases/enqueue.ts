/**
 * Figures 1 and 4: bulk enqueue of delayed jobs (jobs/s) and Redis bytes per waiting job, from the
 * same adds: a fresh server per library and repetition, `used_memory` read just before and after.
 */
import { FAR_FUTURE_MS, LIBRARIES, PAYLOAD_BYTES, type LibraryName } from '../drivers/types.js';
import { BARS, figure, type PhaseOutput } from '../figures.js';
import { shortCount } from '../format.js';
import { timeAdd, warmUp } from '../measure.js';
import type { BenchOptions } from '../options.js';
import { usedMemory } from '../servers.js';
import { withSession } from '../session.js';
import { median } from '../stats.js';

interface EnqueueSample {
  readonly jobsPerSecond: number;
  readonly bytesPerJob: number;
}

export async function enqueuePhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const samples: Record<LibraryName, EnqueueSample[]> = { sandglass: [], bullmq: [] };
  // Libraries alternate within each repetition, so drifting load on the machine hits both alike.
  for (let rep = 0; rep < options.reps; rep++) {
    for (const library of LIBRARIES) {
      const sample = await measureEnqueue(library, options);
      samples[library].push(sample);
      log(`enqueue ${library} rep ${rep + 1}: ${Math.round(sample.jobsPerSecond)} jobs/s, ${Math.round(sample.bytesPerJob)} bytes/job`);
    }
  }
  const rate = (library: LibraryName) => median(samples[library].map(s => s.jobsPerSecond));
  const bytes = (library: LibraryName) => median(samples[library].map(s => s.bytesPerJob));
  const jobs = options.enqueueJobs;
  return {
    figures: [
      figure({
        id: 'enqueue',
        label: `bulk enqueue, ${shortCount(jobs)} delayed jobs, ${options.chunk}/call`,
        unit: 'jobs/s',
        sandglass: rate('sandglass'),
        bullmq: rate('bullmq'),
        bar: BARS.ratioAtLeast(5),
      }),
      figure({
        id: 'memory',
        label: `Redis bytes per waiting job (${PAYLOAD_BYTES} B payload)`,
        unit: 'bytes',
        sandglass: bytes('sandglass'),
        bullmq: bytes('bullmq'),
        bar: BARS.ratioAtMost(0.25, '<= 1/4 of BullMQ'),
        note: 'used_memory delta / jobs; BullMQ includes its events stream (capped near 10k entries)',
      }),
    ],
    details: { jobs, chunk: options.chunk, payloadBytes: PAYLOAD_BYTES, samples },
  };
}

async function measureEnqueue(library: LibraryName, options: BenchOptions): Promise<EnqueueSample> {
  return withSession(library, async ({ driver, probe }) => {
    await warmUp(driver, options.warmupJobs, options.concurrency, options.chunk, options.stallMs);
    const before = await usedMemory(probe);
    const jobsPerSecond = await timeAdd(driver, 'enqueue', options.enqueueJobs, FAR_FUTURE_MS, options.chunk);
    const after = await usedMemory(probe);
    return { jobsPerSecond, bytesPerJob: (after - before) / options.enqueueJobs };
  });
}
