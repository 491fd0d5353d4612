// The fault proxy (test/chaos/proxy.ts) between sandglass and a real redis-server: lost replies,
// resets, latency and blackholes. Every Queue, Worker and PullConsumer under test connects through
// the proxy; the raw client used to inspect keys, and the observer workers, go straight to Redis.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { PullConsumer, Queue, Worker, type Job } from '../../src/index.js';
import { checkInvariant, snapshot as storageSnapshot } from '../chaos/checker.js';
import { blackhole, dropRepliesThenReset, latency, startFaultProxy, type FaultProxy } from '../chaos/proxy.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/** Milliseconds the proxy waits after the first lost reply before it resets the connection. */
const RESET_AFTER_MS = 100;

interface Harness {
  proxy: FaultProxy;
  name: string;
  keys: { jobs: string; due: string; active: string; dead: string; counters: string };
  /** Closed when the test ends, newest first, before the proxy. */
  own<T extends { close(): Promise<unknown> }>(item: T): T;
  /** A connection option of its own through the proxy (one connection per call: sharing is per URL or object). */
  viaProxy(): { host: string; port: number };
}

async function harness(t: TestContext): Promise<Harness> {
  const proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: redis.server.port } });
  const owned: { close(): Promise<unknown> }[] = [];
  t.after(async () => {
    proxy.setMode('pass');
    for (const item of owned.reverse()) await item.close();
    await proxy.close();
  });
  const name = uniqueQueue('proxy');
  const tag = `sg:{${name}:0}`;
  return {
    proxy,
    name,
    keys: { jobs: `${tag}:jobs`, due: `${tag}:due`, active: `${tag}:active`, dead: `${tag}:dead`, counters: `${tag}:counters` },
    own(item) {
      owned.push(item);
      return item;
    },
    viaProxy: () => ({ host: '127.0.0.1', port: proxy.port }),
  };
}

/** How many times Redis ran EVALSHA so far (INFO commandstats): proves that a command really ran twice. */
async function evalshaCalls(): Promise<number> {
  const info = await redis.raw.info('commandstats');
  return Number(/cmdstat_(?:evalsha|fcall):calls=(\d+)/.exec(info)?.[1] ?? 0);
}

async function counters(h: Harness): Promise<Record<string, number>> {
  const raw = await redis.raw.hgetall(h.keys.counters);
  return Object.fromEntries(
    Object.entries(raw)
      .filter(([key]) => key !== 'seq')
      .map(([key, value]) => [key, Number(value)]),
  );
}

/** Everything stored for the queue except the counters: ids per structure and records. */
async function snapshot(h: Harness) {
  const [jobs, due, active, dead] = await Promise.all([
    redis.raw.hgetall(h.keys.jobs),
    redis.raw.zrange(h.keys.due, 0, -1, 'WITHSCORES'),
    redis.raw.zrange(h.keys.active, 0, -1, 'WITHSCORES'),
    redis.raw.zrange(h.keys.dead, 0, -1, 'WITHSCORES'),
  ]);
  return { jobs, due, active, dead };
}

