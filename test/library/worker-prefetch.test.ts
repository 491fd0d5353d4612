import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

// The prefetch: jobs claimed ahead of free handler slots, held under lease until a slot frees.
const redis = useRedis({ appendOnly: false });

function queue<T = unknown>(name: string): Queue<T> {
  return redis.track(new Queue<T>(name, { connection: redis.url }));
}

/** A promise and its resolve, to hold handlers until the test lets them go. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>(resolve => (open = resolve));
  return { wait, open };
}

describe('Worker prefetch', () => {
  it('holds at most concurrency + prefetch jobs, and fills the prefetch', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const concurrency = 2;
    const prefetch = 3;
    const total = 30;
    const start = gate();
    let finished = 0;
    let done = 0;
    let peakRunning = 0;
    const worker = redis.track(
      new Worker(
        name,
        async () => {
          peakRunning = Math.max(peakRunning, worker.runningCount);
          await start.wait;
          await sleep(10);
          finished += 1;
        },
        { connection: redis.url, concurrency, prefetch },
      ),
    );
    worker.on('completed', () => void (done += 1));
    await q.addBulk(Array.from({ length: total }, (_, n) => ({ payload: n })));
    // Handlers held: the worker fills its slots and its prefetch, then waits.
    await waitFor(async () => (await q.stats()).active === concurrency + prefetch, 5_000, 'slots and prefetch full');
    assert.equal(worker.runningCount, concurrency);
    // A wake-up makes the worker look again: it has no room, so it takes nothing.
    await q.add('woken');
    await waitFor(async () => (await q.stats()).ready === total - concurrency - prefetch + 1, 5_000, 'the added job');
    start.open();
    let peakHeld = 0;
    // Sample what the worker holds through the drain: the active set, minus the jobs whose handler
    // finished and whose ack may be on its way (counted generously: finished by the time the reply
    // came, 'completed' not heard before the call was sent). So the figure never exceeds the truth.
    await waitFor(
      async () => {
        const doneBefore = done;
        const { active } = await q.stats();
        peakHeld = Math.max(peakHeld, active - (finished - doneBefore));
        return done === total + 1;
      },
      10_000,
      'all jobs',
    );
    assert.ok(peakHeld <= concurrency + prefetch, `held ${peakHeld} jobs at once`);
    assert.ok(peakRunning <= concurrency);
  });

  it('close() hands prefetched jobs back at once, while the running handler finishes', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const running = gate();
    let startsA = 0;
    const a = new Worker(
      name,
      async () => {
        startsA += 1;
        await running.wait;
      },
      { connection: redis.url, concurrency: 1, prefetch: 3, leaseMs: 60_000 },
    );
    await q.addBulk(Array.from({ length: 4 }, (_, n) => ({ payload: n })));
    await waitFor(async () => (await q.stats()).active === 4, 5_000, 'one running and three prefetched');
    const closed = a.close();
    let doneB = 0;
    redis.track(new Worker(name, () => void (doneB += 1), { connection: redis.url, safetyIntervalMs: 100 }));
    // With a 60 s lease, the prefetched jobs can only reach B now if A handed them back.
    await waitFor(() => doneB === 3, 3_000, 'the prefetched jobs at the other worker');
    running.open();
    await closed;
    assert.equal(startsA, 1, 'no prefetched job started in the closing worker');
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it("renews prefetched jobs' leases while they wait, so none is reaped or delivered twice", async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const total = 6;
    const attempts: number[] = [];
    // One slot, five jobs waiting behind it for up to 5 x 150 ms: well past the 300 ms lease.
    redis.track(
      new Worker(
        name,
        async job => {
          attempts.push(job.attempt);
          await sleep(150);
        },
        { connection: redis.url, concurrency: 1, prefetch: total - 1, leaseMs: 300 },
      ),
    );
    await q.addBulk(Array.from({ length: total }, (_, n) => ({ payload: n })));
    await waitFor(
      async () => {
        const stats = await q.stats();
        return stats.active + stats.ready === 0;
      },
      10_000,
      'all jobs',
    );
    assert.deepEqual(
      attempts,
      Array.from({ length: total }, () => 1),
    );
    assert.equal((await q.counters()).reaped, 0);
  });

  it('does not start a prefetched job whose lease may have run out: hands it back, it runs again at once', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const first = gate();
    let skewMs = 0;
    const runs: { payload: unknown; attempt: number }[] = [];
    // A 60 s lease: renewed every 20 s, so never within this test. The worker's clock jumping past
    // the lease stands for renewals that kept failing while the job waited.
    redis.track(
      new Worker(
        name,
        async job => {
          runs.push({ payload: job.payload, attempt: job.attempt });
          if (job.payload === 'first') await first.wait;
        },
        { connection: redis.url, concurrency: 1, prefetch: 1, leaseMs: 60_000, clock: () => Date.now() + skewMs },
      ),
    );
    await q.add('first');
    await waitFor(() => runs.length === 1, 5_000, 'the first job to start');
    await q.add('second');
    await waitFor(async () => (await q.stats()).active === 2, 5_000, 'the second job prefetched');
    skewMs = 120_000;
    first.open();
    // Dropped without a hand-back, it would wait out its 60 s lease; started anyway, it would be claimed once.
    await waitFor(() => runs.length === 2, 5_000, 'the second job');
    assert.deepEqual(runs, [
      { payload: 'first', attempt: 1 },
      { payload: 'second', attempt: 1 },
    ]);
    await waitFor(async () => (await q.stats()).active === 0, 5_000, 'the acks');
    const counters = await q.counters();
    assert.equal(counters.claimed, 3, 'the second job was handed back and claimed again');
    assert.equal(counters.reaped, 0);
  });

  it('drains a backlog in whole claims: never a claim of one job per freed slot while the prefetch feeds the handlers', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    const concurrency = 10;
    const total = 2_000;
    for (let n = 0; n < total; n += 500) await q.addBulk(Array.from({ length: 500 }, (_, k) => ({ payload: n + k })));
    const { limits, restore } = spyOnClaimLimits(name);
    try {
      let done = 0;
      const worker = redis.track(
        new Worker<number>(name, async () => undefined, { connection: redis.url, concurrency, prefetch: concurrency }),
      );
      worker.on('completed', () => void (done += 1));
      await waitFor(async () => done === total, 20_000, 'the backlog drained');
    } finally {
      restore();
    }
    // Capacity 20 jobs, so claims of 10 (half of it): a smaller one would mean a round trip spent
    // on a few jobs while the prefetch still held work for every slot.
    const small = limits.filter(limit => limit !== concurrency);
    assert.deepEqual(small, [], `claims of other sizes among ${limits.length}`);
    assert.ok(limits.length >= total / concurrency);
  });

  it('a fresh worker starts with small claims and doubles them while they come back full', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    const total = 8_000;
    for (let n = 0; n < total; n += 500) await q.addBulk(Array.from({ length: 500 }, (_, k) => ({ payload: n + k })));
    const { limits, restore } = spyOnClaimLimits(name);
    try {
      let done = 0;
      // Batches of 50, 50 calls at once plus as many prefetched: claims of up to 1,000 jobs.
      const worker = redis.track(
        new Worker<number>(name, async () => undefined, { connection: redis.url, concurrency: 50, batch: { size: 50 } }),
      );
      worker.on('completed', () => void (done += 1));
      await waitFor(async () => done === total, 20_000, 'the backlog drained');
    } finally {
      restore();
    }
    // A cold process answers a small first claim sooner; the full size comes after a few round trips.
    assert.ok((limits[0] ?? 0) <= 100, `the first claim asked for ${limits[0]}`);
    assert.equal(Math.max(...limits), 1_000, `claims grew to the full size: ${limits.join(', ')}`);
  });

  it('rejects a prefetch that is not a whole number in range', () => {
    assert.throws(() => new Worker('q', () => undefined, { connection: 'redis://127.0.0.1:1', prefetch: -1 }), /prefetch/);
    assert.throws(() => new Worker('q', () => undefined, { connection: 'redis://127.0.0.1:1', prefetch: 1.5 }), /prefetch/);
  });
});

/** Records what each claim of queue `name` asked for, observed on the real call, until `restore()`. */
function spyOnClaimLimits(name: string): { limits: number[]; restore: () => void } {
  const limits: number[] = [];
  const claim = PartitionStore.prototype.claim;
  PartitionStore.prototype.claim = function (this: PartitionStore, ...args: Parameters<PartitionStore['claim']>) {
    if (this.queue === name) limits.push(args[0]); // the other tests' workers may still be closing
    return claim.apply(this, args);
  };
  return { limits, restore: () => void (PartitionStore.prototype.claim = claim) };
}
