import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConflictError, PullConsumer, Queue, Worker } from '../../src/index.js';
import { partitionOf } from '../../src/store/placement.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

describe('partitions on one Redis', () => {
  it('places jobs by id hash, and stats, listings and lookups span all partitions', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue<number>(name, { connection: redis.url, partitions: 4 }));
    const base = Date.now() + 60_000;
    const ids = await q.addBulk(Array.from({ length: 400 }, (_, i) => ({ payload: i, at: base + i })));
    const sizes = await Promise.all([0, 1, 2, 3].map(p => redis.raw.zcard(`sg:{${name}:${p}}:due`)));
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      400,
    );
    assert.ok(
      sizes.every(size => size > 50),
      `uneven spread ${sizes}`,
    );
    for (const id of ids.slice(0, 20)) assert.equal((await redis.raw.zscore(`sg:{${name}:${partitionOf(id, 4)}}:due`, id)) !== null, true);
    assert.equal((await q.stats()).delayed, 400);
    const first = await q.list('delayed', { limit: 10 });
    const second = await q.list('delayed', { limit: 5, cursor: first.nextCursor as string });
    assert.deepEqual(
      second.jobs.map(job => job.payload),
      [10, 11, 12, 13, 14],
      'merged in due order',
    );
    assert.equal((await q.get(ids[7] as string))?.payload, 7);
    assert.equal(await q.cancel(ids[7] as string), 'cancelled');
    assert.equal(await q.reschedule(ids[8] as string, { delay: 0 }), 'rescheduled');
    assert.equal((await q.dueHistogram([120_000])).buckets[0]?.count, 398);
  });

  it('one worker drains every partition exactly once, woken per partition', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue<number>(name, { connection: redis.url, partitions: 8 }));
    const seen = new Map<number, number>();
    const lateness: number[] = [];
    const worker = redis.track(
      new Worker<number>(
        name,
        job => {
          seen.set(job.payload, (seen.get(job.payload) ?? 0) + 1);
          lateness.push(Date.now() - job.dueAt);
        },
        { connection: redis.url, concurrency: 20, safetyIntervalMs: 60_000, partitions: 8 },
      ),
    );
    await worker.waitUntilReady();
    await q.addBulk(Array.from({ length: 2_000 }, (_, i) => ({ payload: i, delay: 100 + (i % 500) })));
    await waitFor(() => seen.size === 2_000, 10_000, 'all jobs');
    assert.ok([...seen.values()].every(count => count === 1));
    assert.ok(Math.min(...lateness) >= 0, 'never early');
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it('a pull consumer claims from every partition and settles by id', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url, partitions: 3 }));
    const consumer = redis.track(new PullConsumer(name, { connection: redis.url }));
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ payload: i })));
    const claimed = [];
    for (let i = 0; i < 10 && claimed.length < 30; i++) claimed.push(...(await consumer.claim({ max: 30 })));
    assert.equal(claimed.length, 30);
    for (const job of claimed) assert.equal(await consumer.ack(job.id, job.token), 'acked');
    assert.equal((await q.counters()).completed, 30);
  });

  it('the partition count is stored with the queue; another count is a clear error', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url, partitions: 4 }));
    await q.add('x');
    const wrong = redis.track(new Queue(name, { connection: redis.url, partitions: 2 }));
    const error = await wrong.add('y').catch((e: unknown) => e);
    assert.ok(error instanceof ConflictError);
    assert.match(error.message, /has 4 partition\(s\); it cannot be opened with 2/);
    const reader = redis.track(new Queue(name, { connection: redis.url }));
    assert.equal((await reader.stats()).ready, 1, 'a queue opened without a count uses the stored one');
    const worker = redis.track(new Worker(name, () => undefined, { connection: redis.url, partitions: 3 }));
    worker.on('error', () => undefined);
    await assert.rejects(worker.waitUntilReady(), ConflictError);
  });
});

describe('reads write nothing', () => {
  it('reading a queue that does not exist creates no key', async () => {
    const name = uniqueQueue('ghost');
    const q = redis.track(new Queue(name, { connection: redis.url }));
    await q.stats();
    await q.get('nope');
    await q.list('delayed');
    await q.dueHistogram([1_000]);
    assert.equal(await q.cancel('nope'), 'not_found');
    assert.deepEqual(await redis.raw.keys(`sg:{${name}:*`), []);
    await q.add('now it exists');
    assert.equal(await redis.raw.hget(`sg:{${name}:0}:meta`, 'partitions'), '1');
  });
});
