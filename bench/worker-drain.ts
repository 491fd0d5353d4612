/**
 * The deployment-shaped drain, sandglass only, for working on the worker: a private redis-server
 * (no AOF), N already-due jobs with ~100-byte payloads added through Queue.addBulk, then a NEW node
 * process per mode that constructs a Worker cold (handler reads `job.payload.pad.length`) and times
 * from the construction to the Nth 'completed' event. Prints one line per run: jobs/s, the worker
 * process's CPU per job, Redis CPU per job and script calls per job (INFO, before and after).
 *
 *   node --import tsx bench/worker-drain.ts [--jobs=20000,50000] [--modes=50,100,batch50] [--rounds=1] [--prefetch=N]
 *
 * `batchN` is batch mode with `batch: { size: N }` and the default concurrency. Extra node flags for
 * the worker process (e.g. `--cpu-prof`) go in WORKER_NODE_FLAGS.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
import { startLocalRedis } from '../src/deploy/local-redis.js';

interface Payload {
  n: number;
  pad: string;
}

const flags = new Map(process.argv.slice(2).map(arg => arg.replace(/^--/, '').split('=') as [string, string]));

if (flags.has('child'))
  await child(flags.get('url') as string, flags.get('queue') as string, Number(flags.get('jobs')), flags.get('mode') as string);
else await parent();

async function parent(): Promise<void> {
  const counts = (flags.get('jobs') ?? '20000').split(',').map(Number);
  const modes = (flags.get('modes') ?? '50,100,batch50').split(',');
  const rounds = Number(flags.get('rounds') ?? 1);
  const redis = await startLocalRedis({ appendOnly: false });
  const raw = new Redis(redis.url);
  const redisCost = async () => {
    const info = (await raw.info('cpu')) + (await raw.info('commandstats'));
    const read = (pattern: RegExp) => Number(pattern.exec(info)?.[1] ?? 0);
    return {
      cpuMs: (read(/used_cpu_user:([\d.]+)/) + read(/used_cpu_sys:([\d.]+)/)) * 1000,
      calls: read(/cmdstat_(?:evalsha|fcall):calls=(\d+)/),
    };
  };
  try {
    let serial = 0;
    for (let round = 0; round < rounds; round++) {
      for (const count of counts) {
        for (const mode of modes) {
          const name = `drain-${serial++}`;
          const queue = new Queue<Payload>(name, { connection: redis.url });
          const jobs = Array.from({ length: count }, (_, n) => ({ payload: { n, pad: 'x'.repeat(85) } }));
          for (let i = 0; i < jobs.length; i += 5_000) await queue.addBulk(jobs.slice(i, i + 5_000));
          await queue.close();
          const before = await redisCost();
          const nodeFlags = process.env.WORKER_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
          const args = [
            ...nodeFlags,
            '--import',
            'tsx',
            fileURLToPath(import.meta.url),
            '--child',
            `--url=${redis.url}`,
            `--queue=${name}`,
            `--jobs=${count}`,
            `--mode=${mode}`,
          ];
          if (flags.has('prefetch')) args.push(`--prefetch=${flags.get('prefetch')}`);
          const run = spawnSync(process.execPath, args, { encoding: 'utf8' });
          if (run.status !== 0) throw new Error(`worker process failed: ${run.stderr}`);
          const after = await redisCost();
          const redisUs = ((after.cpuMs - before.cpuMs) * 1000) / count;
          console.log(
            `${run.stdout.trim()}, redis ${redisUs.toFixed(1)} us/job, ${((after.calls - before.calls) / count).toFixed(3)} calls/job`,
          );
        }
      }
    }
  } finally {
    raw.disconnect();
    await redis.stop();
  }
}

async function child(url: string, queue: string, target: number, mode: string): Promise<void> {
  const batchSize = mode.startsWith('batch') ? Number(mode.slice('batch'.length)) : undefined;
  const prefetch = flags.has('prefetch') ? { prefetch: Number(flags.get('prefetch')) } : {};
  let sum = 0;
  let done = 0;
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  const worker =
    batchSize === undefined
      ? new Worker<Payload>(queue, async job => void (sum += job.payload.pad.length), {
          connection: url,
          concurrency: Number(mode),
          ...prefetch,
        })
      : new Worker<Payload>(queue, async jobs => jobs.forEach(job => (sum += job.payload.pad.length)), {
          connection: url,
          batch: { size: batchSize },
          ...prefetch,
        });
  await new Promise<void>(resolve => {
    worker.on('completed', () => {
      if (++done === target) resolve();
    });
  });
  const ms = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  await worker.close();
  if (sum !== target * 85) throw new Error('the handlers did not read every payload');
  const label = batchSize === undefined ? `concurrency ${mode}` : `batch ${batchSize}`;
  console.log(
    `${label}, ${target} jobs: ${Math.round((target / ms) * 1000)} jobs/s (${Math.round(ms)} ms), worker ${((cpu.user + cpu.system) / target).toFixed(1)} us/job`,
  );
}
