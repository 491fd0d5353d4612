// The wheel on a Redis Cluster: its bucket and index keys are built inside the scripts, and must
// share the partition's hash tag (one slot) for the scripts to run at all.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { partitionKeys, wheelBucketKey, wheelIndexKey } from '../../src/store/redis/keys.js';
import { useLocalCluster } from '../helpers/cluster.js';
import { waitFor } from '../helpers/redis.js';

const cluster = useLocalCluster(3, 0);

describe('the wheel on a Redis Cluster', () => {
  it("a partitioned queue keeps far jobs in buckets of its partitions' slots and delivers each once, never early", async () => {
    const name = 'far';
    const partitions = 4;
    for (let p = 0; p < partitions; p++) await cluster.client.hset(partitionKeys('sg', name, p).meta, 'wheelSlotMs', 1_000);
    const queue = new Queue<number>(name, { connection: cluster.client, partitions });
    const seen = new Map<number, number>();
    const now = Date.now();
    const ats = Array.from({ length: 400 }, (_, i) => now + 2_500 + (i % 20) * 100);
    const lateness: number[] = [];
    const worker = new Worker<number>(
      name,
      job => {
        seen.set(job.payload, (seen.get(job.payload) ?? 0) + 1);
        lateness.push(Date.now() - (ats[job.payload] as number));
      },
      { connection: cluster.client, concurrency: 50, partitions },
    );
    try {
      await worker.waitUntilReady();
      const ids = await queue.addBulk(ats.map((at, i) => ({ payload: i, at })));
      let wheeled = 0;
      for (let p = 0; p < partitions; p++) {
        const keys = partitionKeys('sg', name, p);
        wheeled += Number((await cluster.client.hget(keys.counters, 'wheeled')) ?? 0);
        const slot = Number(await cluster.client.call('CLUSTER', 'KEYSLOT', keys.due));
        for (const n of await cluster.client.zrange(keys.wheel, 0, -1)) {
          assert.equal(Number(await cluster.client.call('CLUSTER', 'KEYSLOT', wheelBucketKey('sg', name, p, n))), slot);
          assert.ok((await cluster.client.llen(wheelBucketKey('sg', name, p, n))) > 0);
        }
        assert.equal(Number(await cluster.client.call('CLUSTER', 'KEYSLOT', wheelIndexKey('sg', name, p, 0))), slot);
      }
      assert.equal(wheeled, 400, 'every job waits in the wheel');
      // get and cancel find a wheel job through its partition.
      assert.equal((await queue.get(ids[0] as string))?.state, 'delayed');
      assert.equal(await queue.cancel(ids[0] as string), 'cancelled');
      await waitFor(() => seen.size === 399, 20_000, 'all jobs');
      assert.ok(
        [...seen.values()].every(count => count === 1),
        'exactly once',
      );
      assert.equal(seen.has(0), false, 'the cancelled job did not run');
      assert.ok(Math.min(...lateness) >= 0, `a job ran ${-Math.min(...lateness)} ms early`);
      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
