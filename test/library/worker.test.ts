import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaseLostError, PullConsumer, Queue, UnrecoverableError, Worker, type Job } from '../../src/index.js';
import { assertNeverEarlyAndOnTime } from '../helpers/lateness.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function queue<T = unknown>(name: string): Queue<T> {
  return redis.track(new Queue<T>(name, { connection: redis.url }));
}

/** The Redis server's clock, the one due times are decided on. */
async function serverNow(): Promise<number> {
  const [seconds, micros] = await redis.raw.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

describe('Worker', () => {
  it('processes a delayed job only after its delay (never early, read on the server), and on time', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    const serverLateness: number[] = [];
    const lateness: number[] = [];
    const worker = redis.track(
      new Worker<number>(
        name,
        async job => {
          lateness.push(Date.now() - job.dueAt);
          serverLateness.push((await serverNow()) - job.dueAt);
        },
        { connection: redis.url, concurrency: 20 },
      ),
    );
    await worker.waitUntilReady();
    await q.addBulk(Array.from({ length: 200 }, (_, i) => ({ payload: i, delay: 100 + i * 7 })));
    await waitFor(() => serverLateness.length === 200, 10_000, '200 jobs');
    assert.ok(Math.min(...serverLateness) >= 0, `a job started ${-Math.min(...serverLateness)} ms early on the server's clock`);
    assertNeverEarlyAndOnTime(lateness);
  });

  it('hands the handler id, payload, dueAt, attempt and an AbortSignal', async () => {
    const name = uniqueQueue();
    const q = queue<{ orderId: number }>(name);
    let seen: Job<{ orderId: number }> | undefined;
    redis.track(new Worker<{ orderId: number }>(name, job => void (seen = job), { connection: redis.url }));
    const id = await q.add({ orderId: 7 }, { id: 'order:7' });
    await waitFor(() => seen !== undefined, 5_000, 'the job');
    assert.equal(seen?.id, id);
    assert.equal(seen?.queue, name);
    assert.deepEqual(seen?.payload, { orderId: 7 });
    assert.equal(seen?.attempt, 1);
    assert.equal(seen?.maxAttempts, 3);
    assert.ok(seen?.signal instanceof AbortSignal && !seen.signal.aborted);
    await waitFor(async () => (await q.get(id)) === null, 2_000, 'the ack');
  });

  it('retries a failing job with backoff, then dead-letters it with the last error', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const attempts: number[] = [];
    const failed: (number | undefined)[] = [];
    let deadError: unknown;
    const worker = redis.track(
      new Worker(
        name,
        job => {
          attempts.push(Date.now());
          throw new Error(`boom on attempt ${job.attempt}`);
        },
        { connection: redis.url, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 200 } },
      ),
    );
    worker.on('failed', (_job, _error, retryAt) => failed.push(retryAt));
    worker.on('dead', (_job, error) => (deadError = error));
    const id = await q.add({ n: 1 });
    await waitFor(() => deadError !== undefined, 5_000, 'the job to die');
    assert.equal(attempts.length, 3);
    assert.ok((attempts[1] as number) - (attempts[0] as number) >= 195, 'backoff respected between attempts 1 and 2');
    assert.ok((attempts[2] as number) - (attempts[1] as number) >= 195, 'backoff respected between attempts 2 and 3');
    assert.equal(failed.length, 3);
    assert.equal(failed[2], undefined, 'the last failure has no retry');
    const dead = await q.get(id);
    assert.equal(dead?.state, 'dead');
    assert.equal(dead?.attempts, 3);
    assert.match(dead?.lastError ?? '', /boom on attempt 3/);
    const { jobs: listed } = await q.listDead();
    assert.deepEqual(
      listed.map(job => job.id),
      [id],
    );
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 1, paused: false, limited: 0, completed: 0 });
  });

  it('sends an UnrecoverableError straight to the dead letters', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let calls = 0;
    redis.track(
      new Worker(
        name,
        () => {
          calls += 1;
          throw new UnrecoverableError('malformed order');
        },
        { connection: redis.url, maxAttempts: 5 },
      ),
    );
    const id = await q.add('x');
    await waitFor(async () => (await q.get(id))?.state === 'dead', 5_000, 'the job to die');
    assert.equal(calls, 1);
    assert.match((await q.get(id))?.lastError ?? '', /malformed order/);
  });

  it("honours a job's own maxAttempts and backoff over the worker's", async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let calls = 0;
    redis.track(
      new Worker(
        name,
        () => {
          calls += 1;
          throw new Error('no');
        },
        { connection: redis.url, maxAttempts: 10, backoff: { type: 'fixed', delayMs: 60_000 } },
      ),
    );
    const id = await q.add('x', { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 } });
    await waitFor(async () => (await q.get(id))?.state === 'dead', 5_000, 'the job to die');
    assert.equal(calls, 2);
  });

  it('retries dead letters one by one or all at once, and purges them', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let fail = true;
    let completed = 0;
    const worker = redis.track(
      new Worker(
        name,
        () => {
          if (fail) throw new UnrecoverableError('not yet');
        },
        { connection: redis.url },
      ),
    );
    worker.on('completed', () => (completed += 1));
    const ids = await q.addBulk([{ payload: 1 }, { payload: 2 }, { payload: 3 }, { payload: 4 }]);
    await waitFor(async () => (await q.stats()).dead === 4, 5_000, 'four dead letters');
    fail = false;
    assert.equal(await q.retryDead(ids[0] as string), 1);
    await waitFor(() => completed === 1, 5_000, 'the retried job');
    assert.equal(await q.retryDead(), 2 + 1);
    await waitFor(() => completed === 4, 5_000, 'all retried jobs');
    fail = true;
    await q.addBulk([{ payload: 5 }, { payload: 6 }]);
    await waitFor(async () => (await q.stats()).dead === 2, 5_000, 'two dead letters');
    assert.equal(await q.purgeDead(), 2);
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    assert.equal(await redis.raw.hlen(`sg:{${name}:0}:jobs`), 0);
  });

  it('batch mode hands the handler up to `size` due jobs at once', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    const batches: number[][] = [];
    await q.addBulk(Array.from({ length: 250 }, (_, i) => ({ payload: i })));
    redis.track(
      new Worker<number>(name, jobs => void batches.push(jobs.map(job => job.payload)), {
        connection: redis.url,
        batch: { size: 100 },
        concurrency: 1,
      }),
    );
    await waitFor(() => batches.flat().length === 250, 5_000, 'all jobs');
    assert.ok(batches.every(batch => batch.length <= 100));
    assert.ok(
      batches.some(batch => batch.length === 100),
      `batch sizes ${batches.map(b => b.length)}`,
    );
    assert.deepEqual(
      batches.flat(),
      Array.from({ length: 250 }, (_, i) => i),
      'due order kept',
    );
  });

  it('one worker serves several queues', async () => {
    const names = [uniqueQueue(), uniqueQueue(), uniqueQueue()];
    const seen = new Set<string>();
    redis.track(new Worker(names, job => void seen.add(`${job.queue}/${job.payload}`), { connection: redis.url }));
    for (const name of names) await queue(name).add('hello', { delay: 30 });
    await waitFor(() => seen.size === 3, 5_000, 'a job from each queue');
    assert.deepEqual([...seen].sort(), names.map(name => `${name}/hello`).sort());
  });

  it('runs at most `concurrency` handlers at once', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let running = 0;
    let peak = 0;
    let done = 0;
    redis.track(
      new Worker(
        name,
        async () => {
          running += 1;
          peak = Math.max(peak, running);
          await sleep(20);
          running -= 1;
          done += 1;
        },
        { connection: redis.url, concurrency: 4 },
      ),
    );
    await q.addBulk(Array.from({ length: 40 }, () => ({ payload: 0 })));
    await waitFor(() => done === 40, 5_000, 'all jobs');
    assert.equal(peak, 4);
  });

  it('renews the lease of a handler that runs longer than leaseMs, so it is not delivered twice', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let starts = 0;
    const longHandler = async () => {
      starts += 1;
      await sleep(1_500);
    };
    // Two workers compete: if the holder's lease lapsed, the other would take the job again.
    redis.track(new Worker(name, longHandler, { connection: redis.url, leaseMs: 400 }));
    redis.track(new Worker(name, longHandler, { connection: redis.url, leaseMs: 400 }));
    const id = await q.add('long');
    await waitFor(async () => (await q.get(id)) === null, 5_000, 'the long job');
    assert.equal(starts, 1);
    assert.equal((await q.counters()).reaped, 0);
  });

  it('close() waits for running handlers to finish', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let finished = false;
    const worker = new Worker(
      name,
      async () => {
        await sleep(300);
        finished = true;
      },
      { connection: redis.url },
    );
    const id = await q.add('x');
    await waitFor(async () => (await q.get(id))?.state === 'active', 5_000, 'the job to start');
    await worker.close();
    assert.equal(finished, true);
    assert.equal(await q.get(id), null, 'acked before close resolved');
  });

  it('close() releases handlers that outlive closeTimeoutMs, so the job is delivered again at once', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    let aborted: unknown;
    const slow = new Worker(
      name,
      job =>
        new Promise<void>(resolve => {
          job.signal.addEventListener('abort', () => {
            aborted = job.signal.reason;
            resolve();
          });
        }),
      { connection: redis.url, leaseMs: 60_000, closeTimeoutMs: 100 },
    );
    const id = await q.add('x');
    await waitFor(async () => (await q.get(id))?.state === 'active', 5_000, 'the job to start');
    await slow.close();
    assert.ok(aborted instanceof LeaseLostError);
    const released = await q.get(id);
    assert.equal(released?.state, 'ready', 'back in the queue, not waiting for a 60 s lease');
    assert.equal(released?.attempts, 0, 'the interrupted attempt does not count');
    let second: number | undefined;
    redis.track(new Worker(name, job => void (second = job.attempt), { connection: redis.url }));
    await waitFor(() => second !== undefined, 2_000, 'the redelivery');
    assert.equal(second, 1);
  });

  it('close() while the worker is still starting leaves no connection open (it does not subscribe afterwards)', async () => {
    const name = uniqueQueue();
    await queue(name).add('x', { delay: '1h' });
    const { hostname, port } = new URL(redis.url);
    const clientsNow = async () =>
      String(await redis.raw.client('LIST'))
        .trim()
        .split('\n').length;
    const before = await clientsNow();
    for (let round = 0; round < 20; round++) {
      // A connection object of its own each round: the worker opens (and must close) its own clients.
      const worker = new Worker(name, () => undefined, { connection: { host: hostname, port: Number(port) } });
      await new Promise(resolve => setImmediate(resolve));
      await worker.close();
    }
    await sleep(300); // a subscribe that raced the close would have connected by now
    assert.equal(await clientsNow(), before, 'every connection a closed worker opened is closed');
  });

  it('rejects an ack after the lease was lost (fencing token) and counts it', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const events: string[] = [];
    // Renewal every leaseMs/3 cannot happen while the event loop is blocked: a frozen process.
    const worker = redis.track(
      new Worker(
        name,
        job => {
          if (job.attempt === 1) {
            const until = Date.now() + 800;
            while (Date.now() < until) {
              /* blocked: no lease renewal */
            }
          }
        },
        { connection: redis.url, leaseMs: 300 },
      ),
    );
    worker.on('stale', job => events.push(`stale ${job.attempt}`));
    worker.on('completed', job => events.push(`completed ${job.attempt}`));
    const id = await q.add('x');
    await waitFor(() => events.length === 2, 5_000, 'the stale ack and the redelivery');
    assert.deepEqual(events.sort(), ['completed 2', 'stale 1']);
    const counters = await q.counters();
    assert.equal(counters.stale, 1);
    assert.equal(counters.reaped, 1);
    assert.equal(counters.completed, 1);
    assert.equal(await q.get(id), null);
  });

  it("reports a late ack as stale when another delivery completed the job, whatever the worker's own clock says", async () => {
    // The interleaving of a worker frozen (SIGSTOP) after its handler ended and before its ack reached
    // Redis: meanwhile the lease ran out in Redis, another delivery completed the job. The worker's
    // clock still says the lease holds; only the script knows which token completed the job.
    const name = uniqueQueue();
    const q = queue(name);
    const other = redis.track(new PullConsumer(name, { connection: redis.url }));
    const events: string[] = [];
    let finish!: () => void;
    const finished = new Promise<void>(resolve => (finish = resolve));
    let started!: () => void;
    const running = new Promise<void>(resolve => (started = resolve));
    const worker = redis.track(
      new Worker(
        name,
        async () => {
          started();
          await finished;
          // prefetch 0: this worker must not claim (and reap) the job again itself while its handler runs.
        },
        { connection: redis.url, leaseMs: 60_000, concurrency: 1, prefetch: 0 },
      ),
    );
    worker.on('stale', job => events.push(`stale ${job.attempt}`));
    worker.on('completed', job => events.push(`completed ${job.attempt}`));
    const id = await q.add('x');
    await running;
    await redis.raw.zadd(`sg:{${name}:0}:active`, 'XX', 1, id); // the lease ran out in Redis
    const [again] = await other.claim({ leaseMs: 60_000 });
    assert.equal(again?.attempt, 2);
    assert.equal(await other.ack(id, again!.token), 'acked');
    finish();
    await waitFor(() => events.length === 1, 5_000, "the worker's outcome");
    assert.deepEqual(events, ['stale 1']);
    const counters = await q.counters();
    assert.deepEqual([counters.completed, counters.stale], [1, 1]);
  });
});
