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
      // Six servers and the test share two cores here, and replicas are still syncing: this is a
      // sanity bound, not the lateness figure (that one is measured by `npm run bench`).
      lateness.sort((a, b) => a - b);
      const p99 = lateness[Math.floor(lateness.length * 0.99)] as number;
      console.log(`cluster: 3,000 jobs over 6 partitions on 3 masters, lateness p99 ${p99} ms`);
      assert.ok(p99 < 1_000, `p99 lateness ${p99} ms`);
      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false });
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

describe('failover', () => {
  it('a master killed under load is replaced by its replica and work resumes by itself; losses are counted', async () => {
    const name = 'failover';
    const queue = new Queue<number>(name, { connection: client, partitions: 6 });
    const done = new Set<number>();
    const worker = new Worker<number>(name, job => void done.add(job.payload), { connection: client, concurrency: 50, partitions: 6, leaseMs: 2_000 });
    worker.on('error', () => undefined);
    const added = new Set<number>();
    let adding = true;
    const producer = (async () => {
      for (let i = 0; adding; i++) {
        try {
          await queue.add(i, { delay: 50 });
          added.add(i);
        } catch {
          // During the failover an add may fail with a ConnectionError: it was not acknowledged.
        }
      }
    })();
    try {
      await worker.waitUntilReady();
      await waitFor(() => done.size > 500, 10_000, 'load before the fault');
      // Kill the master that owns partition 0.
      const slot = Number(await client.call('CLUSTER', 'KEYSLOT', `sg:{${name}:0}:due`));
      const shards = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const port = shards.find(([from, to]) => slot >= from && slot <= to)?.[2][1];
      const victim = cluster.nodes.find(node => node.port === port);
      assert.ok(victim, 'found the master of partition 0');
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      const before = done.size;
      await waitFor(() => done.size > before + 2_000, 30_000, 'work to resume after the failover');
      const resumedMs = Date.now() - killedAt;
      adding = false;
      await producer;
      await waitFor(async () => {
        const stats = await queue.stats();
        return stats.ready + stats.active === 0;
      }, 30_000, 'the queue to drain');
      const lost = [...added].filter(i => !done.has(i));
      console.log(`failover: ${added.size} adds acknowledged, ${lost.length} lost (asynchronous replication), work resumed ${resumedMs} ms after the kill`);
      // Asynchronous replication loses the writes the replica had not received when its master died
      // (0.2-1% of this load in our runs). The bound only catches a failover that lost everything.
      assert.ok(lost.length <= added.size * 0.05, `${lost.length} of ${added.size} acknowledged adds lost`);
      await victim.restart(); // rejoins as a replica
    } finally {
      adding = false;
      await producer;
      await worker.close();
      await queue.close();
    }
  });
});
