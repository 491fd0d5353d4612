// The worker's per-job bookkeeping without Redis: the lease renewer's list of held leases, and the
// claim loop's one timer, which is not re-armed after every job.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClaimTimer } from '../../src/worker/claim-timing.js';
import { LeaseRenewer, type HeldLease } from '../../src/worker/lease-renewer.js';
import type { PartitionStorage } from '../../src/store/partition-storage.js';

function lease(id: string): HeldLease & { id: string } {
  return { id, store: {} as PartitionStorage, stored: { id, token: '1' }, leaseUntilLocal: 0, renewerIndex: -1 };
}

describe('LeaseRenewer bookkeeping', () => {
  it('holds each lease once and drops any of them, twice over, leaving the others held', () => {
    const renewer = new LeaseRenewer<ReturnType<typeof lease>>(
      30_000,
      Date.now,
      () => undefined,
      () => undefined,
    );
    try {
      const held = ['a', 'b', 'c', 'd', 'e'].map(lease);
      for (const entry of held) renewer.hold(entry);
      renewer.hold(held[0] as ReturnType<typeof lease>); // held already: stays one entry
      assert.equal(renewer.size, 5);
      renewer.drop(held[1] as ReturnType<typeof lease>); // from the middle
      renewer.drop(held[1] as ReturnType<typeof lease>); // again: a no-op (a job handed back by close() whose handler ends later)
      renewer.drop(held[4] as ReturnType<typeof lease>); // the last
      renewer.drop(lease('never held'));
      assert.equal(renewer.size, 3);
      assert.deepEqual([...renewer.entries()].map(entry => entry.id).sort(), ['a', 'c', 'd']);
      for (const entry of [...renewer.entries()]) renewer.drop(entry);
      assert.equal(renewer.size, 0);
      assert.deepEqual(
        held.map(entry => entry.renewerIndex),
        [-1, -1, -1, -1, -1],
      );
      renewer.hold(held[2] as ReturnType<typeof lease>); // held again after a drop
      assert.deepEqual(
        [...renewer.entries()].map(entry => entry.id),
        ['c'],
      );
    } finally {
      renewer.stop();
    }
  });
});

describe('ClaimTimer', () => {
  it('keeps an armed timer that fires a little early, re-arms one that would fire late, and fires once', async () => {
    let now = 1_000;
    let fired = 0;
    let timersSet = 0;
    const realSetTimeout = globalThis.setTimeout;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      timersSet += 1;
      return realSetTimeout(...args);
    }) as typeof setTimeout;
    const timer = new ClaimTimer(
      () => now,
      () => (fired += 1),
    );
    try {
      timer.arm(80); // fires at local 1080
      now = 1_005;
      timer.arm(80); // wanted at 1085: 5 ms early is within an eighth of 80 ms, kept
      assert.equal(timersSet, 1, 'kept');
      now = 1_030;
      timer.arm(80); // wanted at 1110: 30 ms early, re-armed (the timer now fires 80 ms from here)
      assert.equal(timersSet, 2, 're-armed: too early');
      timer.arm(40); // wanted at 1070: the armed one would fire late, re-armed
      assert.equal(timersSet, 3, 're-armed: late');
      const start = Date.now();
      await new Promise(resolve => realSetTimeout(resolve, 20));
      assert.equal(fired, 0, 'not before its time');
      while (fired === 0 && Date.now() - start < 2_000) await new Promise(resolve => realSetTimeout(resolve, 5));
      assert.equal(fired, 1);
      await new Promise(resolve => realSetTimeout(resolve, 100));
      assert.equal(fired, 1, 're-arming replaced the timer: it fired once');
    } finally {
      globalThis.setTimeout = realSetTimeout;
      timer.clear();
    }
  });

  it('re-arms a long timer that would fire more than 20 ms early, so an idle worker does not claim more often', () => {
    let now = 0;
    const timer = new ClaimTimer(
      () => now,
      () => undefined,
    );
    const realSetTimeout = globalThis.setTimeout;
    let timersSet = 0;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      timersSet += 1;
      return realSetTimeout(...args);
    }) as typeof setTimeout;
    try {
      timer.arm(6_000); // fires at 6000
      now = 100;
      timer.arm(6_000); // wanted at 6100: 100 ms early, within an eighth but over 20 ms: re-armed
      assert.equal(timersSet, 2, 're-armed');
      now = 115;
      timer.arm(6_000); // wanted at 6115: 15 ms early, kept
      assert.equal(timersSet, 2, 'kept');
    } finally {
      globalThis.setTimeout = realSetTimeout;
      timer.clear();
    }
  });
});
