import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { assertNeverEarlyAndOnTime } from '../helpers/lateness.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const HOUR = 3_600_000;

async function serverNow(): Promise<number> {
  const [seconds, micros] = await redis.raw.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

describe('due times use the Redis server clock', () => {
  for (const skewMs of [HOUR, -HOUR]) {
    it(`a worker whose clock is ${skewMs > 0 ? 'an hour ahead' : 'an hour behind'} never starts a job early or late`, async () => {
      const name = uniqueQueue();
      const q = redis.track(new Queue<number>(name, { connection: redis.url }));
      const lateness: number[] = [];
      const worker = redis.track(
        new Worker<number>(
          name,
          async job => {
            lateness.push((await serverNow()) - job.dueAt);
          },
          { connection: redis.url, concurrency: 20, clock: () => Date.now() + skewMs },
        ),
      );
      await worker.waitUntilReady();
      await q.addBulk(Array.from({ length: 120 }, (_, i) => ({ payload: i, delay: 200 + i * 7 })));
      await waitFor(() => lateness.length === 120, 10_000, 'all jobs');
      // Never early is exact; on time is judged on the distribution (an hour's skew would make every job an hour off).
      assertNeverEarlyAndOnTime(lateness);
    });
  }

  it("a job's delay is measured on the server, not on the producer's clock", async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    const before = await serverNow();
    const id = await q.add('x', { delay: 60_000 });
    const after = await serverNow();
    const job = await q.get(id);
    assert.ok(job && job.dueAt >= before + 60_000 && job.dueAt <= after + 60_000);
  });
});
