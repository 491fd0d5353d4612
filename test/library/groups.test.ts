// Groups (issue 20): fair delivery over groups, per-group limits and order, pause, the lists and
// counts, by-id operations on grouped jobs, on a real Redis. Processes killed with SIGKILL and a
// Cluster: test/faults/groups-processes.test.ts and test/faults/groups-cluster.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, ValidationError, Worker, type Job } from '../../src/index.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

const waitingOf = (stats: { delayed: number; ready: number }) => stats.delayed + stats.ready;

function queue(name: string, partitions?: number): Queue {
  return redis.track(new Queue(name, { connection: redis.url, partitions }));
}

function worker(name: string, handler: (job: Job<unknown>) => Promise<unknown> | unknown, concurrency = 10, partitions?: number): Worker {
  return redis.track(new Worker(name, handler, { connection: redis.url, concurrency, partitions }));
}

/** A handler that records the order jobs start in and runs each for `ms`. */
function recorder(ms = 0) {
  const starts: { id: string; group: string | undefined; at: number }[] = [];
  const running = new Map<string | undefined, number>();
  let mostAtOnce = new Map<string | undefined, number>();
  const handler = async (job: Job<unknown>) => {
    starts.push({ id: job.id, group: job.group, at: Date.now() });
    const now = (running.get(job.group) ?? 0) + 1;
    running.set(job.group, now);
    if (now > (mostAtOnce.get(job.group) ?? 0)) mostAtOnce.set(job.group, now);
    if (ms > 0) await sleep(ms);
    running.set(job.group, (running.get(job.group) ?? 1) - 1);
  };
  return {
    starts,
    handler,
    mostAtOnce: () => mostAtOnce,
    reset: () => {
      starts.length = 0;
      mostAtOnce = new Map();
    },
  };
}

describe('grouped jobs', () => {
  it('carry their group into the handler, get, list and stats', async () => {
    const q = queue(uniqueQueue('groups-fields'));
    await q.add({ n: 1 }, { id: 'a', group: 'shop-42', delay: '1h' });
    await q.add({ n: 2 }, { id: 'b' });
    const a = await q.get('a');
    assert.equal(a?.group, 'shop-42');
    assert.equal(a?.state, 'delayed');
    assert.equal((await q.get('b'))?.group, undefined);
    const stats = await q.stats();
    assert.equal(stats.delayed, 1);
    assert.equal(stats.ready, 1);
    const delayed = await q.list('delayed');
    assert.deepEqual(
      delayed.jobs.map(job => [job.id, job.group]),
      [['a', 'shop-42']],
    );
    const seen: Job<unknown>[] = [];
    await q.reschedule('a', { delay: 0 });
    worker(q.name, job => void seen.push(job));
    await waitFor(() => seen.length === 2);
    assert.deepEqual(seen.map(job => [job.id, job.group]).sort(), [
      ['a', 'shop-42'],
      ['b', undefined],
    ]);
  });

  it('refuse a bad group name, naming the field and what is allowed, and write nothing', async () => {
    const q = queue(uniqueQueue('groups-bad'));
    for (const group of ['', 'x'.repeat(101), 'a\nb', 42, null]) {
      await assert.rejects(
        q.add({}, { group: group as string }),
        (error: Error) =>
          error instanceof ValidationError &&
          /`group` to be a group name of 1-100 characters without control characters/.test(error.message),
      );
    }
    await assert.rejects(
      q.addBulk([
        { payload: 1, group: 'ok' },
        { payload: 2, group: 'x'.repeat(101) },
      ]),
      (error: Error) => error instanceof ValidationError && /`jobs\[1\]\.group`/.test(error.message),
    );
    assert.equal(waitingOf(await q.stats()), 0);
    await q.add({}, { group: 'x'.repeat(100) });
    await q.add({}, { group: 'ünïcödé / with spaces + {braces}' });
    assert.equal(waitingOf(await q.stats()), 2);
  });

  it('are cancelled, rescheduled and replaced in their group', async () => {
    const q = queue(uniqueQueue('groups-byid'));
    await q.add({ v: 1 }, { id: 'x', group: 'g1', delay: '10m' });
    assert.equal(await q.reschedule('x', { delay: '40d' }), 'rescheduled'); // into the wheel
    assert.equal((await q.get('x'))?.state, 'delayed');
    assert.equal(await q.reschedule('x', { delay: '1s' }), 'rescheduled'); // and back
    // A replace may move the job to another group.
    await q.add({ v: 2 }, { id: 'x', group: 'g2', ifExists: 'replace' });
    assert.equal((await q.get('x'))?.group, 'g2');
    let page = await q.listGroups();
    assert.deepEqual(
      page.groups.map(g => [g.group, g.waiting]),
      [['g2', 1]],
    );
    assert.equal(await q.cancel('x'), 'cancelled');
    assert.equal(await q.get('x'), null);
    page = await q.listGroups();
    assert.deepEqual(page.groups, []);
    assert.equal(waitingOf(await q.stats()), 0);
  });
});

