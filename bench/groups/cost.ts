/**
 * What groups cost a queue that uses them, against the same queue without groups, each sample on a
 * fresh private Redis, the two kinds alternating (the order flips every other repetition):
 * - the deployment-shaped drain (bench/phases/cold-drain.ts): due jobs loaded, then a new cold
 *   worker process (bench/worker-process.ts) drains them;
 * - Redis bytes per waiting job with the spread due times of bench/phases/spread-memory.ts.
 * Jobs go to their groups in turn (`shop-0`, `shop-1`, ..., then again), so every group holds the
 * same number.
 */
import type { Redis } from 'ioredis';
import type { BulkJob } from '../../src/index.js';
import { logUniformDelays } from '../delays.js';
import { PAYLOAD, type Payload } from '../drivers/types.js';
import { markRedisCost, redisCostSince, type RedisCostPerJob } from '../redis-cost.js';
import { usedMemory } from '../servers.js';
import { withSession } from '../session.js';
import { runWorkerProcess } from '../spawn-worker.js';
import { median, sleep } from '../stats.js';
import { addAll, openQueue, waiting } from './load.js';

export type Kind = 'grouped' | 'ungrouped';
const KINDS: readonly Kind[] = ['grouped', 'ungrouped'];

export interface CostSpec {
  readonly jobs: number;
  /** Groups of the grouped queue (jobs / groups each). */
  readonly groups: number;
  readonly reps: number;
  /** Handlers at once of the drain. */
  readonly concurrency: number;
  /** A drain that makes no progress this long fails. */
  readonly stallMs: number;
}

function jobsOf(kind: Kind, delaysMs: readonly number[], groups: number): BulkJob<Payload>[] {
  return delaysMs.map((delay, n) => ({ payload: PAYLOAD, delay, ...(kind === 'grouped' ? { group: `shop-${n % groups}` } : {}) }));
}

/** Runs `measure` reps times for each kind, alternating; the samples of each kind. */
async function alternate<S>(
  reps: number,
  measure: (kind: Kind) => Promise<S>,
  log: (kind: Kind, rep: number, sample: S) => void,
): Promise<Record<Kind, S[]>> {
  const samples: Record<Kind, S[]> = { grouped: [], ungrouped: [] };
  for (let rep = 0; rep < reps; rep++) {
    for (const kind of rep % 2 === 0 ? KINDS : [...KINDS].reverse()) {
      const sample = await measure(kind);
      samples[kind].push(sample);
      log(kind, rep, sample);
    }
  }
  return samples;
}

export interface DrainSample {
  readonly jobsPerSecond: number;
  /** Redis process CPU per delivered job, us. */
  readonly redisUs: number;
  /** Worker process CPU per delivered job, us. */
  readonly clientUs: number;
  /** Redis commands per delivered job (those inside scripts too): calls and us. */
  readonly commands: RedisCostPerJob['commands'];
  readonly command: string;
}

/** The jobs' delay: waited out before the worker starts, so that every job is due. */
const DUE_DELAY_MS = 1_000;

async function measureDrain(kind: Kind, spec: CostSpec): Promise<DrainSample> {
  return withSession('sandglass', async ({ server, probe }) => {
    const queue = openQueue(server.url, 'drain');
    await addAll(
      queue,
      jobsOf(
        kind,
        Array.from({ length: spec.jobs }, () => DUE_DELAY_MS),
        spec.groups,
      ),
    );
    await sleep(DUE_DELAY_MS + 50);
    await queue.close(); // the producer leaves: only the worker process talks to Redis now
    const mark = await markRedisCost(probe);
    const run = await runWorkerProcess({
      library: 'sandglass',
      url: server.url,
      queue: 'drain',
      concurrency: spec.concurrency,
      jobs: spec.jobs,
      timeoutMs: spec.stallMs * 2 + 60_000,
    });
    const redis = await redisCostSince(probe, mark, spec.jobs);
    if (run.payloadChars !== spec.jobs * PAYLOAD.pad.length)
      throw new Error(`${kind} drain: the handler read ${run.payloadChars} payload chars, expected ${spec.jobs * PAYLOAD.pad.length}`);
    const check = openQueue(server.url, 'drain');
    const left = await waiting(check).finally(() => check.close());
    if (left !== 0) throw new Error(`${kind} drain: ${left} jobs still waiting after the drain`);
    return {
      jobsPerSecond: run.jobsPerSecond,
      redisUs: redis.processUs,
      clientUs: (run.cpuUserUs + run.cpuSystemUs) / spec.jobs,
      commands: redis.commands,
      command: run.command,
    };
  });
}

export interface DrainCost {
  readonly grouped: number;
  readonly ungrouped: number;
  /** Redis process CPU per delivered job, us, medians. */
  readonly groupedRedisUs: number;
  readonly ungroupedRedisUs: number;
  /** grouped / ungrouped jobs/s, of the medians. */
  readonly ratio: number;
  readonly samples: Record<Kind, DrainSample[]>;
}

export async function measureDrainCost(spec: CostSpec, log: (message: string) => void): Promise<DrainCost> {
  const samples = await alternate(
    spec.reps,
    kind => measureDrain(kind, spec),
    (kind, rep, s) =>
      log(
        `groups cost: drain ${kind} rep ${rep + 1}: ${Math.round(s.jobsPerSecond)} jobs/s, Redis ${s.redisUs.toFixed(1)} us/job, worker ${s.clientUs.toFixed(1)} us/job`,
      ),
  );
  const grouped = median(samples.grouped.map(s => s.jobsPerSecond));
  const ungrouped = median(samples.ungrouped.map(s => s.jobsPerSecond));
  return {
    grouped,
    ungrouped,
    groupedRedisUs: median(samples.grouped.map(s => s.redisUs)),
    ungroupedRedisUs: median(samples.ungrouped.map(s => s.redisUs)),
    ratio: grouped / ungrouped,
    samples,
  };
}

