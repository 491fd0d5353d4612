// queue.list pages by cursor: every job once, in the state's exact order (score, then id as bytes,
// as Redis orders a sorted set) across partitions, whatever the ties, even when the job a cursor
// names is gone; and a page deep in a long list costs the same as the first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PullConsumer, Queue, type JobInfo, type JobState } from '../../src/index.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

async function pageAll<T>(queue: Queue<T>, state: JobState, limit: number): Promise<{ jobs: JobInfo<T>[]; pages: number }> {
  const jobs: JobInfo<T>[] = [];
  let pages = 0;
  for (let cursor: string | undefined; ;) {
    const page = await queue.list(state, { limit, ...(cursor === undefined ? {} : { cursor }) });
    pages += 1;
    jobs.push(...page.jobs);
    if (page.nextCursor === null) return { jobs, pages };
    assert.equal(page.jobs.length, limit, 'only the last page is short');
    cursor = page.nextCursor;
    assert.ok(pages < 1_000, 'paging ends');
  }
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('queue.list by cursor', () => {
  it('pages over partitions through ties in exact (due time, id) order, every delayed job once', async () => {
    const q = redis.track(new Queue<number>(uniqueQueue(), { connection: redis.url, partitions: 3 }));
    const base = Date.now() + 3_600_000;
    // 120 jobs on one due time (ties in every partition), 60 on distinct ones, ids in mixed scripts.
    const jobs = Array.from({ length: 180 }, (_, n) => ({
      payload: n,
      id: `${n % 7 === 0 ? 'é' : 'j'}${(n * 7919) % 1_000}`,
      at: n < 120 ? base : base + n,
    }));
    await q.addBulk(jobs);
    const expected = jobs
      .map(job => ({ id: job.id, at: job.at }))
      .sort((a, b) => a.at - b.at || byteOrder(a.id, b.id))
      .map(job => job.id);
    for (const limit of [1, 7, 100, 1_000]) {
      const { jobs: listed, pages } = await pageAll(q, 'delayed', limit);
      assert.deepEqual(
        listed.map(job => job.id),
        expected,
        `limit ${limit}`,
      );
      assert.equal(pages, Math.max(1, Math.ceil(180 / limit)), `pages of ${limit}`);
    }
  });

  it('goes on after the job a cursor names is gone', async () => {
    const q = redis.track(new Queue<number>(uniqueQueue(), { connection: redis.url, partitions: 2 }));
    const at = Date.now() + 3_600_000;
    await q.addBulk(Array.from({ length: 30 }, (_, n) => ({ payload: n, id: `t${String(n).padStart(2, '0')}`, at: at + (n % 3) })));
    const first = await q.list('delayed', { limit: 8 });
    const last = first.jobs.at(-1)?.id as string;
    assert.equal(await q.cancel(last), 'cancelled');
    const rest = await pageAll(q, 'delayed', 5);
    const second = await q.list('delayed', { limit: 100, cursor: first.nextCursor as string });
    const seen = [...first.jobs.map(job => job.id), ...second.jobs.map(job => job.id)];
    assert.deepEqual(
      seen.filter(id => id !== last),
      rest.jobs.map(job => job.id),
      'the pages after the cursor continue where the first stopped',
    );
  });

  it('splits ready from delayed, lists active by lease end and dead letters newest first, by pages', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue<number>(name, { connection: redis.url, partitions: 2 }));
    const consumer = redis.track(new PullConsumer<number>(name, { connection: redis.url }));
    const past = Date.now() - 60_000;
    await q.addBulk(Array.from({ length: 40 }, (_, n) => ({ payload: n, id: `r${n}`, at: past + (n % 4) })));
    await q.addBulk(Array.from({ length: 10 }, (_, n) => ({ payload: n, id: `d${n}`, delay: '1h' })));
    const ready = await pageAll(q, 'ready', 6);
    assert.equal(ready.jobs.length, 40);
    assert.ok(
      ready.jobs.every(job => job.id.startsWith('r')),
      'no delayed job among the ready ones',
    );
    assert.equal((await pageAll(q, 'delayed', 3)).jobs.length, 10);
    const claimed = [...(await consumer.claim({ max: 12, leaseMs: 60_000 })), ...(await consumer.claim({ max: 12, leaseMs: 30_000 }))];
    const active = await pageAll(q, 'active', 5);
    assert.deepEqual(active.jobs.map(job => job.id).sort(), claimed.map(job => job.id).sort());
    const leaseEnds = active.jobs.map(job => job.leaseUntilAt as number);
    assert.deepEqual(
      leaseEnds,
      [...leaseEnds].sort((a, b) => a - b),
      'soonest lease end first',
    );
    for (const job of claimed) assert.equal((await consumer.fail(job.id, job.token, { dead: true })).result, 'dead');
    const dead = await pageAll(q, 'dead', 4);
    assert.deepEqual(dead.jobs.map(job => job.id).sort(), claimed.map(job => job.id).sort());
    const order = dead.jobs.map(job => [job.deadAt as number, job.id] as const);
    const newestFirst = [...order].sort((a, b) => b[0] - a[0] || byteOrder(b[1], a[1]));
    assert.deepEqual(order, newestFirst, 'most recent first, ties in reverse id order');
  });

  it('costs the same deep in a long list as at its start: each partition reads one page', async () => {
    const q = redis.track(new Queue<number>(uniqueQueue(), { connection: redis.url, partitions: 2 }));
    const at = Date.now() + 3_600_000;
    for (let start = 0; start < 20_000; start += 1_000) {
      await q.addBulk(Array.from({ length: 1_000 }, (_, n) => ({ payload: start + n, at: at + Math.floor((start + n) / 3) })));
    }
    let cursor: string | null = null;
    for (let page = 0; page < 19; page++) cursor = (await q.list('delayed', { limit: 1_000, ...(cursor ? { cursor } : {}) })).nextCursor;
    await redis.raw.config('RESETSTAT');
    const deep = await q.list('delayed', { limit: 10, cursor: cursor as string });
    assert.equal(deep.jobs[0]?.payload, 19_000);
    // HGETs: two per listed job (record, last error) for the page of 11 each partition read.
    const stats = String(await redis.raw.info('commandstats'));
    const hgets = Number(/cmdstat_hget:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    assert.ok(hgets <= 2 * 2 * 11, `each partition read at most limit + 1 jobs (${hgets} HGETs)`);
  });
});
