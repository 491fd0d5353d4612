import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acquireConnection } from '../../src/connection/connection.js';
import { Queue, ValidationError, Worker, type Job } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { newGroup, splitRound, type QueueGroup } from '../../src/worker/priority.js';
import { partitionOf } from '../../src/store/placement.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

// Queue priorities across the queues one Worker serves: `weights` and `strictPriority`.
const redis = useRedis({ appendOnly: false });

function queue(name: string, partitions?: number): Queue {
  return redis.track(new Queue(name, { connection: redis.url, partitions }));
}

/** Adds `count` jobs, due now or at `at`; returns their ids. */
async function fill(q: Queue, count: number, label: string, at?: number): Promise<string[]> {
  const ids: string[] = [];
  for (let from = 0; from < count; from += 1_000) {
    ids.push(
      ...(await q.addBulk(Array.from({ length: Math.min(1_000, count - from) }, (_, n) => ({ payload: `${label}-${from + n}`, at })))),
    );
  }
  return ids;
}

/** A promise and its resolve, to hold handlers until the test lets them go. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>(resolve => (open = resolve));
  return { wait, open };
}

/**
 * Two queues both full of due jobs, one Worker with `weights` over them: the queue of each of the
 * first `starts` handler starts. The handler only records (so the claims, not the handlers, set
 * the pace: the hardest case for the shares, with batching and the prefetch on).
 */
async function startsUnderWeights(
  weights: [number, number],
  options: { partitions?: number; jobs?: number; starts?: number; concurrency?: number; handlerTurns?: number } = {},
): Promise<{ order: string[]; first: string; second: string }> {
  const { partitions, jobs = 2_000, starts = 350, concurrency = 10 } = options;
  const first = uniqueQueue('urgent');
  const second = uniqueQueue('bulk');
  await fill(queue(first, partitions), jobs, 'a');
  await fill(queue(second, partitions), jobs, 'b');
  const order: string[] = [];
  const enough = gate();
  const worker = new Worker(
    [first, second],
    async (job: Job<unknown>) => {
      order.push(job.queue);
      if (order.length === starts) enough.open();
      for (let turn = 0; turn < (options.handlerTurns ?? 0); turn++) await new Promise(resolve => setImmediate(resolve));
    },
    { connection: redis.url, concurrency, partitions, weights: { [first]: weights[0], [second]: weights[1] } },
  );
  await enough.wait;
  await worker.close();
  return { order: order.slice(0, starts), first, second };
}

function shareOf(order: readonly string[], name: string): number {
  return order.filter(queueName => queueName === name).length / order.length;
}

/** Within 10% of the expected share (relative: 6/7 +- 0.086). */
function assertShare(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= 0.1 * expected, `${what}: share ${actual.toFixed(3)}, expected ${expected.toFixed(3)} +- 10%`);
}

describe("splitRound (the weights' arithmetic)", () => {
  /** Runs rounds of `units` as the claim loop does: each share sent is charged to its queue, unless blocked. */
  function rounds(
    groups: QueueGroup[],
    units: number,
    count: number,
    blocked: (round: number, index: number) => boolean = () => false,
  ): number[] {
    const taken = groups.map(() => 0);
    for (let round = 0; round < count; round++) {
      for (const group of groups) group.due = true;
      assert.ok(splitRound(groups, units));
      assert.equal(
        groups.reduce((sum, group) => sum + group.share, 0),
        units,
        'the shares add up to the round',
      );
      groups.forEach((group, index) => {
        if (blocked(round, index)) return;
        group.pass += group.share / group.weight;
        taken[index] = (taken[index] as number) + group.share;
      });
    }
    return taken;
  }

  it('splits whole handler calls in proportion, carrying the fractions from round to round', () => {
    assert.deepEqual(rounds([newGroup(0, 1, 6), newGroup(1, 2, 1)], 10, 7), [60, 10]);
    assert.deepEqual(rounds([newGroup(0, 1, 3), newGroup(1, 2, 1), newGroup(2, 3, 1)], 1, 50), [30, 10, 10]);
    assert.deepEqual(rounds([newGroup(0, 1, 1000), newGroup(1, 2, 1)], 7, 143), [1000, 1]);
  });

  it('gives a queue whose claim could not be sent its share back, and the others no more than theirs meanwhile', () => {
    const groups = [newGroup(0, 1, 6), newGroup(1, 2, 1)];
    // The first queue is blocked (its claims in flight) for the first three rounds.
    const taken = rounds(groups, 7, 3, (_round, index) => index === 0);
    assert.ok((taken[1] as number) <= 3, `the other queue took ${taken[1]} while the first was blocked`);
    // Once it can claim again, it catches up first: over all that was sent, the shares are 6:1 again.
    const after = rounds(groups, 7, 4);
    assert.deepEqual(after, [25, 3]);
    assert.ok(Math.abs(25 / 6 - ((taken[1] as number) + 3)) < 1);
  });

  it('lets a queue that had nothing due rejoin at the level of the others, without a burst', () => {
    const [first, second] = [newGroup(0, 1, 1), newGroup(1, 2, 1)];
    rounds([first, second], 10, 5);
    // `first` has nothing due for 100 rounds; `second` takes them all.
    for (let round = 0; round < 100; round++) {
      first.due = false;
      second.due = true;
      splitRound([first, second], 10);
      assert.equal(second.share, 10);
      second.pass += 10;
    }
    assert.deepEqual(rounds([first, second], 10, 3), [15, 15]);
  });
});

