/**
 * The deployment-shaped drain (issue 8): the way a user meets the drain rate. The parent loads N
 * jobs (due after a short delay, then waited out: a backlog of delayed jobs that fell due, the
 * state a delay queue's worker finds after a deploy or an outage); then a NEW Node process starts
 * a cold worker (bench/worker-process.ts, the same command for both libraries) whose handler reads
 * the payload, and times construction -> N-th 'completed'. No warm-up anywhere. Around each child
 * the parent resets Redis's command statistics and reads them back, so every row also says what a
 * delivered job cost Redis (CPU us, per command) and the worker process (CPU us).
 */
import { resolve } from 'node:path';
import { mainThreadProfile, summarizeProfile, type ProfileSummary } from '../cpu-profile.js';
import type { LibraryName } from '../drivers/types.js';
import { BARS, figure, type Figure, type PhaseOutput } from '../figures.js';
import { shortCount } from '../format.js';
import type { BenchOptions } from '../options.js';
import { markRedisCost, redisCostSince, type RedisCostPerJob } from '../redis-cost.js';
import { withSession } from '../session.js';
import { runWorkerProcess, type WorkerProcessRun } from '../spawn-worker.js';
import { median, sleep } from '../stats.js';

/** The jobs' delay: long enough that BullMQ stores them as delayed jobs, short enough not to matter. */
const DUE_DELAY_MS = 1_000;
const QUEUE = 'drain';

interface Variant {
  readonly key: string;
  readonly library: LibraryName;
  readonly concurrency: number;
  readonly batchSize?: number;
}

interface ColdSample {
  readonly jobsPerSecond: number;
  readonly firstCompletionMs: number;
  /** Worker process CPU (user + system) per delivered job, us. */
  readonly clientUs: number;
  readonly redis: RedisCostPerJob;
  readonly command: string;
  readonly profiles: string[];
  /** Where the worker process's time went, when profiled. */
  readonly profile?: ProfileSummary;
}

export async function coldDrainPhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const { jobs, reps, batchSize } = options.coldDrain;
  const variants = variantsOf(options);
  const samples: Record<string, ColdSample[]> = Object.fromEntries(variants.map(v => [v.key, []]));
  // Libraries alternate within each repetition (and the order flips every other one), so drifting
  // load on the machine hits all variants alike.
  for (let rep = 0; rep < reps; rep++) {
    for (const variant of rep % 2 === 0 ? variants : [...variants].reverse()) {
      const sample = await measureColdDrain(variant, options);
      samples[variant.key]?.push(sample);
      log(
        `cold drain ${variant.key} rep ${rep + 1}: ${Math.round(sample.jobsPerSecond)} jobs/s, first completion ${sample.firstCompletionMs.toFixed(0)} ms, Redis ${sample.redis.processUs.toFixed(1)} us/job, worker ${sample.clientUs.toFixed(1)} us/job`,
      );
    }
  }
  const first = options.drainConcurrencies[0] as number;
  let profiled: ColdSample | undefined;
  if (options.profile) {
    const dir = resolve(options.profile.dir);
    profiled = await measureColdDrain({ key: `sandglass-c${first}-profiled`, library: 'sandglass', concurrency: first }, options, dir);
    log(
      `cold drain profiled sandglass c${first}: ${Math.round(profiled.jobsPerSecond)} jobs/s; profile ${profiled.profiles.join(', ') || '(none written)'}`,
    );
  }

  const mid = (key: string, pick: (s: ColdSample) => number) => median((samples[key] ?? []).map(pick));
  const rate = (key: string) => mid(key, s => s.jobsPerSecond);
  const label = `deployment drain, ${shortCount(jobs)} due jobs, cold worker process`;
  const figures: Figure[] = options.drainConcurrencies.map(concurrency =>
    figure({
      id: `cold-drain-c${concurrency}`,
      label: `${label}, concurrency ${concurrency}`,
      unit: 'jobs/s',
      sandglass: rate(`sandglass-c${concurrency}`),
      bullmq: rate(`bullmq-c${concurrency}`),
      bar: BARS.ratioAtLeast(10),
    }),
  );
  figures.push(
    figure({
      id: 'cold-drain-batch',
      label: `  same, sandglass batch { size: ${batchSize} }, concurrency ${first}`,
      unit: 'jobs/s',
      sandglass: rate('sandglass-batch'),
      bullmq: rate(`bullmq-c${first}`),
      bar: BARS.ratioAtLeast(15),
      note: `BullMQ open source has no batch handler; its column repeats the concurrency-${first} row`,
    }),
    figure({
      id: 'cold-drain-redis-us',
      label: `  Redis CPU per delivered job, concurrency ${first}`,
      unit: 'us',
      sandglass: mid(`sandglass-c${first}`, s => s.redis.processUs),
      bullmq: mid(`bullmq-c${first}`, s => s.redis.processUs),
      note: 'INFO cpu of the Redis process during the drain / jobs (network I/O included); per command: details and the cost table',
    }),
    figure({
      id: 'cold-drain-client-us',
      label: `  worker process CPU per delivered job, concurrency ${first}`,
      unit: 'us',
      sandglass: mid(`sandglass-c${first}`, s => s.clientUs),
      bullmq: mid(`bullmq-c${first}`, s => s.clientUs),
      note: 'process.cpuUsage() in the worker process, construction to last completion / jobs',
    }),
  );

  const costs = Object.fromEntries(
    variants.map(v => [
      v.key,
      {
        jobsPerSecond: rate(v.key),
        redisUs: mid(v.key, s => s.redis.processUs),
        scriptsUs: mid(v.key, s => s.redis.scriptsUs),
        clientUs: mid(v.key, s => s.clientUs),
        firstCompletionMs: mid(v.key, s => s.firstCompletionMs),
      },
    ]),
  );
  return {
    figures,
    details: {
      jobs,
      reps,
      batchSize,
      dueDelayMs: DUE_DELAY_MS,
      concurrencies: options.drainConcurrencies,
      costs,
      samples,
      ...(profiled ? { profiled } : {}),
    },
    report: costReport(costs, samples, `sandglass-c${first}`, profiled),
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
    batchSize: options.coldDrain.batchSize,
  });
  return variants;
}

