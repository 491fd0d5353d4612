/**
 * Redis time of a listing page and the due histogram over a crowded wheel slot: JOBS jobs (default
 * 1,000,000) due within one minute ten minutes ahead (a bulk import of reminders), on a private
 * redis-server. Redis time is the server's own measure of each script call (SLOWLOG with a 0 µs
 * threshold: the whole EVALSHA/EVAL, its inside commands included), best of a few calls; the
 * machine's load shows in the worst.
 *
 *   node --import tsx bench/wheel-views.ts [--jobs=1000000]
 */
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { startLocalRedis } from '../src/deploy/local-redis.js';
import { PartitionStore } from '../src/store/redis/partition-store.js';

const jobsArg = process.argv.find(arg => arg.startsWith('--jobs='));
const JOBS = jobsArg ? Number(jobsArg.slice('--jobs='.length)) : 1_000_000;
const W = 60_000;
const TRIES = 5;

const server = await startLocalRedis({ appendOnly: false });
const raw = new Redis(server.url);
const queue = new Queue<string>('crowded', { connection: server.url, partitions: 1 });
try {
  await queue.stats();
  const store = new PartitionStore(raw, 'sg', 'crowded', 0);
  const [s] = await raw.time();
  const slotStart = Math.ceil((Number(s) * 1000 + 600_000) / W) * W;
  const added = Date.now();
  for (let i = 0; i < JOBS; i += 1_000) {
    const chunk = Array.from({ length: Math.min(1_000, JOBS - i) }, (_, j) => ({
      id: `r${i + j}`,
      due: { atMs: slotStart + (((i + j) * 7_919) % W) },
      maxAttempts: '',
      backoff: '',
      payloadJson: '"x"',
    }));
    await store.add(chunk, 'keep');
  }
  console.log(
    `${JOBS} jobs due in [${new Date(slotStart).toISOString()}, +60 s) added in ${Date.now() - added} ms; wheeled = ${await raw.hget('sg:{crowded:0}:counters', 'wheeled')}`,
  );

  /** Server time (µs) of each script call `call` makes, best and worst of TRIES. */
  const redisTime = async (what: string, call: () => Promise<unknown>) => {
    const times: number[] = [];
    await call(); // loads the script (NOSCRIPT, then EVAL) outside the measure
    for (let t = 0; t < TRIES; t++) {
      await raw.call('SLOWLOG', 'RESET');
      await call();
      const log = (await raw.call('SLOWLOG', 'GET', '100')) as [number, number, number, string[]][];
      times.push(log.filter(entry => /^eval/i.test(String(entry[3][0]))).reduce((sum, entry) => sum + Number(entry[2]), 0));
    }
    console.log(
      `${what}: ${(Math.min(...times) / 1000).toFixed(2)} ms of Redis time (best of ${TRIES}; worst ${(Math.max(...times) / 1000).toFixed(2)} ms)`,
    );
  };
  await raw.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
  await raw.call('CONFIG', 'SET', 'slowlog-max-len', '1000');
  await redisTime("first page of list('delayed'), 100 jobs", () => queue.list('delayed', { limit: 100 }));
  const middle = await store.listJobs('delayed', { at: slotStart + 30_000, id: '' }, 1);
  const from = middle.entries[0];
  if (from)
    await redisTime('a page of 100 from the middle of the slot', () => store.listJobs('delayed', { at: from.dueAt, id: from.job.id }, 101));
  await redisTime('dueHistogram, the dashboard bounds (1 min, 1 h, 1 day)', () => queue.dueHistogram([60_000, 3_600_000, 86_400_000]));
  const [s2] = await raw.time();
  const now = Number(s2) * 1000;
  const inside = [10_000, 20_000, 30_000, 40_000, 50_000].map(offset => slotStart + offset - now);
  await redisTime('dueHistogram, 5 window edges inside the slot', () => queue.dueHistogram(inside));
} finally {
  await queue.close();
  raw.disconnect();
  await server.stop();
}
