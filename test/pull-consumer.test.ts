import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listQueues, PullConsumer, Queue, ValidationError } from '../src/index.js';
import { sleep, uniqueQueue, useRedis } from './helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function pair<T = unknown>(options: { maxAttempts?: number } = {}) {
  const name = uniqueQueue();
  const queue = redis.track(new Queue<T>(name, { connection: redis.url }));
  const consumer = redis.track(new PullConsumer<T>(name, { connection: redis.url, backoff: { type: 'fixed', delayMs: 10 }, ...options }));
  return { name, queue, consumer };
}

describe('PullConsumer', () => {
  it('claims due jobs with a token and acks them', async () => {
    const { queue, consumer } = pair<{ n: number }>();
    await queue.addBulk([{ payload: { n: 1 } }, { payload: { n: 2 } }, { payload: { n: 3 }, delay: '1h' }]);
    const jobs = await consumer.claim({ max: 10, leaseMs: 5_000 });
    assert.deepEqual(jobs.map(job => job.payload.n), [1, 2]);
    assert.ok(jobs.every(job => /^\d+$/.test(job.token) && job.attempt === 1 && job.leaseUntilAt > Date.now()));
    assert.equal(await consumer.ack(jobs[0]!.id, jobs[0]!.token), 'acked');
    assert.equal(await consumer.ack(jobs[0]!.id, jobs[0]!.token), 'acked', 'a repeated ack (resent after a lost reply) is a no-op that answers acked');
    assert.equal((await queue.counters()).completed, 1);
    assert.equal(await consumer.ack(jobs[1]!.id, '999999'), 'stale', 'a wrong token changes nothing');
    assert.equal((await queue.get(jobs[1]!.id))?.state, 'active');
  });

  it('long-polls: a claim waiting for a job returns as soon as it falls due', async () => {
    const { queue, consumer } = pair();
    const started = Date.now();
    const pending = consumer.claim({ waitMs: 5_000 });
    await sleep(50);
    const id = await queue.add('x', { delay: 300 });
    const jobs = await pending;
    assert.deepEqual(jobs.map(job => job.id), [id]);
    const lateMs = Date.now() - (jobs[0]?.dueAt ?? 0);
    assert.ok(lateMs >= 0 && lateMs < 50, `returned ${lateMs} ms after due`);
    assert.ok(Date.now() - started < 1_000);
  });

  it('a long poll with nothing due returns empty after waitMs', async () => {
    const { consumer } = pair();
    const started = Date.now();
    assert.deepEqual(await consumer.claim({ waitMs: 300 }), []);
    assert.ok(Date.now() - started >= 290);
  });

  it('fail retries with backoff, then dead-letters; a stale token is refused', async () => {
    const { queue, consumer } = pair({ maxAttempts: 2 });
    const id = await queue.add('x');
    const [first] = await consumer.claim();
    const retried = await consumer.fail(id, first!.token, { error: 'first failure' });
    assert.equal(retried.result, 'retried');
    assert.equal((await consumer.fail(id, first!.token)).result, 'stale');
    const [second] = await consumer.claim({ waitMs: 2_000 });
    assert.equal(second?.attempt, 2);
    assert.deepEqual(await consumer.fail(id, second!.token, { error: 'second failure' }), { result: 'dead' });
    const dead = await queue.get(id);
    assert.equal(dead?.state, 'dead');
    assert.equal(dead?.lastError, 'second failure');
  });

  it('extend keeps a lease alive past its first deadline', async () => {
    const { queue, consumer } = pair();
    await queue.add('x');
    const [job] = await consumer.claim({ leaseMs: 300 });
    await sleep(200);
    assert.equal((await consumer.extend(job!.id, job!.token, 1_000)).result, 'extended');
    await sleep(300);
    assert.deepEqual(await consumer.claim(), [], 'not reaped: the lease was extended');
    assert.equal(await consumer.ack(job!.id, job!.token), 'acked');
  });

  it('refuses bad arguments with ValidationError', async () => {
    const { consumer } = pair();
    await assert.rejects(consumer.claim({ max: 0 }), ValidationError);
    await assert.rejects(consumer.claim({ waitMs: 120_000 }), ValidationError);
    await assert.rejects(consumer.ack('x', 'abc'), ValidationError);
    await assert.rejects(consumer.ack('', '1'), ValidationError);
  });
});

describe('Queue listings', () => {
  it('lists jobs by state and counts when waiting jobs fall due', async () => {
    const { name, queue, consumer } = pair<number>();
    await queue.addBulk([
      { payload: 1 },
      { payload: 2, delay: '30s' },
      { payload: 3, delay: '30m' },
      { payload: 4, delay: '2d' },
      { payload: 5 },
    ]);
    const [active] = await consumer.claim({ leaseMs: 60_000 });
    assert.deepEqual((await queue.list('ready')).jobs.map(job => job.payload), [5]);
    assert.deepEqual((await queue.list('delayed')).jobs.map(job => job.payload), [2, 3, 4]);
    const { jobs: activeList } = await queue.list('active');
    assert.equal(activeList[0]?.id, active?.id);
    assert.ok((activeList[0]?.leaseUntilAt ?? 0) > Date.now() + 50_000);
    const histogram = await queue.dueHistogram([60_000, 3_600_000, 86_400_000]);
    assert.equal(histogram.ready, 1);
    assert.deepEqual(histogram.buckets.map(bucket => bucket.count), [1, 1, 0]);
    assert.equal(histogram.later, 1);
    await assert.rejects(queue.dueHistogram([10, 5]), ValidationError);
    await assert.rejects(queue.list('done' as never), ValidationError);
    assert.ok((await listQueues({ connection: redis.url })).includes(name));
  });
});