async function measureColdDrain(variant: Variant, options: BenchOptions, cpuProfDir?: string): Promise<ColdSample> {
  const { jobs } = options.coldDrain;
  return withSession(variant.library, async ({ server, driver, probe }) => {
    await driver.addJobs(QUEUE, jobs, DUE_DELAY_MS, options.chunk);
    await sleep(DUE_DELAY_MS + 50); // every job is due now, by either library's clock
    const waiting = await driver.countWaiting(QUEUE);
    if (waiting !== jobs) throw new Error(`${variant.library}: loaded ${jobs} jobs but ${waiting} are waiting`);
    await driver.close(); // the producer leaves: only the worker process talks to Redis now
    const mark = await markRedisCost(probe);
    const run: WorkerProcessRun = await runWorkerProcess({
      library: variant.library,
      url: server.url,
      queue: QUEUE,
      concurrency: variant.concurrency,
      ...(variant.batchSize === undefined ? {} : { batchSize: variant.batchSize }),
      jobs,
      ...(cpuProfDir === undefined ? {} : { cpuProfDir }),
      timeoutMs: options.stallMs * 2 + 60_000,
    });
    // Read after the child exited: its close() is in the window, a few commands against N jobs.
    const redis = await redisCostSince(probe, mark, jobs);
    if (run.payloadChars !== jobs * 90)
      throw new Error(`${variant.library}: the handler read ${run.payloadChars} payload chars, expected ${jobs * 90}`);
    const left = await driver.countWaiting(QUEUE);
    if (left !== 0) throw new Error(`${variant.library}: ${left} jobs still waiting after the drain`);
    const main = mainThreadProfile(run.profiles);
    return {
      ...(main === undefined ? {} : { profile: summarizeProfile(main, { startUs: run.windowStartUs, endUs: run.windowEndUs }) }),
      jobsPerSecond: run.jobsPerSecond,
      firstCompletionMs: run.firstCompletionMs,
      clientUs: (run.cpuUserUs + run.cpuSystemUs) / jobs,
      redis,
      command: run.command,
      profiles: run.profiles,
    };
  });
}

type Costs = Record<string, { jobsPerSecond: number; redisUs: number; scriptsUs: number; clientUs: number; firstCompletionMs: number }>;

/** The per-job cost table printed after the figures (medians), and one run's per-command split. */
function costReport(costs: Costs, samples: Record<string, ColdSample[]>, breakdownKey: string, profiled: ColdSample | undefined): string[] {
  const us = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '-');
  const lines = [
    'per delivered job, deployment drain (medians): Redis CPU us (INFO cpu) | in scripts us (EVALSHA etc., commandstats: wall time, above the CPU when the machine is loaded) | worker process CPU us | first completion ms | CPU ceiling jobs/s',
    // Redis and a Node process each run on one thread: neither can deliver more than 1 s of its CPU per second.
    ...Object.entries(costs).map(
      ([key, c]) =>
        `  ${key.padEnd(22)} ${us(c.redisUs).padStart(7)} | ${us(c.scriptsUs).padStart(7)} | ${us(c.clientUs).padStart(7)} | ${us(c.firstCompletionMs).padStart(7)} | ${Math.round(
          1e6 / Math.max(c.redisUs, c.clientUs),
        )
          .toLocaleString('en-US')
          .padStart(9)}`,
    ),
  ];
  // The per-command split of the run closest to the median (or the profiled run).
  const runs = samples[breakdownKey] ?? [];
  const medianRun = profiled ?? [...runs].sort((a, b) => a.jobsPerSecond - b.jobsPerSecond)[Math.floor(runs.length / 2)];
  if (medianRun) {
    lines.push(
      `Redis commandstats per delivered job, ${profiled ? `${breakdownKey} profiled run` : `${breakdownKey} median run`} (commands inside scripts are also inside EVALSHA's time):`,
    );
    for (const [name, c] of Object.entries(medianRun.redis.commands)) {
      if (c.usPerJob >= 0.05 || c.callsPerJob >= 0.01)
        lines.push(`  ${name.padEnd(18)} ${c.usPerJob.toFixed(2).padStart(7)} us  ${c.callsPerJob.toFixed(3).padStart(8)} calls`);
    }
  }
  if (profiled) {
    lines.push(
      `CPU profile of the worker process (${Math.round(profiled.jobsPerSecond)} jobs/s under the profiler): ${profiled.profiles.join(', ') || '(none written)'}`,
      `  command: ${profiled.command}`,
    );
    const summary = profiled.profile;
    if (summary) {
      const share = (ms: number) => `${((100 * ms) / summary.totalMs).toFixed(1)}%`;
      const span = summary.windowed
        ? 'construction to last completion'
        : 'whole process life, start-up included (window not found in the profile)';
      lines.push(
        `  main thread, ${span}: ${summary.totalMs.toFixed(0)} ms sampled, idle ${share(summary.idleMs)}, GC ${share(summary.gcMs)}; most self time:`,
      );
      for (const entry of summary.top) lines.push(`    ${share(entry.selfMs).padStart(6)}  ${entry.name}`);
    }
  }
  return lines;
}
