// The settler on a real Redis: each settlement hears the outcome the script gave its own position in
// the batch, and a call that fails is sent again without losing or repeating an entry.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MIN_SECOND_CALL, Settler, type SettleOutcome, type Settlement } from '../../src/worker/settler.js';
import { PartitionStore, type LeaseRef } from '../../src/store/redis/partition-store.js';
import { Queue } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

const FAR = 9_000_000_000_000;

/** An active job as a claim leaves it (see scripts-consumer.test.ts). */
async function seedActive(s: PartitionStore, id: string, token: string): Promise<void> {
  await redis.raw.hset(s.keys.jobs, id, `0,0,,,\n{}`);
  await redis.raw.zadd(s.keys.active, FAR, id);
  await redis.raw.hset(s.keys.leases, id, `${token},1000`);
}

function settlement(id: string, token: string, heard: Map<string, SettleOutcome[]>): Settlement<LeaseRef> {
  const key = `${id}/${token}`;
  return {
    settleEntry: { id, token },
    settleGiveUpAt: Date.now() + 60_000,
    settled(outcome) {
      heard.set(key, [...(heard.get(key) ?? []), outcome]);
      if (id === 'throws') throw new Error('a listener that throws');
    },
  };
}

describe('Settler', () => {
  it('tells each settlement the outcome of its own position, a listener that throws included', async () => {
    const s = new PartitionStore(redis.raw, 'sg', uniqueQueue('settler'), 0);
    for (const [id, token] of [
      ['a', '1'],
      ['b', '2'],
      ['c', '3'],
      ['throws', '4'],
      ['d', '5'],
    ] as const)
      await seedActive(s, id, token);
    await redis.raw.hset(s.keys.jobs, 'waiting', '0,0,,,\n{}');
    await redis.raw.zadd(s.keys.due, FAR, 'waiting');
    const errors: unknown[] = [];
    const settler = new Settler(error => errors.push(error));
    const heard = new Map<string, SettleOutcome[]>();
    // One tick: one call, refusals among the applied ones at both ends and in the middle.
    const order = [
      ['nope', '1'],
      ['a', '1'],
      ['b', '9'],
      ['throws', '4'],
      ['c', '3'],
      ['waiting', '1'],
      ['gone', '2'],
      ['d', '5'],
      ['b', '8'],
    ] as const;
    for (const [id, token] of order) settler.ack(s, settlement(id, token, heard));

    await settler.drain(10_000);

    assert.deepEqual(Object.fromEntries(heard), {
      'nope/1': ['not-found'],
      'a/1': ['applied'],
      'b/9': ['stale'],
      'throws/4': ['applied'],
      'c/3': ['applied'],
      'waiting/1': ['stale'],
      'gone/2': ['not-found'],
      'd/5': ['applied'],
      'b/8': ['stale'],
    });
    assert.equal(errors.length, 1, 'the throwing listener reported, the rest still heard');
    assert.equal(await redis.raw.hget(s.keys.counters, 'completed'), '4');
  });

  it('sends a failed call again, also while a later call of the same partition is in flight', async () => {
    const queue = uniqueQueue('settler');
    let failures = 0;
    let calls = 0;
    let releaseFirst: () => void = () => undefined;
    const firstHeld = new Promise<void>(resolve => (releaseFirst = resolve));
    // The first call waits until the second was sent, then fails as a dropped connection would:
    // its entries must go back to the queue that later acks go to, and be sent once more.
    class FlakyStore extends PartitionStore {
      override async ack(leases: readonly LeaseRef[]): Promise<{ stale: number[]; notFound: number[] }> {
        calls += 1;
        if (calls === 1) {
          await firstHeld;
          failures += 1;
          throw new Error('connection lost');
        }
        if (calls === 2) releaseFirst();
        return super.ack(leases);
      }
    }
    const s = new FlakyStore(redis.raw, 'sg', queue, 0);
    // The later acks are enough for a call of their own beside the first (fewer would wait for its reply).
    const ids = Array.from({ length: 3 + MIN_SECOND_CALL }, (_, i) => `j${i}`);
    for (const id of ids) await seedActive(s, id, '7');
    const settler = new Settler(() => undefined);
    const heard = new Map<string, SettleOutcome[]>();
    for (const id of ids.slice(0, 3)) settler.ack(s, settlement(id, '7', heard));
    await waitFor(() => calls === 1, 5_000, 'the first call');
    for (const id of ids.slice(3)) settler.ack(s, settlement(id, '7', heard));

    await waitFor(() => heard.size === ids.length, 10_000, 'every ack answered');
    await settler.drain(10_000);

    assert.equal(failures, 1);
    assert.deepEqual(Object.fromEntries(heard), Object.fromEntries(ids.map(id => [`${id}/7`, ['applied']])), 'each heard once, applied');
    assert.equal(await redis.raw.hget(s.keys.counters, 'completed'), String(ids.length));
    assert.equal(await redis.raw.zcard(s.keys.active), 0);
  });

  it('while a call travels, acks too few for a call of their own wait for its reply and go in one call, every one acked', async () => {
    const queue = uniqueQueue('settler');
    const batches: number[] = [];
    let releaseFirst: () => void = () => undefined;
    const firstHeld = new Promise<void>(resolve => (releaseFirst = resolve));
    class SlowFirstStore extends PartitionStore {
      override async ack(leases: readonly LeaseRef[]): Promise<{ stale: number[]; notFound: number[] }> {
        batches.push(leases.length);
        if (batches.length === 1) await firstHeld;
        return super.ack(leases);
      }
    }
    const s = new SlowFirstStore(redis.raw, 'sg', queue, 0);
    const ids = Array.from({ length: 40 }, (_, i) => `w${i}`);
    for (const id of ids) await seedActive(s, id, '3');
    const settler = new Settler(() => undefined);
    const heard = new Map<string, SettleOutcome[]>();
    settler.ack(s, settlement('w0', '3', heard));
    await waitFor(() => batches.length === 1, 5_000, 'the first call');
    // Acks that settle in separate turns while the first call travels.
    for (const id of ids.slice(1)) {
      settler.ack(s, settlement(id, '3', heard));
      await new Promise(resolve => setImmediate(resolve));
    }
    assert.deepEqual(batches, [1], 'nothing sent beside the first call');
    releaseFirst();
    await waitFor(() => heard.size === ids.length, 10_000, 'every ack answered');
    await settler.drain(10_000);

    assert.deepEqual(batches, [1, ids.length - 1], 'the acks that waited went in one call');
    assert.deepEqual(Object.fromEntries(heard), Object.fromEntries(ids.map(id => [`${id}/3`, ['applied']])), 'each heard once, applied');
    assert.equal(await redis.raw.hget(s.keys.counters, 'completed'), String(ids.length));
    assert.equal(await redis.raw.zcard(s.keys.active), 0);
  });

  it('sends a second call beside the first once enough acks wait, and an idle ack at once', async () => {
    const queue = uniqueQueue('settler');
    const batches: number[] = [];
    let releaseFirst: () => void = () => undefined;
    const firstHeld = new Promise<void>(resolve => (releaseFirst = resolve));
    class SlowFirstStore extends PartitionStore {
      override async ack(leases: readonly LeaseRef[]): Promise<{ stale: number[]; notFound: number[] }> {
        batches.push(leases.length);
        if (batches.length === 1) await firstHeld;
        return super.ack(leases);
      }
    }
    const s = new SlowFirstStore(redis.raw, 'sg', queue, 0);
    const ids = Array.from({ length: 1 + MIN_SECOND_CALL }, (_, i) => `m${i}`);
    for (const id of ids) await seedActive(s, id, '4');
    const settler = new Settler(() => undefined);
    const heard = new Map<string, SettleOutcome[]>();
    settler.ack(s, settlement('m0', '4', heard));
    await waitFor(() => batches.length === 1, 5_000, 'the first call, sent at once');
    for (const id of ids.slice(1)) settler.ack(s, settlement(id, '4', heard));
    await waitFor(() => batches.length === 2, 5_000, 'a second call while the first travels');
    assert.deepEqual(batches, [1, MIN_SECOND_CALL]);
    await waitFor(() => heard.size === MIN_SECOND_CALL, 10_000, 'the second call answered first');
    releaseFirst();
    await waitFor(() => heard.size === ids.length, 10_000, 'every ack answered');
    await settler.drain(10_000);
    assert.equal(await redis.raw.hget(s.keys.counters, 'completed'), String(ids.length));
  });

  it('a process that dies with acks waiting behind a call in flight: Redis applied none of them, every job is delivered again after its lease', async () => {
    const name = uniqueQueue('settler-crash');
    const queue = new Queue(name, { connection: redis.url });
    await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ payload: i })));
    await queue.close();
    const leaseMs = 300;
    const claimed = await new PartitionStore(redis.raw, 'sg', name, 0).claim(100, leaseMs, 100, 3, {
      claimId: 'crash-1',
      answeredClaimId: undefined,
    });
    assert.equal(claimed.jobs.length, 30);
    let sent = 0;
    // The first call never reaches Redis (the process stalls in it), then the process dies: the
    // acks that waited behind it are never sent.
    class StalledStore extends PartitionStore {
      override ack(): Promise<{ stale: number[]; notFound: number[] }> {
        sent += 1;
        return new Promise(() => undefined);
      }
    }
    const stalled = new StalledStore(redis.raw, 'sg', name, 0);
    const settler = new Settler(() => undefined);
    const heard = new Map<string, SettleOutcome[]>();
    for (const job of claimed.jobs) {
      settler.ack(stalled, settlement(job.id, job.token, heard));
      await new Promise(resolve => setImmediate(resolve));
    }
    assert.equal(sent, 1, 'one call in flight, the rest waiting behind it');
    assert.equal(settler.pending, claimed.jobs.length, 'every ack still pending');

    await new Promise(resolve => setTimeout(resolve, leaseMs + 100));
    const again = await new PartitionStore(redis.raw, 'sg', name, 0).claim(100, 30_000, 100, 3, {
      claimId: 'crash-2',
      answeredClaimId: undefined,
    });
    assert.deepEqual(again.jobs.map(job => job.id).sort(), claimed.jobs.map(job => job.id).sort(), 'every job delivered again');
    assert.ok(
      again.jobs.every(job => job.attempts === 2),
      'as the second attempt',
    );
    assert.equal(heard.size, 0, 'no ack was reported');
  });
});