describe('fault proxy: lost replies and resets', () => {
  it('forwards in pass mode, and the ambiguous-reply mode really runs a command twice', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue(h.name, { connection: h.proxy.url }));
    await queue.add('warm-up', { delay: '1h' });
    const before = await evalshaCalls();
    h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
    const startedAt = Date.now();
    await queue.add('x', { delay: '1h' });
    const tookMs = Date.now() - startedAt;
    const stats = h.proxy.stats();
    assert.equal(h.proxy.mode.kind, 'pass', 'the mode goes back to pass after the reset');
    assert.ok(stats.resets >= 1 && stats.droppedBytes > 0, JSON.stringify(stats));
    assert.equal((await evalshaCalls()) - before, 2, 'the add ran, its reply was lost, and ioredis sent it again');
    assert.ok(tookMs >= RESET_AFTER_MS, `the add returned after ${tookMs} ms`);
  });

  // 1. An add whose reply is lost and whose connection is then reset is resent by ioredis: the same
  // id (generated in the client, or given) finds the job already there, so there is one job.
  for (const variant of ['generated id', 'explicit id'] as const) {
    it(`an add (${variant}) whose reply is lost, then reset, creates exactly one job`, async t => {
      const h = await harness(t);
      const queue = h.own(new Queue<{ n: number }>(h.name, { connection: h.proxy.url }));
      await queue.add({ n: 0 }, { id: 'warm-up', delay: '1h' });
      await queue.cancel('warm-up');
      const calls = await evalshaCalls();
      h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
      const id = await queue.add({ n: 1 }, variant === 'explicit id' ? { id: 'order:42', delay: '1h' } : { delay: '1h' });
      assert.equal((await evalshaCalls()) - calls, 2, 'the add script ran twice');
      assert.ok(h.proxy.stats().resets >= 1);
      if (variant === 'explicit id') assert.equal(id, 'order:42');
      // Due in an hour: the job waits in the far-future tier (the wheel), not in `jobs`/`due`.
      const snap = await storageSnapshot(redis.raw, h.name);
      assert.deepEqual([...snap.jobs, ...snap.wheel.buckets.keys()], [id], 'one job in Redis');
      assert.ok(checkInvariant(snap).ok, 'every job in exactly one state');
      assert.equal((await counters(h)).added, 2, 'the warm-up and this add: the resent add added nothing');
      const info = await queue.get(id);
      assert.deepEqual(info?.payload, { n: 1 });
      assert.equal(info?.state, 'delayed');
    });
  }

  it('an addBulk of 1,200 jobs (3 script calls) whose replies are lost, then reset, creates 1,200 jobs', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue<{ n: number }>(h.name, { connection: h.proxy.url }));
    await queue.add({ n: -1 }, { id: 'warm-up', delay: '1h' });
    await queue.cancel('warm-up');
    const calls = await evalshaCalls();
    h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
    const entries = Array.from({ length: 1_200 }, (_, n) => ({
      payload: { n },
      delay: '1h' as const,
      ...(n % 2 === 0 ? { id: `even-${n}` } : {}),
    }));
    const ids = await queue.addBulk(entries);
    assert.equal(
      (await evalshaCalls()) - calls,
      6,
      'three chunks, all sent before the first answered (addBulk pipelines them), each resent once',
    );
    assert.equal(new Set(ids).size, 1_200);
    const snap = await storageSnapshot(redis.raw, h.name);
    assert.deepEqual([...snap.jobs, ...snap.wheel.buckets.keys()].sort(), [...ids].sort(), 'the 1,200 jobs, each once');
    assert.ok(checkInvariant(snap).ok, 'every job in exactly one state');
    assert.equal((await counters(h)).added, 1_201);
  });

  // 2. A repeated ack is a no-op: the first ack removed the job, the resent one finds no record.
  it('a PullConsumer ack whose reply is lost is resent and changes nothing else; an explicit repeat neither', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue<string>(h.name, { connection: h.proxy.url }));
    const consumer = h.own(new PullConsumer<string>(h.name, { connection: h.proxy.url }));
    // Bystanders: a delayed job and a job held by another claim, which must not change.
    await queue.add('later', { id: 'bystander-delayed', delay: '1h' });
    await queue.add('held', { id: 'bystander-active' });
    const [held] = await consumer.claim({ leaseMs: 60_000 });
    assert.equal(held?.id, 'bystander-active');
    const id = await queue.add('target');
    const [job] = await consumer.claim({ leaseMs: 60_000 });
    assert.equal(job?.id, id);

    const before = await snapshot(h);
    const countersBefore = await counters(h);
    const calls = await evalshaCalls();
    h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
    const answer = await consumer.ack(job.id, job.token);
    assert.equal((await evalshaCalls()) - calls, 2, 'the ack ran twice');
    assert.equal(answer, 'acked', 'the resent ack finds the job complete');
    const after = await snapshot(h);
    const countersAfter = await counters(h);
    // The job is gone, once; nothing else moved.
    const expected = structuredClone(before);
    delete expected.jobs[id];
    expected.active = before.active.filter((_, i, list) => list[i - (i % 2)] !== id);
    assert.deepEqual(after, expected);
    assert.equal(countersAfter.completed ?? 0, (countersBefore.completed ?? 0) + 1, 'completed once');
    assert.deepEqual({ ...countersAfter, completed: 0, stale: 0 }, { ...countersBefore, completed: 0, stale: 0 });

    // A repeat by hand: acked again, and nothing moves.
    assert.equal(await consumer.ack(job.id, job.token), 'acked');
    assert.deepEqual(await snapshot(h), after);
    assert.deepEqual(await counters(h), countersAfter);
    assert.equal((await queue.get('bystander-active'))?.state, 'active');
    assert.equal(await consumer.ack(held.id, held.token), 'acked', 'the other claim still holds its job');
  });

  it('a Worker whose ack reply is lost (then reset) does not run the job again', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue<string>(h.name, { connection: h.proxy.url }));
    const runs: number[] = [];
    const outcomes: string[] = [];
    const leaseMs = 1_000;
    const worker = h.own(
      new Worker<string>(
        h.name,
        async job => {
          runs.push(job.attempt);
          // The ack is sent right after this resolves: its reply will be lost.
          h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
        },
        { connection: h.proxy.url, leaseMs, concurrency: 1 },
      ),
    );
    worker.on('error', () => undefined);
    worker.on('completed', () => outcomes.push('completed'));
    worker.on('stale', () => outcomes.push('stale'));
    await worker.waitUntilReady();
    const id = await queue.add('once');
    await waitFor(() => outcomes.length > 0, 5_000, 'the ack outcome');
    assert.ok(h.proxy.stats().resets >= 1, 'the connection was reset after the lost reply');
    // Longer than the lease: a job wrongly left active would have been reaped and run again.
    await sleep(leaseMs * 2);
    assert.deepEqual(runs, [1], 'ran once');
    assert.equal(await redis.raw.hexists(h.keys.jobs, id), 0, 'completed and gone');
    const c = await counters(h);
    assert.equal(c.completed, 1);
    assert.equal(c.reaped ?? 0, 0);
    assert.equal(outcomes.length, 1, outcomes.join());
  });

  // The resent ack finds the job already deleted by the first one: that is a completed job, not a
  // lost lease, so the worker reports 'completed' and the `stale` counter does not move.
  it('a Worker whose ack reply is lost reports the job completed, not stale', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue<string>(h.name, { connection: h.proxy.url }));
    const outcomes: string[] = [];
    const worker = h.own(
      new Worker<string>(h.name, async () => void h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS)), {
        connection: h.proxy.url,
        concurrency: 1,
      }),
    );
    worker.on('error', () => undefined);
    worker.on('completed', () => outcomes.push('completed'));
    worker.on('stale', () => outcomes.push('stale'));
    await worker.waitUntilReady();
    await queue.add('once');
    await waitFor(() => outcomes.length > 0, 5_000, 'the ack outcome');
    assert.deepEqual(outcomes, ['completed']);
    assert.equal((await counters(h)).stale ?? 0, 0);
  });

  for (const maxAttempts of [2, 1]) {
    const event = maxAttempts === 1 ? 'dead' : 'failed';
    it(`a Worker whose fail reply is lost reports the job ${event}, not stale (maxAttempts ${maxAttempts})`, async t => {
      const h = await harness(t);
      const queue = h.own(new Queue<string>(h.name, { connection: h.proxy.url }));
      const outcomes: string[] = [];
      const worker = h.own(
        new Worker<string>(
          h.name,
          async () => {
            h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
            throw new Error('boom');
          },
          { connection: h.proxy.url, concurrency: 1, maxAttempts, backoff: { type: 'fixed', delayMs: 60_000 } },
        ),
      );
      worker.on('error', () => undefined);
      worker.on(event, () => outcomes.push(event));
      worker.on('stale', () => outcomes.push('stale'));
      await worker.waitUntilReady();
      const id = await queue.add('once');
      await waitFor(() => outcomes.length > 0, 5_000, 'the fail outcome');
      assert.deepEqual(outcomes, [event]);
      assert.equal((await counters(h)).stale ?? 0, 0);
      assert.equal((await queue.get(id))?.state, maxAttempts === 1 ? 'dead' : 'delayed');
    });
  }

  // 3. A claim whose reply is lost: the resent claim (same claim id) finds the first run's memo and
  // answers with the same job, at once, as the same attempt: nothing waits for a lease.
  it('a PullConsumer claim whose reply is lost never orphans the job: the resent claim gets it at once', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue<string>(h.name, { connection: h.proxy.url }));
    const consumer = h.own(new PullConsumer<string>(h.name, { connection: h.proxy.url }));
    // Warm-up: the connection, the scripts and the long-poll subscription are in place.
    const warm = await queue.add('warm-up');
    const [first] = await consumer.claim({ max: 1, leaseMs: 60_000, waitMs: 1 });
    assert.equal(first?.id, warm);
    assert.equal(await consumer.ack(warm, first.token), 'acked');
    const leaseMs = 1_000;
    const target = await queue.add('claimed-in-the-dark');
    const calls = await evalshaCalls();
    h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
    const startedAt = Date.now();
    const jobs = await consumer.claim({ max: 1, leaseMs, waitMs: 5_000 });
    const redeliveredMs = Date.now() - startedAt;
    assert.ok((await evalshaCalls()) - calls >= 2, 'claim, then the resent claim');
    assert.deepEqual(
      jobs.map(j => j.id),
      [target],
    );
    assert.equal(jobs[0]?.attempt, 1, 'the lost reply cost no attempt');
    assert.ok(redeliveredMs < leaseMs, `delivered after ${redeliveredMs} ms, before the lease (${leaseMs} ms) ran out`);
    assert.equal(await consumer.ack(target, jobs[0]!.token), 'acked');
    assert.equal(await redis.raw.hlen(h.keys.jobs), 0);
    assert.equal((await counters(h)).reaped ?? 0, 0);
    t.diagnostic(`PullConsumer: job delivered ${redeliveredMs} ms after the claim whose reply was lost (lease ${leaseMs} ms)`);
  });

  it('a Worker claim whose reply is lost never orphans the job: the resent claim runs it at once, once', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue<string>(h.name, { connection: h.proxy.url }));
    const leaseMs = 1_000;
    const runs: { attempt: number; at: number }[] = [];
    const worker = h.own(
      new Worker<string>(h.name, job => void runs.push({ attempt: job.attempt, at: Date.now() }), {
        connection: h.viaProxy(),
        leaseMs,
        concurrency: 1,
      }),
    );
    worker.on('error', () => undefined);
    await worker.waitUntilReady();
    const dueInMs = 400;
    const id = await queue.add('due soon', { delay: dueInMs });
    const dueAt = (await queue.get(id))?.dueAt as number;
    await sleep(dueInMs / 2);
    const calls = await evalshaCalls();
    h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
    await waitFor(() => runs.length > 0, leaseMs + 5_000, 'the job to run');
    await waitFor(async () => (await redis.raw.hexists(h.keys.jobs, id)) === 0, 2_000, 'the ack');
    assert.ok((await evalshaCalls()) - calls >= 2, 'claim, then the resent claim');
    await sleep(300);
    assert.deepEqual(
      runs.map(r => r.attempt),
      [1],
      'ran once, as attempt 1',
    );
    const lateMs = (runs[0]?.at ?? 0) - dueAt;
    assert.ok(lateMs >= 0 && lateMs < leaseMs, `ran ${lateMs} ms after due, before the lease (${leaseMs} ms) ran out`);
    assert.equal((await counters(h)).reaped ?? 0, 0);
    t.diagnostic(`Worker: job ran ${lateMs} ms after due, after its first claim's reply was lost (lease ${leaseMs} ms)`);
  });

  // Before claims carried an id, the claim nobody heard counted as an attempt, and with maxAttempts 1
  // the job was dead-lettered ("lease expired on attempt 1") although no handler ever ran.
  it('a job with maxAttempts 1 whose claim reply is lost still runs', async t => {
    const h = await harness(t);
    const queue = h.own(new Queue<string>(h.name, { connection: h.proxy.url }));
    const runs: number[] = [];
    const worker = h.own(
      new Worker<string>(h.name, job => void runs.push(job.attempt), { connection: h.viaProxy(), leaseMs: 500, maxAttempts: 1 }),
    );
    worker.on('error', () => undefined);
    await worker.waitUntilReady();
    const id = await queue.add('x', { delay: 300 });
    await sleep(150);
    h.proxy.setMode(dropRepliesThenReset(RESET_AFTER_MS));
    await sleep(1_500);
    assert.equal((await queue.get(id))?.state ?? 'completed', 'completed', JSON.stringify(await queue.get(id)));
    assert.equal(runs.length, 1);
  });
});

