// The contract of groups (src/store/partition-storage.ts; README, "Groups"): grouped jobs are claimed
// in turns over the groups with due work, under each group's concurrency and rate, a concurrency-1
// group in order; pause, limits, the list and the totals.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { claim, job, overdue, until, type OpenPartition } from '../fixtures.js';

const first3 = <T>(list: readonly T[]): T[] => list.slice(0, 3);

export function groups(open: OpenPartition): void {
  it('claims serve the groups with due work in turn, the default group too, not in due order', async () => {
    const store = await open();
    // A's jobs are older than everything else: in due order they would all come first.
    await store.add(
      Array.from({ length: 8 }, (_, n) => job(`a${n}`, overdue(1_000 - n), { group: 'A' })),
      'keep',
    );
    await store.add([job('b1', overdue(), { group: 'B' }), job('plain', overdue())], 'keep');
    // Claims of one job: one group's turn each, in turn.
    const one = [];
    for (let i = 0; i < 4; i++) one.push(...(await claim(store, 1)).jobs.map(j => j.group ?? '(default)'));
    assert.deepEqual([...one.slice(0, 3)].sort(), ['(default)', 'A', 'B']);
    assert.equal(one[3], one[0], 'then the first again');
    // A bigger claim gives a group's turn up to a quantum of jobs (4), in due order within the group.
    const rest = await claim(store, 12);
    assert.deepEqual(
      rest.jobs.map(j => j.id),
      one[0] === 'A' ? ['a2', 'a3', 'a4', 'a5'] : ['a1', 'a2', 'a3', 'a4'],
    );
    assert.deepEqual(first3(rest.jobs.map(j => j.group)), ['A', 'A', 'A']);
  });

  it("a group's concurrency holds until a job settles; its rate holds on the backend's clock", async () => {
    const store = await open();
    await store.setGroupLimits('c', { concurrency: 1 });
    await store.add(
      ['c1', 'c2'].map(id => job(id, overdue(), { group: 'c' })),
      'keep',
    );
    const one = await claim(store, 5);
    assert.deepEqual(
      one.jobs.map(j => j.id),
      ['c1'],
    );
    assert.deepEqual((await claim(store, 5)).jobs, [], 'held while c1 runs');
    const held = one.jobs[0];
    assert.ok(held);
    assert.deepEqual(await store.groupTotals(), { withWork: 1, held: 1, paused: 0 });
    await store.ack([{ id: held.id, token: held.token }]);
    assert.deepEqual(
      (await claim(store, 5)).jobs.map(j => j.id),
      ['c2'],
    );

    await store.setGroupLimits('r', { rate: { max: 2, per: 400 } });
    await store.add(
      ['r1', 'r2', 'r3'].map(id => job(id, overdue(), { group: 'r' })),
      'keep',
    );
    // Paced: one claim every 400 / 2 ms, not the window's two at once.
    const first = await claim(store, 5);
    assert.deepEqual(
      first.jobs.map(j => j.id),
      ['r1'],
    );
    assert.deepEqual((await claim(store, 5)).jobs, [], 'paced');
    await until(store, first.now + 200);
    const second = await claim(store, 5);
    assert.deepEqual(
      second.jobs.map(j => j.id),
      ['r2'],
    );
    assert.deepEqual((await claim(store, 5)).jobs, [], 'the window holds 2');
    // Both rules: r1 leaves the window, and the pace's 200 ms after r2.
    await until(store, Math.max(first.now + 400, second.now + 200));
    const third = await claim(store, 5);
    assert.deepEqual(
      third.jobs.map(j => j.id),
      ['r3'],
    );
    assert.ok(third.now - first.now >= 400, 'no window of 400 ms holds 3 claims');
  });

  it('a paused group keeps its jobs waiting; resumed, they are claimed', async () => {
    const store = await open();
    assert.equal(await store.setGroupPaused('p', true), true);
    assert.equal(await store.setGroupPaused('p', true), false, 'paused already');
    await store.add([job('p1', overdue(), { group: 'p' })], 'keep');
    assert.deepEqual((await claim(store, 5)).jobs, []);
    const page = await store.listGroups(0, 10);
    assert.deepEqual(page, { total: 1, groups: [{ group: 'p', waiting: 1, ready: 1, active: 0, limited: false, paused: true }] });
    assert.equal(await store.setGroupPaused('p', false), true);
    assert.deepEqual(
      (await claim(store, 5)).jobs.map(j => j.id),
      ['p1'],
    );
  });

  it("stores the default group limits and a group's own, and reads both", async () => {
    const store = await open();
    assert.deepEqual(await store.readGroupLimits('g'), { own: undefined, fallback: {} });
    await store.setDefaultGroupLimits({ concurrency: 3, rate: { max: 10, per: 1_000 } });
    await store.setGroupLimits('g', { concurrency: 1 });
    assert.deepEqual(await store.readGroupLimits('g'), {
      own: { concurrency: 1 },
      fallback: { concurrency: 3, rate: { max: 10, per: 1_000 } },
    });
    await store.setGroupLimits('g', undefined);
    assert.deepEqual((await store.readGroupLimits('g')).own, undefined);
  });

  it('a grouped job is found, counted and listed like any other waiting job', async () => {
    const store = await open();
    await store.add([job('w', { delayMs: 60_000 }, { group: 'G' })], 'keep');
    const snapshot = await store.get('w');
    assert.deepEqual([snapshot?.state, snapshot?.job.group], ['delayed', 'G']);
    const stats = await store.stats();
    assert.equal(stats.delayed, 1);
    assert.deepEqual(
      (await store.listJobs('delayed', undefined, 10)).entries.map(entry => entry.job.id),
      ['w'],
    );
    assert.equal(await store.cancel('w'), 'cancelled');
    assert.deepEqual(await store.listGroups(0, 10), { total: 0, groups: [] });
  });
}
