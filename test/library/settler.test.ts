// The settler on a real Redis: each settlement hears the outcome the script gave its own position in
// the batch, and a call that fails is sent again without losing or repeating an entry.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Settler, type SettleOutcome, type Settlement } from '../../src/worker/settler.js';
import { PartitionStore, type LeaseRef } from '../../src/store/redis/partition-store.js';
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
    const ids = Array.from({ length: 6 }, (_, i) => `j${i}`);
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
});
