// Redis memory per waiting job with and without a stored trace context (README, "OpenTelemetry"):
// 100,000 jobs with a small payload, due in 30 s (the `due` tier) or in 1 day (the time wheel),
// added once without and once with a `traceparent` each (a distinct trace per job, as real traffic
// has), on a private redis-server; `used_memory` after minus before, per job.
//
//   npx tsx bench/trace-memory.ts [jobs]
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { startLocalRedis } from '../src/deploy/local-redis.js';

const JOBS = Number(process.argv[2] ?? 100_000);
const server = await startLocalRedis({ appendOnly: false });
const raw = new Redis(server.port, '127.0.0.1');

async function usedMemory(): Promise<number> {
  const info = await raw.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

async function bytesPerJob(tier: 'due' | 'wheel', traced: boolean): Promise<number> {
  await raw.flushall();
  const queue = new Queue<{ orderId: number }>(`mem-${tier}-${traced ? 'traced' : 'plain'}`, { connection: server.url });
  await queue.add({ orderId: 0 }, { delay: '1h' }); // the queue's keys exist before the first reading
  await queue.cancel((await queue.list('delayed')).jobs[0]?.id as string);
  const before = await usedMemory();
  const delay = tier === 'due' ? '30s' : '1d';
  for (let start = 0; start < JOBS; start += 1_000) {
    await queue.addBulk(
      Array.from({ length: Math.min(1_000, JOBS - start) }, (_, i) => ({
        payload: { orderId: start + i },
        delay,
        ...(traced ? { traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` } : {}),
      })),
    );
  }
  const after = await usedMemory();
  await queue.close();
  return (after - before) / JOBS;
}

try {
  for (const tier of ['due', 'wheel'] as const) {
    const plain = await bytesPerJob(tier, false);
    const traced = await bytesPerJob(tier, true);
    console.log(
      `${tier.padEnd(5)} ${JOBS} jobs: ${plain.toFixed(0)} bytes/job without a trace context, ${traced.toFixed(0)} with (+${(traced - plain).toFixed(0)})`,
    );
  }
} finally {
  raw.disconnect();
  await server.stop();
}
