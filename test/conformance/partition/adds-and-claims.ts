// The contract of `add` and `claim` (src/store/partition-storage.ts): what an add answers per
// job, and that a claim takes due jobs only, never early, in due order, under a lease, reaping
// leases that ran out, and answers a resend with what it took.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { claim, claimed, job, lease, overdue, sleep, until, type OpenPartition } from '../fixtures.js';

export function addsAndClaims(open: OpenPartition): void {
  it('add answers one status per job in order: added, kept (keep), replaced (replace), and the server now', async () => {
    const store = await open();
    const first = await store.add([job('a'), job('b')], 'keep');
    assert.deepEqual(first.statuses, ['added', 'added']);
    assert.ok(Number.isSafeInteger(first.now) && first.now > 0, `now ${first.now}`);
    assert.deepEqual((await store.add([job('b', overdue(), { payloadJson: '"new"' }), job('c')], 'keep')).statuses, ['kept', 'added']);
    assert.equal((await store.get('b'))?.job.payloadJson, '{"id":"b"}', 'a kept job is as it was');
    assert.deepEqual((await store.add([job('b', overdue(), { payloadJson: '"new"' })], 'replace')).statuses, ['replaced']);
    assert.equal((await store.get('b'))?.job.payloadJson, '"new"');
  });

  it('add refuses to replace a job a claim holds (running) and one that completed moments ago (completed-recently)', async () => {
    const store = await open();
    const [, done] = await claimed(store, ['run', 'done']);
    assert.ok(done);
    assert.deepEqual((await store.add([job('run', overdue(), { payloadJson: '"other"' })], 'replace')).statuses, ['running']);
    assert.equal((await store.get('run'))?.job.payloadJson, '{"id":"run"}', 'the running job is as it was');
    assert.deepEqual(await store.ack([done]), { stale: [], notFound: [] });
    assert.deepEqual(
      (await store.add([job('done')], 'keep')).statuses,
      ['completed-recently'],
      'a resent add after a lost reply must not run it twice',
    );
    assert.equal(await store.get('done'), null, 'nothing was written');
  });

  it('add with replication reports how many replicas confirmed the write', async () => {
    const store = await open();
    const outcome = await store.add([job('r')], 'keep', { replicas: 0, timeoutMs: 100 });
    assert.deepEqual(outcome.statuses, ['added']);
    assert.equal(typeof outcome.acknowledged, 'number');
    assert.equal((await store.add([job('s')], 'keep')).acknowledged, undefined, 'not asked, not answered');
  });

  it('claim takes due jobs only, in due order, at most `limit`, and says when to claim again', async () => {
    const store = await open();
    const empty = await claim(store, 10);
    assert.deepEqual([empty.jobs.length, empty.nextAt], [0, -1], 'nothing waiting: nextAt -1');
    await store.add([job('c', overdue(100)), job('a', overdue(300)), job('b', overdue(200)), job('later', { delayMs: 60_000 })], 'keep');
    const two = await claim(store, 2);
    assert.deepEqual(
      two.jobs.map(j => j.id),
      ['a', 'b'],
      'soonest due first',
    );
    assert.equal(two.nextAt, two.now, 'more is due: claim again now');
    const rest = await claim(store, 10);
    assert.deepEqual(
      rest.jobs.map(j => j.id),
      ['c'],
    );
    const laterAt = (await store.get('later'))?.dueAt as number;
    assert.ok(
      rest.nextAt > rest.now && rest.nextAt <= laterAt,
      `next claim at ${rest.nextAt}: after now (${rest.now}), not after the waiting job's due time (${laterAt})`,
    );
  });

  it('claim never takes a job before its due time, and takes it once the backend clock reaches it', async () => {
    const store = await open();
    const { now } = await store.add([job('soon', { delayMs: 400 })], 'keep');
    const dueAt = (await store.get('soon'))?.dueAt as number;
    assert.equal(dueAt, now + 400, 'due delayMs after the add, on the backend clock');
    const early = await claim(store, 10);
    assert.equal(early.jobs.length, 0, 'not due yet');
    assert.ok(early.nextAt > early.now && early.nextAt <= dueAt, `next claim at ${early.nextAt}, due at ${dueAt}`);
    await until(store, dueAt);
    const due = await claim(store, 10);
    assert.deepEqual(
      due.jobs.map(j => j.id),
      ['soon'],
    );
    assert.ok(due.now >= dueAt, `claimed at ${due.now}, due at ${dueAt}`);
    assert.equal(due.jobs[0]?.dueAt, dueAt, 'a claimed job carries the due time it was claimed at');
  });

  it('claim delivers a job under a lease: its token, attempt, record, and the lease end in get', async () => {
    const store = await open();
    await store.add(
      [
        job('j', overdue(), {
          maxAttempts: '5',
          backoff: 'f250',
          payloadJson: '{"n":1}',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        }),
      ],
      'keep',
    );
    const result = await claim(store, 1, { leaseMs: 20_000 });
    const got = result.jobs[0];
    assert.ok(got);
    assert.match(got.token, /^\d+$/);
    assert.equal(got.attempts, 1, 'the first delivery');
    assert.equal(got.maxAttempts, 5);
    assert.deepEqual(got.backoff, { type: 'fixed', delayMs: 250 });
    assert.equal(got.payloadJson, '{"n":1}');
    assert.equal(got.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    const snapshot = await store.get('j');
    assert.equal(snapshot?.state, 'active');
    assert.equal(snapshot?.leaseUntil, result.now + 20_000);
    assert.equal(snapshot?.job.token, got.token);
    assert.equal((await claim(store, 10)).jobs.length, 0, 'a held job is not claimed again');
  });

  it('claim answers a resend (same claimId, the reply lost) with the jobs and tokens the first run took', async () => {
    const store = await open();
    await store.add([job('x'), job('y')], 'keep');
    const first = await claim(store, 2, { claimId: 'conformance-resend' });
    await store.add([job('z')], 'keep');
    const resent = await claim(store, 2, { claimId: 'conformance-resend' });
    assert.deepEqual(resent.jobs.map(lease), first.jobs.map(lease), 'the same jobs under the same tokens, not more');
    assert.equal((await store.stats()).active, 2);
  });

  it('claim reaps leases that ran out: the job is delivered again (attempt 2), the old token is stale', async () => {
    const store = await open();
    const [old] = await claimed(store, ['lost'], 300);
    assert.ok(old);
    await sleep(450);
    const again = await claim(store, 1);
    assert.deepEqual(
      again.jobs.map(j => [j.id, j.attempts]),
      [['lost', 2]],
    );
    assert.notEqual(again.jobs[0]?.token, old.token);
    assert.deepEqual((await store.ack([old])).stale, [0], 'the first lease no longer holds it');
    assert.equal((await store.stats()).counters.reaped, 1);
  });

  it('claim reaps at most `reapLimit` leases, and dead-letters a reaped job out of attempts (defaultMaxAttempts)', async () => {
    const store = await open();
    await claimed(store, ['r1', 'r2'], 300);
    await sleep(450);
    await claim(store, 0, { reapLimit: 1, defaultMaxAttempts: 1 });
    const stats = await store.stats();
    assert.deepEqual([stats.active, stats.dead], [1, 1], 'one reaped (and dead: its one attempt was spent), one still active');
    const dead = (await store.listJobs('dead', undefined, 10)).entries[0];
    assert.equal(dead?.reason, 'failed');
  });

  it('claim does not deliver a job whose deadline passed first: dead as expired, or deleted with dropOnExpire', async () => {
    const store = await open();
    await store.add(
      [
        job('exp', overdue(), { expireAfterMs: 1 }),
        job('drop', overdue(), { expireAfterMs: 1, dropOnExpire: true }),
        job('fresh', { delayMs: 0 }, { expireAfterMs: 60_000 }),
      ],
      'keep',
    );
    const fresh = await store.get('fresh');
    assert.equal(fresh?.expiresAt, (fresh?.dueAt as number) + 60_000, 'a waiting job shows its deadline');
    const result = await claim(store, 10);
    assert.deepEqual(
      result.jobs.map(j => j.id),
      ['fresh'],
    );
    const expired = await store.get('exp');
    assert.deepEqual([expired?.state, expired?.reason], ['dead', 'expired']);
    assert.equal(await store.get('drop'), null);
    assert.equal((await store.stats()).counters.expired, 2);
  });

  it('a paused partition claims nothing (nextAt -1) and says so in stats; resumed, it claims again', async () => {
    const store = await open();
    await store.add([job('p')], 'keep');
    await store.setPaused(true);
    const paused = await claim(store, 10);
    assert.deepEqual([paused.jobs.length, paused.nextAt], [0, -1]);
    assert.equal((await store.stats()).paused, true);
    await store.setPaused(false);
    assert.deepEqual(
      (await claim(store, 10)).jobs.map(j => j.id),
      ['p'],
    );
    assert.equal((await store.stats()).paused, false);
  });
}
