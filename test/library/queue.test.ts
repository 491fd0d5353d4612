import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClosedError, ConflictError, NotFoundError, Queue, ValidationError, Worker, listQueues } from '../../src/index.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const open = { push: <T extends { close(): Promise<unknown> }>(item: T) => redis.track(item) };

function queue<T = unknown>(name = uniqueQueue()): Queue<T> {
  const q = new Queue<T>(name, { connection: redis.url });
  open.push(q);
  return q;
}

describe('Queue', () => {
  it('adds a delayed job and reads it back with its state and due time', async () => {
    const q = queue<{ orderId: number }>();
    const before = Date.now();
    const id = await q.add({ orderId: 42 }, { delay: '30m' });
    const job = await q.get(id);
    assert.ok(job);
    assert.equal(job.state, 'delayed');
    assert.deepEqual(job.payload, { orderId: 42 });
    assert.equal(job.attempts, 0);
    assert.ok(job.dueAt >= before + 30 * 60_000 - 50 && job.dueAt <= Date.now() + 30 * 60_000 + 50, `dueAt ${job.dueAt}`);
    assert.deepEqual(await q.stats(), { delayed: 1, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it('accepts `at` as a Date or epoch ms, and a past `at` is ready at once', async () => {
    const q = queue();
    const at = Date.parse('2030-01-01T00:00:00Z');
    const a = await q.add('a', { at: new Date(at) });
    const b = await q.add('b', { at: at + 1 });
    const c = await q.add('c', { at: Date.now() - 60_000 });
    assert.equal((await q.get(a))?.dueAt, at);
    assert.equal((await q.get(b))?.dueAt, at + 1);
    assert.equal((await q.get(c))?.state, 'ready');
    assert.deepEqual(await q.stats(), { delayed: 2, ready: 1, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it('does not duplicate a job added twice with the same id, and keeps the first payload', async () => {
    const q = queue<{ v: number }>();
    const first = await q.add({ v: 1 }, { id: 'order:43', delay: '1h' });
    const second = await q.add({ v: 2 }, { id: 'order:43', delay: '2h' });
    assert.equal(first, 'order:43');
    assert.equal(second, 'order:43');
    const job = await q.get('order:43');
    assert.deepEqual(job?.payload, { v: 1 });
    assert.equal((await q.stats()).delayed, 1);
    assert.equal((await q.counters()).added, 1);
  });

  it("replaces a waiting job's payload and due time with ifExists: 'replace' (a debounce)", async () => {
    const q = queue<{ v: number }>();
    await q.add({ v: 1 }, { id: 'debounce', delay: '1h' });
    await q.add({ v: 2 }, { id: 'debounce', delay: '2h', ifExists: 'replace' });
    const job = await q.get('debounce');
    assert.deepEqual(job?.payload, { v: 2 });
    assert.ok((job?.dueAt ?? 0) > Date.now() + 90 * 60_000);
    assert.equal((await q.stats()).delayed, 1);
  });

  it('refuses to replace a running job with a ConflictError', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let release!: () => void;
    const worker = new Worker(name, () => new Promise<void>(resolve => (release = resolve)), { connection: redis.url });
    open.push(worker);
    await q.add('x', { id: 'busy' });
    await waitFor(async () => (await q.get('busy'))?.state === 'active', 5_000, 'job to be active');
    await assert.rejects(q.add('y', { id: 'busy', ifExists: 'replace' }), ConflictError);
    release();
    await waitFor(async () => (await q.get('busy')) === null, 5_000, 'job to complete');
  });

  it('addBulk returns ids in order and writes every job', async () => {
    const q = queue<number>();
    const ids = await q.addBulk(Array.from({ length: 1_234 }, (_, i) => ({ payload: i, delay: 60_000 + i })));
    assert.equal(ids.length, 1_234);
    assert.equal(new Set(ids).size, 1_234);
    assert.equal((await q.stats()).delayed, 1_234);
    assert.equal((await q.get(ids[1_000] as string))?.payload, 1_000);
  });

  it('generated ids sort in creation order', async () => {
    const q = queue();
    const ids = await q.addBulk(Array.from({ length: 300 }, () => ({ payload: 0 })));
    assert.deepEqual([...ids].sort(), ids);
  });

  it('cancel answers cancelled, then not_found; a running job answers running and is left alone', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    await q.add('x', { id: 'c1', delay: '1h' });
    assert.equal(await q.cancel('c1'), 'cancelled');
    assert.equal(await q.cancel('c1'), 'not_found');
    assert.equal(await q.get('c1'), null);
    assert.equal(await q.cancel('never-added'), 'not_found');

    let release!: () => void;
    const worker = new Worker(name, () => new Promise<void>(resolve => (release = resolve)), { connection: redis.url });
    open.push(worker);
    await q.add('y', { id: 'c2' });
    await waitFor(async () => (await q.get('c2'))?.state === 'active', 5_000, 'job to be active');
    assert.equal(await q.cancel('c2'), 'running');
    release();
    await waitFor(async () => (await q.get('c2')) === null, 5_000, 'job to complete');
    assert.equal((await q.counters()).completed, 1);
  });

  it('reschedule moves a waiting job atomically; unknown ids answer not_found', async () => {
    const q = queue();
    await q.add('x', { id: 'r1', delay: '1h' });
    assert.equal(await q.reschedule('r1', { delay: '10m' }), 'rescheduled');
    const job = await q.get('r1');
    assert.ok(job && job.dueAt < Date.now() + 11 * 60_000 && job.dueAt > Date.now() + 9 * 60_000);
    assert.equal(await q.reschedule('missing', { delay: 5 }), 'not_found');
    const at = Date.parse('2031-05-05T05:05:05Z');
    assert.equal(await q.reschedule('r1', { at }), 'rescheduled');
    assert.equal((await q.get('r1'))?.dueAt, at);
    assert.equal((await q.stats()).delayed, 1);
  });

  it('rescheduling a job to earlier wakes a sleeping worker for it', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const started: number[] = [];
    const worker = new Worker(name, job => void started.push(Date.now() - job.dueAt), { connection: redis.url, safetyIntervalMs: 60_000 });
    open.push(worker);
    await worker.waitUntilReady();
    await q.add('x', { id: 'soon', delay: '1h' });
    await sleep(50);
    await q.reschedule('soon', { delay: 100 });
    await waitFor(() => started.length === 1, 3_000, 'the rescheduled job to run');
    // Without the wake-up the worker would sleep for its 60 s safety interval.
    assert.ok((started[0] as number) >= 0 && (started[0] as number) < 1_000, `started ${started[0]} ms late`);
  });

  it('pause stops claiming and resume wakes workers at once', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let runs = 0;
    const worker = new Worker(name, () => void (runs += 1), { connection: redis.url, safetyIntervalMs: 60_000 });
    open.push(worker);
    await worker.waitUntilReady();
    await q.pause({ create: true });
    assert.equal((await q.stats()).paused, true);
    await q.add('x', { delay: 20 });
    await sleep(300);
    assert.equal(runs, 0);
    assert.equal((await q.stats()).ready, 1);
    const resumedAt = Date.now();
    await q.resume();
    await waitFor(() => runs === 1, 2_000, 'the job to run after resume');
    assert.ok(Date.now() - resumedAt < 1_500, 'woken by resume, not by the 60 s safety re-check');
  });

  it('refuses to pause or resume a queue that does not exist, unless pause is told to create it', async () => {
    const name = uniqueQueue('typo');
    const q = queue(name);
    await assert.rejects(
      q.pause(),
      (error: Error) => error instanceof NotFoundError && /does not exist.*\{ create: true \}/.test(error.message),
    );
    await assert.rejects(q.resume(), NotFoundError);
    assert.equal((await q.stats()).paused, false, 'nothing was written: no paused phantom');
    assert.ok(!(await listQueues({ connection: redis.url })).includes(name));
    await assert.rejects(q.pause({ create: 'yes' as unknown as boolean }), ValidationError);
    await q.pause({ create: true });
    assert.ok((await listQueues({ connection: redis.url })).includes(name), 'a created queue is listed');
    assert.equal((await q.stats()).paused, true);
    await q.resume();
    await q.pause();
    assert.equal((await q.stats()).paused, true, 'an existing queue pauses without the flag');
  });

  it('keeps every key of a queue under one hash tag', async () => {
    const name = uniqueQueue('tag');
    const q = queue(name);
    await q.add('x', { delay: '10s' });
    // An hour out, the job goes to the wheel: a bucket and an index shard, under the same tag.
    const far = await q.add('y', { delay: '1h' });
    const keys = await redis.raw.keys(`sg:{${name}:0}:*`);
    const bucket = (await redis.raw.zrange(`sg:{${name}:0}:wheel`, 0, -1))[0];
    assert.deepEqual(await redis.raw.hkeys(`sg:{${name}:0}:wheel:idx:0`), [far]);
    assert.deepEqual(
      keys.sort(),
      [`counters`, `due`, `jobs`, `meta`, `wheel`, `wheel:${bucket}`, `wheel:idx:0`].map(key => `sg:{${name}:0}:${key}`).sort(),
    );
    assert.equal(await redis.raw.hget(`sg:{${name}:0}:meta`, 'partitions'), '1', 'the partition count is stored with the queue');
    assert.ok(await redis.raw.sismember('sg:queues', name));
  });

  it('a closed queue refuses calls with ClosedError', async () => {
    const q = new Queue('closed-q', { connection: redis.url });
    await q.close();
    await assert.rejects(q.add('x'), ClosedError);
  });
});