describe('fairness', () => {
  it('serves groups with due work in turn, not in global due order', async () => {
    const q = queue(uniqueQueue('groups-fair'));
    // Group A's 300 jobs are older than B's 30: in due order B would wait for all of A.
    await q.addBulk(Array.from({ length: 300 }, (_, n) => ({ payload: n, group: 'A', at: Date.now() - 60_000 + n })));
    await q.addBulk(Array.from({ length: 30 }, (_, n) => ({ payload: n, group: 'B' })));
    const rec = recorder();
    worker(q.name, rec.handler, 1);
    await waitFor(() => rec.starts.length >= 60);
    const firstSixty = rec.starts.slice(0, 60);
    const fromB = firstSixty.filter(start => start.group === 'B').length;
    assert.ok(fromB >= 25, `B got ${fromB} of the first 60 starts`);
  });

  it('gives the default group its turn too', async () => {
    const q = queue(uniqueQueue('groups-default'));
    await q.addBulk(Array.from({ length: 100 }, (_, n) => ({ payload: n, group: 'big', at: Date.now() - 60_000 })));
    await q.addBulk(Array.from({ length: 20 }, (_, n) => ({ payload: n })));
    const rec = recorder();
    worker(q.name, rec.handler, 1);
    await waitFor(() => rec.starts.length >= 40);
    const ungrouped = rec.starts.slice(0, 40).filter(start => start.group === undefined).length;
    assert.ok(ungrouped >= 15, `the default group got ${ungrouped} of the first 40 starts`);
  });
});