describe('Worker weights', () => {
  for (const [weights, partitions] of [
    [[6, 1], undefined],
    [[3, 1], undefined],
    [[1, 1], undefined],
    [[6, 1], 3],
  ] as const) {
    it(`gives ${weights[0]}:${weights[1]} of the first 350 handler starts to two full queues${partitions ? ` of ${partitions} partitions` : ''}`, async () => {
      const { order, first, second } = await startsUnderWeights([weights[0], weights[1]], { partitions });
      const expected = weights[0] / (weights[0] + weights[1]);
      assertShare(shareOf(order, first), expected, first);
      assertShare(shareOf(order, second), 1 - expected, second);
      // Not only over the whole: each 70 starts hold the share too (no queue waits its turn in long runs).
      for (let from = 0; from + 70 <= order.length; from += 70) {
        const window = order.slice(from, from + 70);
        assert.ok(
          Math.abs(shareOf(window, first) - expected) <= 0.15,
          `starts ${from}-${from + 69}: share ${shareOf(window, first).toFixed(3)}`,
        );
      }
    });
  }

  it('without weights, gives queues equal shares whatever their partition counts (3 partitions against 1, concurrency 50)', async () => {
    const first = uniqueQueue('wide');
    const second = uniqueQueue('narrow');
    await fill(queue(first, 3), 2_000, 'a');
    await fill(queue(second, 1), 2_000, 'b');
    const order: string[] = [];
    const enough = gate();
    const worker = new Worker(
      [first, second],
      (job: Job<unknown>) => {
        order.push(job.queue);
        if (order.length === 350) enough.open();
      },
      { connection: redis.url, concurrency: 50 },
    );
    await enough.wait;
    await worker.close();
    assertShare(shareOf(order.slice(0, 350), first), 0.5, first);
  });

  it('holds the share with slower handlers, where the prefetch is what the shares are cut from', async () => {
    const { order, first } = await startsUnderWeights([6, 1], { handlerTurns: 20, concurrency: 20 });
    assertShare(shareOf(order, first), 6 / 7, first);
  });

  it('counts handler calls in batch mode: 6:1 of the first 140 batches', async () => {
    const urgent = uniqueQueue('urgent');
    const bulk = uniqueQueue('bulk');
    await fill(queue(urgent), 2_000, 'a');
    await fill(queue(bulk), 2_000, 'b');
    const calls: string[] = [];
    let mixed = 0;
    const enough = gate();
    const worker = new Worker(
      [urgent, bulk],
      (jobs: Job<unknown>[]) => {
        if (jobs.some(job => job.queue !== (jobs[0] as Job<unknown>).queue)) mixed += 1;
        calls.push((jobs[0] as Job<unknown>).queue);
        if (calls.length === 140) enough.open();
      },
      { connection: redis.url, concurrency: 4, batch: { size: 5 }, weights: { [urgent]: 6, [bulk]: 1 } },
    );
    await enough.wait;
    await worker.close();
    assertShare(shareOf(calls.slice(0, 140), urgent), 6 / 7, urgent);
    assert.equal(mixed, 0, 'a batch holds the jobs of one queue');
  });

  it('starves no queue: a weight-1 queue against weight 50 gets its share, spread out', async () => {
    const { order, second } = await startsUnderWeights([50, 1], { starts: 1_020 });
    const at = order.flatMap((name, index) => (name === second ? [index] : []));
    assertShare(at.length / order.length, 1 / 51, second);
    // Its starts come about every 51: never a gap of more than three times that.
    const gaps = at.map((index, n) => index - (n === 0 ? -1 : (at[n - 1] as number)));
    assert.ok(Math.max(...gaps) <= 3 * 51, `gaps between its starts: ${gaps.join(' ')}`);
  });

  it('leaves the share of a queue with nothing due to the others', async () => {
    const urgent = uniqueQueue('urgent');
    const bulk = uniqueQueue('bulk');
    await fill(queue(urgent), 20, 'a');
    await fill(queue(bulk), 1_000, 'b');
    const order: string[] = [];
    const enough = gate();
    const worker = new Worker(
      [urgent, bulk],
      (job: Job<unknown>) => {
        order.push(job.queue);
        if (order.length === 350) enough.open();
      },
      { connection: redis.url, concurrency: 10, weights: { [urgent]: 6 } },
    );
    await enough.wait;
    await worker.close();
    const first = order.slice(0, 350);
    // All 20 `urgent` jobs, taken at about 6 of 7 starts while they lasted...
    assert.equal(shareOf(first, urgent) * 350, 20);
    const lastUrgent = first.lastIndexOf(urgent);
    assert.ok(lastUrgent < 20 * 2, `the last urgent job started at start #${lastUrgent}`);
    // ...then every start is `bulk`'s: its weight of 1 does not hold it back once it is alone.
    assert.ok(first.slice(lastUrgent + 1).every(name => name === bulk));
  });
});

