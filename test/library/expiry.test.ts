// Deadlines (`expireAfter` / `onExpire`, issue 10): a job not started by its due time + expireAfter
// (server clock, checked by the claim script) is not run; it is dead-lettered with reason
// 'expired', or dropped. The deadline holds until the job's first start (lua/includes/keys.lua, "Deadlines").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PullConsumer, Queue, ValidationError, Worker, type JobInfo } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { MAX_DELAY_MS } from '../../src/core/validate.js';
import { checkInvariant, snapshot } from '../chaos/checker.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function queue<T = unknown>(name = uniqueQueue('expiry'), partitions?: number): Queue<T> {
  return redis.track(new Queue<T>(name, partitions === undefined ? { connection: redis.url } : { connection: redis.url, partitions }));
}

/** A worker that records the payloads it ran, with local start time and due time. */
function worker<T>(
  name: string,
  options: { partitions?: number; backoffMs?: number; fail?: (payload: T, attempt: number) => boolean } = {},
) {
  const started: { payload: T; at: number; dueAt: number; attempt: number }[] = [];
  const w = redis.track(
    new Worker<T>(
      name,
      job => {
        started.push({ payload: job.payload, at: Date.now(), dueAt: job.dueAt, attempt: job.attempt });
        if (options.fail?.(job.payload, job.attempt)) throw new Error(`fails on attempt ${job.attempt}`);
      },
      {
        connection: redis.url,
        concurrency: 10,
        maxAttempts: 3,
        backoff: { type: 'fixed', delayMs: options.backoffMs ?? 1_000 },
        ...(options.partitions ? { partitions: options.partitions } : {}),
      },
    ),
  );
  w.on('error', () => undefined);
  return { worker: w, started };
}

async function expiryEntries(name: string, partition = 0): Promise<Record<string, string>> {
  return redis.raw.hgetall(partitionKeys('sg', name, partition).expiry);
}

async function assertInvariant(name: string): Promise<void> {
  const report = checkInvariant(await snapshot(redis.raw, name));
  assert.ok(report.ok, `storage invariant: ${JSON.stringify(report)}`);
}

