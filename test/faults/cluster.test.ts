import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { idIn, useLocalCluster } from '../helpers/cluster.js';
import { busiestWindow, mostOverlapping, mostStartsAtHandlers } from '../helpers/limits.js';
import { sleep, waitFor } from '../helpers/redis.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { partitionOf } from '../../src/store/placement.js';

/** Largest pause allowed in a healthy partition's deliveries while another master fails over. */
const GAP_BOUND_MS = 1_500;

const cluster = useLocalCluster(3, 1);

describe('one queue across a Redis Cluster', () => {
  it('spreads partitions over the masters and delivers every job exactly once, never early', async () => {
    const name = 'orders';
    const queue = new Queue<number>(name, { connection: cluster.client, partitions: 6 });
    const seen = new Map<number, number>();
    const lateness: number[] = [];
    const worker = new Worker<number>(
      name,
      job => {
        seen.set(job.payload, (seen.get(job.payload) ?? 0) + 1);
        lateness.push(Date.now() - job.dueAt);
      },
      { connection: cluster.client, concurrency: 50, partitions: 6 },
    );
    try {
      await worker.waitUntilReady();
      // Due over 3 s (1,000 a second): lateness then says how late a job is, not how long a backlog
      // of 3,000 in one second takes six servers on two loaded cores to drain.
      await queue.addBulk(Array.from({ length: 3_000 }, (_, i) => ({ payload: i, delay: 200 + (i % 3_000) })));

      // Where the partitions live: their hash tags map to slots owned by different masters.
      const owners = new Set<string>();
      for (let p = 0; p < 6; p++) {
        const slot = Number(await cluster.client.call('CLUSTER', 'KEYSLOT', `sg:{${name}:${p}}:due`));
        const shards = (await cluster.client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
        const owner = shards.find(([from, to]) => slot >= from && slot <= to)?.[2];
        owners.add(`${owner?.[0]}:${owner?.[1]}`);
      }
      assert.ok(owners.size >= 2, `six partitions landed on ${owners.size} master(s)`);

      await waitFor(() => seen.size === 3_000, 20_000, 'all jobs');
      assert.ok(
        [...seen.values()].every(count => count === 1),
        'exactly once',
      );
      assert.ok(Math.min(...lateness) >= 0, 'never early');
      // Six servers and the test share two cores here, and replicas are still syncing: this is a
      // sanity bound, not the lateness figure (that one is measured by `npm run bench`).
      lateness.sort((a, b) => a - b);
      const p99 = lateness[Math.floor(lateness.length * 0.99)] as number;
      console.log(`cluster: 3,000 jobs over 6 partitions on 3 masters, lateness p99 ${p99} ms`);
      assert.ok(p99 < 1_000, `p99 lateness ${p99} ms`);
      // The last handlers' acks may still wait behind a settle call in flight (one round trip).
      await waitFor(async () => (await queue.stats()).active === 0, 5_000, 'the last acks');
      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

describe('limits on a Redis Cluster', () => {
  it("rate and concurrency hold over 4 partitions on 3 masters, two workers (the limiter lives in partition 0's slot)", async () => {
    const name = 'limited';
    const queue = new Queue<number>(name, { connection: cluster.client, partitions: 4 });
    const starts: number[] = [];
    const spans: [number, number][] = [];
    const handler = async (): Promise<void> => {
      const start = Date.now();
      starts.push(start);
      await sleep(20);
      spans.push([start, Date.now()]);
    };
    const workers = [1, 2].map(() => new Worker<number>(name, handler, { connection: cluster.client, concurrency: 10, partitions: 4 }));
    try {
      await queue.setLimits({ rate: { max: 40, per: '1s' }, concurrency: 4 });
      await Promise.all(workers.map(worker => worker.waitUntilReady()));
      await queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ payload: i })));
      await waitFor(() => spans.length === 120, 20_000, 'all jobs');
      const busiest = busiestWindow(starts, 1_000);
      assert.ok(busiest <= mostStartsAtHandlers({ max: 40, per: 1_000 }), `busiest 1 s window: ${busiest} starts`);
      assert.ok(mostOverlapping(spans) <= 4, `${mostOverlapping(spans)} at once`);
      assert.ok(Math.max(...starts) - Math.min(...starts) >= 2_500, 'paced at the rate, not faster');
    } finally {
      await Promise.all(workers.map(worker => worker.close()));
      await queue.close();
    }
  });
});

describe('failover', () => {
  it('a master killed under load is replaced by its replica and work resumes by itself; losses are counted; the other partitions keep delivering', async () => {
    const name = 'failover';
    const partitions = 6;
    const queue = new Queue<number>(name, { connection: cluster.client, partitions });
    // Delivery times (local ms) per partition.
    const deliveries: number[][] = Array.from({ length: partitions }, () => []);
    const done = new Set<number>();
    const worker = new Worker<number>(
      name,
      job => {
        done.add(job.payload);
        deliveries[partitionOf(job.id, partitions)]?.push(Date.now());
      },
      { connection: cluster.client, concurrency: 50, partitions, leaseMs: 2_000 },
    );
    worker.on('error', () => undefined);
    const added = new Set<number>();
    let adding = true;
    // One producer per partition: an add waiting on the dead master must not starve the partitions
    // of the healthy ones of new jobs (that would be the test's stall, not the worker's).
    let next = 0;
    const produce = async (partition: number) => {
      while (adding) {
        const i = next++;
        const id = idIn(partition, partitions, i);
        try {
          await queue.add(i, { id, delay: 50 });
          added.add(i);
        } catch {
          // During the failover an add may fail with a ConnectionError: it was not acknowledged.
          await sleep(20);
        }
      }
    };
    const producers = Array.from({ length: partitions }, (_, partition) => produce(partition));
    try {
      await worker.waitUntilReady();
      await waitFor(() => done.size > 500, 10_000, 'load before the fault');
      // Kill the master that owns partition 0.
      const ownerOf = async (partition: number) =>
        (await cluster.ownerOf(await cluster.slotOf(partitionKeys('sg', name, partition).due))).port;
      const owners = await Promise.all(Array.from({ length: partitions }, (_, partition) => ownerOf(partition)));
      const victim = cluster.nodes.find(node => node.port === owners[0]);
      assert.ok(victim, 'found the master of partition 0');
      const onVictim = owners.flatMap((port, partition) => (port === victim.port ? [partition] : []));
      const healthy = owners.flatMap((port, partition) => (port === victim.port ? [] : [partition]));
      assert.ok(healthy.length > 0, 'some partitions live on other masters');
      // With cluster-require-full-coverage yes (Redis's default) every master refuses every command
      // (CLUSTERDOWN) from when the dead one is declared failed until its replica is promoted: 1.0-1.2 s
      // here, adds included. That pause is the cluster's (docs/cluster.md); this test measures the worker's.
      await Promise.all(
        cluster.nodes
          .filter(node => node !== victim)
          .map(async node => {
            const raw = cluster.nodeClient(node);
            try {
              await raw.config('SET', 'cluster-require-full-coverage', 'no');
            } finally {
              raw.disconnect();
            }
          }),
      );
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      const before = done.size;
      await waitFor(() => done.size > before + 2_000, 30_000, 'work to resume after the failover');
      // The failover is over once every partition of the dead master delivers again.
      await waitFor(
        () => onVictim.every(partition => (deliveries[partition] ?? []).some(at => at > killedAt)),
        30_000,
        "the dead master's partitions to deliver again",
      );
      // A claim answered just before the kill may still deliver after it: the failover ends with the
      // delivery that closes each dead-master partition's longest pause.
      const resumedAt = Math.max(...onVictim.map(partition => endOfLongestPause(deliveries[partition] ?? [], killedAt)));
      const resumedMs = resumedAt - killedAt;
      // Largest pause in deliveries of each healthy partition, from the kill until the failover ended.
      await sleep(200);
      const gaps = healthy.map(partition => ({ partition, gapMs: largestGap(deliveries[partition] ?? [], killedAt, resumedAt) }));
      adding = false;
      await Promise.all(producers);
      await waitFor(
        async () => {
          const stats = await queue.stats();
          return stats.ready + stats.active === 0;
        },
        30_000,
        'the queue to drain',
      );
      const lost = [...added].filter(i => !done.has(i));
      console.log(
        `failover: ${added.size} adds acknowledged, ${lost.length} lost (asynchronous replication), partitions ${onVictim.join(', ')} of the dead master delivered again ${resumedMs} ms after the kill; ` +
          `largest gap in deliveries on the healthy masters meanwhile: ${gaps.map(({ partition, gapMs }) => `partition ${partition} ${gapMs} ms`).join(', ')}`,
      );
      // Asynchronous replication loses the writes the replica had not received when its master died
      // (0.2-1% of this load in our runs). The bound only catches a failover that lost everything.
      assert.ok(lost.length <= added.size * 0.05, `${lost.length} of ${added.size} acknowledged adds lost`);
      // A dead master holds back only its own partitions: the others pause once, for the patience of
      // the claims that were on their way to it when it died (0.5 s; 0.48-0.61 s measured), far below
      // the failover itself (3-4.5 s). The bound leaves room for a loaded machine (two test suites at
      // once measured 1.9-2.0 s against a 4.5 s failover): half the failover, at least GAP_BOUND_MS;
      // partitions held back by the dead master would pause as long as the failover.
      const gapBoundMs = Math.max(GAP_BOUND_MS, resumedMs / 2);
      for (const { partition, gapMs } of gaps)
        assert.ok(gapMs <= gapBoundMs, `partition ${partition} (healthy master) paused ${gapMs} ms during a ${resumedMs} ms failover`);
      await victim.restart(); // rejoins as a replica
    } finally {
      adding = false;
      await Promise.all(producers);
      await worker.close();
      await queue.close();
    }
  });
});

/** The largest pause between deliveries (or the window's edges) within [from, to]. */
function largestGap(times: readonly number[], from: number, to: number): number {
  let last = from;
  let largest = 0;
  for (const at of times) {
    if (at < from) continue;
    if (at > to) break;
    largest = Math.max(largest, at - last);
    last = at;
  }
  return Math.max(largest, to - last);
}

/** The first delivery after the longest pause that began after `from`. */
function endOfLongestPause(times: readonly number[], from: number): number {
  let last = from;
  let longest = -1;
  let end = Number.NaN;
  for (const at of times) {
    if (at < from) continue;
    if (at - last > longest) {
      longest = at - last;
      end = at;
    }
    last = at;
  }
  return end;
}
