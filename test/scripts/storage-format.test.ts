// The storage format (README, "Upgrading"): a queue written by an older sandglass is served by
// this one (test/fixtures/storage/v<N>.json, each written by the code of its time), and a queue in
// a format newer than this code knows is refused at the first touch with nothing written.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { IncompatibleStorageError, PullConsumer, Queue, Worker } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { STORAGE_FORMAT } from '../../src/store/redis/partitions.js';
import { partitionOf } from '../../src/store/placement.js';
import { useApp } from '../helpers/http.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);

interface DumpedKey {
  key: string;
  type: 'string' | 'hash' | 'zset' | 'list' | 'set';
  ttlMs: number;
  value: unknown;
}
interface Dump {
  format: number;
  wheelSlotMs: number;
  wheelAlign: number;
  nowSlotPhase: number;
  keys: DumpedKey[];
}

async function serverNow(): Promise<number> {
  const [seconds, micros] = await redis.raw.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Writes a fixture into Redis as if it had been written just now: `{now±ms}` from the server's now,
 * wheel buckets from its slot, moved by a multiple of the buckets' alignment (make-v1.ts).
 */
async function loadFixture(raw: Redis, dump: Dump): Promise<void> {
  const now = await serverNow();
  const W = dump.wheelSlotMs;
  const slotNow = Math.floor(now / W);
  const base = slotNow - ((((slotNow - dump.nowSlotPhase) % dump.wheelAlign) + dump.wheelAlign) % dump.wheelAlign);
  const fill = (text: string): string =>
    text
      .replace(/\{now([+-])(\d+)\}/g, (_, sign: string, ms: string) => String(now + (sign === '+' ? 1 : -1) * Number(ms)))
      .replace(/\{bucket\+(-?\d+):(\d+)\}/g, (_, d: string, sub: string) => String((base + Number(d)) * 100_000 + Number(sub)))
      .replace(/\{slotStart\+(-?\d+)\}/g, (_, d: string) => String((base + Number(d)) * W));
  for (const { key: dumpedKey, type, ttlMs, value } of dump.keys) {
    const key = fill(dumpedKey);
    if (type === 'string') await raw.set(key, fill(value as string));
    else if (type === 'hash')
      await raw.hset(key, Object.fromEntries(Object.entries(value as Record<string, string>).map(([f, v]) => [fill(f), fill(v)])));
    else if (type === 'zset')
      await raw.zadd(key, ...(value as [string, string][]).flatMap(([member, score]) => [fill(score), fill(member)]));
    else if (type === 'list') await raw.rpush(key, ...(value as string[]).map(fill));
    else await raw.sadd(key, ...(value as string[]).map(fill));
    if (ttlMs > 0) await raw.pexpire(key, ttlMs);
  }
}

/**
 * Every key of the server with its type and value (no TTL: it runs down), for before/after
 * comparisons; only those whose name holds one of `names` (other tests' workers run on).
 */
async function everyKey(raw: Redis, names: readonly string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const keys = (await raw.keys('*')).filter(key => names.some(name => key.includes(name)));
  out.registered = names.map(name => raw.sismember('sg:queues', name));
  out.registered = await Promise.all(out.registered as Promise<number>[]);
  for (const key of keys.sort()) {
    const type = await raw.type(key);
    if (type === 'string') out[key] = await raw.get(key);
    else if (type === 'hash') out[key] = await raw.hgetall(key);
    else if (type === 'zset') out[key] = await raw.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'list') out[key] = await raw.lrange(key, 0, -1);
    else if (type === 'set') out[key] = (await raw.smembers(key)).sort();
    else out[key] = type;
  }
  return out;
}

function isIncompatible(found: number): (error: unknown) => boolean {
  return error =>
    error instanceof IncompatibleStorageError &&
    error.code === 'ERR_INCOMPATIBLE_STORAGE' &&
    error.foundFormat === found &&
    error.supportedFormat === STORAGE_FORMAT &&
    error.message.includes(`format ${found}`) &&
    error.message.includes(`format ${STORAGE_FORMAT}`) &&
    /upgrade/i.test(error.message);
}