/** Lines for the report: Redis calls and us per delivered job by command, grouped beside ungrouped (the first samples). */
export function drainReport(drain: DrainCost): string[] {
  const grouped = drain.samples.grouped[0]?.commands ?? {};
  const ungrouped = drain.samples.ungrouped[0]?.commands ?? {};
  const names = [...new Set([...Object.keys(grouped), ...Object.keys(ungrouped)])].filter(
    name => (grouped[name]?.callsPerJob ?? 0) + (ungrouped[name]?.callsPerJob ?? 0) >= 0.02,
  );
  const cell = (c: { callsPerJob: number; usPerJob: number } | undefined) =>
    c === undefined ? '-'.padStart(17) : `${c.callsPerJob.toFixed(2).padStart(6)} ${c.usPerJob.toFixed(2).padStart(7)} us`;
  return [
    `groups cost: Redis per delivered job of the drain, INFO cpu ${drain.groupedRedisUs.toFixed(1)} us grouped, ${drain.ungroupedRedisUs.toFixed(1)} us without groups (medians); by command (calls, us; inside scripts too; first sample of each): grouped | without groups`,
    ...names.map(name => `  ${name.padEnd(18)} ${cell(grouped[name])} | ${cell(ungrouped[name])}`),
  ];
}

/** Jobs added to another queue first, so that script loading is not inside the memory delta. */
const WARMUP_JOBS = 1_000;

export interface MemorySample {
  /** used_memory delta / jobs. */
  readonly bytesPerJob: number;
  /** MEMORY USAGE of the queue's keys by kind of key (`group:q:*`, `wheel:*`...), bytes per job. */
  readonly byKey: Record<string, number>;
}

async function measureMemory(kind: Kind, delaysMs: readonly number[], spec: CostSpec): Promise<MemorySample> {
  return withSession('sandglass', async ({ server, probe }) => {
    const warm = openQueue(server.url, 'warmup');
    const queue = openQueue(server.url, 'spread');
    try {
      await addAll(warm, jobsOf(kind, delaysMs.slice(0, WARMUP_JOBS), spec.groups));
      const before = await usedMemory(probe);
      await addAll(queue, jobsOf(kind, delaysMs, spec.groups));
      const bytesPerJob = ((await usedMemory(probe)) - before) / delaysMs.length;
      return { bytesPerJob, byKey: await bytesByKeyKind(probe, 'spread', delaysMs.length) };
    } finally {
      await Promise.all([warm.close(), queue.close()]);
    }
  });
}

/**
 * Where a queue's bytes are: MEMORY USAGE (exact, SAMPLES 0) of each of its keys, summed by kind
 * (the key with its hash tag, and its group, bucket or index number, left out), per job.
 */
async function bytesByKeyKind(probe: Redis, queue: string, jobs: number): Promise<Record<string, number>> {
  const kinds = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, keys] = (await probe.call('SCAN', cursor, 'MATCH', `*{${queue}*`, 'COUNT', '1000')) as [string, string[]];
    cursor = next;
    for (const key of keys) {
      const kind = key
        .replace(/^.*\}:/, '')
        .replace(/^(group:[qr]):.*$/, '$1:*')
        .replace(/\d+/g, 'N');
      const bytes = Number(await probe.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      kinds.set(kind, (kinds.get(kind) ?? 0) + bytes);
    }
  } while (cursor !== '0');
  return Object.fromEntries([...kinds].sort((a, b) => b[1] - a[1]).map(([kind, bytes]) => [kind, Math.round((bytes / jobs) * 10) / 10]));
}

export interface MemoryCost {
  /** Redis bytes per waiting job (used_memory delta / jobs), medians. */
  readonly grouped: number;
  readonly ungrouped: number;
  readonly ratio: number;
  readonly samples: Record<Kind, MemorySample[]>;
}

export async function measureMemoryCost(spec: CostSpec, log: (message: string) => void): Promise<MemoryCost> {
  const delays = logUniformDelays(spec.jobs);
  const samples = await alternate(
    spec.reps,
    kind => measureMemory(kind, delays, spec),
    (kind, rep, s) => log(`groups cost: memory ${kind} rep ${rep + 1}: ${s.bytesPerJob.toFixed(1)} bytes/job`),
  );
  const grouped = median(samples.grouped.map(s => s.bytesPerJob));
  const ungrouped = median(samples.ungrouped.map(s => s.bytesPerJob));
  return { grouped, ungrouped, ratio: grouped / ungrouped, samples };
}

/** Lines for the report: bytes per job by kind of key, grouped beside ungrouped (the first samples). */
export function memoryReport(memory: MemoryCost): string[] {
  const grouped = memory.samples.grouped[0]?.byKey ?? {};
  const ungrouped = memory.samples.ungrouped[0]?.byKey ?? {};
  const kinds = [...new Set([...Object.keys(grouped), ...Object.keys(ungrouped)])].filter(
    kind => (grouped[kind] ?? 0) + (ungrouped[kind] ?? 0) >= 0.1,
  );
  const cell = (value: number | undefined) => (value === undefined ? '-' : value.toFixed(1)).padStart(8);
  return [
    'groups cost: Redis bytes per waiting job by kind of key (MEMORY USAGE, first sample of each): grouped | without groups',
    ...kinds.map(kind => `  ${kind.padEnd(18)} ${cell(grouped[kind])} | ${cell(ungrouped[kind])}`),
  ];
}
