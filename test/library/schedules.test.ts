// Recurring schedules through the library (issue 9): the upsert, the tick chain the claim script
// keeps, catch-up, overlap, limit/endAt, pause/resume/unschedule, on a real Redis.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NotFoundError, Queue, ValidationError, Worker, type Job } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { uniqueQueue, useRedis, waitFor, sleep } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function newQueue<T = unknown>(partitions?: number): Queue<T> {
  return redis.track(new Queue<T>(uniqueQueue('sched'), { connection: redis.url, ...(partitions ? { partitions } : {}) }));
}

async function serverNow(): Promise<number> {
  const [s, us] = await redis.raw.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** A worker recording each job's schedule tick and its start time (server clock estimate). */
function recordingWorker<T>(queue: Queue<T>, handler: (job: Job<T>) => Promise<void> = async () => undefined) {
  const starts: { id: string; tickAt: number; startedAt: number; attempt: number }[] = [];
  const worker = redis.track(
    new Worker<T>(
      queue.name,
      async job => {
        assert.ok(job.schedule, `job ${job.id} has no schedule`);
        starts.push({ id: job.id, tickAt: job.schedule.tickAt, startedAt: Date.now(), attempt: job.attempt });
        await handler(job);
      },
      { connection: redis.url, concurrency: 4 },
    ),
  );
  return { worker, starts };
}

describe('queue.schedule', () => {
  it('an every schedule ticks on its grid from the first upsert, each tick one job with job.schedule', async () => {
    const queue = newQueue<{ n: number }>();
    const info = await queue.schedule('poll', { every: '1s', payload: { n: 1 } });
    assert.equal(info.key, 'poll');
    assert.equal(info.every, 1000);
    assert.equal(info.tz, 'UTC');
    assert.equal(info.runs, 1);
    assert.equal(info.paused, false);
    assert.equal(info.upcoming.length, 5);
    assert.equal(info.nextAt, info.upcoming[0]);
    for (let i = 1; i < 5; i++) assert.equal((info.upcoming[i] as number) - (info.upcoming[i - 1] as number), 1000);
    const anchor = info.nextAt as number;
    const { starts } = recordingWorker(queue);
    await waitFor(() => starts.length >= 4, 10_000, '4 ticks');
    const ticks = starts.map(s => s.tickAt);
    assert.deepEqual(ticks.slice(0, 4), [anchor, anchor + 1000, anchor + 2000, anchor + 3000]);
    for (const s of starts) assert.equal(s.id, `poll@${s.tickAt}`);
    const after = (await queue.getSchedule('poll'))!;
    assert.ok(after.runs >= 5, `runs ${after.runs}`);
    assert.equal(after.lastTickAt, starts.at(-1)!.tickAt >= (after.lastTickAt ?? 0) ? after.lastTickAt : after.lastTickAt);
    assert.ok(after.lastRun);
  });

  it('the same upsert from 10 callers at once is one schedule and one pending tick', async () => {
    const queue = newQueue();
    const others = Array.from({ length: 9 }, () => redis.track(new Queue(queue.name, { connection: redis.url })));
    const spec = { cron: '0 9 * * *', tz: 'Europe/Berlin', payload: { kind: 'daily' } };
    const infos = await Promise.all([queue, ...others].map(q => q.schedule('daily-report', spec)));
    for (const info of infos) assert.equal(info.nextAt, infos[0]!.nextAt);
    const stats = await queue.stats();
    assert.equal(stats.delayed, 1);
    const list = await queue.listSchedules();
    assert.equal(list.length, 1);
    assert.equal(list[0]!.runs, 1);
    // 09:00 in Berlin is 08:00 or 07:00 UTC.
    const hourUtc = new Date(list[0]!.nextAt as number).getUTCHours();
    assert.ok(hourUtc === 7 || hourUtc === 8, String(hourUtc));
  });

  it('a changed definition replaces the pending tick with its own first tick', async () => {
    const queue = newQueue();
    await queue.schedule('k', { every: '1h', startAt: Date.now() + 3_600_000 });
    const before = (await queue.getSchedule('k'))!;
    const changed = await queue.schedule('k', { every: '2h', startAt: Date.now() + 7_200_000 });
    assert.notEqual(changed.nextAt, before.nextAt);
    assert.equal(changed.runs, 1, 'the replaced tick was never started: not a run');
    const page = await queue.list('delayed');
    assert.deepEqual(
      page.jobs.map(j => j.id),
      [`k@${changed.nextAt}`],
    );
    assert.deepEqual(page.jobs[0]!.schedule, { key: 'k', tickAt: changed.nextAt });
  });

  it('bad specs are typed errors and write nothing', async () => {
    const queue = newQueue();
    const bad: [string, unknown][] = [
      ['k', { cron: '0 9 * * *', tz: 'Mars/Olympus' }],
      ['k', { cron: '61 9 * * *' }],
      ['k', { cron: '0 9 * * *', every: '1m' }],
      ['k', { every: '500ms' }],
      ['k', {}],
      ['k', { every: '1m', dealy: 5 }],
      ['x'.repeat(181), { every: '1m' }],
      ['', { every: '1m' }],
    ];
    for (const [key, spec] of bad) {
      await assert.rejects(queue.schedule(key, spec as never), ValidationError, JSON.stringify(spec));
    }
    assert.deepEqual(await redis.raw.keys(`sg:{${queue.name}:*`), []);
    assert.equal(await queue.getSchedule('k'), null);
  });

  it('pause removes the pending tick, resume goes on at the next future tick, unschedule removes it', async () => {
    const queue = newQueue();
    await queue.schedule('p', { every: '1h', startAt: Date.now() + 60_000 });
    const paused = await queue.pauseSchedule('p');
    assert.equal(paused.paused, true);
    assert.equal(paused.nextAt, null);
    assert.deepEqual(paused.upcoming, []);
    assert.equal(paused.runs, 0);
    assert.equal((await queue.stats()).delayed, 0);
    const resumed = await queue.resumeSchedule('p');
    assert.equal(resumed.paused, false);
    assert.equal(resumed.runs, 1);
    assert.equal((await queue.stats()).delayed, 1);
    assert.equal(await queue.unschedule('p'), 'removed');
    assert.equal(await queue.unschedule('p'), 'not_found');
    assert.equal((await queue.stats()).delayed, 0);
    await assert.rejects(queue.pauseSchedule('p'), NotFoundError);
    await assert.rejects(queue.resumeSchedule('p'), NotFoundError);
    assert.equal(await queue.getSchedule('p'), null);
  });

  it('limit and endAt end the schedule, which stays listed with nextAt null', async () => {
    const queue = newQueue();
    await queue.schedule('three', { every: '1s', limit: 3 });
    const now = await serverNow();
    await queue.schedule('until', { every: '1s', endAt: now + 2_500 });
    const { starts } = recordingWorker(queue);
    await waitFor(
      async () => (await queue.getSchedule('three'))?.nextAt === null && (await queue.getSchedule('until'))?.nextAt === null,
      15_000,
      'both ended',
    );
    await sleep(1_200);
    assert.equal(starts.filter(s => s.id.startsWith('three@')).length, 3);
    const until = starts.filter(s => s.id.startsWith('until@'));
    assert.equal(until.length, 3, 'ticks at +0, +1 s, +2 s; +3 s is past endAt');
    const three = (await queue.getSchedule('three'))!;
    assert.equal(three.runs, 3);
    assert.deepEqual(three.upcoming, []);
  });

  it('never early: every tick starts at or after its tick time on the server clock', async () => {
    const queue = newQueue();
    await queue.schedule('e', { every: '1s' });
    const { starts } = recordingWorker(queue);
    await waitFor(() => starts.length >= 3, 10_000, '3 ticks');
    // The worker saw due jobs only: dueAt (server) <= claim time; here the job's dueAt is the tick.
    for (const s of starts) assert.ok(s.startedAt >= s.tickAt - 50, `tick ${s.tickAt} started ${s.startedAt}`);
  });

  it("catchUp after every process was down: 'none', 'latest' and 'all'", async () => {
    const queue = newQueue();
    const now = await serverNow();
    // Anchored 10.5 s ago: with no worker, the first tick (at the anchor) waits; ticks at -9.5 .. -0.5 s pass.
    for (const catchUp of ['none', 'latest', 'all'] as const) {
      await queue.schedule(catchUp, { every: '1s', startAt: now + 2_000, catchUp });
    }
    // No worker for 5.5 s after the first tick: 5 ticks missed.
    await sleep(7_500);
    const { starts } = recordingWorker(queue);
    await waitFor(() => starts.filter(s => s.id.startsWith('none@')).length >= 2, 10_000, 'none goes on');
    await sleep(500);
    const first = now + 2_000;
    const byKey = (k: string) => starts.filter(s => s.id.startsWith(`${k}@`)).map(s => s.tickAt - first);
    const none = byKey('none');
    assert.equal(none[0], 0, 'the pending tick runs late');
    assert.ok((none[1] as number) >= 6_000, `then the next future tick, got ${none}`);
    const latest = byKey('latest');
    assert.equal(latest[0], 0);
    assert.equal(latest[1], (none[1] as number) - 1_000, `then the most recent missed tick, got ${latest}`);
    const all = byKey('all');
    assert.deepEqual(all.slice(0, 6), [0, 1_000, 2_000, 3_000, 4_000, 5_000], `every missed tick, oldest first: ${all}`);
  });

  it("overlap 'skip': a tick whose previous run is active is skipped and counted", async () => {
    const queue = newQueue();
    await queue.schedule('slow', { every: '1s', overlap: 'skip' });
    const { starts } = recordingWorker(queue, () => sleep(2_500));
    await waitFor(async () => ((await queue.getSchedule('slow'))?.skipped ?? 0) >= 2, 15_000, '2 skipped');
    const info = (await queue.getSchedule('slow'))!;
    assert.ok(starts.length >= 1);
    // No two runs overlapped: each start is at least 2.5 s after the previous one.
    for (let i = 1; i < starts.length; i++) assert.ok(starts[i]!.startedAt - starts[i - 1]!.startedAt >= 2_400);
    assert.ok(info.skipped >= 2);
  });

  it('ticks of a partitioned queue live in the partition of their schedule key', async () => {
    const queue = newQueue(4);
    await queue.schedule('refund-poll:42', { every: '1s' });
    const { starts } = recordingWorker(queue);
    await waitFor(() => starts.length >= 3, 10_000, '3 ticks');
    for (const s of starts) {
      const job = await queue.get(s.id);
      assert.ok(job === null || job.schedule?.key === 'refund-poll:42');
    }
    const home = Array.from({ length: 4 }, (_, p) => partitionKeys('sg', queue.name, p).schedules);
    const holders = (await Promise.all(home.map(k => redis.raw.hlen(k)))).filter(n => n > 0);
    assert.deepEqual(holders, [1]);
  });

  it('a stall outlives a claimer that never tended it: every later claim names it until one does', async () => {
    const queue = newQueue();
    const now = await serverNow();
    await queue.schedule('s', { every: '1s', startAt: now + 500 });
    await sleep(2_700); // the head (at +0.5 s) is due and its next tick (+1.5 s) has passed
    // A claimer that takes the head and dies before tending (a bare claim call: no tend follows).
    const store = new PartitionStore(redis.raw, 'sg', queue.name, 0);
    const first = await store.claim(10, 30_000, 10, 3, { claimId: 'c1', answeredClaimId: undefined });
    assert.deepEqual(
      first.jobs.map(j => j.id),
      [`s@${now + 500}`],
    );
    assert.deepEqual(first.tend, ['s']);
    const keys = partitionKeys('sg', queue.name, 0);
    assert.equal(await redis.raw.hget(keys.meta, 'stalled'), 's');
    // An idle claim names it again.
    assert.deepEqual((await store.claim(10, 30_000, 10, 3, { claimId: 'c2', answeredClaimId: undefined })).tend, ['s']);
    // A worker's claim tends it: the most recent missed tick runs (catchUp 'latest'), then the grid.
    const { starts } = recordingWorker(queue);
    await waitFor(() => starts.length >= 2, 10_000, 'ticks after the stall');
    assert.equal(await redis.raw.hget(keys.meta, 'stalled'), null);
    const firstCaughtUp = starts[0]!.tickAt - (now + 500);
    assert.ok(firstCaughtUp >= 2_000 && firstCaughtUp % 1_000 === 0, `caught up at +${firstCaughtUp}`);
    assert.equal(starts[1]!.tickAt - starts[0]!.tickAt, 1_000);
  });

  it("cancelling a schedule's pending tick cancels that run only: the schedule goes on at its next tick", async () => {
    const queue = newQueue();
    const near = await queue.schedule('near', { every: '1h', startAt: Date.now() + 10_000 });
    const far = await queue.schedule('far', { every: '1d', startAt: Date.now() + 5 * 86_400_000 }); // in the wheel
    for (const info of [near, far]) {
      assert.equal(await queue.cancel(`${info.key}@${info.nextAt}`), 'cancelled');
      const after = (await queue.getSchedule(info.key))!;
      assert.equal(after.nextAt, (info.nextAt as number) + (info.every as number));
      assert.equal(after.runs, 2);
      assert.deepEqual((await queue.get(`${info.key}@${after.nextAt}`))?.schedule, { key: info.key, tickAt: after.nextAt });
    }
  });

  it('a changed definition leaves a pending tick whose time has come to run: no run is lost', async () => {
    const queue = newQueue();
    const now = await serverNow();
    const old = await queue.schedule('c', { every: '1s', startAt: now + 300 });
    await sleep(700); // the pending tick (+300) is due; no worker has taken it
    const changed = await queue.schedule('c', { every: '5s', startAt: now + 5_000 });
    assert.equal(changed.nextAt, now + 5_000);
    assert.equal(changed.runs, 2, 'the due tick and the new first tick');
    const { starts } = recordingWorker(queue);
    await waitFor(() => starts.length >= 1, 5_000, 'the due tick');
    assert.equal(starts[0]!.tickAt, old.nextAt);
    const paused = await queue.pauseSchedule('c');
    assert.equal(paused.runs, 1, 'pausing removed the future tick');
    await sleep(300);
    assert.equal(starts.length, 1);
  });

  it("re-adding a pending tick's id with ifExists 'replace' is refused and changes nothing; other jobs of the call are written", async () => {
    const queue = newQueue();
    const near = await queue.schedule('near', { every: '1h', startAt: Date.now() + 10_000 });
    const far = await queue.schedule('far', { every: '1d', startAt: Date.now() + 5 * 86_400_000 }); // in the wheel
    for (const info of [near, far]) {
      const id = `${info.key}@${info.nextAt}`;
      await assert.rejects(queue.add({ hijack: true }, { id, ifExists: 'replace' }), (error: Error) => {
        assert.equal(error.name, 'ConflictError');
        assert.match(error.message, new RegExp(`^Job ${id} is a schedule's pending tick and cannot be replaced: change the schedule`));
        return true;
      });
      const job = (await queue.get(id))!;
      assert.deepEqual([job.payload, job.schedule], [null, { key: info.key, tickAt: info.nextAt }]);
      // A keep-add is the usual no-op.
      assert.equal(await queue.add({ hijack: true }, { id }), id);
    }
    await assert.rejects(
      queue.addBulk(
        [
          { payload: 1, id: `near@${near.nextAt}` },
          { payload: 2, id: 'plain' },
        ],
        'replace',
      ),
      /the other jobs of the call were written/,
    );
    assert.equal((await queue.get('plain'))?.payload, 2);
  });
});
