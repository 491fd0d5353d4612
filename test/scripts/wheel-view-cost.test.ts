// What a listing page and the due histogram cost in Redis when one wheel slot holds many jobs (a
// bulk import of reminders due in one minute): the wheel keeps a slot's first 1,000 jobs in one
// bucket and the rest in cells of their due times (lua/includes/wheel.lua), so a page reads the cells it shows and
// the histogram one cell per window edge, not the slot. Work is counted on the server (INFO
// commandstats: the LRANGE calls the scripts made, each reading one bucket of at most ~1,000
// entries), not timed, so the checks hold on a loaded machine.
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { before, describe, it } from 'node:test';
import { Queue } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
/** Jobs in the one slot: 100 buckets' worth (the base layout read all of them for any page). */
const JOBS = 100_000;
const W = 60_000;

interface Job {
  readonly id: string;
  readonly dueAt: number;
}

async function serverNow(raw: Redis): Promise<number> {
  const [s, us] = await raw.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const inOrder = (jobs: readonly Job[]) => [...jobs].sort((a, b) => a.dueAt - b.dueAt || byteOrder(a.id, b.id));

/** Calls of `command` made so far (scripts' calls included), and their total server time (µs). */
async function commandStat(raw: Redis, command: string): Promise<{ calls: number; usec: number }> {
  const info = await raw.info('commandstats');
  const line = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(info);
  return { calls: Number(line?.[1] ?? 0), usec: Number(line?.[2] ?? 0) };
}

/** Server time of the script commands so far (EVALSHA, and EVAL after a NOSCRIPT), µs. */
async function scriptUsec(raw: Redis): Promise<number> {
  return (await commandStat(raw, 'evalsha')).usec + (await commandStat(raw, 'eval')).usec + (await commandStat(raw, 'fcall')).usec;
}

/** The LRANGE calls (bucket reads) and script time that `call` cost the server. */
async function cost(raw: Redis, call: () => Promise<unknown>): Promise<{ bucketReads: number; scriptUsec: number }> {
  const [reads, scripts] = [await commandStat(raw, 'lrange'), await scriptUsec(raw)];
  await call();
  const [readsAfter, scriptsAfter] = [await commandStat(raw, 'lrange'), await scriptUsec(raw)];
  return { bucketReads: readsAfter.calls - reads.calls, scriptUsec: scriptsAfter - scripts };
}

describe('listing and the due histogram over a crowded wheel slot', () => {
  const name = uniqueQueue('crowded');
  let store: PartitionStore;
  let queue: Queue<string>;
  let jobs: Job[] = [];
  let slotStart = 0;

  before(async () => {
    queue = redis.track(new Queue<string>(name, { connection: redis.url, partitions: 1 }));
    store = new PartitionStore(redis.raw, 'sg', name, 0);
    await queue.stats(); // creates the queue
    // One minute ten minutes ahead: a narrow slot (span 1), moved by no claim during the test.
    slotStart = Math.ceil(((await serverNow(redis.raw)) + 600_000) / W) * W;
    jobs = Array.from({ length: JOBS }, (_, i) => ({ id: `r${i}`, dueAt: slotStart + ((i * 7_919) % W) }));
    for (let i = 0; i < JOBS; i += 1_000) {
      const chunk = jobs
        .slice(i, i + 1_000)
        .map(job => ({ id: job.id, due: { atMs: job.dueAt }, maxAttempts: '', backoff: '', payloadJson: '"x"' }));
      await store.add(chunk, 'keep');
    }
    const keys = partitionKeys('sg', name, 0);
    assert.equal(await redis.raw.zcard(keys.due), 0, 'every job is in the wheel');
    assert.equal(await redis.raw.hget(keys.counters, 'wheeled'), String(JOBS));
  });

  it('the first page of delayed reads a few buckets, not the slot, and is in exact (due time, id) order', async () => {
    let page: Awaited<ReturnType<Queue<string>['list']>> | undefined;
    const { bucketReads, scriptUsec } = await cost(redis.raw, async () => (page = await queue.list('delayed', { limit: 50 })));
    console.log(`first page of 50 of ${JOBS} jobs in one slot: ${bucketReads} bucket reads, ${scriptUsec} µs of script time`);
    assert.deepEqual(
      page?.jobs.map(job => job.id),
      inOrder(jobs)
        .slice(0, 50)
        .map(job => job.id),
    );
    // The slot's first bucket and the first cells: a handful. Reading the slot is 100 reads.
    assert.ok(bucketReads <= 10, `${bucketReads} bucket reads for one page`);
  });

  it('a page from the middle of the slot reads a few buckets too, and continues exactly', async () => {
    const ordered = inOrder(jobs);
    const from = ordered[JOBS / 2] as Job;
    let entries: string[] = [];
    const { bucketReads } = await cost(redis.raw, async () => {
      entries = (await store.listJobs('delayed', { at: from.dueAt, id: from.id }, 100)).entries.map(entry => entry.job.id);
    });
    assert.deepEqual(
      entries,
      ordered.slice(JOBS / 2 + 1, JOBS / 2 + 101).map(job => job.id),
    );
    assert.ok(bucketReads <= 10, `${bucketReads} bucket reads for a page in the middle`);
  });

  it('the due histogram with window edges inside the slot is exact and reads one cell per edge, not the slot', async () => {
    let histogram: Awaited<ReturnType<Queue<string>['dueHistogram']>> | undefined;
    const now = await serverNow(redis.raw);
    // Edges at about 10, 30 and 50 s into the slot (relative to the server's `now` of the call).
    const bounds = [10_000, 30_000, 50_000].map(offset => slotStart + offset - now);
    const { bucketReads } = await cost(redis.raw, async () => (histogram = await queue.dueHistogram(bounds)));
    assert.ok(histogram);
    const at = histogram.now;
    const counts = bounds.map(
      (bound, i) => jobs.filter(job => job.dueAt > (i === 0 ? at : at + (bounds[i - 1] as number)) && job.dueAt <= at + bound).length,
    );
    assert.deepEqual(
      histogram.buckets.map(bucket => bucket.count),
      counts,
    );
    assert.equal(histogram.later, jobs.filter(job => job.dueAt > at + (bounds.at(-1) as number)).length);
    // Per edge: the slot's first bucket (read once per edge) and the cell the edge falls into.
    assert.ok(bucketReads <= 3 * bounds.length, `${bucketReads} bucket reads for ${bounds.length} edges`);
  });
});

describe('a slot written by an earlier version, then crowded', () => {
  it("lists in exact order and counts exactly: the earlier version's sub-buckets read whole, the cells after them", async () => {
    const name = uniqueQueue('mixed');
    const keys = partitionKeys('sg', name, 0);
    const tag = keys.due.slice(0, -4);
    const queue = redis.track(new Queue<string>(name, { connection: redis.url, partitions: 1 }));
    const store = new PartitionStore(redis.raw, 'sg', name, 0);
    await queue.stats();
    const slotStart = Math.ceil(((await serverNow(redis.raw)) + 600_000) / W) * W;
    const slot = slotStart / W;
    // The earlier layout (94374d3): the slot's buckets slot * 100000 + sub, 1,000 entries each.
    const old = Array.from({ length: 1_500 }, (_, i) => ({ id: `o${i}`, dueAt: slotStart + ((i * 7_919) % W) }));
    const pipeline = redis.raw.multi();
    old.forEach((job, i) => {
      const n = String(slot * 100_000 + Math.floor(i / 1_000));
      pipeline
        .zadd(keys.wheel, slotStart, n)
        .rpush(`${tag}:wheel:${n}`, `${job.id}\n${job.dueAt - slotStart}\n0,0,,,\n"x"`)
        .hset(`${tag}:wheel:idx:0`, job.id, n);
    });
    await pipeline.hset(keys.counters, 'wheeled', old.length).exec();
    // Then this version: enough to fill the coarse cells and use fine ones.
    const added = Array.from({ length: 40_000 }, (_, i) => ({ id: `n${i}`, dueAt: slotStart + ((i * 6_007) % W) }));
    for (let i = 0; i < added.length; i += 1_000) {
      await store.add(
        added.slice(i, i + 1_000).map(job => ({ id: job.id, due: { atMs: job.dueAt }, maxAttempts: '', backoff: '', payloadJson: '"x"' })),
        'keep',
      );
    }
    const all = inOrder([...old, ...added]);
    const listed: string[] = [];
    let maxReads = 0;
    for (let cursor: string | undefined; ;) {
      let page: Awaited<ReturnType<Queue<string>['list']>> | undefined;
      const { bucketReads } = await cost(
        redis.raw,
        async () => (page = await queue.list('delayed', { limit: 1_000, ...(cursor === undefined ? {} : { cursor }) })),
      );
      maxReads = Math.max(maxReads, bucketReads);
      assert.ok(page);
      listed.push(...page.jobs.map(job => job.id));
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    assert.equal(listed.length, all.length, 'every job once');
    assert.deepEqual(
      listed,
      all.map(job => job.id),
      'in exact (due time, id) order',
    );
    // (The cost is the other tests' concern: here a page of 1,000 spans some 25 fine cells.)
    console.log(`${all.length} jobs of both layouts listed in pages of 1,000: at most ${maxReads} bucket reads a page`);
    const now = await serverNow(redis.raw);
    const bounds = [15_000, 45_000].map(offset => slotStart + offset - now);
    const histogram = await queue.dueHistogram(bounds);
    const at = histogram.now;
    const within = (from: number, to: number) => all.filter(job => job.dueAt > from && job.dueAt <= to).length;
    assert.deepEqual(
      histogram.buckets.map(bucket => bucket.count),
      [within(at, at + (bounds[0] as number)), within(at + (bounds[0] as number), at + (bounds[1] as number))],
    );
    assert.equal(histogram.later, within(at + (bounds[1] as number), Number.POSITIVE_INFINITY));
    assert.equal((await queue.get('o7'))?.dueAt, (old[7] as Job).dueAt, 'a job of the earlier layout is found');
  });
});