describe('group limits', () => {
  it('stores the default and a group override, merges and clears, and refuses bad limits', async () => {
    const q = queue(uniqueQueue('groups-limits'));
    assert.deepEqual(await q.getGroupLimits(), { source: 'default' });
    assert.deepEqual(await q.setGroupLimits({ concurrency: 2, rate: { max: 10, per: '1s' } }), {
      concurrency: 2,
      rate: { max: 10, per: 1_000 },
    });
    assert.deepEqual(await q.getGroupLimits({ group: 'shop-42' }), { concurrency: 2, rate: { max: 10, per: 1_000 }, source: 'default' });
    assert.deepEqual(await q.setGroupLimits({ concurrency: 1 }, { group: 'shop-42' }), { concurrency: 1, rate: { max: 10, per: 1_000 } });
    assert.deepEqual(await q.getGroupLimits({ group: 'shop-42' }), { concurrency: 1, rate: { max: 10, per: 1_000 }, source: 'group' });
    assert.deepEqual(await q.setGroupLimits({ rate: null }), { concurrency: 2 });
    assert.deepEqual(await q.getGroupLimits({ group: 'other' }), { concurrency: 2, source: 'default' });
    await q.clearGroupLimits({ group: 'shop-42' });
    assert.deepEqual(await q.getGroupLimits({ group: 'shop-42' }), { concurrency: 2, source: 'default' });
    await assert.rejects(q.setGroupLimits({ concurrency: 0 }), /`concurrency` to be an integer from 1 to 100000, got 0/);
    await assert.rejects(q.setGroupLimits({ rate: { max: 10, per: '1 parsec' } } as never), ValidationError);
    await assert.rejects(q.setGroupLimits({ concurency: 2 } as never), /concurency/);
    await assert.rejects(q.setGroupLimits({ concurrency: 1 }, { group: 'y'.repeat(101) }), ValidationError);
  });

  it('holds a group at its concurrency across workers, and frees the slot when a job settles', async () => {
    const q = queue(uniqueQueue('groups-concurrency'));
    await q.setGroupLimits({ concurrency: 2 });
    await q.addBulk(['g1', 'g2', 'g3'].flatMap(group => Array.from({ length: 20 }, (_, n) => ({ payload: n, group }))));
    const rec = recorder(15);
    worker(q.name, rec.handler, 10);
    worker(q.name, rec.handler, 10);
    await waitFor(() => rec.starts.length === 60, 20_000);
    for (const [group, most] of rec.mostAtOnce()) assert.ok(most <= 2, `${group} ran ${most} at once`);
    assert.ok(
      [...rec.mostAtOnce().values()].some(most => most === 2),
      'some group used both its slots',
    );
    await waitFor(async () => (await q.groupTotals()).withWork === 0);
  });

  it('runs a concurrency-1 group one at a time in the order added, a retry first', async () => {
    const q = queue(uniqueQueue('groups-order'));
    await q.setGroupLimits({ concurrency: 1 }, { group: 'ordered' });
    const at = Date.now();
    // Equal due times: the order they were added in, not id order.
    await q.addBulk(Array.from({ length: 30 }, (_, n) => ({ id: `job-${30 - n}`, payload: n, group: 'ordered', at })));
    const order: number[] = [];
    let failedOnce = false;
    let running = 0;
    let overlap = false;
    const handler = async (job: Job<unknown>) => {
      running += 1;
      if (running > 1) overlap = true;
      await sleep(2);
      running -= 1;
      const n = job.payload as number;
      if (n === 5 && !failedOnce) {
        failedOnce = true;
        throw new Error('once');
      }
      order.push(n);
    };
    // Two workers, so that "one at a time" is the group's doing, not a worker's.
    redis.track(new Worker(q.name, handler, { connection: redis.url, concurrency: 8, backoff: { type: 'fixed', delayMs: 50 } }));
    redis.track(new Worker(q.name, handler, { connection: redis.url, concurrency: 8, backoff: { type: 'fixed', delayMs: 50 } }));
    await waitFor(() => order.length === 30, 20_000);
    assert.equal(overlap, false);
    assert.deepEqual(
      order,
      Array.from({ length: 30 }, (_, n) => n),
    );
  });

  it('keeps a group under its rate on the server clock', async () => {
    const q = queue(uniqueQueue('groups-rate'));
    await q.setGroupLimits({ rate: { max: 5, per: '500ms' } });
    await q.addBulk(Array.from({ length: 12 }, (_, n) => ({ payload: n, group: 'r' })));
    await q.addBulk(Array.from({ length: 12 }, (_, n) => ({ payload: n, group: 's' })));
    const rec = recorder();
    worker(q.name, rec.handler, 20);
    await waitFor(() => rec.starts.length === 24, 10_000);
    const starts = rec.starts.filter(start => start.group === 'r').map(start => start.at);
    // 12 starts at 5 per 500 ms: the last no sooner than 1 s after the first (less a little for
    // the time between a claim and its handler's start).
    assert.ok((starts.at(-1) as number) - (starts[0] as number) >= 950, `spread ${(starts.at(-1) as number) - (starts[0] as number)} ms`);
  });
});