describe('storage format', () => {
  it('serves a queue in format 1 as the code before numbered formats wrote it: each job once, schedules go on, dead letters retry, kept results read, limits hold', async () => {
    const dump = JSON.parse(readFileSync(new URL('../fixtures/storage/v1.json', import.meta.url), 'utf8')) as Dump;
    assert.equal(dump.format, 1);
    await loadFixture(redis.raw, dump);
    // Format 1 has no number: none is written into it by serving it.
    assert.equal(await redis.raw.hget(partitionKeys('sg', 'orders', 0).meta, 'format'), null);
    const orders = redis.track(new Queue<Record<string, unknown>>('orders', { connection: redis.url }));
    const limited = redis.track(new Queue<number>('limited', { connection: redis.url }));

    // Kept results read; dead letters retry; wheel jobs are found (and brought forward to run now).
    const kept = await orders.get('kept-3');
    assert.equal(kept?.state, 'completed');
    assert.deepEqual(kept?.result, { done: 'kept-3' });
    assert.equal((await orders.list('completed')).jobs.length, 5);
    assert.equal((await orders.get('far-2'))?.state, 'delayed');
    assert.equal((await orders.stats()).dead, 2);
    assert.equal(await orders.retryDead(['dead-0', 'dead-1']), 2);
    for (let i = 0; i < 5; i++) assert.equal(await orders.reschedule(`far-${i}`, { delay: 0 }), 'rescheduled');
    assert.equal((await orders.getSchedule('heartbeat'))?.key, 'heartbeat');

    const runs = new Map<string, number>();
    const attempts = new Map<string, number>();
    const beats: number[] = [];
    redis.track(
      new Worker<Record<string, unknown>>(
        'orders',
        job => {
          if (job.id.startsWith('heartbeat@')) beats.push(Date.now());
          else {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
            attempts.set(job.id, job.attempt);
          }
        },
        { connection: redis.url, concurrency: 20 },
      ),
    );
    let running = 0;
    let most = 0;
    const limitedRuns = new Map<string, number>();
    redis.track(
      new Worker<number>(
        'limited',
        async job => {
          running += 1;
          most = Math.max(most, running);
          await sleep(150);
          running -= 1;
          limitedRuns.set(job.id, (limitedRuns.get(job.id) ?? 0) + 1);
        },
        { connection: redis.url, concurrency: 10 },
      ),
    );
    const expected = [
      ...Array.from({ length: 10 }, (_, i) => `ready-${i}`),
      ...Array.from({ length: 4 }, (_, i) => `soon-${i}`),
      'soon-deadline',
      ...Array.from({ length: 3 }, (_, i) => `active-${i}`),
      'dead-0',
      'dead-1',
      ...Array.from({ length: 5 }, (_, i) => `far-${i}`),
    ].sort();
    // The active jobs come back when their 3 s lease runs out; the soon ones are due 4-5.5 s after the load.
    await waitFor(() => runs.size === expected.length && limitedRuns.size === 6, 20_000, 'every job of the fixture');
    await waitFor(() => beats.length >= 3, 10_000, 'the schedule ticking on');
    await sleep(300);
    assert.deepEqual([...runs.keys()].sort(), expected);
    for (const [id, n] of runs) assert.equal(n, 1, `${id} ran ${n} times`);
    for (const [id, n] of limitedRuns) assert.equal(n, 1, `${id} ran ${n} times`);
    // The active ones were delivered once before the snapshot: reaping counted that attempt.
    for (let i = 0; i < 3; i++) assert.equal(attempts.get(`active-${i}`), 2);
    assert.ok(most <= 2, `${most} jobs of a concurrency-2 queue ran at once`);
    assert.deepEqual((await limited.getLimits()).concurrency, 2);
    const stats = await orders.stats();
    assert.equal(stats.dead + stats.active, 0);
    // Still kept: the 5 from the snapshot, with the retention of format 1 in force.
    assert.equal((await orders.get('kept-0'))?.state, 'completed');
    assert.deepEqual(await orders.getRetention(), { completed: { count: 50, age: 604_800_000 }, maxResultBytes: 65_536 });
  });

  it('writes the format into every partition of a queue it creates', async () => {
    const name = uniqueQueue('new');
    const q = redis.track(new Queue(name, { connection: redis.url, partitions: 3 }));
    await q.add('x');
    for (let p = 0; p < 3; p++) assert.equal(await redis.raw.hget(partitionKeys('sg', name, p).meta, 'format'), String(STORAGE_FORMAT));
  });

  it('serves a format 1 queue as it is until group data is written in a partition, which makes that partition format 2', async () => {
    const name = uniqueQueue('to-groups');
    const q = redis.track(new Queue(name, { connection: redis.url, partitions: 3 }));
    await q.add('x');
    // As a format 1 process created it: no field.
    for (let p = 0; p < 3; p++) await redis.raw.hdel(partitionKeys('sg', name, p).meta, 'format');
    const reopened = redis.track(new Queue(name, { connection: redis.url }));
    await reopened.addBulk([{ payload: 'plain' }, { payload: 'later', delay: '1h' }]);
    await reopened.setLimits({ concurrency: 5 });
    const formats = async () =>
      Promise.all([0, 1, 2].map(async p => (await redis.raw.hget(partitionKeys('sg', name, p).meta, 'format')) ?? '1'));
    assert.deepEqual(await formats(), ['1', '1', '1'], 'no group data: format 1 as it was');
    await reopened.add('grouped', { group: 'tenant-a' });
    const home = partitionOf('tenant-a', 3);
    assert.deepEqual(
      await formats(),
      [0, 1, 2].map(p => (p === home ? String(STORAGE_FORMAT) : '1')),
    );
    await reopened.pauseGroup('tenant-b');
    assert.equal((await formats())[partitionOf('tenant-b', 3)], String(STORAGE_FORMAT), 'a group pause is group data too');
  });

  it('refuses a queue in a newer format in Queue, Worker, PullConsumer and the HTTP routes, writing nothing', async () => {
    const newer = STORAGE_FORMAT + 1;
    // One queue whose partition 0 says so, one whose partition 1 alone does.
    const first = uniqueQueue('newer');
    const second = uniqueQueue('newer');
    const writer = new Queue(first, { connection: redis.url });
    await writer.add('x', { id: 'a', delay: 100 });
    await writer.close();
    const writer2 = new Queue(second, { connection: redis.url, partitions: 2 });
    await writer2.addBulk([
      { payload: 1, id: 'a' },
      { payload: 2, id: 'b' },
    ]);
    await writer2.close();
    await redis.raw.hset(partitionKeys('sg', first, 0).meta, 'format', String(newer));
    await redis.raw.hset(partitionKeys('sg', second, 1).meta, 'format', String(newer));
    const before = await everyKey(redis.raw, [first, second]);

    for (const name of [first, second]) {
      const q = redis.track(new Queue(name, { connection: redis.url }));
      await assert.rejects(q.add('y', { id: 'c' }), isIncompatible(newer));
      await assert.rejects(q.add('y', { id: 'a', ifExists: 'replace' }), isIncompatible(newer));
      await assert.rejects(q.get('a'), isIncompatible(newer));
      await assert.rejects(q.stats(), isIncompatible(newer));
      await assert.rejects(q.setRetention({ completed: { count: 5 } }), isIncompatible(newer));
      await assert.rejects(q.schedule('s', { every: '1s' }), isIncompatible(newer));
      await assert.rejects(q.pause({ create: true }), isIncompatible(newer));
      const c = redis.track(new PullConsumer(name, { connection: redis.url }));
      await assert.rejects(c.claim(), isIncompatible(newer));
      let ran = 0;
      const errors: unknown[] = [];
      const w = redis.track(new Worker(name, () => void (ran += 1), { connection: redis.url }));
      w.on('error', error => errors.push(error));
      await assert.rejects(w.waitUntilReady(), isIncompatible(newer));
      assert.equal(ran, 0);
      assert.ok(errors.some(isIncompatible(newer)), 'the worker reports it');
      for (const [method, path, body] of [
        ['POST', `/v1/queues/${name}/jobs`, { payload: 1, id: 'd' }],
        ['GET', `/v1/queues/${name}/jobs/a`, undefined],
        ['POST', `/v1/queues/${name}/claim`, { max: 1 }],
        ['GET', `/v1/queues/${name}`, undefined],
      ] as const) {
        const answer = await api.call(method, path, body);
        assert.equal(answer.status, 503, `${method} ${path}: ${answer.text}`);
        assert.equal(answer.body.error.code, 'INCOMPATIBLE_STORAGE', `${method} ${path}`);
        assert.match(answer.body.error.message, new RegExp(`format ${newer}.*format ${STORAGE_FORMAT}.*upgrade`, 'i'));
      }
    }
    await sleep(200); // anything sent in the background would have landed
    assert.deepEqual(await everyKey(redis.raw, [first, second]), before);
  });
});