describe('Worker strictPriority', () => {
  it('starts no job of a later queue while an earlier one has jobs due', async () => {
    const urgent = uniqueQueue('urgent');
    const normal = uniqueQueue('normal');
    const bulk = uniqueQueue('bulk');
    await fill(queue(urgent), 150, 'a');
    await fill(queue(normal), 150, 'b');
    await fill(queue(bulk), 150, 'c');
    const order: string[] = [];
    const all = gate();
    const worker = redis.track(
      new Worker(
        [urgent, normal, bulk],
        (job: Job<unknown>) => {
          order.push(job.queue);
          if (order.length === 450) all.open();
        },
        { connection: redis.url, concurrency: 10, strictPriority: true },
      ),
    );
    await all.wait;
    await worker.close();
    assert.deepEqual(order, [...Array(150).fill(urgent), ...Array(150).fill(normal), ...Array(150).fill(bulk)]);
  });

  for (const partitions of [undefined, 3]) {
    it(`serves a later queue only while the earlier has nothing due: waves of urgent jobs take over from bulk at once${partitions ? ` (${partitions} partitions)` : ''}`, async () => {
      const urgent = uniqueQueue('urgent');
      const bulk = uniqueQueue('bulk');
      const urgentQueue = queue(urgent, partitions);
      const bulkQueue = queue(bulk, partitions);
      await fill(bulkQueue, 400, 'b');
      const concurrency = 2;
      const prefetch = 3;
      const starts: string[] = [];
      // Handlers hold on the gate of the moment they start: the test freezes the worker with all its
      // slots busy and its prefetch full, adds a wave of urgent jobs, and lets go only once the
      // worker has heard of the wave (its wake-up listener runs before ours: same connection, same
      // channel, listeners called in the order they subscribed).
      let hold = gate();
      hold.open();
      let holding = 0;
      const worker = redis.track(
        new Worker(
          [urgent, bulk],
          async (job: Job<unknown>) => {
            starts.push(job.queue);
            const current = hold;
            holding += 1;
            await current.wait;
            holding -= 1;
          },
          { connection: redis.url, concurrency, prefetch, partitions, strictPriority: true },
        ),
      );
      await worker.waitUntilReady();
      const connection = acquireConnection(redis.url, { debug() {}, info() {}, warn() {}, error() {} });
      const count = partitions ?? 1;
      const heard = new Set<number>();
      const unlisten = await Promise.all(
        Array.from({ length: count }, (_, p) => connection.waker.listen(partitionKeys('sg', urgent, p).wakeChannel, () => heard.add(p))),
      );
      try {
        for (const wave of [1, 2, 3]) {
          await waitFor(() => starts.length >= wave * 40, 10_000, `bulk running before wave ${wave}`);
          hold = gate();
          // Frozen: both slots busy on the new gate (the worker may still fill its prefetch).
          await waitFor(() => holding === concurrency, 10_000, 'both slots held');
          heard.clear();
          const mark = starts.length;
          // Due a minute ago: a job due "now" is due on the server's clock, which the worker knows
          // only to within a claim's round trip; for those few ms it may still claim bulk.
          const ids = await fill(urgentQueue, 25, `u${wave}`, Date.now() - 60_000);
          // The worker has heard of the wave once each partition that got some of it was heard here.
          await waitFor(() => ids.every(id => heard.has(partitionOf(id, count))), 10_000, `wave ${wave} heard`);
          hold.open();
          await waitFor(() => starts.filter(name => name === urgent).length === wave * 25, 10_000, `wave ${wave} started`);
          const since = starts.slice(mark);
          const lastUrgent = since.lastIndexOf(urgent);
          const bulkBefore = since.slice(0, lastUrgent).filter(name => name === bulk).length;
          // Only the bulk jobs the worker held or was claiming when it heard of the wave run before
          // its last job: with both slots busy, at most `prefetch` (held + claimed never exceed
          // concurrency + prefetch). Every other bulk start waits for the whole wave.
          assert.ok(bulkBefore <= prefetch, `wave ${wave}: ${bulkBefore} bulk starts before its last urgent one: ${since.join(' ')}`);
        }
        // And bulk goes on once urgent has nothing due.
        await waitFor(() => starts.length >= 3 * 25 + 200, 10_000, 'bulk after the waves');
      } finally {
        await Promise.all(unlisten.map(stop => stop()));
        await connection.release();
        hold.open();
      }
    });
  }
});

