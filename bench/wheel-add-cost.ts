/**
 * Redis cost of bulk adds into the far-future tier (time wheel): a private server, `jobs` jobs of the
 * spread mix (delays log-uniform 1 min..30 days, bench/delays.ts) added 1,000 per call after
 * `preload` such jobs; prints Redis CPU per added job (the script calls' usec from INFO commandstats, FCALL or EVALSHA, and
 * used_cpu_user+sys) and used_memory per job, as one JSON line.
 * Usage: node --import tsx bench/wheel-add-cost.ts [jobs=200000] [preload=0]
 * With REDIS_URL set it uses that (empty) server instead, e.g. one under `valgrind --tool=callgrind`
 * for instruction counts, which the load on a shared machine does not change.
 */
import { Queue } from '../src/index.js';
import { logUniformDelays } from './delays.js';
import { PAYLOAD, type Payload } from './drivers/types.js';
import { Redis } from 'ioredis';
import { infoNumber, readInfo, startServer, stopServer } from './servers.js';

const jobs = Number(process.argv[2] ?? 200_000);
const preload = Number(process.argv[3] ?? 0);
const CHUNK = 1_000;

async function addAll(queue: Queue<Payload>, delays: readonly number[]): Promise<void> {
  for (let done = 0; done < delays.length; done += CHUNK) {
    await queue.addBulk(delays.slice(done, done + CHUNK).map(delay => ({ payload: PAYLOAD, delay })));
  }
}

const external = process.env.REDIS_URL;
const server = external ? { url: external } : await startServer();
const probe = new Redis(server.url);
// (A server under valgrind answers a call of 500 adds in seconds, not ms.)
const connection = external
  ? { host: new URL(external).hostname, port: Number(new URL(external).port), commandTimeout: 600_000 }
  : server.url;
try {
  const queue = new Queue<Payload>('spread', { connection });
  const warm = new Queue<Payload>('warmup', { connection });
  await addAll(warm, logUniformDelays(1_000, undefined, undefined, 3));
  if (preload > 0) await addAll(queue, logUniformDelays(preload, undefined, undefined, 5));
  const delays = logUniformDelays(jobs);
  await probe.call('CONFIG', 'RESETSTAT');
  const before = await readInfo(probe, 'memory', 'cpu');
  await addAll(queue, delays);
  const after = await readInfo(probe, 'memory', 'cpu', 'commandstats');
  const cpu = (info: Map<string, string>) => infoNumber(info, 'used_cpu_user') + infoNumber(info, 'used_cpu_sys');
  const scriptUs = ['cmdstat_fcall', 'cmdstat_evalsha'].reduce(
    (sum, field) => sum + Number(/usec=(\d+)/.exec(after.get(field) ?? '')?.[1] ?? 0),
    0,
  );
  const waiting = await queue.stats();
  console.log(
    JSON.stringify({
      jobs,
      preload,
      scriptUsPerJob: scriptUs / jobs,
      cpuUsPerJob: ((cpu(after) - cpu(before)) * 1e6) / jobs,
      bytesPerJob: (infoNumber(after, 'used_memory') - infoNumber(before, 'used_memory')) / jobs,
      waiting: waiting.delayed + waiting.ready,
    }),
  );
  await Promise.all([queue.close(), warm.close()]);
} finally {
  probe.disconnect();
  if (!external) await stopServer(server as Awaited<ReturnType<typeof startServer>>);
}
