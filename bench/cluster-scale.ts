/**
 * Figure: one partitioned queue on Redis Clusters of 1, 2 and 3 masters (no replicas), in one run.
 * For each cluster: add N due jobs with addBulk (timed), then drain them with one Worker and a no-op
 * handler (timed), reading every master's CPU time (INFO cpu) and this process's CPU time
 * (process.cpuUsage) before and after each phase. CPU time / wall time is the share of one core a
 * process used; CPU time / jobs is the cost of a job, which is what the projection for N machines
 * is built on (see docs/cluster.md).
 *
 *   npx tsx bench/cluster-scale.ts [--jobs 100000] [--partitions 12] [--reps 2] [--concurrency 200]
 *
 * Prints a table and writes bench/cluster-scale.json. The three clusters run side by side (idle
 * ones cost nothing measurable); the order of the sizes alternates between repetitions so drifting
 * load on the machine hits all alike; medians are reported.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { Queue, Worker } from '../src/index.js';
import { partitionKeys } from '../src/store/redis/keys.js';
import { startLocalCluster, type ClusterNode, type LocalCluster } from '../test/helpers/cluster.js';

const SIZES = [1, 2, 3] as const;
/** 98 characters: the payload's JSON is 100 bytes. */
const PAYLOAD = 'x'.repeat(98);
const CHUNK = 1_000;
/** addBulk calls in flight at once. */
const ADDERS = 4;
const PHASE_TIMEOUT_MS = 180_000;

interface Options {
  readonly jobs: number;
  readonly partitions: number;
  readonly reps: number;
  readonly concurrency: number;
}

interface CpuSample {
  /** Seconds of CPU (user + sys) used so far by each master, by port. */
  readonly masters: Map<number, number>;
  /** Seconds of CPU used so far by this process. */
  readonly client: number;
  readonly at: number;
}

interface PhaseResult {
  readonly jobsPerSecond: number;
  readonly wallMs: number;
  /** Share of one core used by each master during the phase, in the order of `masters`. */
  readonly redisCorePerMaster: number[];
  readonly redisCoreTotal: number;
  readonly clientCore: number;
  /** CPU microseconds per job, summed over the masters. */
  readonly redisMicrosPerJob: number;
  readonly clientMicrosPerJob: number;
}

interface RunResult {
  readonly masters: number;
  readonly rep: number;
  /** Partitions of the queue on each master (ports in the same order as the CPU columns). */
  readonly partitionsPerMaster: number[];
  readonly ports: number[];
  readonly add: PhaseResult;
  readonly drain: PhaseResult;
}