describe('Worker priority options', () => {
  it('refuses bad weights and weights with strictPriority, before anything connects', () => {
    const handler = (): void => undefined;
    const make = (options: object) => () => new Worker(['urgent', 'bulk'], handler, { connection: 'redis://127.0.0.1:1', ...options });
    const cases: [string, () => unknown, string][] = [
      [
        'both',
        make({ weights: { urgent: 6 }, strictPriority: true }),
        'Give either `weights` or `strictPriority: true`, not both: weights share the claims between the queues, strict priority serves a queue only when those before it have nothing due',
      ],
      ['weight 0', make({ weights: { urgent: 0 } }), 'Expected `weights.urgent` to be an integer from 1 to 1000, got 0'],
      ['weight 1.5', make({ weights: { bulk: 1.5 } }), 'Expected `weights.bulk` to be an integer from 1 to 1000, got 1.5'],
      [
        'weight over the bound',
        make({ weights: { urgent: 1_001 } }),
        'Expected `weights.urgent` to be an integer from 1 to 1000, got 1001',
      ],
      [
        'weight as text',
        make({ weights: { urgent: '6' } }),
        "Expected `weights.urgent` to be an integer from 1 to 1000, got '6' (1 characters)",
      ],
      [
        'unknown queue',
        make({ weights: { urgnet: 6 } }),
        "`weights` names 'urgnet' (6 characters), which is not one of this worker's queues (urgent, bulk)",
      ],
      ['weights an array', make({ weights: [6, 1] }), 'Expected `weights` to be an object of queue name -> integer weight, got an array'],
      [
        'strictPriority not a boolean',
        make({ strictPriority: 'yes' }),
        "Expected `strictPriority` to be true or false, got 'yes' (3 characters)",
      ],
    ];
    for (const [label, call, message] of cases) {
      assert.throws(call, (error: unknown) => {
        assert.ok(error instanceof ValidationError, `${label}: ${String(error)}`);
        assert.equal(error.message, message, label);
        return true;
      });
    }
  });

  it('accepts both with one queue (they mean nothing there), strictPriority: false with weights, and a queue left out of the weights', async () => {
    const name = uniqueQueue();
    for (const options of [{ weights: { [name]: 3 } }, { strictPriority: true }, { strictPriority: false, weights: {} }]) {
      const worker = new Worker(name, () => undefined, { connection: redis.url, ...options });
      await worker.waitUntilReady();
      await worker.close();
    }
    const other = uniqueQueue();
    const worker = new Worker([name, other], () => undefined, { connection: redis.url, weights: { [other]: 2 }, strictPriority: false });
    await worker.waitUntilReady();
    await worker.close();
  });
});
