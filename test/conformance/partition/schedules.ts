// The contract of a partition's schedules (src/store/partition-storage.ts readSchedules and
// writeSchedule): compare-and-set writes, atomic with the tick jobs they create or remove, and
// claims that start a tick creating the next one (or naming the schedule to tend).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { claim, job, until, type OpenPartition } from '../fixtures.js';
import type { PartitionStorage, ScheduleWrite } from '../../../src/store/partition-storage.js';

type Put = Extract<ScheduleWrite, { op: 'put' }>;

/** A 'put' of schedule `key` (its definition's hash: hex, as scheduleDefinitionHash writes it) whose first tick is `first` (an entry: its tick time), then `ticks`. */
function put(key: string, gen: number | null, first: string | null, ticks: readonly string[], extra: Partial<Put> = {}): Put {
  return {
    op: 'put',
    key,
    gen,
    hash: 'aa11',
    maxAttempts: '',
    backoff: '',
    limit: undefined,
    payloadJson: '{"tick":true}',
    specJson: '{}',
    overlapSkip: false,
    first,
    ticks,
    complete: false,
    ...extra,
  };
}

/** The server now, as an add answers it. */
async function nowOf(store: PartitionStorage): Promise<number> {
  return (await store.stats()).now;
}

export function schedules(open: OpenPartition): void {
  it('a put writes the schedule with its first tick as a job "<key>@<entry>", read back by readSchedules', async () => {
    const store = await open();
    const first = String((await nowOf(store)) + 60_000);
    const written = await store.writeSchedule(put('daily', null, first, [String(Number(first) + 60_000)]));
    assert.equal(written.status, 'written');
    assert.deepEqual(
      [written.schedule?.key, written.schedule?.head, written.schedule?.paused, written.schedule?.runs],
      ['daily', first, false, 1],
    );
    const tick = await store.get(`daily@${first}`);
    assert.deepEqual(
      [tick?.state, tick?.dueAt, tick?.job.tickAt, tick?.job.payloadJson],
      ['delayed', Number(first), Number(first), '{"tick":true}'],
    );
    const read = await store.readSchedules('daily');
    assert.deepEqual(read.schedules, [written.schedule]);
    assert.ok(read.now > 0);
    await store.writeSchedule(put('hourly', null, first, []));
    assert.deepEqual((await store.readSchedules()).schedules.map(schedule => schedule.key).sort(), ['daily', 'hourly']);
    assert.deepEqual((await store.readSchedules('nobody')).schedules, []);
  });

  it('a put is compare-and-set: the same definition is "same", a stale generation "conflict", a new one replaces the pending tick', async () => {
    const store = await open();
    const first = String((await nowOf(store)) + 60_000);
    const created = await store.writeSchedule(put('s', null, first, []));
    const gen = created.schedule?.gen as number;
    assert.equal((await store.writeSchedule(put('s', gen, first, []))).status, 'same');
    assert.equal((await store.writeSchedule(put('s', gen + 5, first, [], { hash: 'bb22' }))).status, 'conflict');
    assert.equal(
      (await store.writeSchedule(put('s', null, first, [], { hash: 'bb22' }))).status,
      'conflict',
      'it exists: gen null is stale',
    );
    const next = String(Number(first) + 30_000);
    const changed = await store.writeSchedule(put('s', gen, next, [], { hash: 'bb22' }));
    assert.equal(changed.status, 'written');
    assert.ok((changed.schedule?.gen as number) > gen, 'the generation moves on');
    assert.equal(await store.get(`s@${first}`), null, 'the pending tick of the old definition is gone');
    assert.equal((await store.get(`s@${next}`))?.state, 'delayed');
  });

  it('pause removes the pending tick, resume creates its first tick, remove deletes both; not_found for no schedule', async () => {
    const store = await open();
    const first = String((await nowOf(store)) + 60_000);
    const created = await store.writeSchedule(put('s', null, first, []));
    const paused = await store.writeSchedule({ op: 'pause', key: 's' });
    assert.deepEqual([paused.status, paused.schedule?.paused], ['written', true]);
    assert.equal(await store.get(`s@${first}`), null);
    const resumeAt = String(Number(first) + 1_000);
    const resumed = await store.writeSchedule({
      op: 'resume',
      key: 's',
      gen: paused.schedule?.gen as number,
      first: resumeAt,
      ticks: [],
      complete: false,
    });
    assert.deepEqual([resumed.status, resumed.schedule?.paused], ['written', false]);
    assert.equal((await store.get(`s@${resumeAt}`))?.state, 'delayed');
    assert.ok((created.schedule?.gen as number) < (resumed.schedule?.gen as number));
    const removed = await store.writeSchedule({ op: 'remove', key: 's' });
    assert.deepEqual([removed.status, removed.schedule?.key], ['removed', 's']);
    assert.equal(await store.get(`s@${resumeAt}`), null);
    assert.deepEqual((await store.readSchedules('s')).schedules, []);
    assert.equal((await store.writeSchedule({ op: 'pause', key: 's' })).status, 'not_found');
    assert.equal((await store.writeSchedule({ op: 'remove', key: 's' })).status, 'not_found');
  });

  it('a pending tick cannot be replaced by an add (tick)', async () => {
    const store = await open();
    const first = String((await nowOf(store)) + 60_000);
    await store.writeSchedule(put('s', null, first, []));
    assert.deepEqual((await store.add([job(`s@${first}`)], 'replace')).statuses, ['tick']);
    assert.equal((await store.get(`s@${first}`))?.job.payloadJson, '{"tick":true}');
  });

  it('the claim that starts a tick creates the next one from the listed ticks, in the same call', async () => {
    const store = await open();
    const now = await nowOf(store);
    const first = String(now + 200);
    const second = String(now + 60_000);
    await store.writeSchedule(put('s', null, first, [second, String(now + 120_000)]));
    await until(store, Number(first));
    const result = await claim(store, 10);
    assert.deepEqual(
      result.jobs.map(j => [j.id, j.tickAt]),
      [[`s@${first}`, Number(first)]],
    );
    assert.equal((await store.get(`s@${second}`))?.state, 'delayed');
    const [schedule] = (await store.readSchedules('s')).schedules;
    assert.deepEqual(
      [schedule?.head, schedule?.runs, schedule?.last, schedule?.lastRunState],
      [second, 2, { tickAt: Number(first), id: `s@${first}` }, 'active'],
    );
    assert.equal((await store.stats()).counters.ticks, 2);
  });

  it('a claim that cannot create the next tick names the schedule in `tend` (stalled); an advance then creates it', async () => {
    const store = await open();
    const now = await nowOf(store);
    const first = String(now + 200);
    await store.writeSchedule(put('s', null, first, []));
    await until(store, Number(first));
    const result = await claim(store, 10);
    assert.deepEqual([result.jobs.length, result.tend, result.scheduled], [1, ['s'], true]);
    const [stalled] = (await store.readSchedules('s')).schedules;
    assert.equal(stalled?.stalled, true);
    const next = String(now + 60_000);
    const advance = {
      op: 'advance',
      key: 's',
      gen: stalled?.gen as number,
      head: first,
      create: [next],
      ticks: [],
      complete: true,
      ended: false,
    } as const;
    assert.equal((await store.writeSchedule({ ...advance, head: next })).status, 'conflict', 'the head read must still be the head');
    assert.equal((await store.writeSchedule(advance)).status, 'written');
    assert.equal((await store.get(`s@${next}`))?.state, 'delayed');
    assert.equal((await store.readSchedules('s')).schedules[0]?.stalled, false);
  });

  it('an idle claim asked about schedules says whether the partition has any', async () => {
    const store = await open();
    assert.equal((await claim(store, 10, { askSchedules: true })).scheduled, false);
    await store.writeSchedule(put('s', null, String((await nowOf(store)) + 60_000), []));
    assert.equal((await claim(store, 10, { askSchedules: true })).scheduled, true);
  });
}
