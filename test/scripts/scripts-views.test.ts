// The read-only views (stats, listJobs, dueHistogram) over both tiers of waiting jobs, on raw keys:
// seed `due` and wheel buckets in the wheel's storage format (lua/includes/wheel.lua), make one call, check the
// answer against the seeded due times, on the answer's own `now`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, type JobInfo, type JobState } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import type { ListPosition } from '../../src/store/partition-storage.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
/** Bucket width: small, so that a few minutes of due times span many slots. */
const W = 10_000;
/** No seeded due time is nearer to the seeding time than this: a test's calls end well within it. */
const CLEAR_MS = 5_000;
const SUB = 100_000;

interface Seeded {
  readonly id: string;
  readonly dueAt: number;
  readonly tier: 'due' | 'wheel';
  /** The start of its wheel bucket. */
  bucketStart?: number;
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const inOrder = (jobs: readonly Seeded[]) => [...jobs].sort((a, b) => a.dueAt - b.dueAt || byteOrder(a.id, b.id));

/**
 * Seeds waiting jobs: in `due`, and in the wheel, some slots with several sub-buckets, buckets
 * spanning several slots, some whose bucket start has passed (no claim moved them), with equal due
 * times across the tiers.
 */
async function seed(name: string): Promise<Seeded[]> {
  const keys = partitionKeys('sg', name, 0);
  const tag = keys.due.slice(0, -4);
  const base = Date.now();
  const jobs: Seeded[] = [];
  for (let n = 0; jobs.length < 160; n++) {
    const offset = -60_000 + ((n * 7_919) % 240_000);
    if (Math.abs(offset) < CLEAR_MS) continue;
    const dueAt = base + offset;
    jobs.push({ id: `${n % 3 === 0 ? 'é' : 'j'}${(n * 31) % 97}-${n}`, dueAt, tier: n % 4 === 0 ? 'due' : 'wheel' });
    // Every 5th due time is shared by another wheel job, which ties with a `due` job every 20th.
    if (n % 5 === 0) jobs.push({ id: `a${n}`, dueAt, tier: 'wheel' });
  }
  const pipeline = redis.raw.multi();
  pipeline.hset(keys.meta, 'wheelSlotMs', W);
  const open = new Map<number, { n: number; len: number }>();
  let wheeled = 0;
  for (const job of jobs) {
    const record = `0,0,,,\n${JSON.stringify(job.id)}`;
    if (job.tier === 'due') {
      pipeline.zadd(keys.due, job.dueAt, job.id).hset(keys.jobs, job.id, record);
      continue;
    }
    // Buckets spanning 1, 2, 4 or 8 slots (lua/includes/wheel.lua, wheelSlot: the slot is a multiple of the span).
    const span = 2 ** (job.id.length % 4);
    const slot = Math.floor(job.dueAt / (span * W)) * span;
    job.bucketStart = slot * W;
    // Sub-buckets of 3 entries: slots of many buckets.
    let bucket = open.get(slot) ?? { n: slot * SUB, len: 0 };
    if (bucket.len === 3) bucket = { n: bucket.n + 1, len: 0 };
    open.set(slot, { n: bucket.n, len: bucket.len + 1 });
    pipeline.zadd(keys.wheel, slot * W, String(bucket.n));
    pipeline.rpush(`${tag}:wheel:${bucket.n}`, `${job.id}\n${job.dueAt - slot * W}\n${record}`);
    pipeline.hset(`${tag}:wheel:idx:0`, job.id, String(bucket.n));
    wheeled += 1;
  }
  pipeline.hset(keys.counters, 'wheeled', wheeled);
  await pipeline.exec();
  return jobs;
}

async function pageAll(queue: Queue<string>, state: JobState, limit: number): Promise<JobInfo<string>[]> {
  const jobs: JobInfo<string>[] = [];
  for (let cursor: string | undefined; ;) {
    const page = await queue.list(state, { limit, ...(cursor === undefined ? {} : { cursor }) });
    jobs.push(...page.jobs);
    if (page.nextCursor === null) return jobs;
    cursor = page.nextCursor;
  }
}

describe('views over the wheel', () => {
  it('stats counts wheel jobs as delayed, or ready once their due time passed', async () => {
    const name = uniqueQueue('views');
    const jobs = await seed(name);
    const stats = await new PartitionStore(redis.raw, 'sg', name, 0).stats();
    const ready = jobs.filter(job => job.dueAt <= stats.now).length;
    assert.ok(
      jobs.some(job => job.tier === 'wheel' && job.dueAt <= stats.now),
      'the seed has wheel jobs past due',
    );
    assert.equal(stats.ready, ready);
    assert.equal(stats.delayed, jobs.length - ready);
  });

  it('lists delayed and ready jobs of both tiers in exact (due time, id) order, every one once, at any page size', async () => {
    const name = uniqueQueue('views');
    const jobs = await seed(name);
    const queue = redis.track(new Queue<string>(name, { connection: redis.url }));
    const now = Date.now();
    for (const limit of [1, 4, 7, 100, 1_000]) {
      const delayed = await pageAll(queue, 'delayed', limit);
      assert.deepEqual(
        delayed.map(job => [job.id, job.dueAt]),
        inOrder(jobs.filter(job => job.dueAt > now)).map(job => [job.id, job.dueAt]),
        `delayed by ${limit}`,
      );
      assert.ok(delayed.every(job => job.state === 'delayed' && job.payload === job.id && job.attempts === 0));
      const ready = await pageAll(queue, 'ready', limit);
      assert.deepEqual(
        ready.map(job => [job.id, job.dueAt]),
        inOrder(jobs.filter(job => job.dueAt <= now)).map(job => [job.id, job.dueAt]),
        `ready by ${limit}`,
      );
    }
    // The script's own pages (a Queue asks one more than its page and sorts again).
    const store = new PartitionStore(redis.raw, 'sg', name, 0);
    for (const limit of [1, 2, 3]) {
      const listed: string[] = [];
      let after: ListPosition | undefined;
      for (;;) {
        const page = await store.listJobs('delayed', after, limit);
        listed.push(...page.entries.map(entry => entry.job.id));
        const last = page.entries.at(-1);
        if (page.count < limit || !last) break;
        after = { at: last.dueAt, id: last.job.id };
      }
      assert.deepEqual(
        listed,
        inOrder(jobs.filter(job => job.dueAt > now)).map(job => job.id),
        `script pages of ${limit}`,
      );
    }
  });

  it('dueHistogram counts wheel jobs in their exact windows, edges inside buckets included', async () => {
    const name = uniqueQueue('views');
    const jobs = await seed(name);
    // Edges that fall inside buckets (not multiples of W) and one beyond every job.
    const bounds = [13_337, 47_501, 90_001, 150_000];
    const histogram = await new PartitionStore(redis.raw, 'sg', name, 0).dueHistogram(bounds);
    const { now } = histogram;
    const edges = [now, ...bounds.map(bound => now + bound)];
    assert.equal(histogram.ready, jobs.filter(job => job.dueAt <= now).length);
    // Exact, but for a far bucket that may span more than 16 slots (its slot a multiple of 32):
    // its jobs count at its start (dueHistogram.lua).
    const countedAt = (job: Seeded) =>
      job.bucketStart !== undefined && job.bucketStart > now && (job.bucketStart / W) % 32 === 0 ? job.bucketStart : job.dueAt;
    const expected = edges.map(
      (edge, i) =>
        jobs.filter(job => countedAt(job) > edge && (i + 1 === edges.length || countedAt(job) <= (edges[i + 1] as number))).length,
    );
    assert.deepEqual(histogram.counts, expected);
    assert.ok((expected.at(-1) as number) > 0, 'some jobs fall after the last bound');
  });

  it('dueHistogram counts a wide far bucket that a window edge may fall into whole, in the window of its start', async () => {
    const name = uniqueQueue('views');
    const keys = partitionKeys('sg', name, 0);
    // One bucket spanning 64 slots (its slot a multiple of 64), starting an hour on; its jobs
    // spread over 32 slots.
    const slot = Math.ceil((Date.now() + 3_600_000) / W / 64) * 64;
    const dueTimes = Array.from({ length: 32 }, (_, i) => slot * W + i * W + 17);
    await redis.raw
      .multi()
      .hset(keys.meta, 'wheelSlotMs', W)
      .zadd(keys.wheel, slot * W, String(slot * SUB))
      .rpush(`${keys.due.slice(0, -4)}:wheel:${slot * SUB}`, ...dueTimes.map((dueAt, i) => `w${i}\n${dueAt - slot * W}\n0,0,,,\n{}`))
      .hset(keys.counters, 'wheeled', dueTimes.length)
      .exec();
    const store = new PartitionStore(redis.raw, 'sg', name, 0);
    const probe = await store.dueHistogram([1]);
    // An edge in the middle of the bucket's jobs.
    const edge = (dueTimes[16] as number) - probe.now;
    const { counts } = await store.dueHistogram([edge]);
    assert.deepEqual(counts, [dueTimes.length, 0], 'all in the window where the bucket starts');
    assert.equal((await store.stats()).delayed, dueTimes.length);
  });
});
