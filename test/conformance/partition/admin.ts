// The contract of the admin side of a partition (src/store/partition-storage.ts): cancel,
// reschedule, get, listJobs, stats, dueHistogram, retryDead and purgeDead.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { claimed, job, overdue, type OpenPartition } from '../fixtures.js';
import type { PartitionStorage } from '../../../src/store/partition-storage.js';

/** Dead-letters `ids`, in that order (one fail each, so their deadAt times are ordered). */
async function deadJobs(store: PartitionStorage, ids: readonly string[]): Promise<void> {
  for (const held of await claimed(store, ids)) {
    await store.fail([{ ...held, retryDelayMs: -1, message: `${held.id} failed` }]);
    await new Promise(resolve => setTimeout(resolve, 2));
  }
}

export function admin(open: OpenPartition): void {
  it('cancel removes a waiting or dead job, leaves a running one alone, and says which', async () => {
    const store = await open();
    await store.add([job('waiting', { delayMs: 60_000 })], 'keep');
    await claimed(store, ['running']);
    await deadJobs(store, ['dead']);
    assert.equal(await store.cancel('waiting'), 'cancelled');
    assert.equal(await store.cancel('dead'), 'cancelled');
    assert.equal(await store.cancel('running'), 'running');
    assert.equal(await store.cancel('nobody'), 'not_found');
    assert.deepEqual([await store.get('waiting'), await store.get('dead'), (await store.get('running'))?.state], [null, null, 'active']);
  });

  it('reschedule moves a waiting job to its new due time, revives a dead one with fresh attempts, leaves a running one', async () => {
    const store = await open();
    await store.add([job('waiting', { delayMs: 60_000 })], 'keep');
    await claimed(store, ['running']);
    await deadJobs(store, ['dead']);
    const moved = await store.reschedule('waiting', { delayMs: 120_000 });
    assert.equal(moved.result, 'rescheduled');
    assert.equal((await store.get('waiting'))?.dueAt, moved.dueAt);
    const at = Date.now() + 90_000;
    const revived = await store.reschedule('dead', { atMs: at });
    assert.deepEqual(revived, { result: 'rescheduled', dueAt: at });
    const snapshot = await store.get('dead');
    assert.deepEqual([snapshot?.state, snapshot?.dueAt, snapshot?.job.attempts], ['delayed', at, 0]);
    assert.equal((await store.reschedule('running', { delayMs: 1 })).result, 'running');
    assert.equal((await store.reschedule('nobody', { delayMs: 1 })).result, 'not_found');
  });

  it('get answers null for no such job, and the state with its times for each: delayed, ready, active, dead', async () => {
    const store = await open();
    assert.equal(await store.get('nobody'), null);
    // Due after the jobs the helpers claim (a minute ago), so that those are claimed first.
    const readyAt = Date.now() - 1_000;
    const { now } = await store.add([job('delayed', { delayMs: 60_000 }), job('ready', { atMs: readyAt })], 'keep');
    const delayed = await store.get('delayed');
    assert.deepEqual([delayed?.state, delayed?.dueAt, delayed?.job.attempts, delayed?.lastError], ['delayed', now + 60_000, 0, undefined]);
    const ready = await store.get('ready');
    assert.deepEqual([ready?.state, ready?.dueAt], ['ready', readyAt]);
    const [active] = await claimed(store, ['active']);
    assert.equal((await store.get('active'))?.job.token, active?.token);
    await deadJobs(store, ['dead']);
    const dead = await store.get('dead');
    assert.deepEqual([dead?.state, dead?.reason, dead?.lastError], ['dead', 'failed', 'dead failed']);
    assert.equal(typeof dead?.deadAt, 'number');
  });

  it('listJobs pages one state in its order after a position: soonest due first, dead most recent first', async () => {
    const store = await open();
    await store.add([job('c', overdue(100)), job('a', overdue(300)), job('b', overdue(200)), job('later', { delayMs: 60_000 })], 'keep');
    const first = await store.listJobs('ready', undefined, 2);
    assert.deepEqual([first.count, first.entries.map(entry => entry.job.id)], [2, ['a', 'b']]);
    const last = first.entries.at(-1);
    assert.ok(last);
    const next = await store.listJobs('ready', { at: last.dueAt, id: last.job.id }, 2);
    assert.deepEqual([next.count, next.entries.map(entry => entry.job.id)], [1, ['c']]);
    assert.deepEqual(
      (await store.listJobs('delayed', undefined, 10)).entries.map(entry => entry.job.id),
      ['later'],
    );
    assert.ok(first.now > 0);
    const other = await open();
    await deadJobs(other, ['d1', 'd2', 'd3']);
    assert.deepEqual(
      (await other.listJobs('dead', undefined, 10)).entries.map(entry => entry.job.id),
      ['d3', 'd2', 'd1'],
    );
    assert.deepEqual((await other.listJobs('active', undefined, 10)).count, 0);
  });

  it('stats counts jobs by state on the backend clock, with running totals', async () => {
    const store = await open();
    // Ready, but due after the jobs the helpers claim (a minute ago), so that those are claimed first.
    const readyAt = { atMs: Date.now() - 1_000 };
    await store.add([job('d1', { delayMs: 60_000 }), job('r1', readyAt), job('r2', readyAt)], 'keep');
    await claimed(store, ['a1']);
    await deadJobs(store, ['x1']);
    const stats = await store.stats();
    assert.deepEqual(
      {
        delayed: stats.delayed,
        ready: stats.ready,
        active: stats.active,
        dead: stats.dead,
        paused: stats.paused,
        completed: stats.completed,
      },
      { delayed: 1, ready: 2, active: 1, dead: 1, paused: false, completed: 0 },
    );
    assert.deepEqual([stats.counters.added, stats.counters.claimed, stats.counters.dead], [5, 2, 1]);
    assert.ok(stats.now > 0);
  });

  it('dueHistogram counts waiting jobs: ready, one per window ending at each bound, then the rest', async () => {
    const store = await open();
    await claimed(store, ['running']);
    await store.add(
      [
        job('now'),
        job('m1', { delayMs: 30_000 }),
        job('m2', { delayMs: 50_000 }),
        job('h1', { delayMs: 1_800_000 }),
        job('far', { delayMs: 86_400_000 }),
      ],
      'keep',
    );
    const histogram = await store.dueHistogram([60_000, 3_600_000]);
    assert.deepEqual([histogram.ready, histogram.counts], [1, [2, 1, 1]]);
  });

  it('retryDead moves the given dead jobs (or up to `limit` of the oldest) back to due now; purgeDead deletes up to `limit`', async () => {
    const store = await open();
    await deadJobs(store, ['d1', 'd2', 'd3', 'd4']);
    await store.add([job('alive', { delayMs: 60_000 })], 'keep');
    assert.equal(await store.retryDead(['d3', 'alive', 'nobody'], 10), 1, 'only dead ones move');
    const revived = await store.get('d3');
    assert.deepEqual([revived?.state, revived?.job.attempts], ['ready', 0]);
    assert.equal(await store.retryDead([], 1), 1);
    assert.equal((await store.get('d1'))?.state, 'ready', 'the oldest first');
    assert.equal(await store.purgeDead(1), 1);
    assert.equal(await store.purgeDead(10), 1);
    assert.equal(await store.purgeDead(10), 0);
    assert.deepEqual([await store.get('d2'), await store.get('d4'), (await store.stats()).dead], [null, null, 0]);
  });
}
