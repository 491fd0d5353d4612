import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Cluster } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
import { startLocalCluster, type LocalCluster } from './helpers/cluster.js';
import { waitFor } from './helpers/redis.js';

let cluster: LocalCluster;
let client: Cluster;

before(async () => {
  cluster = await startLocalCluster(3, 1);
  client = cluster.connect();
});

after(async () => {
  client?.disconnect();
  await cluster?.stop();
});

describe('one queue across a Redis Cluster', () => {
  it('spreads partitions over the masters and delivers every job exactly once, never early', async () => {
    const name = 'orders';
    const queue = new Queue<number>(name, { connection: client, partitions: 6 });
    const seen = new Map<number, number>();
    const lateness: number[] = [];
    const worker = new Worker<number>(name, job => {
      seen.set(job.payload, (seen.get(job.payload) ?? 0) + 1);
      lateness.push(Date.now() - job.dueAt);
    }, { connection: client, concurrency: 50, partitions: 6 });
    try {
      await worker.waitUntilReady();
      await queue.addBulk(Array.from({ length: 3_000 }, (_, i) => ({ payload: i, delay: 200 + (i % 1_000) })));

      // Where the partitions live: their hash tags map to slots owned by different masters.
      const owners = new Set<string>();
      for (let p = 0; p < 6; p++) {
        const slot = Number(await client.call('CLUSTER', 'KEYSLOT', `sg:{${name}:${p}}:due`));
        const shards = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
        const owner = shards.find(([from, to]) => slot >= from && slot <= to)?.[2];
        owners.add(`${owner?.[0]}:${owner?.[1]}`);
      }
      assert.ok(owners.size >= 2, `six partitions landed on ${owners.size} master(s)`);

      await waitFor(() => seen.size === 3_000, 20_000, 'all jobs');
      assert.ok([...seen.values()].every(count => count === 1), 'exactly once');
      assert.ok(Math.min(...lateness) >= 0, 'never early');
      lateness.sort((a, b) => a - b);
      assert.ok((lateness[Math.floor(lateness.length * 0.99)] as number) < 100, `p99 lateness ${lateness[Math.floor(lateness.length * 0.99)]} ms`);
      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false });
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
