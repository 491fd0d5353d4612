// Queue limits (issue 10): `rate` and `concurrency` stored with the queue, obeyed by every Worker
// and PullConsumer across partitions; changed limits take effect at the next claim. Real Redis.
// The same with real worker processes and SIGKILL: test/faults/limits-processes.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PullConsumer, Queue, ValidationError, Worker, type Job } from '../../src/index.js';
import { limiterKeys } from '../../src/store/redis/keys.js';
import { busiestWindow, mostOverlapping, mostStartsAtHandlers } from '../helpers/limits.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function queue(name: string, partitions?: number): Queue {
  return redis.track(new Queue(name, { connection: redis.url, partitions }));
}

function worker(name: string, handler: (job: Job<unknown>) => Promise<void> | void, concurrency = 10): Worker {
  return redis.track(new Worker(name, handler, { connection: redis.url, concurrency }));
}

async function fill(q: Queue, count: number): Promise<void> {
  await q.addBulk(Array.from({ length: count }, (_, n) => ({ payload: n })));
}

/** Script calls Redis ran so far (commandstats of EVALSHA and EVAL). */
async function scriptCalls(): Promise<number> {
  return [...(await redis.raw.info('commandstats')).matchAll(/cmdstat_(?:eval(?:sha)?|fcall):calls=(\d+)/g)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
}

// First in the file: no other worker runs yet, so the server's script calls are this worker's.
describe('an idle worker of a limited queue', () => {
  it('makes one call per safety interval, as on an unlimited queue', async () => {
    const q = queue(uniqueQueue('limits-idle'));
    await q.setLimits({ rate: { max: 100, per: '1s' }, concurrency: 5 });
    await fill(q, 5);
    let seen = 0;
    worker(q.name, () => void (seen += 1));
    await waitFor(() => seen === 5);
    await sleep(1_200); // the drain's last claims and the slots' frees are over
    const before = await scriptCalls();
    await sleep(3_000);
    const calls = (await scriptCalls()) - before;
    assert.ok(calls <= 4, `${calls} script calls in 3 s of idle`);
  });
});

describe('setLimits / getLimits', () => {
  it('stores the limits with the queue, merges a change, clears with null', async () => {
    const q = queue(uniqueQueue('limits'));
    assert.deepEqual(await q.getLimits(), {});
    assert.deepEqual(await q.setLimits({ rate: { max: 100, per: '1s' }, concurrency: 5 }), {
      rate: { max: 100, per: 1_000 },
      concurrency: 5,
    });
    assert.deepEqual(await q.setLimits({ expireAfter: '1h' }), { rate: { max: 100, per: 1_000 }, concurrency: 5, expireAfter: 3_600_000 });
    assert.deepEqual(await q.setLimits({ rate: null }), { concurrency: 5, expireAfter: 3_600_000 });
    // Another process sees them.
    const other = queue(q.name);
    assert.deepEqual(await other.getLimits(), { concurrency: 5, expireAfter: 3_600_000 });
    assert.deepEqual(await q.setLimits({ concurrency: null, expireAfter: null }), {});
    assert.deepEqual(await other.getLimits(), {});
  });

  it('refuses bad limits with a typed error naming the option, and writes nothing', async () => {
    const q = queue(uniqueQueue('limits-bad'));
    await q.setLimits({ concurrency: 2 });
    const bad: unknown[] = [
      { rate: { max: 0, per: '1s' } },
      { rate: { max: 1e9, per: '1s' } },
      { rate: { max: 10 } },
      { rate: { max: 10, per: 'often' } },
      { rate: { max: 10, per: '2d' } },
      { rate: { max: 10, per: '1s', burst: 3 } },
      { rate: 100 },
      { concurrency: 0 },
      { concurrency: 1.5 },
      { concurrency: '5' },
      { expireAfter: -1 },
      { expireAfter: Number.POSITIVE_INFINITY },
      { concurency: 5 },
      null,
    ];
    for (const input of bad) {
      await assert.rejects(q.setLimits(input as never), ValidationError, JSON.stringify(input));
    }
    await assert.rejects(q.setLimits({ rate: { max: 0, per: '1s' } }), /`rate.max`/);
    await assert.rejects(q.setLimits({ rate: { max: 5, per: 'often' as never } }), /`rate.per`/);
    await assert.rejects(q.setLimits({ concurency: 5 } as never), /Unknown option `concurency`/);
    assert.deepEqual(await q.getLimits(), { concurrency: 2 });
  });

  it('an unlimited queue leaves no limiter key behind', async () => {
    const q = queue(uniqueQueue('limits-none'));
    await fill(q, 20);
    const seen: number[] = [];
    worker(q.name, job => void seen.push(job.payload as number));
    await waitFor(() => seen.length === 20);
    const keys = limiterKeys('sg', q.name);
    assert.equal(await redis.raw.exists(keys.starts, keys.slots), 0);
  });
});

describe('rate', () => {
  for (const partitions of [1, 3]) {
    it(`holds over two workers and ${partitions} partition(s): no window of \`per\` at the handlers holds more than the rate allows, and it drains at the rate`, async () => {
      const q = queue(uniqueQueue(`rate-${partitions}`), partitions);
      await q.setLimits({ rate: { max: 20, per: 500 } });
      await fill(q, 120);
      const starts: number[] = [];
      const handler = () => void starts.push(Date.now());
      const began = Date.now();
      worker(q.name, handler, 10);
      worker(q.name, handler, 10);
      await waitFor(() => starts.length === 120, 20_000, '120 starts');
      const tookMs = Date.now() - began;
      const most = mostStartsAtHandlers({ max: 20, per: 500 });
      assert.ok(busiestWindow(starts, 500) <= most, `busiest 500 ms window: ${busiestWindow(starts, 500)} starts (at most ${most})`);
      // 120 starts at 40/s: the last at ~2.975 s; never much sooner (the limit holds), not much later.
      assert.ok(tookMs >= 2_700, `drained in ${tookMs} ms: faster than the rate allows`);
      assert.ok(tookMs < 8_000, `drained in ${tookMs} ms`);
      const stats = await q.stats();
      assert.equal(stats.ready, 0);
    });
  }

  it('with a concurrency limit too, the rate is used to the full: each limit that ran out says when it has room again', async () => {
    const q = queue(uniqueQueue('rate-conc'));
    await q.setLimits({ rate: { max: 10, per: '1s' }, concurrency: 2 });
    await fill(q, 20);
    const starts: number[] = [];
    const began = Date.now();
    worker(q.name, async () => {
      starts.push(Date.now());
      await sleep(20);
    });
    await waitFor(() => starts.length === 20, 15_000, '20 starts');
    const tookMs = Math.max(...starts) - began;
    assert.ok(
      busiestWindow(starts, 1_000) <= mostStartsAtHandlers({ max: 10, per: 1_000 }),
      `busiest 1 s window: ${busiestWindow(starts, 1_000)}`,
    );
    // 20 starts at 10/s: the last ~1.9 s after the first; waiting out a window per token would take 10 s.
    assert.ok(tookMs >= 1_700 && tookMs < 4_000, `drained in ${tookMs} ms`);
  });

  it('a refused worker sleeps until a token is due: no polling storm', async () => {
    const q = queue(uniqueQueue('rate-sleep'));
    await q.setLimits({ rate: { max: 2, per: 2_000 } });
    await fill(q, 6);
    const starts: number[] = [];
    worker(q.name, () => void starts.push(Date.now()));
    await waitFor(() => starts.length >= 2);
    const before = await scriptCalls();
    await sleep(1_500);
    const after = await scriptCalls();
    // A worker held by the limit calls the limiter when a token is due (one a second here) and
    // claims it; the idle workers of the earlier tests claim once a second each. Polling: thousands.
    assert.ok(after - before < 40, `${after - before} script calls in 1.5 s while held by the limit`);
    const stats = await q.stats();
    assert.ok(stats.limited > 0 && stats.limited <= stats.ready, `limited ${stats.limited}, ready ${stats.ready}`);
  });

  it('job.heldByLimit tells the jobs that waited on the limit from those that did not', async () => {
    const q = queue(uniqueQueue('held'));
    await q.setLimits({ rate: { max: 5, per: 500 } });
    const held: boolean[] = [];
    worker(q.name, job => void held.push(job.heldByLimit === true));
    await q.add('alone'); // nothing else due: the limit holds nothing back
    await waitFor(() => held.length === 1);
    await sleep(600);
    await fill(q, 15); // 15 due at once at 5 per 500 ms: most wait on the limit
    await waitFor(() => held.length === 16, 10_000);
    assert.equal(held[0], false, 'a job the limit did not hold back');
    assert.ok(held.slice(1).filter(Boolean).length >= 8, `held: ${held.join(',')}`);
    const plain = queue(uniqueQueue('held-none'));
    const unlimited: boolean[] = [];
    worker(plain.name, job => void unlimited.push(job.heldByLimit === true));
    await fill(plain, 20);
    await waitFor(() => unlimited.length === 20);
    assert.ok(unlimited.every(value => !value));
  });
});

describe('concurrency', () => {
  it('at most `concurrency` handlers run at once over several workers and partitions', async () => {
    const q = queue(uniqueQueue('conc'), 2);
    await q.setLimits({ concurrency: 3 });
    await fill(q, 40);
    const spans: [number, number][] = [];
    const handler = async () => {
      const start = Date.now();
      await sleep(40);
      spans.push([start, Date.now()]);
    };
    worker(q.name, handler, 5);
    worker(q.name, handler, 5);
    worker(q.name, handler, 5);
    await waitFor(() => spans.length === 40, 20_000, '40 jobs');
    assert.ok(mostOverlapping(spans) <= 3, `${mostOverlapping(spans)} handlers at once`);
    assert.equal(mostOverlapping(spans), 3, 'the limit is used, not just obeyed');
    const keys = limiterKeys('sg', q.name);
    await waitFor(async () => (await redis.raw.zcard(keys.slots)) === 0, 5_000, 'every slot freed');
  });

  it('a PullConsumer takes no more jobs than the free slots, and an ack frees one', async () => {
    const q = queue(uniqueQueue('conc-pull'));
    await q.setLimits({ concurrency: 3 });
    await fill(q, 10);
    const consumer = redis.track(new PullConsumer(q.name, { connection: redis.url }));
    const first = await consumer.claim({ max: 10 });
    assert.equal(first.length, 3);
    assert.deepEqual(await consumer.claim({ max: 10 }), []);
    assert.equal(await consumer.ack(first[0]!.id, first[0]!.token), 'acked');
    await sleep(50); // the slot is freed in the background after the ack
    assert.equal((await consumer.claim({ max: 10 })).length, 1);
  });

  it('takes effect at once for running workers, and clearing it lets them go', async () => {
    const q = queue(uniqueQueue('conc-change'));
    const spans: [number, number][] = [];
    let phase = 'free';
    const byPhase: Record<string, [number, number][]> = { free: [], limited: [], cleared: [] };
    worker(
      q.name,
      async () => {
        const mine = phase;
        const start = Date.now();
        await sleep(30);
        byPhase[mine]!.push([start, Date.now()]);
        spans.push([start, Date.now()]);
      },
      8,
    );
    await fill(q, 24);
    await waitFor(() => spans.length === 24);
    assert.ok(mostOverlapping(byPhase.free!) > 1);
    phase = 'limited';
    await q.setLimits({ concurrency: 1 });
    await fill(q, 12);
    await waitFor(() => spans.length === 36);
    assert.equal(mostOverlapping(byPhase.limited!), 1);
    phase = 'cleared';
    await q.setLimits({ concurrency: null });
    await fill(q, 24);
    await waitFor(() => spans.length === 60);
    assert.ok(mostOverlapping(byPhase.cleared!) > 1, 'parallel again once the limit is cleared');
  });
});
