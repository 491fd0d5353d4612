// The consumer-side scripts (claim, ack, fail, extend, release, getJob) on raw keys, the way asynq
// tests its broker: seed the partition's keys with HSET/ZADD directly, make ONE call through
// PartitionStore, then check every key. The storage format under test is lua/includes/records.lua's: a record
// "<attempts>,<token>,<dueAt>,<maxAttempts>,<backoff>\n<payload>" that a claim does not rewrite, and
// a lease "<token>,<dueAt>" in `leases` for each job in `active`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { PARTITION_KEY_NAMES } from '../../src/store/redis/keys.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

const LEASE_MS = 30_000;
/** Far in the future of any server clock: a job due then is never claimed by these tests. */
const FAR = 9_000_000_000_000;

function store(): PartitionStore {
  return new PartitionStore(redis.raw, 'sg', uniqueQueue('scripts'), 0);
}

function record(attempts: number, payload: string, dueAt = '', maxAttempts = ''): string {
  return `${attempts},0,${dueAt},${maxAttempts},\n${payload}`;
}

/** A waiting job: its record, and its id in `due` at `dueAt`. */
async function seedWaiting(s: PartitionStore, id: string, dueAt: number, rec = record(0, `{"id":"${id}"}`)): Promise<void> {
  await redis.raw.hset(s.keys.jobs, id, rec);
  await redis.raw.zadd(s.keys.due, dueAt, id);
}

/** An active job as a claim leaves it: the record untouched, `active` at its deadline, its lease. */
async function seedActive(
  s: PartitionStore,
  id: string,
  opts: { token: string; dueAt: number; deadline: number; rec?: string },
): Promise<void> {
  await redis.raw.hset(s.keys.jobs, id, opts.rec ?? record(0, `{"id":"${id}"}`));
  await redis.raw.zadd(s.keys.active, opts.deadline, id);
  await redis.raw.hset(s.keys.leases, id, `${opts.token},${opts.dueAt}`);
}

/** Every key of the partition, by type, to compare a whole store before and after a call. */
async function snapshot(s: PartitionStore): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const name of PARTITION_KEY_NAMES) {
    const key = s.keys[name];
    const type = await redis.raw.type(key);
    if (type === 'zset') out[name] = await redis.raw.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'hash') out[name] = await redis.raw.hgetall(key);
    else if (type !== 'none') out[name] = type;
  }
  return out;
}

async function zscore(key: string, id: string): Promise<number | null> {
  const score = await redis.raw.zscore(key, id);
  return score === null ? null : Number(score);
}

const claimIds = (claimId: string, answeredClaimId?: string) => ({ claimId, answeredClaimId });