describe('deadlines (expireAfter)', () => {
  it('a job not started within expireAfter of its due time is dead-lettered with reason expired, and never runs', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<number>(name);
    const ids = await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ payload: i, expireAfter: 200 })));
    const before = await q.get(ids[0] as string);
    assert.equal(before?.state, 'ready');
    assert.equal(before?.expiresAt, (before?.dueAt ?? 0) + 200);
    await sleep(1_000);
    const { started } = worker<number>(name);
    await waitFor(async () => (await q.stats()).dead === 20, 10_000, '20 dead letters');
    // A claim that expired them is the only one that could have taken them: none ran.
    await sleep(200);
    assert.equal(started.length, 0, 'no expired job ran');
    const counters = await q.counters();
    assert.equal(counters.expired, 20);
    assert.equal(counters.dead, 20);
    assert.equal(counters.claimed, 0);
    for (const id of ids) {
      const info = (await q.get(id)) as JobInfo<number>;
      assert.equal(info.state, 'dead');
      assert.equal(info.reason, 'expired');
      assert.equal(info.attempts, 0);
      assert.equal(info.expiresAt, undefined);
      assert.match(info.lastError ?? '', /^expired: not started within 200ms of its due time$/);
      assert.ok((info.deadAt ?? 0) >= info.dueAt + 200, `dead at ${info.deadAt}, due ${info.dueAt}`);
    }
    const listed = await q.list('dead', { limit: 100 });
    assert.equal(listed.jobs.length, 20);
    assert.ok(listed.jobs.every(job => job.reason === 'expired'));
    assert.deepEqual(await expiryEntries(name), {});
    await assertInvariant(name);
  });

  it("onExpire: 'drop' deletes an expired job instead, counted in expired", async () => {
    const name = uniqueQueue('expiry');
    const q = queue<number>(name);
    const ids = await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ payload: i, expireAfter: '100ms', onExpire: 'drop' as const })));
    await sleep(400);
    const { started } = worker<number>(name);
    await waitFor(async () => (await q.counters()).expired === 5, 10_000, '5 expired');
    assert.equal(started.length, 0);
    for (const id of ids) assert.equal(await q.get(id), null);
    const stats = await q.stats();
    assert.deepEqual([stats.delayed, stats.ready, stats.active, stats.dead], [0, 0, 0, 0]);
    assert.equal((await q.counters()).dead, 0);
    assert.deepEqual(await expiryEntries(name), {});
    await assertInvariant(name);
  });

  it('a job started within its deadline runs as usual, never early, and loses its deadline on start', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<number>(name);
    const { started } = worker<number>(name);
    await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ payload: i, delay: 100 + i * 10, expireAfter: '1h' })));
    await waitFor(() => started.length === 20, 10_000, '20 runs');
    for (const run of started) assert.ok(run.at >= run.dueAt, `job ${run.payload} started ${run.dueAt - run.at} ms early`);
    await waitFor(async () => (await q.counters()).completed === 20, 10_000, '20 completed');
    assert.equal((await q.counters()).expired, 0);
    assert.deepEqual(await expiryEntries(name), {});
    await assertInvariant(name);
  });

  it('a delayed job has its deadline counted from its due time (delay 300, expireAfter 5000: runs)', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<string>(name);
    const id = await q.add('late-but-fine', { delay: 300, expireAfter: 5_000 });
    const info = await q.get(id);
    assert.equal(info?.state, 'delayed');
    assert.equal(info?.expiresAt, (info?.dueAt ?? 0) + 5_000);
    const { started } = worker<string>(name);
    await waitFor(() => started.length === 1, 10_000, 'the run');
    assert.ok((started[0]?.at ?? 0) >= (started[0]?.dueAt ?? Infinity));
    assert.equal((await q.counters()).expired, 0);
  });

  it("a failing job's retry is not expired by its first due time's deadline (it applies until the first start)", async () => {
    const name = uniqueQueue('expiry');
    const q = queue<string>(name);
    // The retry falls due 3 s after the failure, long after due + 1.5 s.
    const { worker: w, started } = worker<string>(name, { backoffMs: 3_000, fail: (_payload, attempt) => attempt === 1 });
    await w.waitUntilReady();
    const id = await q.add('flaky', { expireAfter: 1_500 });
    await waitFor(() => started.length === 2, 10_000, 'the retry');
    assert.deepEqual(
      started.map(run => run.attempt),
      [1, 2],
    );
    await waitFor(async () => (await q.get(id)) === null, 10_000, 'completion');
    const counters = await q.counters();
    assert.equal(counters.expired, 0);
    assert.equal(counters.retried, 1);
  });

  it('holds on a partitioned queue: every partition expires its own jobs', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<number>(name, 3);
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ payload: i, expireAfter: 100 })));
    const perPartition = await Promise.all([0, 1, 2].map(async p => Object.keys(await expiryEntries(name, p)).length));
    assert.ok(
      perPartition.every(n => n > 0),
      `entries per partition ${perPartition}`,
    );
    await sleep(500);
    const { started } = worker<number>(name, { partitions: 3 });
    await waitFor(async () => (await q.stats()).dead === 30, 10_000, '30 dead letters');
    assert.equal(started.length, 0);
    assert.equal((await q.counters()).expired, 30);
    const dead = await q.list('dead', { limit: 100 });
    assert.ok(dead.jobs.every(job => job.reason === 'expired'));
  });

  it('refuses a bad expireAfter or onExpire with a ValidationError naming the option, writing nothing', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<number>(name);
    const bad: [unknown, RegExp][] = [
      [{ expireAfter: 0 }, /`expireAfter`/],
      [{ expireAfter: -5 }, /`expireAfter`/],
      [{ expireAfter: Number.NaN }, /`expireAfter`/],
      [{ expireAfter: 'soon' }, /`expireAfter`/],
      [{ expireAfter: MAX_DELAY_MS + 1 }, /`expireAfter`/],
      [{ expireAfter: '0ms' }, /`expireAfter`/],
      [{ onExpire: 'delete' }, /`onExpire`/],
      [{ expireAfter: 100, onExpire: null }, /`onExpire`/],
    ];
    // The queue's default follows the same rule.
    await assert.rejects(
      q.setLimits({ expireAfter: 0 }),
      (error: unknown) => error instanceof ValidationError && /`expireAfter`/.test(error.message),
    );
    for (const [options, message] of bad) {
      await assert.rejects(
        q.add(1, options as never),
        (error: unknown) => error instanceof ValidationError && message.test(error.message),
        JSON.stringify(options),
      );
    }
    // One bad entry of a bulk add refuses the whole call.
    await assert.rejects(
      q.addBulk([
        { payload: 1, expireAfter: 100 },
        { payload: 2, expireAfter: 'x' as never },
      ]),
      ValidationError,
    );
    assert.equal(await redis.raw.exists(partitionKeys('sg', name, 0).jobs, partitionKeys('sg', name, 0).expiry), 0, 'nothing written');
    // The edges are accepted: 1 ms, ten years, a duration text, and a fraction rounded up.
    const ok = await q.addBulk([
      { payload: 1, expireAfter: 1, delay: '1h' },
      { payload: 2, expireAfter: MAX_DELAY_MS, delay: '1h' },
      { payload: 3, expireAfter: '1h30m', delay: '1h', onExpire: 'drop' },
      { payload: 4, expireAfter: 0.5, delay: '1h', onExpire: 'dead' },
    ]);
    const entries = await expiryEntries(name);
    assert.deepEqual(
      ok.map(id => entries[id]),
      ['1', String(MAX_DELAY_MS), '5400000d', '1'],
    );
  });

  it("the queue's default (setLimits({ expireAfter })) applies to jobs added without their own, on every partition", async () => {
    const name = uniqueQueue('expiry');
    const q = queue<string>(name, 2);
    await q.add('first', { id: 'create' });
    assert.deepEqual(await q.setLimits({ expireAfter: '200ms' }), { expireAfter: 200 });
    for (const p of [0, 1]) assert.equal(await redis.raw.hget(partitionKeys('sg', name, p).meta, 'expireAfter'), '200');
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const [byDefault, dropByDefault, own] = await Promise.all([
      q.addBulk(ids.map(id => ({ payload: 'default', id: `default:${id}` }))),
      q.addBulk(ids.map(id => ({ payload: 'drop', id: `drop:${id}`, onExpire: 'drop' as const }))),
      q.addBulk(ids.map(id => ({ payload: 'own', id: `own:${id}`, expireAfter: '1h' }))),
    ]);
    const info = await q.get(byDefault[0] as string);
    assert.equal(info?.expiresAt, (info?.dueAt ?? 0) + 200);
    assert.equal((await q.get(own[0] as string))?.expiresAt, ((await q.get(own[0] as string))?.dueAt ?? 0) + 3_600_000);
    // Cleared: later jobs have no deadline; earlier ones keep theirs.
    assert.deepEqual(await q.setLimits({ expireAfter: null }), {});
    const after = await q.add('after');
    assert.equal((await q.get(after))?.expiresAt, undefined);
    for (const p of [0, 1]) assert.equal(await redis.raw.hexists(partitionKeys('sg', name, p).meta, 'expireAfter'), 0);
    await sleep(600);
    const { started } = worker<string>(name, { partitions: 2 });
    await waitFor(async () => (await q.counters()).expired === 12, 10_000, '12 expired');
    await waitFor(() => started.length === 8, 10_000, 'the 8 jobs without a passed deadline');
    assert.deepEqual(started.map(run => run.payload).sort(), ['after', 'first', 'own', 'own', 'own', 'own', 'own', 'own']);
    for (const id of byDefault) assert.equal((await q.get(id))?.reason, 'expired');
    for (const id of dropByDefault) assert.equal(await q.get(id), null);
    assert.equal((await q.stats()).dead, 6);
  });

  it('get and list show expiresAt while waiting, and reason on every dead job', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<string>(name);
    const plain = await q.add('plain', { delay: '1h' });
    const deadline = await q.add('deadline', { delay: '1h', expireAfter: '10m' });
    const plainInfo = await q.get(plain);
    assert.equal(plainInfo?.expiresAt, undefined);
    const deadlineInfo = await q.get(deadline);
    assert.equal(deadlineInfo?.expiresAt, (deadlineInfo?.dueAt ?? 0) + 600_000);
    const listed = (await q.list('delayed')).jobs;
    assert.deepEqual(
      listed.map(job => [job.id, job.expiresAt === undefined ? undefined : job.expiresAt - job.dueAt]),
      [
        [plain, undefined],
        [deadline, 600_000],
      ],
    );
    // A job that failed out of its attempts is dead with reason 'failed'.
    const failing = await q.add('boom', { maxAttempts: 1 });
    const consumer = redis.track(new PullConsumer<string>(name, { connection: redis.url }));
    const [job] = await consumer.claim({ max: 1 });
    assert.equal(job?.id, failing);
    await consumer.fail(failing, job.token, { error: 'boom' });
    const failed = await q.get(failing);
    assert.equal(failed?.state, 'dead');
    assert.equal(failed?.reason, 'failed');
    assert.equal((await q.list('dead')).jobs[0]?.reason, 'failed');
  });

  it('reschedule moves the deadline with the due time; cancel, replace and the wheel keep the entries in step', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<string>(name);
    const id = await q.add('x', { id: 'moving', delay: '1h', expireAfter: '5m' });
    await q.reschedule(id, { delay: '2h' });
    let info = await q.get(id);
    assert.equal(info?.expiresAt, (info?.dueAt ?? 0) + 300_000);
    // Far ahead: the job waits in the wheel; its deadline stays in `expiry`.
    await q.reschedule(id, { delay: '20d' });
    info = await q.get(id);
    assert.equal(info?.expiresAt, (info?.dueAt ?? 0) + 300_000);
    assert.equal(await redis.raw.hexists(partitionKeys('sg', name, 0).jobs, id), 0, 'in the wheel, not in jobs');
    await assertInvariant(name);
    // A replace rewrites the deadline as its options say: another one, then none.
    await q.add('y', { id, delay: '1h', expireAfter: '1m', onExpire: 'drop', ifExists: 'replace' });
    assert.equal((await expiryEntries(name))[id], '60000d');
    await q.add('z', { id, delay: '1h', ifExists: 'replace' });
    assert.equal((await expiryEntries(name))[id], undefined);
    assert.equal((await q.get(id))?.expiresAt, undefined);
    // A keep-add changes nothing; twice in one bulk call, the last one counts.
    await q.addBulk([{ payload: 'a', id, expireAfter: '1m' }]);
    assert.equal((await expiryEntries(name))[id], undefined);
    await q.addBulk(
      [
        { payload: 'b', id, expireAfter: '2m' },
        { payload: 'c', id, delay: '1h' },
      ],
      'replace',
    );
    assert.equal((await expiryEntries(name))[id], undefined);
    // Cancelled, in `due` and in the wheel: the entry goes.
    await q.add('c', { id, delay: '1h', expireAfter: '1m', ifExists: 'replace' });
    const far = await q.add('far', { delay: '30d', expireAfter: '1h' });
    assert.deepEqual(Object.keys(await expiryEntries(name)).sort(), [far, id].sort());
    assert.equal(await q.cancel(id), 'cancelled');
    assert.equal(await q.cancel(far), 'cancelled');
    assert.deepEqual(await expiryEntries(name), {});
    await assertInvariant(name);
  });

  it('an expired dead job retried by hand runs (it has no deadline any more); purge removes expired dead letters', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<string>(name);
    const [retried, purged] = await q.addBulk([
      { payload: 'retried', expireAfter: 50 },
      { payload: 'purged', expireAfter: 50 },
    ]);
    await sleep(300);
    const consumer = redis.track(new PullConsumer<string>(name, { connection: redis.url }));
    assert.deepEqual(await consumer.claim({ max: 10 }), []);
    assert.equal((await q.stats()).dead, 2);
    assert.equal(await q.retryDead([retried as string]), 1);
    const [job] = await consumer.claim({ max: 10 });
    assert.equal(job?.id, retried);
    assert.equal(job?.attempt, 1);
    await consumer.ack(job.id, job.token);
    assert.equal(await q.purgeDead(), 1);
    assert.equal(await q.get(purged as string), null);
    await assertInvariant(name);
  });

  it('expires jobs moved in from the far-future tier (the wheel) like any other', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<string>(name);
    const meta = partitionKeys('sg', name, 0).meta;
    await redis.raw.hset(meta, 'wheelSlotMs', 1_000);
    const id = await q.add('wheel', { delay: 3_000, expireAfter: 1 });
    assert.equal(await redis.raw.hexists(partitionKeys('sg', name, 0).jobs, id), 0, 'in the wheel');
    await sleep(3_300);
    const { started } = worker<string>(name);
    await waitFor(async () => (await q.get(id))?.state === 'dead', 10_000, 'the expiry');
    assert.equal((await q.get(id))?.reason, 'expired');
    assert.equal(started.length, 0);
    await assertInvariant(name);
  });

  it('a claim that expires a full batch says at once that more may be due (a backlog of expired jobs drains at claim pace)', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<number>(name);
    await q.addBulk(Array.from({ length: 25 }, (_, i) => ({ payload: i, expireAfter: 1 })));
    await sleep(50);
    const store = new PartitionStore(redis.raw, 'sg', name, 0);
    const ids = { claimId: 'c1', answeredClaimId: undefined };
    const first = await store.claim(10, 30_000, 100, 3, ids);
    assert.deepEqual(first.jobs, []);
    assert.equal(first.nextAt, first.now, 'a full batch taken: call again now');
    await store.claim(10, 30_000, 100, 3, { claimId: 'c2', answeredClaimId: undefined });
    const last = await store.claim(10, 30_000, 100, 3, { claimId: 'c3', answeredClaimId: undefined });
    assert.equal(last.nextAt, -1, 'nothing left');
    assert.equal((await q.counters()).expired, 25);
  });

  it('a queue that never used a deadline keeps no expiry key and no flag', async () => {
    const name = uniqueQueue('expiry');
    const q = queue<number>(name);
    const { started } = worker<number>(name);
    await q.addBulk(Array.from({ length: 10 }, (_, i) => ({ payload: i })));
    await waitFor(() => started.length === 10, 10_000, '10 runs');
    const keys = partitionKeys('sg', name, 0);
    assert.equal(await redis.raw.exists(keys.expiry), 0);
    assert.equal(await redis.raw.hexists(keys.meta, 'expiring'), 0);
  });
});
