// The conformance suite of LimiterStorage (src/store/limiter-storage.ts): every promise of its doc
// comments, and what the limits mean to the queue's partitions (PartitionStorage, ClaimResult.limited),
// as cases that fail when a backend breaks them. test/scripts/storage-conformance.test.ts runs it
// against Redis.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claim, freshQueue, job, lease, sleep, type StorageBackend } from './fixtures.js';
import type { LimiterStorage } from '../../src/store/limiter-storage.js';
import type { PartitionStorage } from '../../src/store/partition-storage.js';
import type { QueueLimits } from '../../src/core/types.js';

const CREATE = { create: true } as const;

/** Registers the LimiterStorage contract's cases for `backend` (named `name` in the test names). */
export function limiterStorageContract(name: string, backend: StorageBackend): void {
  /** A fresh queue of `partitions` partitions with `limits`: its limiter and partitions. */
  const open = async (
    limits: QueueLimits = {},
    partitions = 1,
  ): Promise<{ limiter: LimiterStorage; stores: readonly PartitionStorage[] }> => {
    const queue = freshQueue(backend, partitions);
    const stores = await queue.partitions(CREATE);
    const limiter = await queue.limiter(CREATE);
    if (Object.keys(limits).length > 0) await limiter.write(limits);
    return { limiter, stores };
  };

  describe(`LimiterStorage contract (${name})`, () => {
    it('read answers the limits as written ({} when none); a write is the whole set', async () => {
      const { limiter } = await open();
      assert.deepEqual(await limiter.read(), {});
      await limiter.write({ rate: { max: 10, per: 1_000 }, concurrency: 3, expireAfter: 5_000 });
      assert.deepEqual(await limiter.read(), { rate: { max: 10, per: 1_000 }, concurrency: 3, expireAfter: 5_000 });
      await limiter.write({ concurrency: 2 });
      assert.deepEqual(await limiter.read(), { concurrency: 2 }, 'a limit left out is cleared');
    });

    it('without limits, acquire grants what was asked and says the queue has none', async () => {
      const { limiter } = await open();
      const grant = await limiter.acquire(7, 10_000, 'g1');
      assert.deepEqual(
        [grant.count, grant.rate, grant.concurrency, grant.retryAt, grant.limitedAt, grant.id],
        [7, false, false, -1, -1, 'g1'],
      );
    });

    it('concurrency: grants up to the free slots, then none until a slot is freed; slots are held by the members settled', async () => {
      const { limiter } = await open({ concurrency: 2 });
      const first = await limiter.acquire(5, 10_000, 'g1');
      assert.deepEqual([first.count, first.concurrency, first.rate], [2, true, false]);
      assert.deepEqual(await limiter.settle(first, 2, 5, ['0:1', '0:2'], first.now + 10_000), [], 'both members hold a slot');
      const refused = await limiter.acquire(1, 10_000, 'g2');
      assert.equal(refused.count, 0);
      assert.ok(refused.retryAt > refused.now, `retryAt ${refused.retryAt} after now ${refused.now}`);
      assert.ok(refused.limitedAt >= first.now, 'a refusal is the limit holding work back');
      await limiter.free(['0:1', '0:unknown']);
      assert.equal((await limiter.acquire(5, 10_000, 'g3')).count, 1);
    });

    it('settle gives back the tokens a claim did not use', async () => {
      const { limiter } = await open({ concurrency: 2 });
      const grant = await limiter.acquire(2, 10_000, 'g1');
      await limiter.settle(grant, 1, 2, ['0:1'], grant.now + 10_000);
      assert.equal((await limiter.acquire(2, 10_000, 'g2')).count, 1, 'one slot held, one given back');
    });

    it('acquire resent under the same id (its reply lost) answers with the tokens the first send took, taking none more', async () => {
      const { limiter } = await open({ concurrency: 3 });
      const first = await limiter.acquire(2, 10_000, 'g1');
      const resent = await limiter.acquire(2, 10_000, 'g1');
      assert.deepEqual([first.count, resent.count], [2, 2]);
      assert.equal((await limiter.acquire(3, 10_000, 'g2')).count, 1, 'only one slot was left');
    });

    it('settle is safe to resend, and names the members whose grant ran out before it settled', async () => {
      const { limiter } = await open({ concurrency: 1 });
      const grant = await limiter.acquire(1, 10_000, 'g1');
      const deadline = grant.now + 10_000;
      assert.deepEqual(await limiter.settle(grant, 1, 1, ['0:1'], deadline), []);
      assert.deepEqual(await limiter.settle(grant, 1, 1, ['0:1'], deadline), [], 'the resend finds the slot in place');
      const { limiter: other } = await open({ concurrency: 1 });
      const short = await other.acquire(1, 200, 'g1');
      await sleep(350);
      assert.equal((await other.acquire(1, 10_000, 'g2')).count, 1, 'the first grant ran out: its slot was free again');
      assert.deepEqual(await other.settle(short, 1, 1, ['0:7'], short.now + 10_000), [0], 'that job must not start');
    });

    it('a slot ends at its deadline unless renewed; renew moves it to now + leaseMs', async () => {
      const { limiter } = await open({ concurrency: 1 });
      const grant = await limiter.acquire(1, 10_000, 'g1');
      await limiter.settle(grant, 1, 1, ['0:1'], grant.now + 300);
      await limiter.renew(10_000, ['0:1']);
      await sleep(450);
      assert.equal((await limiter.acquire(1, 10_000, 'g2')).count, 0, 'renewed: still held');
      const { limiter: other } = await open({ concurrency: 1 });
      const unrenewed = await other.acquire(1, 10_000, 'g1');
      await other.settle(unrenewed, 1, 1, ['0:1'], unrenewed.now + 300);
      await sleep(450);
      assert.equal((await other.acquire(1, 10_000, 'g2')).count, 1, 'not renewed: free after its deadline');
    });

    it('rate: no more than `max` grants in a window of `per`, and when none is left, when one may be', async () => {
      const { limiter } = await open({ rate: { max: 3, per: 60_000 } });
      let granted = 0;
      let last;
      for (let i = 0; i < 6; i++) {
        last = await limiter.acquire(3, 10_000, `g${i}`);
        assert.equal(last.rate, true);
        await limiter.settle(last, last.count, 3, [], last.now + 10_000);
        granted += last.count;
      }
      assert.ok(granted >= 1 && granted <= 3, `granted ${granted}`);
      assert.ok(last && last.count === 0 && last.retryAt > last.now, `the last asked in vain: retryAt ${last?.retryAt}`);
    });

    it('a limited queue: a partition claim without tokens takes nothing and says limited; with them it claims', async () => {
      const { stores } = await open({ rate: { max: 100, per: 1_000 } }, 2);
      for (const store of stores) {
        await store.add([job(`j${store.partition}`)], 'keep');
        const refused = await claim(store, 10);
        assert.deepEqual([refused.jobs.length, refused.limited], [0, true], `partition ${store.partition}`);
        const granted = await store.claim(10, 30_000, 100, 3, { claimId: `c${store.partition}`, answeredClaimId: undefined }, true, true);
        assert.deepEqual(
          granted.jobs.map(j => j.id),
          [`j${store.partition}`],
        );
      }
    });

    it('expireAfter is the deadline of jobs added without one, on every partition', async () => {
      const { stores } = await open({ expireAfter: 60_000 }, 2);
      for (const store of stores) {
        await store.add([job('x')], 'keep');
        const snapshot = await store.get('x');
        assert.equal(snapshot?.expiresAt, (snapshot?.dueAt as number) + 60_000, `partition ${store.partition}`);
      }
    });

    it("release with freeSlots on partition 0 frees the jobs' slots in the same call; stats there say when the limit held work back", async () => {
      const { limiter, stores } = await open({ concurrency: 1 });
      const store = stores[0] as PartitionStorage;
      assert.equal((await store.stats()).limitedAt, -1, 'never yet');
      await store.add([job('a'), job('b')], 'keep');
      const grant = await limiter.acquire(2, 10_000, 'g1');
      const taken = await store.claim(grant.count, 30_000, 100, 3, { claimId: 'c1', answeredClaimId: undefined }, true, true);
      const held = taken.jobs[0];
      assert.ok(held && taken.jobs.length === 1);
      await limiter.settle(grant, 1, 2, [`0:${held.token}`], taken.now + 30_000);
      assert.equal((await limiter.acquire(1, 10_000, 'g2')).count, 0);
      assert.ok((await store.stats()).limitedAt >= grant.now, 'the limit held work back');
      assert.equal(await store.release([lease(held)], true), 1);
      assert.equal((await limiter.acquire(1, 10_000, 'g3')).count, 1, 'the slot went with the release');
    });
  });
}