describe('consumer scripts on raw keys', () => {
  it('claim takes the due jobs into active and leases with consecutive tokens, and leaves their records as they were', async () => {
    const s = store();
    await seedWaiting(s, 'a', 1_000);
    await seedWaiting(s, 'b', 2_000, record(1, '{"b":true}', '', '5'));
    await seedWaiting(s, 'later', FAR);
    const before = await redis.raw.hgetall(s.keys.jobs);

    const result = await s.claim(10, LEASE_MS, 100, 3, claimIds('c1'));

    assert.deepEqual(
      result.jobs.map(job => [job.id, job.attempts, job.dueAt, job.maxAttempts, job.payloadJson]),
      [
        ['a', 1, 1_000, undefined, '{"id":"a"}'],
        ['b', 2, 2_000, 5, '{"b":true}'],
      ],
    );
    const [first, second] = result.jobs.map(job => Number(job.token));
    assert.equal(second, (first as number) + 1, 'consecutive tokens');
    assert.equal(await redis.raw.hget(s.keys.counters, 'seq'), String(second), 'the sequence ends at the last token');
    assert.deepEqual(await redis.raw.zrange(s.keys.due, 0, -1), ['later']);
    assert.equal(await zscore(s.keys.active, 'a'), result.now + LEASE_MS);
    assert.equal(await zscore(s.keys.active, 'b'), result.now + LEASE_MS);
    assert.deepEqual(await redis.raw.hgetall(s.keys.leases), { a: `${first},1000`, b: `${second},2000` });
    assert.deepEqual(await redis.raw.hgetall(s.keys.jobs), before, 'no record rewritten');
    assert.equal(await redis.raw.hget(s.keys.counters, 'claimed'), '2');
    assert.equal(result.nextAt, result.now + LEASE_MS, 'nothing else due before the leases end');
  });

  it('claim writes each lease with its token in full, across tens and hundreds (the script builds the digits)', async () => {
    const s = store();
    await redis.raw.hset(s.keys.counters, 'seq', '97');
    for (let i = 0; i < 15; i++) await seedWaiting(s, `j${String(i).padStart(2, '0')}`, 1_000 + i);

    const result = await s.claim(15, LEASE_MS, 100, 3, claimIds('c1'));

    const expected = Object.fromEntries(result.jobs.map((job, k) => [job.id, `${98 + k},${job.dueAt}`]));
    assert.equal(result.jobs.length, 15);
    assert.deepEqual(
      result.jobs.map(job => job.token),
      Array.from({ length: 15 }, (_, k) => String(98 + k)),
    );
    assert.deepEqual(await redis.raw.hgetall(s.keys.leases), expected);
    assert.equal(await redis.raw.zcard(s.keys.due), 0);
    assert.equal(result.nextAt, result.now, 'a full batch: more may be due');
  });

  it('a resent claim (same claim id) answers the jobs the first run took that it still holds, and takes nothing new', async () => {
    const s = store();
    await seedWaiting(s, 'a', 1_000);
    await seedWaiting(s, 'b', 2_000);
    const first = await s.claim(2, LEASE_MS, 100, 3, claimIds('c1'));
    await seedWaiting(s, 'c', 3_000);
    // The first run's reply was lost; meanwhile `b` was acked by its token (a resend must not bring it back).
    const b = first.jobs.find(job => job.id === 'b')!;
    await s.ack([{ id: 'b', token: b.token }]);
    const stored = await snapshot(s);

    const again = await s.claim(2, LEASE_MS, 100, 3, claimIds('c1'));

    const a = first.jobs.find(job => job.id === 'a')!;
    assert.deepEqual(again.jobs, [a], 'the same job, token and fields');
    assert.deepEqual(await snapshot(s), stored, 'nothing changed');
  });

  it('ack with the right token completes the job and remembers it in the done bucket', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '7', dueAt: 1_000, deadline: FAR });
    await seedActive(s, 'b', { token: '8', dueAt: 1_000, deadline: FAR });

    assert.deepEqual(await s.ack([{ id: 'a', token: '7' }]), { stale: [], notFound: [] });

    assert.deepEqual(await redis.raw.hkeys(s.keys.jobs), ['b']);
    assert.deepEqual(await redis.raw.zrange(s.keys.active, 0, -1), ['b']);
    assert.deepEqual(await redis.raw.hgetall(s.keys.leases), { b: '8,1000' });
    const done = (await Promise.all([s.keys.done0, s.keys.done1, s.keys.done2].map(key => redis.raw.hgetall(key)))).filter(
      bucket => Object.keys(bucket).length > 0,
    );
    assert.deepEqual(done, [{ a: '7' }], 'one bucket holds the id and the token that completed it');
    assert.equal(await redis.raw.hget(s.keys.counters, 'completed'), '1');
  });

  it('ack with a wrong token is stale and changes nothing but the stale count', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '17', dueAt: 1_000, deadline: FAR });
    // Token '1' is a prefix of the lease's '17': the check is on the whole token.
    const stored = await snapshot(s);

    assert.deepEqual(
      await s.ack([
        { id: 'a', token: '1' },
        { id: 'a', token: '18' },
      ]),
      { stale: [0, 1], notFound: [] },
    );

    const after = await snapshot(s);
    assert.equal(await redis.raw.hget(s.keys.counters, 'stale'), '2');
    delete after.counters;
    delete stored.counters;
    assert.deepEqual(after, stored);
  });

  it('ack of a job that waits again (its lease was reaped) is stale; of an unknown id, not found', async () => {
    const s = store();
    await seedWaiting(s, 'waiting', FAR);

    assert.deepEqual(
      await s.ack([
        { id: 'nope', token: '3' },
        { id: 'waiting', token: '3' },
      ]),
      { stale: [1], notFound: [0] },
    );
    assert.deepEqual(await redis.raw.zrange(s.keys.due, 0, -1), ['waiting']);
  });

  it('an ack resent after a lost reply is acked; by another token, stale; twice in one batch, completed once', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '5', dueAt: 1_000, deadline: FAR });

    assert.deepEqual(
      await s.ack([
        { id: 'a', token: '5' },
        { id: 'a', token: '5' },
      ]),
      { stale: [], notFound: [] },
    );
    assert.equal(await redis.raw.hget(s.keys.counters, 'completed'), '1');
    const stored = await snapshot(s);
    assert.deepEqual(await s.ack([{ id: 'a', token: '5' }]), { stale: [], notFound: [] }, 'the resend');
    assert.deepEqual(await s.ack([{ id: 'a', token: '4' }]), { stale: [0], notFound: [] }, 'a late ack of an older claim');
    const after = await snapshot(s);
    delete after.counters;
    delete stored.counters;
    assert.deepEqual(after, stored);
  });

  it('reaping an expired lease requeues the job at its original due time with the attempt counted', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '9', dueAt: 1_500, deadline: 1, rec: record(0, '{}') });

    const result = await s.claim(0, LEASE_MS, 100, 3, claimIds('c1'));

    assert.deepEqual(result.jobs, []);
    assert.equal(await zscore(s.keys.due, 'a'), 1_500);
    assert.equal(await redis.raw.hget(s.keys.jobs, 'a'), record(1, '{}'));
    assert.equal(await redis.raw.exists(s.keys.active, s.keys.leases), 0);
    assert.equal(await redis.raw.hget(s.keys.counters, 'reaped'), '1');
    assert.equal(result.nextAt, 1_500, 'come back at once: the requeued job is due');
  });

  it('reaping dead-letters a job whose last attempt ran out its lease', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '9', dueAt: 1_500, deadline: 1, rec: record(2, '{}') });
    await seedActive(s, 'own', { token: '10', dueAt: 1_500, deadline: 1, rec: record(2, '{}', '', '5') });

    const result = await s.claim(0, LEASE_MS, 100, 3, claimIds('c1'));

    assert.equal(await zscore(s.keys.dead, 'a'), result.now, 'attempt 3 of the default 3');
    assert.equal(await redis.raw.hget(s.keys.jobs, 'a'), record(3, '{}', '1500'), 'the dead record keeps its due time');
    assert.match((await redis.raw.hget(s.keys.errors, 'a')) ?? '', /lease expired on attempt 3/);
    assert.equal(await zscore(s.keys.due, 'own'), 1_500, 'attempt 3 of its own 5: requeued');
    assert.equal(await redis.raw.hget(s.keys.jobs, 'own'), record(3, '{}', '', '5'));
    assert.equal(await redis.raw.exists(s.keys.active, s.keys.leases), 0);
    assert.equal(await redis.raw.hget(s.keys.counters, 'dead'), '1');
  });

  it('fail with a retry delay requeues after it, with dead-lettering, moves to dead; a stale token changes nothing', async () => {
    const s = store();
    await seedActive(s, 'retry', { token: '3', dueAt: 1_000, deadline: FAR, rec: record(0, '{}') });
    await seedActive(s, 'bury', { token: '4', dueAt: 2_000, deadline: FAR, rec: record(1, '{}') });
    await seedActive(s, 'held', { token: '5', dueAt: 3_000, deadline: FAR });

    const result = await s.fail([
      { id: 'retry', token: '3', retryDelayMs: 5_000, message: 'boom' },
      { id: 'bury', token: '4', retryDelayMs: -1, message: 'fatal' },
      { id: 'held', token: '6', retryDelayMs: 0, message: 'late' },
    ]);

    assert.deepEqual(result.stale, [2]);
    assert.equal(await zscore(s.keys.due, 'retry'), result.now + 5_000);
    assert.equal(await redis.raw.hget(s.keys.jobs, 'retry'), record(1, '{}'));
    assert.equal(await zscore(s.keys.dead, 'bury'), result.now);
    assert.equal(await redis.raw.hget(s.keys.jobs, 'bury'), record(2, '{}', '2000'));
    assert.deepEqual(await redis.raw.hgetall(s.keys.errors), { retry: 'boom', bury: 'fatal' });
    assert.deepEqual(await redis.raw.zrange(s.keys.active, 0, -1), ['held']);
    assert.deepEqual(await redis.raw.hgetall(s.keys.leases), { held: '5,3000' });
    assert.deepEqual(await redis.raw.hmget(s.keys.counters, 'retried', 'dead', 'stale'), ['1', '1', '1']);
  });

  it('ack of a batch beyond one chunk, with ids of any printable characters, settles each entry by its own token', async () => {
    // The batch travels as one argument ("<id>\t<token>\n" per entry): ids with spaces, commas,
    // Unicode or 200 characters must come out whole, and a batch of more than 1,000 fields must
    // reach every job (the scripts call Redis in chunks of 1,000 arguments).
    const s = store();
    const odd = ['with space', 'a,b', 'ünï 😀', 'x'.repeat(200), ':'];
    const ids = [...odd, ...Array.from({ length: 1_200 }, (_, i) => `job-${i}`)];
    const seed = redis.raw.pipeline();
    ids.forEach((id, i) => {
      seed.hset(s.keys.jobs, id, record(0, '{}'));
      seed.zadd(s.keys.active, FAR, id);
      seed.hset(s.keys.leases, id, `${100 + i},1000`);
    });
    await seed.exec();
    const entries = ids.map((id, i) => ({ id, token: String(100 + i) }));
    entries[3] = { id: ids[3] as string, token: '99' }; // not its token: stale, and left as it was

    assert.deepEqual(await s.ack([...entries, { id: 'nope', token: '1' }]), { stale: [3], notFound: [ids.length] });

    assert.deepEqual(await redis.raw.hkeys(s.keys.jobs), [ids[3]]);
    assert.deepEqual(await redis.raw.zrange(s.keys.active, 0, -1), [ids[3]]);
    assert.deepEqual(await redis.raw.hgetall(s.keys.leases), { [ids[3] as string]: '103,1000' });
    assert.equal(await redis.raw.hget(s.keys.counters, 'completed'), String(ids.length - 1));
    const done: Record<string, string> = Object.assign(
      {},
      ...(await Promise.all([s.keys.done0, s.keys.done1, s.keys.done2].map(key => redis.raw.hgetall(key)))),
    );
    const expected = Object.fromEntries(entries.filter((_, i) => i !== 3).map(entry => [entry.id, entry.token]));
    assert.deepEqual(done, expected, 'each id remembered with the token that completed it');
  });

  it('extend and release read ids of any printable characters whole', async () => {
    const s = store();
    await seedActive(s, 'with space', { token: '3', dueAt: 1_000, deadline: 5 });
    await seedActive(s, 'ünï,😀', { token: '4', dueAt: 2_000, deadline: 5 });

    const extended = await s.extendAt(60_000, [
      { id: 'with space', token: '3' },
      { id: 'ünï,😀', token: '4' },
    ]);
    assert.deepEqual(extended.lost, []);
    assert.equal(await zscore(s.keys.active, 'ünï,😀'), extended.now + 60_000);

    assert.equal(
      await s.release([
        { id: 'ünï,😀', token: '4' },
        { id: 'with space', token: '3' },
      ]),
      2,
    );
    assert.deepEqual(await redis.raw.zrange(s.keys.due, 0, -1, 'WITHSCORES'), ['with space', '1000', 'ünï,😀', '2000']);
    assert.equal(await redis.raw.hlen(s.keys.leases), 0);
  });

  it('extend renews the leases it holds and refuses the lost ones', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '3', dueAt: 1_000, deadline: 5 });
    await seedActive(s, 'b', { token: '4', dueAt: 1_000, deadline: 5 });

    const result = await s.extendAt(60_000, [
      { id: 'a', token: '3' },
      { id: 'b', token: '3' },
      { id: 'gone', token: '3' },
    ]);

    assert.deepEqual(result.lost, [1, 2]);
    assert.equal(await zscore(s.keys.active, 'a'), result.now + 60_000);
    assert.equal(await zscore(s.keys.active, 'b'), 5);
    assert.equal(await zscore(s.keys.active, 'gone'), null, 'never added');
    assert.deepEqual(await redis.raw.hgetall(s.keys.leases), { a: '3,1000', b: '4,1000' });
  });

  it('release hands the job back at its due time without counting the attempt; a stale token releases nothing', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '3', dueAt: 1_000, deadline: FAR, rec: record(1, '{}') });
    await seedActive(s, 'b', { token: '4', dueAt: 1_000, deadline: FAR });

    assert.equal(
      await s.release([
        { id: 'a', token: '3' },
        { id: 'b', token: '3' },
      ]),
      1,
    );

    assert.equal(await zscore(s.keys.due, 'a'), 1_000);
    assert.equal(await redis.raw.hget(s.keys.jobs, 'a'), record(1, '{}'), 'the record as it was');
    assert.deepEqual(await redis.raw.zrange(s.keys.active, 0, -1), ['b']);
    assert.deepEqual(await redis.raw.hgetall(s.keys.leases), { b: '4,1000' });
  });

  it('get reads an active job through its lease: the attempt under way, its token and due time', async () => {
    const s = store();
    await seedActive(s, 'a', { token: '12', dueAt: 1_000, deadline: FAR, rec: record(1, '{"x":1}', '', '4') });

    const state = await s.get('a');

    assert.equal(state?.state, 'active');
    assert.equal(state?.leaseUntil, FAR);
    assert.deepEqual(state && [state.job.attempts, state.job.token, state.job.dueAt, state.job.maxAttempts, state.job.payloadJson], [
      2,
      '12',
      1_000,
      4,
      '{"x":1}',
    ]);
  });
});
