// The contract of settling a lease (src/store/partition-storage.ts): ack, fail, extend, extendAt
// and release act only under the token that holds the job, answer a stale one by position, and
// answer a resend after a lost reply as the first send did.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { claim, claimed, sleep, type OpenPartition } from '../fixtures.js';

export function settles(open: OpenPartition): void {
  it('ack completes held jobs; a wrong token is stale and an unknown id not found, by position', async () => {
    const store = await open();
    const [a, b] = await claimed(store, ['a', 'b']);
    assert.ok(a && b);
    const result = await store.ack([{ id: 'a', token: `${a.token}9` }, b, { id: 'nobody', token: '1' }]);
    assert.deepEqual(result, { stale: [0], notFound: [2] });
    assert.equal(await store.get('b'), null, 'acked, and not kept (the queue keeps no completed jobs)');
    assert.equal((await store.get('a'))?.state, 'active', 'a stale ack changes nothing');
    const stats = await store.stats();
    assert.deepEqual([stats.counters.completed, stats.counters.stale], [1, 1]);
  });

  it('ack resent under the same token (its reply lost) answers acked again, not stale', async () => {
    const store = await open();
    const [held] = await claimed(store, ['once']);
    assert.ok(held);
    assert.deepEqual(await store.ack([held]), { stale: [], notFound: [] });
    assert.deepEqual(await store.ack([held]), { stale: [], notFound: [] });
    assert.equal((await store.stats()).counters.completed, 1, 'completed once');
  });

  it('ack, fail, extend and release with the token of a lease that ran out change nothing', async () => {
    const store = await open();
    const [old] = await claimed(store, ['j'], 300);
    assert.ok(old);
    await sleep(450);
    const current = (await claim(store, 1)).jobs[0];
    assert.ok(current && current.token !== old.token);
    assert.deepEqual(await store.ack([old]), { stale: [0], notFound: [] });
    assert.deepEqual((await store.fail([{ ...old, retryDelayMs: 0, message: 'late' }])).stale, [0]);
    assert.deepEqual(await store.extend(30_000, [old]), [0]);
    assert.equal(await store.release([old]), 0);
    const snapshot = await store.get('j');
    assert.deepEqual([snapshot?.state, snapshot?.job.token, snapshot?.lastError], ['active', current.token, undefined]);
  });

  it('fail with a delay schedules a retry then, keeping the error; with -1 it dead-letters the job', async () => {
    const store = await open();
    const [retry, dead] = await claimed(store, ['retry', 'dead']);
    assert.ok(retry && dead);
    const result = await store.fail([
      { ...retry, retryDelayMs: 60_000, message: 'try later' },
      { ...dead, retryDelayMs: -1, message: 'give up' },
    ]);
    assert.deepEqual([result.stale, result.resent], [[], []]);
    const waiting = await store.get('retry');
    assert.deepEqual(
      [waiting?.state, waiting?.dueAt, waiting?.job.attempts, waiting?.lastError],
      ['delayed', result.now + 60_000, 1, 'try later'],
    );
    const gone = await store.get('dead');
    assert.deepEqual([gone?.state, gone?.reason, gone?.lastError, gone?.job.attempts], ['dead', 'failed', 'give up', 1]);
    assert.ok((gone?.deadAt as number) >= result.now - 1 && (gone?.deadAt as number) <= result.now + 1_000);
    const counters = (await store.stats()).counters;
    assert.deepEqual([counters.retried, counters.dead], [1, 1]);
  });

  it('fail resent (its reply lost) answers with what the first send did, and changes nothing', async () => {
    const store = await open();
    const [retry, dead] = await claimed(store, ['retry', 'dead']);
    assert.ok(retry && dead);
    const entries = [
      { ...retry, retryDelayMs: 60_000, message: 'try later' },
      { ...dead, retryDelayMs: -1, message: 'give up' },
    ];
    const first = await store.fail(entries);
    const again = await store.fail(entries);
    assert.deepEqual(again.stale, []);
    assert.deepEqual(again.resent, [
      { index: 0, result: 'retried', retryAt: first.now + 60_000 },
      { index: 1, result: 'dead' },
    ]);
    assert.equal((await store.stats()).counters.retried, 1, 'retried once');
  });

  it('extend renews held leases from now (extendAt says when); lost positions for the others', async () => {
    const store = await open();
    const [held] = await claimed(store, ['held'], 300);
    assert.ok(held);
    const { now, lost } = await store.extendAt(2_000, [held, { id: 'held', token: '0' }]);
    assert.deepEqual(lost, [1]);
    assert.equal((await store.get('held'))?.leaseUntil, now + 2_000);
    await sleep(450);
    assert.equal((await claim(store, 1)).jobs.length, 0, 'the renewed lease outlived the first one');
    assert.deepEqual(await store.extend(2_000, [held]), []);
  });

  it('release hands jobs back, due again at once, the attempt not counted', async () => {
    const store = await open();
    const [held] = await claimed(store, ['back']);
    assert.ok(held);
    assert.equal(await store.release([held, { id: 'back', token: '0' }]), 1, 'only the held lease counts');
    const snapshot = await store.get('back');
    assert.deepEqual([snapshot?.state, snapshot?.job.attempts], ['ready', 0]);
    const again = await claim(store, 1);
    assert.deepEqual(
      again.jobs.map(j => [j.id, j.attempts]),
      [['back', 1]],
      'delivered again as its first attempt',
    );
  });
}
