// Groups on a 3-master Redis Cluster (issue 20): a partitioned queue puts each group in the
// partition its name hashes to (its queue key in that partition's slot), groups spread over the
// partitions, limits and fairness hold across them, by-id calls find grouped jobs without being told
// the group, and a slot holding groups moves to another master while the workers drain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker, type Job } from '../../src/index.js';
import { groupQueueKey, partitionKeys } from '../../src/store/redis/keys.js';
import { partitionOf } from '../../src/store/placement.js';
import { useLocalCluster, type ClusterNode } from '../helpers/cluster.js';
import { mostOverlapping } from '../helpers/limits.js';
import { sleep, waitFor } from '../helpers/redis.js';

const PARTITIONS = 6;
const cluster = useLocalCluster(3, 0, { appendOnly: false });

describe('groups on a Redis Cluster', () => {
  it('keeps each group in one slot, holds group limits across partitions and a slot migration, and runs every job once', async () => {
    const name = 'tenants';
    const queue = new Queue<number>(name, { connection: cluster.client, partitions: PARTITIONS });
    const groups = Array.from({ length: 30 }, (_, g) => `tenant-${g}`);
    const runs = new Map<string, [number, number][]>();
    const seen = new Map<string, number>();
    const handler = async (job: Job<number>) => {
      const start = Date.now();
      await sleep(5);
      const group = job.group as string;
      runs.set(group, [...(runs.get(group) ?? []), [start, Date.now()]]);
      seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
    };
    const workers = [1, 2].map(
      () => new Worker<number>(name, handler, { connection: cluster.client, concurrency: 30, partitions: PARTITIONS, leaseMs: 5_000 }),
    );
    try {
      await queue.setGroupLimits({ concurrency: 2 });
      await queue.pauseGroup('tenant-0');
      await queue.addBulk(
        groups.flatMap(group => Array.from({ length: 40 }, (_, n) => ({ id: `${group}/${n}`, payload: n, group, delay: 300 }))),
      );
      // Each group's queue key is in its partition's slot; the groups use several partitions.
      const used = new Set<number>();
      for (const group of groups) {
        const p = partitionOf(group, PARTITIONS);
        used.add(p);
        const slot = await cluster.slotOf(partitionKeys('sg', name, p).due);
        assert.equal(await cluster.slotOf(groupQueueKey('sg', name, p, group)), slot, group);
      }
      assert.ok(used.size >= 4, `30 groups over ${used.size} of ${PARTITIONS} partitions`);
      // By id without the group: found, wherever the id itself would hash (jobs of the paused group,
      // which are still waiting however long the checks above took).
      assert.equal((await queue.get('tenant-0/7'))?.group, 'tenant-0');
      assert.equal(await queue.cancel('tenant-0/7'), 'cancelled');
      assert.equal(await queue.reschedule('tenant-0/1', { delay: 100 }), 'rescheduled');

      // Move the slot of tenant-5's partition to another master while the workers drain.
      const moved = partitionOf('tenant-5', PARTITIONS);
      const slot = await cluster.slotOf(partitionKeys('sg', name, moved).due);
      const source = await cluster.ownerOf(slot);
      const target = (await cluster.masters()).find(node => node !== source) as ClusterNode;
      await waitFor(() => seen.size >= 200, 30_000, '200 jobs');
      await cluster.migrateSlot(slot, target, { batchKeys: 2, pauseMs: 50 });
      assert.equal(await cluster.ownerOf(slot), target);

      await waitFor(() => seen.size === 29 * 40, 60_000, 'every job of the unpaused groups');
      assert.ok(
        [...seen.values()].every(count => count === 1),
        'exactly once',
      );
      for (const [group, spans] of runs) assert.ok(mostOverlapping(spans) <= 2, `${group}: ${mostOverlapping(spans)} at once`);
      assert.equal(runs.has('tenant-0'), false, 'the paused group did not run');
      // A handler has run when `seen` counts it, but its ack may still be on its way: the other
      // groups leave the listing once their last jobs are acked.
      await waitFor(async () => (await queue.listGroups()).groups.length === 1, 10_000, 'the acks of the last jobs');
      const page = await queue.listGroups();
      assert.deepEqual(
        page.groups.map(g => [g.group, g.waiting, g.paused]),
        [['tenant-0', 39, true]],
      );
      await queue.resumeGroup('tenant-0');
      await waitFor(() => seen.size === 30 * 40 - 1, 30_000, 'the resumed group');
      assert.equal(seen.has('tenant-0/7'), false, 'the cancelled job did not run');
      await waitFor(async () => (await queue.groupTotals()).withWork === 0, 10_000, 'no group with work');
    } finally {
      await Promise.all(workers.map(worker => worker.close()));
      await queue.close();
    }
  });
});