describe('pause and lists', () => {
  it('pauses one group while the others run, then resumes it', async () => {
    const q = queue(uniqueQueue('groups-pause'));
    await q.pauseGroup('held');
    await q.addBulk(Array.from({ length: 5 }, (_, n) => ({ payload: n, group: 'held' })));
    await q.addBulk(Array.from({ length: 5 }, (_, n) => ({ payload: n, group: 'free' })));
    const rec = recorder();
    worker(q.name, rec.handler, 5);
    await waitFor(() => rec.starts.length === 5);
    await sleep(300);
    assert.equal(rec.starts.length, 5);
    assert.ok(rec.starts.every(start => start.group === 'free'));
    const page = await q.listGroups();
    assert.deepEqual(
      page.groups.map(g => [g.group, g.waiting, g.ready, g.paused]),
      [['held', 5, 5, true]],
    );
    assert.deepEqual(await q.groupTotals(), { withWork: 1, held: 0, paused: 1 });
    await q.resumeGroup('held');
    await waitFor(() => rec.starts.length === 10);
    assert.deepEqual(await q.groupTotals(), { withWork: 0, held: 0, paused: 0 });
  });

  it('lists groups busiest first, page by page, across partitions', async () => {
    const q = queue(uniqueQueue('groups-list'), 3);
    const jobs = Array.from({ length: 12 }, (_, g) =>
      Array.from({ length: g + 1 }, (__, n) => ({ payload: n, group: `g${g}`, delay: '1h' as const })),
    ).flat();
    await q.addBulk(jobs);
    const seen: string[] = [];
    let page = await q.listGroups({ limit: 5 });
    for (;;) {
      seen.push(...page.groups.map(g => g.group));
      if (!page.nextCursor) break;
      page = await q.listGroups({ limit: 5, cursor: page.nextCursor });
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 12 }, (_, g) => `g${11 - g}`),
    );
    await assert.rejects(q.listGroups({ cursor: 'nonsense' }), ValidationError);
    // By id without the group: found in the group's partition.
    const any = (await q.list('delayed', { limit: 1 })).jobs[0];
    assert.ok(any);
    assert.equal((await q.get(any.id))?.group, any.group);
    assert.equal(await q.cancel(any.id), 'cancelled');
  });
});

describe('schedules with a group', () => {
  for (const partitions of [1, 4]) {
    it(`make grouped ticks that follow the group's limits (${partitions} partition(s))`, async () => {
      const q = queue(uniqueQueue('groups-schedule'), partitions);
      await q.pauseGroup('cron-tenant');
      const info = await q.schedule('tick', { every: '1s', group: 'cron-tenant', payload: { hello: 1 } });
      assert.equal(info.group, 'cron-tenant');
      assert.equal((await q.getSchedule('tick'))?.group, 'cron-tenant');
      const seen: Job<unknown>[] = [];
      worker(q.name, job => void seen.push(job), 5, partitions);
      await sleep(1_500);
      assert.equal(seen.length, 0, 'the group is paused: its tick waits');
      const page = await q.listGroups();
      assert.equal(page.groups[0]?.group, 'cron-tenant');
      await q.resumeGroup('cron-tenant');
      await waitFor(() => seen.length >= 2, 10_000);
      assert.ok(seen.every(job => job.group === 'cron-tenant' && job.schedule?.key === 'tick'));
      // Its group changes: the schedule follows it (and moves partition on a partitioned queue).
      assert.equal((await q.schedule('tick', { every: '1s', group: 'other', payload: { hello: 1 } })).group, 'other');
      assert.equal((await q.listSchedules()).length, 1);
      const before = seen.length;
      await waitFor(() => seen.length >= before + 2, 10_000);
      assert.equal(seen.at(-1)?.group, 'other');
      assert.equal(await q.unschedule('tick'), 'removed');
      assert.equal(await q.getSchedule('tick'), null);
    });
  }
});
