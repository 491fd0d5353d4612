// The conformance suite of the storage entry (src/store/queue-storage.ts: StorageConnection and
// QueueStorage) and of its wake-ups (src/store/wake-channel.ts): partition counts stored once and
// enforced, placement by id, the queue registry, and the wake-ups consumers sleep on.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freshQueue, job, PREFIX, sleep, type StorageBackend } from './fixtures.js';
import { ConflictError } from '../../src/core/errors.js';
import { partitionOf } from '../../src/store/placement.js';
import type { PartitionStorage } from '../../src/store/partition-storage.js';

const CREATE = { create: true } as const;
const READ = { create: false } as const;

/** Waits up to `ms` for `check`. */
async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  for (const deadline = Date.now() + ms; !check(); await sleep(10)) if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
}

/** Registers the contract's cases of the storage entry for `backend` (named `name` in the test names). */
export function queueStorageContract(name: string, backend: StorageBackend): void {
  describe(`QueueStorage contract (${name})`, () => {
    it('partitions come in partition order; a created queue keeps its count, another count is refused, none asked takes it', async () => {
      const queue = freshQueue(backend, 4);
      const stores = await queue.partitions(CREATE);
      assert.deepEqual(
        stores.map(store => store.partition),
        [0, 1, 2, 3],
      );
      const other = backend.connection().queue(PREFIX, queue.name, 2);
      await assert.rejects(other.partitions(READ), ConflictError);
      await assert.rejects(other.partitions(CREATE), ConflictError);
      const any = backend.connection().queue(PREFIX, queue.name, undefined);
      assert.equal((await any.partitions(READ)).length, 4);
    });

    it('a read of a queue never created answers the requested count and stores nothing', async () => {
      const queue = freshQueue(backend, 3);
      assert.equal((await queue.partitions(READ)).length, 3);
      const other = backend.connection().queue(PREFIX, queue.name, 2);
      assert.equal((await other.partitions(CREATE)).length, 2, 'the read left no count behind');
    });

    it('partitionFor places an id where placement.ts says, and a job added there is found there', async () => {
      const queue = freshQueue(backend, 4);
      const stores = await queue.partitions(CREATE);
      for (const id of ['a', 'b', 'order:42', 'ü']) {
        const store = await queue.partitionFor(id, READ);
        assert.equal(store, stores[partitionOf(id, 4)] as PartitionStorage, id);
        await store.add([job(id)], 'keep');
        assert.equal((await store.get(id))?.job.id, id);
      }
    });

    it('register records the queue (isRegistered, listQueues); an unregistered one is not', async () => {
      const queue = freshQueue(backend);
      assert.equal(await queue.isRegistered('check'), false);
      await queue.register();
      await queue.register();
      assert.equal(await queue.isRegistered('check'), true);
      assert.ok((await backend.connection().listQueues(PREFIX)).includes(queue.name));
      const names = await backend.connection().listQueues(PREFIX);
      assert.deepEqual(names, [...names].sort(), 'sorted');
    });

    it("listenPartition hears the due time of a job that became the partition's earliest; an unlistened one hears nothing", async () => {
      const queue = freshQueue(backend, 2);
      const stores = await queue.partitions(CREATE);
      const heard: number[] = [];
      const unlisten = await queue.listenPartition(1, dueAt => heard.push(dueAt));
      const id = ['a', 'b', 'c', 'd', 'e', 'f'].find(candidate => partitionOf(candidate, 2) === 1) as string;
      const other = ['a', 'b', 'c', 'd', 'e', 'f'].find(candidate => partitionOf(candidate, 2) === 0) as string;
      await (stores[0] as PartitionStorage).add([job(other, { delayMs: 5_000 })], 'keep');
      await (stores[1] as PartitionStorage).add([job(id, { delayMs: 5_000 })], 'keep');
      const dueAt = (await (stores[1] as PartitionStorage).get(id))?.dueAt;
      await eventually(() => heard.length > 0, 5_000, 'the wake-up');
      assert.deepEqual(heard, [dueAt]);
      await unlisten();
      await (stores[1] as PartitionStorage).add([job(`${id}-sooner`, { delayMs: 1_000 })], 'keep');
      await sleep(200);
      assert.equal(heard.length, 1, 'nothing after unlisten');
    });

    it('listenLimiter hears a slot freed of a full concurrency limit', async () => {
      const queue = freshQueue(backend);
      await queue.partitions(CREATE);
      const limiter = await queue.limiter(CREATE);
      await limiter.write({ concurrency: 1 });
      let freed = 0;
      const unlisten = await queue.listenLimiter(() => (freed += 1));
      try {
        const grant = await limiter.acquire(1, 10_000, 'g1');
        await limiter.settle(grant, 1, 1, ['0:1'], grant.now + 10_000);
        assert.equal((await limiter.acquire(1, 10_000, 'g2')).count, 0, 'full: a worker would sleep now');
        await limiter.free(['0:1']);
        await eventually(() => freed > 0, 5_000, 'the freed slot');
      } finally {
        await unlisten();
      }
    });
  });
}
