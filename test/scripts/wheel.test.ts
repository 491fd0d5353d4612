// The far-future tier (time wheel, lua/includes/wheel.lua): jobs due beyond one bucket width live in LIST
// buckets with an id index in small HASH shards, and claim moves each bucket into `due` one bucket
// width before it starts. Tests seed a small width (`meta` wheelSlotMs) on raw keys, make calls and
// check the keys, as asynq tests its broker.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { Queue, Worker } from '../../src/index.js';
import { partitionKeys, wheelBucketKey, wheelIndexKey, type PartitionKeys } from '../../src/store/redis/keys.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { assertNeverEarlyAndOnTime } from '../helpers/lateness.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';
import { killAll, readLedgers, spawnWorker, type WorkerProcess } from '../fixtures/worker-process.js';

const redis = useRedis({ appendOnly: false });
const W = 1_000;
const dir = mkdtempSync(join(tmpdir(), 'sg-wheel-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A queue of one partition whose wheel has buckets of `W` ms (set before its first add). */
async function wheelQueue<T = unknown>(): Promise<{ name: string; q: Queue<T>; keys: PartitionKeys; store: PartitionStore }> {
  const name = uniqueQueue('wheel');
  const keys = partitionKeys('sg', name, 0);
  await redis.raw.hset(keys.meta, 'wheelSlotMs', W);
  const q = redis.track(new Queue<T>(name, { connection: redis.url }));
  return { name, q, keys, store: new PartitionStore(redis.raw, 'sg', name, 0) };
}

async function serverNow(raw: Redis): Promise<number> {
  const [s, us] = await raw.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** All index shards of a partition, by the linear hashing state in `meta`. */
async function indexShards(raw: Redis, name: string, keys: PartitionKeys): Promise<string[]> {
  const [level, split] = await raw.hmget(keys.meta, 'idxLevel', 'idxSplit');
  const count = 2 ** Number(level ?? 0) + Number(split ?? 0);
  return Array.from({ length: count }, (_, s) => wheelIndexKey('sg', name, 0, s));
}

/** Calls of `command` the server made so far (scripts' calls included): INFO commandstats. */
async function commandCalls(raw: Redis, command: string): Promise<number> {
  const info = await raw.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

/**
 * The wheel's half of the invariant: every index entry names a bucket of `wheel` that holds the id
 * exactly once, every bucket entry is indexed to its bucket, no wheel id is in `jobs`, and `wheeled`
 * counts them. Returns id -> dueAt of the jobs in the wheel.
 */
async function checkWheel(raw: Redis, name: string, keys: PartitionKeys): Promise<Map<string, number>> {
  const index = new Map<string, string>();
  for (const shard of await indexShards(raw, name, keys)) {
    for (const [id, n] of Object.entries(await raw.hgetall(shard))) {
      assert.ok(!index.has(id), `${id} indexed twice`);
      index.set(id, n);
    }
  }
  const inWheel = new Map<string, number>();
  const buckets = await raw.zrange(keys.wheel, 0, -1, 'WITHSCORES');
  for (let i = 0; i < buckets.length; i += 2) {
    const n = buckets[i] as string;
    const start = Number(buckets[i + 1]);
    // A slot's bucket is named slot * 100000 + sub and starts at its slot; a cell's name begins
    // with its end, the cell holding due times in [start, end) (includes/wheel.lua's wheel format).
    const end = Number(n.slice(0, -7));
    const cell = end > start;
    if (!cell) assert.equal(start, Math.floor(Number(n) / 100_000) * W, `bucket ${n} score`);
    const entries = await raw.lrange(wheelBucketKey('sg', name, 0, n), 0, -1);
    if (cell) for (const entry of entries) assert.ok(start + Number(entry.split('\n')[1]) < end, `cell ${n} holds a job due by its end`);
    assert.ok(entries.length > 0 && entries.length <= 1_000, `bucket ${n} holds ${entries.length}`);
    for (const entry of entries) {
      const [id, offset] = entry.split('\n') as [string, string];
      assert.ok(!inWheel.has(id), `${id} in two bucket entries`);
      assert.equal(index.get(id), n, `${id} indexed to its bucket`);
      inWheel.set(id, start + Number(offset));
    }
  }
  assert.equal(inWheel.size, index.size, 'every indexed id is in its bucket');
  for (const id of inWheel.keys()) assert.equal(await raw.hexists(keys.jobs, id), 0, `${id} both in jobs and the wheel`);
  assert.equal(Number((await raw.hget(keys.counters, 'wheeled')) ?? 0), inWheel.size, 'wheeled counts the wheel');
  return inWheel;
}

describe('the wheel', () => {
  it('a far job is one bucket entry and one index field, not in due or jobs; a near one goes to due', async () => {
    const { name, q, keys } = await wheelQueue<{ a: number }>();
    await q.add({ a: 1 }, { id: 'far', delay: 10_000, maxAttempts: 3 });
    await q.add({ a: 2 }, { id: 'near', delay: 500 });
    assert.deepEqual(await redis.raw.zrange(keys.due, 0, -1), ['near']);
    assert.deepEqual(await redis.raw.hkeys(keys.jobs), ['near']);
    const [n, start] = (await redis.raw.zrange(keys.wheel, 0, -1, 'WITHSCORES')) as [string, string];
    assert.deepEqual(await redis.raw.hgetall(wheelIndexKey('sg', name, 0, 0)), { far: n });
    const [entry] = await redis.raw.lrange(wheelBucketKey('sg', name, 0, n), 0, -1);
    const dueAt = (await q.get('far'))?.dueAt as number;
    assert.equal(entry, `far\n${dueAt - Number(start)}\n0,0,,3,\n{"a":1}`);
    assert.equal(Number(start), Math.floor(dueAt / W) * W);
    assert.equal(await redis.raw.hget(keys.counters, 'wheeled'), '1');
    assert.deepEqual(await redis.raw.object('ENCODING', wheelBucketKey('sg', name, 0, n)), 'quicklist');
    assert.deepEqual(await redis.raw.object('ENCODING', wheelIndexKey('sg', name, 0, 0)), 'listpack');
    await checkWheel(redis.raw, name, keys);
  });

  it('a claim moves exactly the buckets that start within one width, at most 250 entries a call, at their exact due times', async () => {
    const { name, q, keys, store } = await wheelQueue();
    const now = await serverNow(redis.raw);
    const start = Math.ceil((now + 3_000) / W) * W;
    const at = start + 300;
    const ids = await q.addBulk(Array.from({ length: 2_500 }, (_, i) => ({ payload: i, at })));
    await q.addBulk(Array.from({ length: 10 }, (_, i) => ({ payload: i, at: start + 2_500 })));
    assert.equal(await redis.raw.zcard(keys.due), 0);
    assert.equal(
      await redis.raw.zcard(keys.wheel),
      4,
      "the slot's bucket of 1,000, the jobs' coarse cell (1,000) and fine cell, and the later slot",
    );
    const claim = (n: number) => store.claim(0, 1_000, 10, 3, { claimId: `c${n}`, answeredClaimId: undefined });
    // Before its move time a bucket stays.
    const early = await claim(0);
    assert.equal(early.nextAt, start - W, 'the reply names the move time');
    assert.equal(await redis.raw.zcard(keys.due), 0);
    await waitFor(async () => (await serverNow(redis.raw)) >= start - W, 10_000, 'the move time');
    // WHEEL_MOVE_MAX in lua/includes/wheelPromote.lua: a claim moves at most this many entries, then answers "now".
    const MOVE_MAX = 250;
    for (let call = 1; call < 2_500 / MOVE_MAX; call++) {
      const reply = await claim(call);
      assert.equal(await redis.raw.zcard(keys.due), call * MOVE_MAX, `call ${call} moves ${MOVE_MAX}`);
      if (reply.nextAt === reply.now) continue; // more to move: call again at once
      // A bucket moved whole: the next one, a cell starting later in the slot (by `at`), moves W
      // before its start.
      assert.ok(call % (1_000 / MOVE_MAX) === 0, `call ${call} ended a bucket`);
      assert.ok(reply.nextAt > reply.now && reply.nextAt <= at - W, `the next move at ${reply.nextAt}, by ${at - W}`);
      await waitFor(async () => (await serverNow(redis.raw)) >= reply.nextAt, 10_000, 'the next move time');
    }
    const last = await claim(2_500 / MOVE_MAX);
    assert.equal(await redis.raw.zcard(keys.due), 2_500);
    assert.equal(last.nextAt, at, 'then the earliest due time');
    const left = await checkWheel(redis.raw, name, keys);
    assert.equal(left.size, 10, 'the later slot stays');
    const scores = await redis.raw.zrange(keys.due, 0, -1, 'WITHSCORES');
    for (let i = 1; i < scores.length; i += 2) assert.equal(Number(scores[i]), at);
    assert.deepEqual((await redis.raw.zrange(keys.due, 0, -1)).sort(), [...ids].sort());
    assert.equal((await q.get(ids[0] as string))?.dueAt, at);
  });

  it("a claim moves an entry only where it is its job's one place: not a copy of a job in jobs (active) or indexed elsewhere, but one whose index names a bucket without it", async () => {
    const { name, q, keys, store } = await wheelQueue<string>();
    const now = await serverNow(redis.raw);
    const start = Math.ceil((now + 3_000) / W) * W;
    for (const [i, id] of ['live', 'running', 'copy', 'misindexed'].entries()) await q.add(id, { id, at: start + 100 * (i + 1) });
    const [bucket] = await redis.raw.zrange(keys.wheel, 0, -1);
    const shard = wheelIndexKey('sg', name, 0, 0);
    // What calls stopped midway (a slot migration) leave: `running` copied out, claimed and running
    // while its bucket entry and index entry stayed; `copy`, whose index entry a later move removed
    // (the job is elsewhere or done); `misindexed`, indexed to a bucket that never got it.
    await redis.raw.hset(keys.jobs, 'running', '0,0,,,\n"running"');
    await redis.raw.zadd(keys.active, now + 600_000, 'running');
    await redis.raw.hset(keys.leases, 'running', `777,${start + 200}`);
    await redis.raw.hdel(shard, 'copy');
    await redis.raw.hincrby(keys.counters, 'wheeled', -1);
    await redis.raw.hset(shard, 'misindexed', String(Number(bucket) + 7));
    await waitFor(async () => (await serverNow(redis.raw)) >= start - W, 10_000, 'the move time');
    await store.claim(0, 0, 10, 3, { claimId: 'c0', answeredClaimId: undefined });
    assert.deepEqual(await redis.raw.zrange(keys.due, 0, -1), ['live', 'misindexed'], 'the jobs whose one place the bucket was');
    assert.deepEqual(await redis.raw.zrange(keys.active, 0, -1), ['running'], 'the running job is not waiting too');
    assert.equal(await redis.raw.hget(keys.leases, 'running'), `777,${start + 200}`);
    assert.equal(await redis.raw.zcard(keys.wheel), 0);
    assert.deepEqual(await redis.raw.hgetall(shard), {}, 'no index entry left');
    assert.equal(await redis.raw.hget(keys.counters, 'wheeled'), '0');
  });

  it('a wide far bucket moves its jobs that are still far into narrower buckets, not into due', async () => {
    const { name, q, keys, store } = await wheelQueue();
    const now = await serverNow(redis.raw);
    // A bucket whose move time has come, holding a job due soon and two still far (seeded raw).
    const start = Math.floor(now / W) * W + W;
    const n = String((start / W) * 100_000);
    const offsets = { a: 500, b: 30_000, c: 200_000 };
    await redis.raw.rpush(
      wheelBucketKey('sg', name, 0, n),
      ...Object.entries(offsets).map(([id, offset]) => `${id}\n${offset}\n0,0,,,\n"${id}"`),
    );
    await redis.raw.hset(wheelIndexKey('sg', name, 0, 0), { a: n, b: n, c: n });
    await redis.raw.zadd(keys.wheel, start, n);
    await redis.raw.hset(keys.counters, 'wheeled', 3);
    await checkWheel(redis.raw, name, keys);
    const reply = await store.claim(0, 1_000, 10, 3, { claimId: 'c', answeredClaimId: undefined });
    assert.deepEqual(await redis.raw.zrange(keys.due, 0, -1, 'WITHSCORES'), ['a', String(start + 500)]);
    const inWheel = await checkWheel(redis.raw, name, keys);
    assert.deepEqual(Object.fromEntries(inWheel), { b: start + 30_000, c: start + 200_000 });
    assert.equal(await redis.raw.exists(wheelBucketKey('sg', name, 0, n)), 0, 'the wide bucket is gone');
    assert.equal(reply.nextAt, start + 500, 'the next thing to do is the due job');
    for (const id of ['b', 'c'] as const) {
      const job = await q.get(id);
      assert.equal(job?.dueAt, start + offsets[id]);
      assert.equal(job?.payload, id);
    }
  });

  it('a worker runs wheel jobs at or after their due time, on time', async () => {
    const { name, q, keys } = await wheelQueue<number>();
    const lateness: number[] = [];
    // Lateness against the due time given to add (not the one the job reports back).
    const now = Date.now();
    const ats = Array.from({ length: 300 }, () => now + 2_000 + Math.floor(Math.random() * 3_000));
    const worker = redis.track(
      new Worker<number>(name, job => void lateness.push(Date.now() - (ats[job.payload] as number)), {
        connection: redis.url,
        concurrency: 50,
      }),
    );
    await worker.waitUntilReady();
    await q.addBulk(ats.map((at, i) => ({ payload: i, at })));
    assert.equal(await redis.raw.hget(keys.counters, 'wheeled'), '300', 'all 300 wait in the wheel');
    await waitFor(() => lateness.length === 300, 15_000, 'all jobs');
    assertNeverEarlyAndOnTime(lateness);
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 0);
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it('get, cancel and reschedule find a wheel job, also after a reschedule into and out of the wheel', async () => {
    const { name, q, keys } = await wheelQueue<{ v: number }>();
    await q.add({ v: 1 }, { id: 'j', delay: 60_000 });
    const job = await q.get('j');
    assert.equal(job?.state, 'delayed');
    assert.deepEqual(job?.payload, { v: 1 });
    assert.equal((await checkWheel(redis.raw, name, keys)).get('j'), job?.dueAt);

    assert.equal(await q.reschedule('j', { delay: 120_000 }), 'rescheduled');
    const later = await q.get('j');
    assert.ok((later?.dueAt ?? 0) >= (job?.dueAt ?? 0) + 59_000);
    assert.equal((await checkWheel(redis.raw, name, keys)).get('j'), later?.dueAt, 'moved to its new bucket');

    // Out of the wheel: into due (and jobs).
    assert.equal(await q.reschedule('j', { delay: 200 }), 'rescheduled');
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 0);
    assert.deepEqual(await redis.raw.zrange(keys.due, 0, -1), ['j']);
    assert.deepEqual((await q.get('j'))?.payload, { v: 1 });

    // Back into the wheel: out of due and jobs.
    assert.equal(await q.reschedule('j', { delay: 90_000 }), 'rescheduled');
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 1);
    assert.equal(await redis.raw.zcard(keys.due), 0);
    assert.equal((await q.get('j'))?.state, 'delayed');

    assert.equal(await q.cancel('j'), 'cancelled');
    assert.equal(await q.get('j'), null);
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 0);
    assert.equal(await redis.raw.exists(keys.wheel), 0, 'the emptied bucket left the wheel');
    assert.equal(await q.cancel('j'), 'not_found');
    assert.equal(await q.reschedule('j', { delay: 90_000 }), 'not_found');
  });

  it('a dead job rescheduled far goes to the wheel with a fresh set of attempts', async () => {
    const { name, q, keys } = await wheelQueue<{ v: number }>();
    await redis.raw.hset(keys.jobs, 'gone', '3,0,1000,3,\n{"v":1}');
    await redis.raw.zadd(keys.dead, await serverNow(redis.raw), 'gone');
    assert.equal(await q.reschedule('gone', { delay: 60_000 }), 'rescheduled');
    const job = await q.get('gone');
    assert.equal(job?.state, 'delayed');
    assert.equal(job?.attempts, 0);
    assert.deepEqual(job?.payload, { v: 1 });
    assert.equal(await redis.raw.zcard(keys.dead), 0);
    assert.equal(await redis.raw.hlen(keys.jobs), 0);
    assert.equal((await checkWheel(redis.raw, name, keys)).get('gone'), job?.dueAt);
  });

  it("add keeps an id that waits in the wheel, and 'replace' moves it where its new due time belongs", async () => {
    const { name, q, keys } = await wheelQueue<{ v: number }>();
    await q.add({ v: 1 }, { id: 'k', delay: 60_000 });
    const first = await q.get('k');
    await q.add({ v: 2 }, { id: 'k', delay: 90_000 });
    assert.deepEqual(await q.get('k'), first, 'kept as it was');
    assert.equal((await q.counters()).added, 1);

    await q.add({ v: 3 }, { id: 'k', delay: 120_000, ifExists: 'replace' });
    const replaced = await q.get('k');
    assert.deepEqual(replaced?.payload, { v: 3 });
    assert.equal((await checkWheel(redis.raw, name, keys)).get('k'), replaced?.dueAt);

    await q.add({ v: 4 }, { id: 'k', delay: 200, ifExists: 'replace' });
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 0, 'replaced out of the wheel');
    assert.deepEqual(await redis.raw.zrange(keys.due, 0, -1), ['k']);

    await q.add({ v: 5 }, { id: 'k', delay: 60_000, ifExists: 'replace' });
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 1, 'replaced into the wheel');
    assert.equal(await redis.raw.hlen(keys.jobs), 0);
    assert.deepEqual((await q.get('k'))?.payload, { v: 5 });
    assert.equal((await q.counters()).added, 1);
  });

  it('an id given twice in one bulk add is one job: kept, or replaced in place', async () => {
    const { name, q, keys } = await wheelQueue<number>();
    await q.addBulk([
      { id: 'twice', payload: 1, delay: 60_000 },
      { id: 'twice', payload: 2, delay: 90_000 },
      { id: 'near', payload: 1, delay: 200 },
      { id: 'near', payload: 2, delay: 300 },
    ]);
    assert.equal((await q.get('twice'))?.payload, 1);
    assert.equal((await q.get('near'))?.payload, 1);
    await q.addBulk(
      [
        { id: 'twice', payload: 3, delay: 120_000 },
        { id: 'twice', payload: 4, delay: 100 },
        { id: 'twice', payload: 5, delay: 70_000 },
      ],
      'replace',
    );
    assert.equal((await q.get('twice'))?.payload, 5);
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 1);
    assert.deepEqual(await redis.raw.zrange(keys.due, 0, -1), ['near']);
    assert.equal((await q.counters()).added, 2);
  });

  it('a bulk add writes its far jobs per bucket: sub-buckets of at most 1,000, a resent call changes nothing, a replace moves every job, a stale index entry is no job', async () => {
    const { name, keys, store } = await wheelQueue();
    const at = (await serverNow(redis.raw)) + 600_000;
    const bulk = (from: number, count: number, payload: string, atMs = at) =>
      Array.from({ length: count }, (_, i) => ({ id: `b${from + i}`, due: { atMs }, maxAttempts: '', backoff: '', payloadJson: payload }));
    // An index entry left by a script stopped midway (its bucket lacks the id) does not make b0 exist.
    await redis.raw.hset(wheelIndexKey('sg', name, 0, 0), 'b0', '100000');
    // One slot, 2,500 jobs in three calls: the call after the first continues the slot's last bucket.
    for (const [from, count] of [
      [0, 700],
      [700, 1_000],
      [1_700, 800],
    ] as const) {
      const { statuses } = await store.add(bulk(from, count, '1'), 'keep');
      assert.deepEqual(new Set(statuses), new Set(['added']));
    }
    const sizes = async () => {
      const buckets = await redis.raw.zrange(keys.wheel, 0, -1);
      return Promise.all(buckets.map(n => redis.raw.llen(wheelBucketKey('sg', name, 0, n))));
    };
    assert.deepEqual(await sizes(), [1_000, 1_000, 500]);
    const first = await checkWheel(redis.raw, name, keys);
    assert.equal(first.size, 2_500);

    // Resent (a lost reply): every id kept, nothing written.
    const resent = await store.add(bulk(1_700, 800, '1'), 'keep');
    assert.deepEqual(new Set(resent.statuses), new Set(['kept']));
    assert.deepEqual(await sizes(), [1_000, 1_000, 500]);

    // Replaced with a later due time: each job leaves its bucket for the new one, counted once.
    const later = at + 3_600_000;
    const replaced = await store.add(bulk(0, 1_000, '2', later), 'replace');
    assert.deepEqual(new Set(replaced.statuses), new Set(['replaced']));
    const after = await checkWheel(redis.raw, name, keys);
    assert.equal(after.size, 2_500);
    for (let i = 0; i < 2_500; i++) assert.equal(after.get(`b${i}`), i < 1_000 ? later : at, `b${i}`);
    assert.equal(await redis.raw.hget(keys.counters, 'added'), '2500');
  });

  it("a bulk add looks its slots' buckets up at once (no ZSCORE per slot): it appends to a slot's bucket, fills a full one's cells and creates new ones", async () => {
    const { name, keys, store } = await wheelQueue();
    const now = await serverNow(redis.raw);
    const job = (id: string, atMs: number) => ({ id, due: { atMs }, maxAttempts: '', backoff: '', payloadJson: '1' });
    // Slot A holds one job, slot B a full bucket (1,000): both exist before the bulk add.
    const atA = now + 120_000;
    const atB = now + 180_000;
    await store.add([job('a0', atA), ...Array.from({ length: 1_000 }, (_, i) => job(`b${i}`, atB))], 'keep');
    const bucketsBefore = await redis.raw.zrange(keys.wheel, 0, -1);
    assert.equal(bucketsBefore.length, 2);
    // One call: jobs due in A and B, and 400 more spread over minutes to a day (many new slots).
    const spread = Array.from({ length: 400 }, (_, i) => job(`s${i}`, now + Math.round(10_000 * 8_640 ** (i / 400))));
    const zscoreBefore = await commandCalls(redis.raw, 'zscore');
    const { statuses } = await store.add([job('a1', atA + 1), job('b1000', atB + 7), ...spread], 'keep');
    assert.deepEqual(new Set(statuses), new Set(['added']));
    assert.equal(await commandCalls(redis.raw, 'zscore'), zscoreBefore, 'no ZSCORE: the slots were looked up at once');
    const inWheel = await checkWheel(redis.raw, name, keys);
    assert.equal(inWheel.size, 1_403);
    for (const [id, atMs] of [['a1', atA + 1], ['b1000', atB + 7], ...spread.map(j => [j.id, j.due.atMs] as const)] as const)
      assert.equal(inWheel.get(id), atMs, id);
    const bucketsAfter = await redis.raw.zrange(keys.wheel, 0, -1);
    const [nA, nB] = bucketsBefore as [string, string];
    assert.deepEqual(
      await redis.raw.lrange(wheelBucketKey('sg', name, 0, nA), 0, -1).then(es => es.slice(0, 2).map(e => e.split('\n')[0])),
      ['a0', 'a1'],
    );
    assert.equal(
      await redis.raw.llen(wheelBucketKey('sg', name, 0, nB)),
      1_000,
      "the full bucket took no more: b1000 went to its slot's cell",
    );
    assert.ok(bucketsAfter.length > 100, `${bucketsAfter.length} buckets: the spread made new ones`);
    // And a later call finds them all again (an id resent is kept).
    const resent = await store.add(spread.slice(0, 50), 'keep');
    assert.deepEqual(new Set(resent.statuses), new Set(['kept']));
  });

  it('a bulk add stopped by a failing bucket write keeps `wheeled` exact and leaves only index entries that find nothing', async () => {
    const { name, keys, store } = await wheelQueue();
    const now = await serverNow(redis.raw);
    // Distances well inside one span each (wheelSlot): 3,000 s -> 64 slots, 600 s -> 16 slots.
    const atB = now + 3_000_000;
    const atA = now + 600_000;
    const slotB = Math.floor(atB / (64 * W)) * 64;
    const slotA = Math.floor(atA / (16 * W)) * 16;
    const job = (id: string, atMs: number) => ({ id, due: { atMs }, maxAttempts: '', backoff: '', payloadJson: '1' });
    const call = [job('b1', atB), job('b2', atB), job('a1', atA), job('a2', atA), job('a3', atA)];
    // Slot A's first bucket is taken by a key of another type: its RPUSH fails, as the first touch
    // of a bucket key that a Cluster slot migration moved away would.
    const bucketA = wheelBucketKey('sg', name, 0, String(slotA * 100_000));
    await redis.raw.set(bucketA, 'not a list');
    await assert.rejects(store.add(call, 'keep'), /WRONGTYPE/);
    assert.equal(await redis.raw.hget(keys.counters, 'wheeled'), '2', 'counts the pushed entries only');
    assert.equal(await redis.raw.llen(wheelBucketKey('sg', name, 0, String(slotB * 100_000))), 2);

    await redis.raw.del(bucketA);
    assert.equal(await store.get('a1'), null, 'an index entry whose bucket lacks the id finds nothing');
    const { statuses } = await store.add(call, 'keep');
    assert.deepEqual(statuses, ['kept', 'kept', 'added', 'added', 'added']);
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 5);
  });

  it('the index splits its shards as it grows, each stays a small listpack, and every id stays findable', async () => {
    const { name, q, keys } = await wheelQueue<number>();
    const ids = await q.addBulk(
      Array.from({ length: 5_000 }, (_, i) => ({ payload: i, delay: 10_000 + Math.floor(Math.random() * 600_000) })),
    );
    const shards = await indexShards(redis.raw, name, keys);
    assert.ok(shards.length >= 5_000 / 40, `${shards.length} shards for 5,000 ids`);
    for (const shard of shards) {
      assert.ok((await redis.raw.hlen(shard)) <= 128, `${shard} outgrew a listpack`);
      assert.equal(await redis.raw.object('ENCODING', shard), 'listpack');
    }
    const inWheel = await checkWheel(redis.raw, name, keys);
    assert.equal(inWheel.size, 5_000);
    for (let i = 0; i < ids.length; i += 500) {
      const found = await Promise.all(ids.slice(i, i + 500).map(id => q.get(id)));
      for (const job of found) assert.equal(job?.dueAt, inWheel.get(job?.id ?? ''), 'get finds it');
    }
    // Cancelling every other one leaves the rest findable.
    for (let i = 0; i < ids.length; i += 2) assert.equal(await q.cancel(ids[i] as string), 'cancelled');
    assert.equal((await checkWheel(redis.raw, name, keys)).size, 2_500);
    assert.equal((await q.get(ids[1] as string))?.state, 'delayed');
  });

  it('a worker process killed with SIGKILL while buckets move loses nothing', { timeout: 60_000 }, async () => {
    const { name, q, keys } = await wheelQueue<number>();
    const workers: WorkerProcess[] = [];
    const ledger = (label: string) => join(dir, `${name}-${label}.log`);
    try {
      const victim = await spawnWorker({
        url: redis.url,
        queue: name,
        ledger: ledger('victim'),
        concurrency: 10,
        leaseMs: 1_000,
        handlerMs: 5,
      });
      workers.push(victim);
      const ids = await q.addBulk(Array.from({ length: 3_000 }, (_, i) => ({ payload: i, delay: 2_500 + (i % 3) * 300 })));
      assert.equal(await redis.raw.hget(keys.counters, 'wheeled'), '3000');
      await waitFor(() => readLedgers([ledger('victim')]).some(entry => entry.kind === 'done'), 20_000, 'the victim at work');
      await victim.kill('SIGKILL');
      const survivor = await spawnWorker({ url: redis.url, queue: name, ledger: ledger('survivor'), concurrency: 50, leaseMs: 1_000 });
      workers.push(survivor);
      await waitFor(
        async () => {
          const stats = await q.stats();
          return stats.delayed + stats.ready + stats.active === 0;
        },
        30_000,
        'the queue drained',
      );
      const entries = readLedgers([ledger('victim'), ledger('survivor')]);
      // A victim's ack may land just before the kill and its ledger line not: Redis's count of
      // completions judges, and every job must have started somewhere.
      const started = new Set(entries.filter(entry => entry.kind === 'start').map(entry => entry.id));
      assert.deepEqual(
        [...ids].filter(id => !started.has(id)),
        [],
        'every job started',
      );
      assert.equal(await redis.raw.hget(keys.counters, 'completed'), '3000', 'every job completed once');
      const victimDone = entries.filter(entry => entry.kind === 'done' && entry.source === ledger('victim')).length;
      assert.ok(victimDone < 3_000, 'killed before the end');
      for (const entry of entries.filter(e => e.kind === 'start')) assert.ok(entry.at >= entry.dueAt, `${entry.id} started early`);
      assert.equal(await redis.raw.hlen(keys.jobs), 0);
      assert.equal((await checkWheel(redis.raw, name, keys)).size, 0);
    } finally {
      await killAll(workers);
    }
  });
});