describe('fault proxy: latency and blackholes', () => {
  /**
   * Worker `holder` goes through the proxy and takes the job; worker `observer` connects straight
   * to Redis once the holder runs it, and takes the job only if the holder's lease runs out.
   */
  async function holderAndObserver(t: TestContext, options: { leaseMs: number; holderMs: number }) {
    const h = await harness(t);
    const queue = h.own(new Queue<string>(h.name, { connection: redis.url }));
    const runs: { who: string; attempt: number; aborted: boolean; at: number }[] = [];
    const outcomes: string[] = [];
    const handler = (who: string, ms: number) => async (job: Job<string>) => {
      const run = { who, attempt: job.attempt, aborted: false, at: Date.now() };
      runs.push(run);
      job.signal.addEventListener('abort', () => (run.aborted = true));
      await sleep(ms);
    };
    const holder = h.own(
      new Worker<string>(h.name, handler('holder', options.holderMs), {
        connection: h.proxy.url,
        leaseMs: options.leaseMs,
        concurrency: 1,
      }),
    );
    for (const event of ['completed', 'stale'] as const) holder.on(event, () => outcomes.push(`holder ${event}`));
    holder.on('error', () => undefined);
    await holder.waitUntilReady();
    const id = await queue.add('long job');
    await waitFor(() => runs.length === 1, 5_000, 'the holder to take the job');
    const observer = h.own(
      new Worker<string>(h.name, handler('observer', 10), { connection: redis.url, leaseMs: options.leaseMs, concurrency: 1 }),
    );
    for (const event of ['completed', 'stale'] as const) observer.on(event, () => outcomes.push(`observer ${event}`));
    observer.on('error', () => undefined);
    await observer.waitUntilReady();
    return { h, id, runs, outcomes, claimedAt: runs[0]?.at as number };
  }

  it('200 ms of latency each way does not expire a 3 s lease: renewals keep a 5 s job alive', async t => {
    const leaseMs = 3_000;
    const { h, id, runs, outcomes } = await holderAndObserver(t, { leaseMs, holderMs: 5_000 });
    h.proxy.setMode(latency(200));
    await waitFor(() => outcomes.length > 0, 10_000, 'the holder to finish');
    h.proxy.setMode('pass');
    assert.deepEqual(outcomes, ['holder completed']);
    assert.deepEqual(
      runs.map(r => [r.who, r.attempt, r.aborted]),
      [['holder', 1, false]],
    );
    assert.equal(await redis.raw.hexists(h.keys.jobs, id), 0);
    const c = await counters(h);
    assert.equal(c.reaped ?? 0, 0, 'no false lease expiry');
    assert.equal(c.completed, 1);
  });

  it('a blackhole shorter than lease - renewal interval causes no duplicate', async t => {
    const leaseMs = 3_000; // renewed every 1 s: a 1.5 s outage leaves at least 0.5 s of lease
    const { h, id, runs, outcomes, claimedAt } = await holderAndObserver(t, { leaseMs, holderMs: 4_000 });
    await sleep(Math.max(0, claimedAt + 1_200 - Date.now()));
    h.proxy.setMode(blackhole);
    await sleep(1_500);
    h.proxy.setMode('pass');
    await waitFor(() => outcomes.length > 0, 10_000, 'the holder to finish');
    await sleep(300);
    assert.deepEqual(outcomes, ['holder completed']);
    assert.deepEqual(
      runs.map(r => [r.who, r.attempt, r.aborted]),
      [['holder', 1, false]],
    );
    assert.equal(await redis.raw.hexists(h.keys.jobs, id), 0);
    assert.equal((await counters(h)).reaped ?? 0, 0);
  });

  it("a blackhole longer than the lease: the job runs again elsewhere, the frozen holder's late ack is stale", async t => {
    const leaseMs = 2_000;
    const { h, id, runs, outcomes, claimedAt } = await holderAndObserver(t, { leaseMs, holderMs: 2_000 });
    await sleep(Math.max(0, claimedAt + 300 - Date.now()));
    h.proxy.setMode(blackhole);
    // The lease's end on the server's clock (the same machine's clock as Date.now()): the holder's
    // handler started a little after the claim ran, so claimedAt + leaseMs is no bound to judge by.
    const leaseEndsAt = Number(await redis.raw.zscore(h.keys.active, id));
    // The lease (last renewed before the blackhole) runs out; the observer reaps and runs the job.
    await waitFor(() => runs.length === 2, leaseMs + 3_000, 'the observer to run the job');
    await waitFor(() => outcomes.includes('observer completed'), 2_000, 'the observer to complete it');
    const redeliveredMs = (runs[1]?.at as number) - claimedAt;
    await sleep(Math.max(0, claimedAt + leaseMs + 1_000 - Date.now()));
    h.proxy.setMode('pass'); // the held renewals and the late ack reach Redis now
    await waitFor(() => outcomes.length === 2, 5_000, "the holder's late ack");
    assert.deepEqual(outcomes.sort(), ['holder stale', 'observer completed']);
    assert.deepEqual(
      runs.map(r => [r.who, r.attempt]),
      [
        ['holder', 1],
        ['observer', 2],
      ],
      'the documented duplicate, no more',
    );
    assert.equal(await redis.raw.hexists(h.keys.jobs, id), 0);
    const c = await counters(h);
    assert.equal(c.completed, 1, 'completed once');
    assert.equal(c.reaped, 1);
    assert.ok(
      leaseEndsAt >= claimedAt + leaseMs - 1_000,
      `the lease ends at ${leaseEndsAt}, ${leaseEndsAt - claimedAt} ms after the holder started`,
    );
    assert.ok((runs[1]?.at as number) >= leaseEndsAt, `redelivered ${leaseEndsAt - (runs[1]?.at as number)} ms before the lease ran out`);
    t.diagnostic(`blackhole: the observer ran the job ${redeliveredMs} ms after the holder's claim (lease ${leaseMs} ms)`);
  });
});

