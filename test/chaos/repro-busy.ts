// Reproduction of the BUSY lateness bug (docs/chaos.md): `npx tsx test/chaos/repro-busy.ts`.
// One in-process Worker, 200 jobs due during a 3 s foreign Lua script; prints how long after the
// script ended they started. Expected: within a few ms; seen: up to seconds (the claim retry backoff).
import { Redis } from 'ioredis';
import { Queue, Worker } from '../../src/index.js';
import { startLocalRedis } from '../../src/deploy/local-redis.js';

const server = await startLocalRedis({ appendOnly: false });
const raw = new Redis(server.url);
const busy = new Redis(server.url);
const queue = new Queue<number>('busy-repro', { connection: server.url });
const starts: { at: number; dueAt: number }[] = [];
const worker = new Worker<number>('busy-repro', job => void starts.push({ at: Date.now(), dueAt: job.dueAt }), {
  connection: server.url,
  concurrency: 50,
});
worker.on('error', () => undefined);
try {
  await worker.waitUntilReady();
  await raw.config('SET', 'busy-reply-threshold', '100');
  await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ payload: i, delay: 500 + i * 10 }))); // due 0.5-2.5 s from now
  const script =
    "local t=redis.call('TIME'); while true do local n=redis.call('TIME'); if (n[1]-t[1])*1000000+(n[2]-t[2]) > 3000000 then break end end";
  await busy.eval(script, 0);
  const endedAt = Date.now();
  await new Promise(resolve => setTimeout(resolve, 6_000));
  const late = starts.map(s => s.at - Math.max(s.dueAt, endedAt));
  console.log(`${starts.length} of 200 started; after the BUSY script ended: first ${Math.min(...late)} ms, last ${Math.max(...late)} ms`);
} finally {
  await worker.close();
  await queue.close();
  raw.disconnect();
  busy.disconnect();
  await server.stop();
}