function parseOptions(argv: string[]): Options {
  const flag = (name: string, fallback: number): number => {
    const at = argv.indexOf(`--${name}`);
    if (at < 0) return fallback;
    const value = Number(argv[at + 1]);
    if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be an integer >= 1, got ${argv[at + 1]}`);
    return value;
  };
  return { jobs: flag('jobs', 100_000), partitions: flag('partitions', 12), reps: flag('reps', 2), concurrency: flag('concurrency', 200) };
}

async function cpuSample(cluster: LocalCluster, masters: ClusterNode[]): Promise<CpuSample> {
  const values = new Map<number, number>();
  await Promise.all(
    masters.map(async node => {
      const client = cluster.nodeClient(node);
      try {
        const info = await client.info('cpu');
        const read = (field: string) => Number(new RegExp(`${field}:([\\d.]+)`).exec(info)?.[1] ?? NaN);
        values.set(node.port, read('used_cpu_user') + read('used_cpu_sys'));
      } finally {
        client.disconnect();
      }
    }),
  );
  const usage = process.cpuUsage();
  return { masters: values, client: (usage.user + usage.system) / 1e6, at: performance.now() };
}

function phase(jobs: number, masters: ClusterNode[], before: CpuSample, after: CpuSample): PhaseResult {
  const wallMs = after.at - before.at;
  const seconds = wallMs / 1_000;
  const redisCpu = masters.map(node => (after.masters.get(node.port) ?? 0) - (before.masters.get(node.port) ?? 0));
  const redisTotal = redisCpu.reduce((sum, value) => sum + value, 0);
  const clientCpu = after.client - before.client;
  return {
    jobsPerSecond: jobs / seconds,
    wallMs,
    redisCorePerMaster: redisCpu.map(value => value / seconds),
    redisCoreTotal: redisTotal / seconds,
    clientCore: clientCpu / seconds,
    redisMicrosPerJob: (redisTotal * 1e6) / jobs,
    clientMicrosPerJob: (clientCpu * 1e6) / jobs,
  };
}

/** Rejects after `ms` with a message naming what did not finish. */
function deadline(what: string, ms: number): { promise: Promise<never>; clear: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  promise.catch(() => undefined);
  return { promise, clear: () => clearTimeout(timer) };
}

async function measure(cluster: LocalCluster, size: number, rep: number, options: Options): Promise<RunResult> {
  // One name per cluster size: its partitions sit on the same masters in every repetition (the
  // queue is empty again after each), so the per-master columns can be compared across runs.
  const name = `scale-${size}`;
  const masters = await cluster.masters();
  const partitionsPerMaster = masters.map(() => 0);
  for (let p = 0; p < options.partitions; p++) {
    const owner = await cluster.ownerOf(await cluster.slotOf(partitionKeys('sg', name, p).due));
    partitionsPerMaster[masters.indexOf(owner)] = (partitionsPerMaster[masters.indexOf(owner)] ?? 0) + 1;
  }
  const connection = cluster.connect();
  const queue = new Queue<string>(name, { connection, partitions: options.partitions });
  try {
    // Not timed: the partition count is stored and the scripts are loaded on every master.
    let done = 0;
    const warmLimit = deadline(`the first job on ${size} master(s)`, 30_000);
    const warm = new Worker<string>(name, () => void (done += 1), { connection, partitions: options.partitions, concurrency: 1 });
    try {
      await Promise.race([
        (async () => {
          await queue.addBulk([{ payload: PAYLOAD }]);
          while (done < 1) await new Promise(resolve => setTimeout(resolve, 10));
        })(),
        warmLimit.promise,
      ]);
    } finally {
      warmLimit.clear();
      await warm.close();
    }

    const beforeAdd = await cpuSample(cluster, masters);
    let next = 0;
    const limit = deadline(`adding ${options.jobs} jobs to ${size} master(s)`, PHASE_TIMEOUT_MS);
    const adder = async () => {
      while (next < options.jobs) {
        const size = Math.min(CHUNK, options.jobs - next);
        next += size;
        await queue.addBulk(Array.from({ length: size }, () => ({ payload: PAYLOAD })));
      }
    };
    try {
      await Promise.race([Promise.all(Array.from({ length: ADDERS }, adder)), limit.promise]);
    } finally {
      limit.clear();
    }
    const afterAdd = await cpuSample(cluster, masters);
    const waiting = await queue.stats();
    if (waiting.ready + waiting.delayed !== options.jobs)
      throw new Error(`${size} master(s): added ${options.jobs} jobs but ${waiting.ready + waiting.delayed} are waiting`);

    done = 0;
    const beforeDrain = await cpuSample(cluster, masters);
    const worker = new Worker<string>(name, () => void (done += 1), {
      connection,
      partitions: options.partitions,
      concurrency: options.concurrency,
    });
    const drainLimit = deadline(`draining ${options.jobs} jobs from ${size} master(s)`, PHASE_TIMEOUT_MS);
    try {
      const drained = (async () => {
        while (done < options.jobs) await new Promise(resolve => setTimeout(resolve, 5));
        // The last acks are sent after their handlers return: the drain ends when Redis has them.
        for (;;) {
          const stats = await queue.stats();
          if (stats.ready + stats.active + stats.delayed === 0) return;
          await new Promise(resolve => setTimeout(resolve, 5));
        }
      })();
      await Promise.race([drained, drainLimit.promise]);
    } finally {
      drainLimit.clear();
    }
    const afterDrain = await cpuSample(cluster, masters);
    await worker.close();
    return {
      masters: size,
      rep,
      partitionsPerMaster,
      ports: masters.map(node => node.port),
      add: phase(options.jobs, masters, beforeAdd, afterAdd),
      drain: phase(options.jobs, masters, beforeDrain, afterDrain),
    };
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const pct = (core: number) => `${Math.round(core * 100)}%`;
const int = (value: number) => Math.round(value).toLocaleString('en-US');

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const clusters = new Map<number, LocalCluster>();
  const stopAll = async () => {
    await Promise.all([...clusters.values()].map(cluster => cluster.stop()));
    clusters.clear();
  };
  process.once('SIGINT', () => void stopAll().finally(() => process.exit(130)));
  const runs: RunResult[] = [];
  try {
    // No AOF: the figure is about spreading work over masters; fsync would measure the disk.
    for (const size of SIZES) clusters.set(size, await startLocalCluster(size, 0, { appendOnly: false }));
    const redisVersion = await (async () => {
      const cluster = clusters.get(1) as LocalCluster;
      const client = cluster.nodeClient(cluster.nodes[0] as ClusterNode);
      try {
        return /redis_version:(\S+)/.exec(await client.info('server'))?.[1] ?? 'unknown';
      } finally {
        client.disconnect();
      }
    })();
    for (let rep = 1; rep <= options.reps; rep++) {
      const order = rep % 2 ? [...SIZES] : [...SIZES].reverse();
      for (const size of order) {
        const run = await measure(clusters.get(size) as LocalCluster, size, rep, options);
        runs.push(run);
        console.error(
          `rep ${rep}, ${size} master(s): add ${int(run.add.jobsPerSecond)}/s, drain ${int(run.drain.jobsPerSecond)}/s, ` +
            `Redis per master ${run.drain.redisCorePerMaster.map(pct).join(' / ')}, client ${pct(run.drain.clientCore)}`,
        );
      }
    }

    const summary = SIZES.map(size => {
      const of = runs.filter(run => run.masters === size);
      const pick = (get: (run: RunResult) => number) => median(of.map(get));
      const perMaster = (of[0] as RunResult).partitionsPerMaster.map((_, i) => pick(run => run.drain.redisCorePerMaster[i] ?? 0));
      return {
        masters: size,
        partitionsPerMaster: (of[0] as RunResult).partitionsPerMaster,
        addJobsPerSecond: pick(run => run.add.jobsPerSecond),
        drainJobsPerSecond: pick(run => run.drain.jobsPerSecond),
        drainRedisCorePerMaster: perMaster,
        drainRedisCoreTotal: pick(run => run.drain.redisCoreTotal),
        drainClientCore: pick(run => run.drain.clientCore),
        drainRedisMicrosPerJob: pick(run => run.drain.redisMicrosPerJob),
        drainClientMicrosPerJob: pick(run => run.drain.clientMicrosPerJob),
        addRedisMicrosPerJob: pick(run => run.add.redisMicrosPerJob),
        addClientMicrosPerJob: pick(run => run.add.clientMicrosPerJob),
      };
    });

    const header = [
      'masters',
      'partitions/master',
      'add jobs/s',
      'drain jobs/s',
      'drain: Redis CPU per master',
      'Redis total',
      'client',
      'Redis µs/job',
      'client µs/job',
    ];
    const rows = summary.map(row => [
      String(row.masters),
      row.partitionsPerMaster.join(' / '),
      int(row.addJobsPerSecond),
      int(row.drainJobsPerSecond),
      row.drainRedisCorePerMaster.map(pct).join(' / '),
      pct(row.drainRedisCoreTotal),
      pct(row.drainClientCore),
      row.drainRedisMicrosPerJob.toFixed(1),
      row.drainClientMicrosPerJob.toFixed(1),
    ]);
    const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map(row => (row[i] as string).length)));
    const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i] as number)).join(' | ')} |`;
    console.log(
      `\nOne queue, ${options.partitions} partitions, ${int(options.jobs)} jobs of 100 bytes, worker concurrency ${options.concurrency}, ` +
        `median of ${options.reps} run(s); ${os.availableParallelism()} CPU(s), Redis ${redisVersion}. CPU = share of one core during the drain.\n`,
    );
    console.log(line(header));
    console.log(line(widths.map(width => '-'.repeat(width))));
    for (const row of rows) console.log(line(row));

    const file = new URL('./cluster-scale.json', import.meta.url);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          command: `npx tsx bench/cluster-scale.ts ${process.argv.slice(2).join(' ')}`.trim(),
          machine: {
            cpus: os.availableParallelism(),
            cpuModel: os.cpus()[0]?.model ?? 'unknown',
            node: process.version,
            redis: redisVersion,
            loadAverageAtStart: os.loadavg()[0],
          },
          options: { ...options, payloadBytes: 100, chunk: CHUNK, adders: ADDERS, appendOnly: false, replicas: 0 },
          summary,
          runs,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`\nwrote ${file.pathname}`);
  } finally {
    await stopAll();
  }
}

main().catch(error => {
  console.error(error instanceof Error ? error.stack : error);
  process.exitCode = 1;
});
