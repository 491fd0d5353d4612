import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listQueues, NotFoundError, PullConsumer, Queue, ValidationError } from '../../src/index.js';
import { sleep, uniqueQueue, useRedis } from '../helpers/redis.js';

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
    assert.deepEqual(
      jobs.map(job => job.payload.n),
      [1, 2],
    );
    assert.ok(jobs.every(job => /^\d+$/.test(job.token) && job.attempt === 1 && job.leaseUntilAt > Date.now()));
    assert.equal(await consumer.ack(jobs[0]!.id, jobs[0]!.token), 'acked');
    assert.equal(
      await consumer.ack(jobs[0]!.id, jobs[0]!.token),
      'acked',
      'a repeated ack (resent after a lost reply) is a no-op that answers acked',
    );
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
    assert.deepEqual(
      jobs.map(job => job.id),
      [id],
    );
    const lateMs = Date.now() - (jobs[0]?.dueAt ?? 0);
    // Never early (exact); returned on the job's arrival, not at the end of the 5 s long poll.
    assert.ok(lateMs >= 0 && lateMs < 1_000, `returned ${lateMs} ms after due`);
    assert.ok(Date.now() - started < 2_500, `returned after ${Date.now() - started} ms`);
  });

  it('a long poll with nothing due returns empty after waitMs', async () => {
    const { consumer } = pair();
    const started = Date.now();
    assert.deepEqual(await consumer.claim({ waitMs: 300 }), []);
    assert.ok(Date.now() - started >= 290);
  });

  it('fail retries with backoff, then dead-letters; a fail sent again answers as the first did; a stale token is refused', async () => {
    const { queue, consumer } = pair({ maxAttempts: 2 });
    const id = await queue.add('x');
    const [first] = await consumer.claim();
    const retried = await consumer.fail(id, first!.token, { error: 'first failure', retryDelayMs: 300 });
    assert.equal(retried.result, 'retried');
    // Sent again (a reply lost): the first send's outcome, although a fresh read now sees the last attempt.
    assert.deepEqual(await consumer.fail(id, first!.token, { error: 'first failure', retryDelayMs: 300 }), retried);
    assert.equal((await queue.stats()).ready + (await queue.stats()).delayed, 1, 'the resend changed nothing');
    const [second] = await consumer.claim({ waitMs: 2_000 });
    assert.equal(second?.attempt, 2);
    assert.deepEqual(await consumer.fail(id, first!.token), { result: 'retried' }, 'no due time once the retry was claimed');
    assert.deepEqual(await consumer.fail(id, second!.token, { error: 'second failure' }), { result: 'dead' });
    assert.deepEqual(await consumer.fail(id, second!.token, { error: 'second failure' }), { result: 'dead' });
    assert.deepEqual(await consumer.fail(id, '12345'), { result: 'stale' }, 'a token that never held the job');
    const dead = await queue.get(id);
    assert.equal(dead?.state, 'dead');
    assert.equal(dead?.lastError, 'second failure');
    assert.equal(dead?.attempts, 2, 'each attempt counted once');
  });

  it('ack tells acked (also resent), stale (another token completed the job) and not found (no such job, no such queue) apart, by the script', async () => {
    const { name, queue, consumer } = pair();
    const id = await queue.add('x');
    await assert.rejects(consumer.ack('never-added', '1'), NotFoundError);
    const typo = redis.track(new PullConsumer(uniqueQueue('typo'), { connection: redis.url }));
    await assert.rejects(typo.ack(id, '1'), NotFoundError);
    assert.deepEqual(await redis.raw.keys(`sg:{${typo.queue}:*`), [], 'an ack to an unknown queue creates nothing');
    const [first] = await consumer.claim({ leaseMs: 30_000 });
    // The lease runs out (as when its holder froze) and the job is delivered again and completed.
    await redis.raw.zadd(`sg:{${name}:0}:active`, 'XX', 1, id);
    const [second] = await consumer.claim({ leaseMs: 30_000 });
    assert.equal(second?.attempt, 2);
    assert.equal(await consumer.ack(id, second!.token), 'acked');
    assert.equal(await consumer.ack(id, second!.token), 'acked', 'resent after a lost reply');
    assert.equal(await consumer.ack(id, first!.token), 'stale', 'the job is gone, but another token completed it');
    assert.deepEqual(await queue.counters(), { ...(await queue.counters()), completed: 1, stale: 1, reaped: 1 });
  });

  it('a stale fail is refused and counted in `stale`, as a stale ack is', async () => {
    const { name, queue, consumer } = pair();
    const id = await queue.add('x');
    const [first] = await consumer.claim({ leaseMs: 30_000 });
    await redis.raw.zadd(`sg:{${name}:0}:active`, 'XX', 1, id);
    const [second] = await consumer.claim({ leaseMs: 30_000 });
    assert.deepEqual(await consumer.fail(id, first!.token, { error: 'late' }), { result: 'stale' });
    assert.equal((await queue.counters()).stale, 1);
    assert.equal((await queue.get(id))?.state, 'active', 'the new holder keeps the job');
    assert.equal(await consumer.ack(id, second!.token), 'acked');
    assert.deepEqual(await consumer.fail(id, first!.token), { result: 'stale' }, 'also once the job is gone');
    assert.equal((await queue.counters()).stale, 2);
  });

  it('an add resent after the job completed does not run it again, for the minute the completion is remembered', async () => {
    const { name, queue, consumer } = pair();
    const id = await queue.add('first', { id: 'resent' });
    const [job] = await consumer.claim();
    assert.equal(await consumer.ack(id, job!.token), 'acked');
    assert.equal(await queue.add('first', { id: 'resent' }), id, 'the resend answers the id');
    assert.equal(await queue.get(id), null, 'and writes nothing');
    assert.deepEqual(await consumer.claim(), []);
    assert.equal((await queue.counters()).added, 1);
    // Once its buckets' time is over (three periods passed, as the script sees it), the id is free again.
    await redis.raw.hset(`sg:{${name}:0}:meta`, 'donePeriod', 0);
    await queue.add('second', { id: 'resent' });
    assert.equal((await queue.get(id))?.payload, 'second');
    const [again] = await consumer.claim();
    assert.equal(await consumer.ack(id, again!.token), 'acked');
    // ifExists: 'replace' adds anew even within the window, and drops the entry of the earlier job.
    await queue.add('third', { id: 'resent', ifExists: 'replace' });
    assert.equal((await queue.get(id))?.payload, 'third');
    const [third] = await consumer.claim();
    assert.equal(await consumer.ack(id, again!.token), 'stale', "the earlier job's token does not hold the new one");
    assert.equal(await consumer.ack(id, third!.token), 'acked');
  });

  it('forgets completed jobs after 60 to 90 s: a bucket per 30 s period, dropped whole, with an expiry as a backstop', async () => {
    const { name, queue, consumer } = pair();
    await queue.addBulk(Array.from({ length: 5 }, (_, n) => ({ payload: n })));
    const jobs = await consumer.claim({ max: 5 });
    for (const job of jobs) await consumer.ack(job.id, job.token);
    const tag = `sg:{${name}:0}`;
    const buckets = [`${tag}:done:0`, `${tag}:done:1`, `${tag}:done:2`];
    const sizes = await Promise.all(buckets.map(key => redis.raw.hlen(key)));
    assert.deepEqual(sizes.sort(), [0, 0, 5], 'the jobs completed in one period share a bucket');
    const bucket = buckets[(await Promise.all(buckets.map(key => redis.raw.hlen(key)))).indexOf(5)] as string;
    const ttl = await redis.raw.pttl(bucket);
    assert.ok(ttl > 60_000 && ttl <= 105_000, `expires in ${ttl} ms`);
    // Three periods later (as the script sees it), a claim that finds work drops every bucket (an
    // idle claim reads nothing more than the heads: a quiet queue's bucket goes by its expiry).
    await redis.raw.hset(`${tag}:meta`, 'donePeriod', 0);
    assert.deepEqual(await consumer.claim(), []);
    assert.equal(await redis.raw.exists(...buckets), 1, 'an idle claim leaves the bucket to its expiry');
    await queue.add('next');
    assert.equal((await consumer.claim()).length, 1);
    assert.equal(await redis.raw.exists(...buckets), 0);
    await assert.rejects(consumer.ack(jobs[0]!.id, jobs[0]!.token), NotFoundError, 'forgotten: a resend now is not found');
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
    assert.deepEqual(
      (await queue.list('ready')).jobs.map(job => job.payload),
      [5],
    );
    assert.deepEqual(
      (await queue.list('delayed')).jobs.map(job => job.payload),
      [2, 3, 4],
    );
    const { jobs: activeList } = await queue.list('active');
    assert.equal(activeList[0]?.id, active?.id);
    assert.ok((activeList[0]?.leaseUntilAt ?? 0) > Date.now() + 50_000);
    const histogram = await queue.dueHistogram([60_000, 3_600_000, 86_400_000]);
    assert.equal(histogram.ready, 1);
    assert.deepEqual(
      histogram.buckets.map(bucket => bucket.count),
      [1, 1, 0],
    );
    assert.equal(histogram.later, 1);
    await assert.rejects(queue.dueHistogram([10, 5]), ValidationError);
    await assert.rejects(queue.list('done' as never), ValidationError);
    assert.ok((await listQueues({ connection: redis.url })).includes(name));
  });
});