describe('fault proxy: resets under load', () => {
  it('resetAll() every 300 ms while 3,000 jobs are added and run by 2 workers: 0 lost, 0 early, duplicates only after a lease ran out', async t => {
    const h = await harness(t);
    const total = 3_000;
    const leaseMs = 1_500;
    const queue = h.own(new Queue<number>(h.name, { connection: h.viaProxy() }));
    const starts = new Map<string, { attempt: number; at: number; dueAt: number; worker: number }[]>();
    const stale: string[] = [];
    const workers = [0, 1].map(n => {
      const worker = h.own(
        new Worker<number>(
          h.name,
          async job => {
            const list = starts.get(job.id) ?? [];
            list.push({ attempt: job.attempt, at: Date.now(), dueAt: job.dueAt, worker: n });
            starts.set(job.id, list);
            if (job.payload % 7 === 0) await sleep(job.payload % 20);
          },
          { connection: h.viaProxy(), leaseMs, concurrency: 20, maxAttempts: 10 },
        ),
      );
      worker.on('error', () => undefined);
      worker.on('stale', job => stale.push(job.id));
      return worker;
    });
    await Promise.all(workers.map(worker => worker.waitUntilReady()));

    const startedAt = Date.now();
    // 2 ms each way keeps commands and replies inside the proxy when it resets: some commands are
    // cut before they ran, some replies after (a claim, an ack or an add that ran but whose answer is lost).
    h.proxy.setMode(latency(2));
    const resetter = setInterval(() => h.proxy.resetAll(), 300);
    t.after(() => clearInterval(resetter));
    const ids: string[] = [];
    for (let n = 0; n < total; n += 100) {
      const batch = Array.from({ length: 100 }, (_, k) => ({ payload: n + k, delay: ((n + k) * 7919) % 3_000 }));
      ids.push(...(await queue.addBulk(batch)));
      await sleep(30);
    }
    await waitFor(() => ids.every(id => starts.has(id)), 20_000, 'every job to start');
    await waitFor(async () => (await redis.raw.hlen(h.keys.jobs)) === 0, 10_000, 'every job to be acked');
    clearInterval(resetter);
    h.proxy.setMode('pass');
    const elapsedMs = Date.now() - startedAt;

    const c = await counters(h);
    const duplicates = [...starts.values()].filter(list => list.length > 1);
    const early = [...starts.values()].flat().filter(start => start.at < start.dueAt);
    assert.equal(new Set(ids).size, total);
    assert.equal(c.added, total, 'no add created a second job');
    assert.equal(c.completed, total, 'every job completed once: 0 lost');
    assert.equal(c.dead ?? 0, 0);
    assert.deepEqual(early, [], '0 early');
    // A job runs twice only if a lease of it ran out: every extra start has a reap behind it.
    const extraStarts = duplicates.reduce((sum, list) => sum + list.length - 1, 0);
    assert.ok(extraStarts <= (c.reaped ?? 0), `${extraStarts} extra starts, ${c.reaped ?? 0} leases reaped`);
    for (const list of duplicates)
      assert.ok(
        list.every((start, i) => i === 0 || start.attempt > (list[i - 1]?.attempt ?? 0)),
        'a later start has a later attempt',
      );
    const snapshotAfter = await snapshot(h);
    assert.deepEqual([snapshotAfter.due.length, snapshotAfter.active.length, snapshotAfter.dead.length], [0, 0, 0]);
    const stats = h.proxy.stats();
    assert.ok(stats.resets >= 20, `${stats.resets} resets`);
    t.diagnostic(
      `resets: ${stats.resets} over ${elapsedMs} ms; accepted ${stats.accepted} connections; ` +
        `bytes cut: ${stats.discardedUpBytes} of commands, ${stats.discardedDownBytes} of replies; reaped ${c.reaped ?? 0}; ` +
        `jobs started twice ${duplicates.length}; stale settles ${c.stale ?? 0} (worker 'stale' events ${stale.length})`,
    );
  });
});
