// Retention of completed jobs (issue 10): kept by count and age with the handler's result, trimmed
// a bounded amount per ack, shown by get/list/stats; a queue without retention pays nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PullConsumer, Queue, ValidationError, Worker, type Logger, type RetentionInput } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { checkInvariant, snapshot } from '../chaos/checker.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function queue<T = unknown>(name: string, partitions?: number): Queue<T> {
  return redis.track(new Queue<T>(name, { connection: redis.url, ...(partitions ? { partitions } : {}) }));
}

function consumer<T = unknown>(name: string): PullConsumer<T> {
  return redis.track(new PullConsumer<T>(name, { connection: redis.url }));
}

/** A logger that keeps its warnings. */
function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug: () => undefined, info: () => undefined, warn: message => void warnings.push(message), error: () => undefined };
}

/** Kept completed jobs of partition `p`, as Redis holds them (trimmed or not). */
function keptInRedis(name: string, p = 0): Promise<number> {
  return redis.raw.zcard(partitionKeys('sg', name, p).completed);
}

/** Script calls Redis ran so far (EVALSHA and EVAL: the commands a worker sends). */
async function scriptCalls(): Promise<number> {
  const info = await redis.raw.info('commandstats');
  return [...info.matchAll(/cmdstat_(?:eval(?:sha)?|fcall):calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** Claims and acks the given jobs one by one through a PullConsumer, each ack its own call. */
async function claimAndAck(
  c: PullConsumer<number>,
  count: number,
  result: (payload: number) => unknown = payload => payload,
): Promise<string[]> {
  const ids: string[] = [];
  while (ids.length < count) {
    const [job] = await c.claim({ max: 1 });
    assert.ok(job, 'a due job to claim');
    assert.equal(await c.ack(job.id, job.token, { result: result(job.payload) }), 'acked');
    ids.push(job.id);
  }
  return ids;
}

describe('retention of completed jobs', () => {
  it('keeps nothing by default: a completed job is gone, no result travels, the claim reports 0', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    assert.deepEqual(await q.getRetention(), { maxResultBytes: 65_536 });
    // A result whose JSON would be built shows it: a queue without retention never stringifies it.
    let stringified = 0;
    const result = { toJSON: () => ++stringified };
    const done: string[] = [];
    const worker = redis.track(new Worker<number>(name, () => result, { connection: redis.url }));
    worker.on('completed', job => done.push(job.id));
    const ids = await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ payload: i })));
    await waitFor(() => done.length === 20, 10_000, '20 jobs');
    assert.equal(stringified, 0, 'the result was turned into JSON');
    for (const id of ids.slice(0, 3)) assert.equal(await q.get(id), null);
    assert.equal((await q.stats()).completed, 0);
    assert.deepEqual((await q.list('completed')).jobs, []);
    assert.equal(await redis.raw.exists(partitionKeys('sg', name, 0).completed, partitionKeys('sg', name, 0).results), 0);
    // The claim that finds work says the queue keeps nothing; an idle one did not read it.
    const store = new PartitionStore(redis.raw, 'sg', name, 0);
    await worker.close();
    await q.add(1);
    const found = await store.claim(10, 30_000, 10, 3, { claimId: 'c1', answeredClaimId: undefined });
    assert.equal(found.jobs.length, 1);
    assert.equal(found.maxResultBytes, 0);
    const idle = await store.claim(10, 30_000, 10, 3, { claimId: 'c2', answeredClaimId: undefined }, false);
    assert.equal(idle.maxResultBytes, undefined);
  });

  it('stores the retention in every partition and reads it back; fields left out stay, completed: null keeps none', async () => {
    const name = uniqueQueue();
    const q = queue(name, 3);
    assert.deepEqual(await q.setRetention({ completed: { count: 1000, age: '1d' } }), {
      completed: { count: 1000, age: 86_400_000 },
      maxResultBytes: 65_536,
    });
    assert.deepEqual(await q.setRetention({ maxResultBytes: 4096 }), { completed: { count: 1000, age: 86_400_000 }, maxResultBytes: 4096 });
    assert.deepEqual(await q.getRetention(), { completed: { count: 1000, age: 86_400_000 }, maxResultBytes: 4096 });
    // Each partition keeps its share of the count: ceil(1000 / 3).
    for (let p = 0; p < 3; p++) assert.equal(await redis.raw.hget(partitionKeys('sg', name, p).meta, 'retain'), '334,86400000,4096,1000');
    // Another process sees it without configuration.
    const other = queue(name);
    assert.deepEqual(await other.getRetention(), { completed: { count: 1000, age: 86_400_000 }, maxResultBytes: 4096 });
    assert.deepEqual(await q.setRetention({ completed: { age: 500 } }), { completed: { age: 500 }, maxResultBytes: 4096 });
    assert.deepEqual(await q.setRetention({ completed: null }), { maxResultBytes: 4096 });
    assert.deepEqual(await other.getRetention(), { maxResultBytes: 4096 });
  });

  it('refuses bad input with a ValidationError naming the option, writing nothing', async () => {
    const name = uniqueQueue();
    const q = queue(name);
    const bad: [unknown, RegExp][] = [
      [{ completed: { count: 0 } }, /completed\.count/],
      [{ completed: { count: 1.5 } }, /completed\.count/],
      [{ completed: { count: 1_000_001 } }, /completed\.count/],
      [{ completed: { age: 'soon' } }, /completed\.age/],
      [{ completed: { age: 0 } }, /completed\.age/],
      [{ completed: { age: -5 } }, /completed\.age/],
      [{ completed: {} }, /`completed` to have `count`, `age` or both/],
      [{ completed: { count: 5, max: 3 } }, /Unknown option `max`/],
      [{ completed: 5 }, /`completed`/],
      [{ maxResultBytes: 0 }, /maxResultBytes/],
      [{ maxResultBytes: 17 * 1024 * 1024 }, /maxResultBytes/],
      [{ keep: 5 }, /Unknown option `keep` of queue.setRetention/],
      [null, /retention/],
    ];
    for (const [input, message] of bad) {
      await assert.rejects(
        q.setRetention(input as RetentionInput),
        (error: unknown) => error instanceof ValidationError && message.test(error.message),
        JSON.stringify(input),
      );
    }
    assert.equal(await redis.raw.hget(partitionKeys('sg', name, 0).meta, 'retain'), null);
  });

  it('keeps the newest `count` with their results, newest first in list, get answers completed', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { count: 5 } });
    const c = consumer<number>(name);
    // Ids in completion order, so that completions in the same millisecond tie the same way.
    await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ payload: i, id: `job-${String(i).padStart(2, '0')}` })));
    const ids = await claimAndAck(c, 20, payload => ({ doubled: payload * 2 }));
    assert.equal(await keptInRedis(name), 5);
    assert.equal((await q.stats()).completed, 5);
    const listed = (await q.list('completed')).jobs;
    assert.deepEqual(
      listed.map(job => job.id),
      ids.slice(15).reverse(),
    );
    for (const job of listed) {
      assert.equal(job.state, 'completed');
      assert.deepEqual(job.result, { doubled: job.payload * 2 });
      assert.equal(job.attempts, 1);
      assert.ok(typeof job.finishedAt === 'number' && job.finishedAt >= job.dueAt);
    }
    const last = await q.get(ids[19] as string);
    assert.equal(last?.state, 'completed');
    assert.deepEqual(last?.result, { doubled: 38 });
    assert.equal(await q.get(ids[0] as string), null, 'trimmed');
    assert.equal((await q.counters()).completed, 20);
    assert.ok(checkInvariant(await snapshot(redis.raw, name)).ok);
  });

  it("a worker keeps its handlers' return values, and the list pages through them", async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { count: 100 } });
    const done: string[] = [];
    const worker = redis.track(
      new Worker<number>(name, async job => ({ n: job.payload, at: job.attempt }), { connection: redis.url, concurrency: 10 }),
    );
    worker.on('completed', job => done.push(job.id));
    const ids = await q.addBulk(Array.from({ length: 50 }, (_, i) => ({ payload: i })));
    await waitFor(() => done.length === 50, 10_000, '50 jobs');
    for (const [i, id] of ids.entries()) {
      const info = await q.get(id);
      assert.equal(info?.state, 'completed', id);
      assert.deepEqual(info?.result, { n: i, at: 1 });
    }
    assert.equal((await q.stats()).completed, 50);
    // Paging through the list sees each kept job once.
    const seen: string[] = [];
    for (
      let page = await q.list('completed', { limit: 7 });
      ;
      page = await q.list('completed', { limit: 7, cursor: page.nextCursor as string })
    ) {
      seen.push(...page.jobs.map(job => job.id));
      if (!page.nextCursor) break;
    }
    assert.deepEqual([...seen].sort(), [...ids].sort());
  });

  it('keeps none older than `age`: hidden from reads at once, trimmed by the next ack', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { age: 2000 } });
    const c = consumer<number>(name);
    await q.addBulk(Array.from({ length: 6 }, (_, i) => ({ payload: i })));
    const ids = await claimAndAck(c, 5);
    assert.equal((await q.get(ids[0] as string))?.state, 'completed');
    assert.equal((await q.stats()).completed, 5);
    await sleep(2100);
    // Older than the age: no read shows them, though no ack has trimmed them yet.
    assert.equal(await q.get(ids[0] as string), null);
    assert.equal((await q.stats()).completed, 0);
    assert.deepEqual((await q.list('completed')).jobs, []);
    assert.equal(await keptInRedis(name), 5);
    const [last] = await claimAndAck(c, 1);
    assert.equal(await keptInRedis(name), 1, 'the ack trimmed the old ones');
    assert.deepEqual(
      (await q.list('completed')).jobs.map(job => job.id),
      [last],
    );
  });

  it('trims a bounded number per ack call (at most 100 more than it keeps), until the retention holds', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { count: 2000 } });
    const done: string[] = [];
    const worker = redis.track(new Worker<number>(name, job => job.payload, { connection: redis.url, concurrency: 50 }));
    worker.on('completed', job => done.push(job.id));
    await q.addBulk(Array.from({ length: 1000 }, (_, i) => ({ payload: i })));
    await waitFor(() => done.length === 1000, 20_000, '1,000 jobs');
    await worker.close();
    assert.equal(await keptInRedis(name), 1000);
    // The consumer's first claim trims too (a queue without acks needs it); its next ones do not
    // for a minute, so after it only the acks trim here.
    const c = consumer<number>(name);
    assert.deepEqual(await c.claim(), []);
    // The count lowered to 5 behind setRetention's back (which would trim at once): only acks trim now.
    await redis.raw.hset(partitionKeys('sg', name, 0).meta, 'retain', '5,,65536,5');
    await q.addBulk(Array.from({ length: 12 }, (_, i) => ({ payload: i })));
    const sizes = [await keptInRedis(name)];
    for (let i = 0; i < 12; i++) {
      await claimAndAck(c, 1);
      sizes.push(await keptInRedis(name));
    }
    // Each call keeps 1 and removes at most 101 (one for the job it keeps, and 100 more).
    assert.deepEqual(sizes, [1000, 900, 800, 700, 600, 500, 400, 300, 200, 100, 5, 5, 5]);
    assert.equal((await q.stats()).completed, 5);
  });

  it('setRetention trims to a lowered count before it returns; completed: null deletes every kept job', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { count: 5000 } });
    const done: string[] = [];
    const worker = redis.track(new Worker<number>(name, job => job.payload, { connection: redis.url, concurrency: 50 }));
    worker.on('completed', job => done.push(job.id));
    await q.addBulk(Array.from({ length: 2500 }, (_, i) => ({ payload: i })));
    await waitFor(() => done.length === 2500, 20_000, '2,500 jobs');
    assert.equal(await keptInRedis(name), 2500);
    await q.setRetention({ completed: { count: 2200 } });
    assert.equal(await keptInRedis(name), 2200);
    // More than one call's worth (1,000): the queue calls until nothing is left.
    await q.setRetention({ completed: null });
    assert.equal(await keptInRedis(name), 0);
    assert.equal(await redis.raw.hlen(partitionKeys('sg', name, 0).results), 0);
    assert.equal((await q.stats()).completed, 0);
    // Workers stop sending results once a claim tells them.
    let stringified = 0;
    const after = redis.track(new Worker<number>(name, () => ({ toJSON: () => ++stringified }), { connection: redis.url }));
    after.on('completed', job => done.push(job.id));
    await worker.close();
    await q.add(1);
    await waitFor(() => done.length === 2501, 10_000, 'one more job');
    assert.equal(stringified, 0);
    assert.equal(await keptInRedis(name), 0);
  });

  it('keeps a result over maxResultBytes as { resultTooLarge, bytes }: the job completes, the logger hears it once', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { count: 10 }, maxResultBytes: 100 });
    const logger = recordingLogger();
    const done: string[] = [];
    const worker = redis.track(
      new Worker<number>(name, job => (job.payload === 0 ? 'x'.repeat(30) : 'é'.repeat(500)), { connection: redis.url, logger }),
    );
    worker.on('completed', job => done.push(job.id));
    const [small, big, big2] = await q.addBulk([{ payload: 0 }, { payload: 1 }, { payload: 2 }]);
    await waitFor(() => done.length === 3, 10_000, '3 jobs');
    assert.equal((await q.get(small as string))?.result, 'x'.repeat(30));
    // 500 two-byte characters and two quotes: 1,002 bytes of JSON.
    for (const id of [big, big2]) {
      const info = await q.get(id as string);
      assert.equal(info?.state, 'completed');
      assert.deepEqual(info?.result, { resultTooLarge: true, bytes: 1002 });
    }
    assert.equal(logger.warnings.length, 1, logger.warnings.join('\n'));
    assert.match(logger.warnings[0] as string, /1002 bytes of JSON, over the queue's maxResultBytes \(100\)/);
    // The script holds the cap for any sender: a consumer that never claimed does not know it.
    const claimer = consumer<number>(name);
    await worker.close();
    await q.add(3, { id: 'late' });
    const [job] = await claimer.claim();
    assert.equal(job?.id, 'late');
    assert.equal(await consumer(name).ack('late', job.token, { result: 'y'.repeat(200) }), 'acked');
    assert.deepEqual((await q.get('late'))?.result, { resultTooLarge: true, bytes: 202 });
  });

  it('completes a job whose result JSON cannot hold (BigInt, a cycle) and keeps it without a result', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { count: 10 } });
    const logger = recordingLogger();
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const results = [10n, cycle, undefined, null];
    const done: string[] = [];
    const worker = redis.track(new Worker<number>(name, job => results[job.payload], { connection: redis.url, logger }));
    worker.on('completed', job => done.push(job.id));
    const ids = await q.addBulk(results.map((_, i) => ({ payload: i })));
    await waitFor(() => done.length === 4, 10_000, '4 jobs');
    for (const id of ids) assert.equal((await q.get(id))?.state, 'completed');
    assert.equal('result' in ((await q.get(ids[0] as string)) ?? {}), false, 'BigInt: no result');
    assert.equal('result' in ((await q.get(ids[1] as string)) ?? {}), false, 'a cycle: no result');
    assert.equal('result' in ((await q.get(ids[2] as string)) ?? {}), false, 'undefined: no result');
    assert.equal((await q.get(ids[3] as string))?.result, null, 'null is a result');
    assert.equal(logger.warnings.length, 1, logger.warnings.join('\n'));
    assert.match(logger.warnings[0] as string, /cannot be written as JSON/);
  });

  it('batch mode: an array of one result per job is spread over the jobs; any other return keeps none', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { count: 100 } });
    const done: string[] = [];
    const worker = redis.track(
      new Worker<number>(name, jobs => (jobs[0]!.payload < 100 ? jobs.map(job => job.payload * 10) : 'whole batch'), {
        connection: redis.url,
        batch: { size: 5 },
      }),
    );
    worker.on('completed', job => done.push(job.id));
    const spread = await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ payload: i })));
    await waitFor(() => done.length === 5, 10_000, 'the first batch');
    const whole = await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ payload: 100 + i })));
    await waitFor(() => done.length === 10, 10_000, 'the second batch');
    for (const [i, id] of spread.entries()) assert.equal((await q.get(id))?.result, i * 10);
    for (const id of whole) {
      const info = await q.get(id);
      assert.equal(info?.state, 'completed');
      assert.equal('result' in (info ?? {}), false);
    }
  });

  it('a partitioned queue keeps about `count` over its partitions and lists them merged, newest first', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name, 3);
    await q.setRetention({ completed: { count: 6 } });
    const done: string[] = [];
    const worker = redis.track(new Worker<number>(name, job => job.payload, { connection: redis.url, concurrency: 5 }));
    worker.on('completed', job => done.push(job.id));
    await q.addBulk(Array.from({ length: 90 }, (_, i) => ({ payload: i })));
    await waitFor(() => done.length === 90, 10_000, '90 jobs');
    // Each partition keeps its 2 newest.
    for (let p = 0; p < 3; p++) assert.equal(await keptInRedis(name, p), 2, `partition ${p}`);
    assert.equal((await q.stats()).completed, 6);
    const first = await q.list('completed', { limit: 4 });
    const second = await q.list('completed', { limit: 4, cursor: first.nextCursor as string });
    assert.equal(second.nextCursor, null);
    const listed = [...first.jobs, ...second.jobs];
    assert.equal(new Set(listed.map(job => job.id)).size, 6);
    for (let i = 1; i < listed.length; i++)
      assert.ok((listed[i - 1]!.finishedAt as number) >= (listed[i]!.finishedAt as number), 'newest first');
    for (const job of listed) assert.equal(job.result, job.payload);
  });

  it('PullConsumer acks keep the job, with a result or without one', async () => {
    const name = uniqueQueue();
    const q = queue<string>(name);
    await q.setRetention({ completed: { count: 10 } });
    const c = consumer<string>(name);
    await q.addBulk([
      { payload: 'a', id: 'a' },
      { payload: 'b', id: 'b' },
    ]);
    const jobs = await c.claim({ max: 2 });
    assert.equal(await c.ack('a', jobs.find(job => job.id === 'a')!.token, { result: { status: 'sent' } }), 'acked');
    assert.equal(await c.ack('b', jobs.find(job => job.id === 'b')!.token), 'acked');
    assert.deepEqual((await q.get('a'))?.result, { status: 'sent' });
    const b = await q.get('b');
    assert.equal(b?.state, 'completed');
    assert.equal('result' in (b ?? {}), false);
    await assert.rejects(c.ack('a', '1', { result: 1, extra: 2 } as { result: unknown }), ValidationError);
  });

  it('a kept id: a resent ack answers acked, a keep-add writes nothing, a replace-add makes a new job, cancel and reschedule find nothing', async () => {
    const name = uniqueQueue();
    const q = queue<string>(name);
    await q.setRetention({ completed: { count: 10 } });
    const c = consumer<string>(name);
    await q.add('first', { id: 'k' });
    const [job] = await c.claim();
    assert.equal(await c.ack('k', job!.token, { result: 1 }), 'acked');
    assert.equal(await c.ack('k', job!.token, { result: 2 }), 'acked', 'resent after a lost reply');
    assert.equal((await q.get('k'))?.result, 1, 'the resend changed nothing');
    assert.equal(await q.cancel('k'), 'not_found');
    assert.equal(await q.reschedule('k', { delay: 10 }), 'not_found');
    // Past the 60-90 s of the done buckets (dropped here by hand), the kept job alone still holds the id.
    const keys = partitionKeys('sg', name, 0);
    await redis.raw.del(keys.done0, keys.done1, keys.done2);
    assert.equal(await q.add('again', { id: 'k' }), 'k');
    assert.equal((await q.get('k'))?.state, 'completed');
    assert.equal((await q.stats()).ready, 0);
    assert.equal(await q.add('new', { id: 'k', ifExists: 'replace' }), 'k');
    const replaced = await q.get('k');
    assert.equal(replaced?.state, 'ready');
    assert.equal(replaced?.payload, 'new');
    assert.equal((await q.stats()).completed, 0);
    assert.ok(checkInvariant(await snapshot(redis.raw, name)).ok);
    const [again] = await c.claim();
    assert.equal(await c.ack('k', again!.token, { result: 'second' }), 'acked');
    assert.equal((await q.get('k'))?.result, 'second');
  });

  it('a keep-add of a kept id past the age writes the job, and the old kept entry goes', async () => {
    const name = uniqueQueue();
    const q = queue<string>(name);
    await q.setRetention({ completed: { age: '1d' } });
    const c = consumer<string>(name);
    await q.add('first', { id: 'k' });
    const [job] = await c.claim();
    assert.equal(await c.ack('k', job!.token, { result: 1 }), 'acked');
    // A week later on a queue that went quiet: the done buckets are long gone, no ack trimmed the
    // kept job (its finish time is moved back a week: the scripts read the time from Redis).
    const keys = partitionKeys('sg', name, 0);
    await redis.raw.del(keys.done0, keys.done1, keys.done2);
    const [seconds] = await redis.raw.time();
    await redis.raw.zadd(keys.completed, 'XX', Number(seconds) * 1000 - 7 * 86_400_000, 'k');
    assert.equal(await q.get('k'), null, 'past its age, the kept job is gone for reads');
    assert.equal(await q.add('again', { id: 'k' }), 'k');
    const added = await q.get('k');
    assert.equal(added?.state, 'ready', 'the add wrote the job');
    assert.equal(added?.payload, 'again');
    assert.equal(await redis.raw.zscore(keys.completed, 'k'), null);
    assert.equal(await redis.raw.hexists(keys.results, 'k'), 0);
    assert.ok(checkInvariant(await snapshot(redis.raw, name)).ok);
    // A kept id within its age still holds the id: the keep-add writes nothing.
    const [again] = await c.claim();
    assert.equal(await c.ack('k', again!.token, { result: 2 }), 'acked');
    await redis.raw.del(keys.done0, keys.done1, keys.done2);
    assert.equal(await q.add('third', { id: 'k' }), 'k');
    assert.equal((await q.get('k'))?.state, 'completed');
  });

  it('a queue that gets no acks is trimmed to its age by idle claims, in full batches at once, still at most 1 command/s', async () => {
    const name = uniqueQueue();
    const q = queue<number>(name);
    await q.setRetention({ completed: { age: '1h' } });
    const c = consumer<number>(name);
    await q.addBulk(Array.from({ length: 2 }, (_, i) => ({ payload: i })));
    const recent = await claimAndAck(c, 2);
    await c.close();
    // 2,500 kept jobs that finished two hours ago, then the queue went quiet: no ack will come.
    const keys = partitionKeys('sg', name, 0);
    const [seconds] = await redis.raw.time();
    const longAgo = Number(seconds) * 1000 - 2 * 3_600_000;
    const old = Array.from({ length: 2500 }, (_, i) => `old-${i}`);
    await redis.raw.hset(keys.results, Object.fromEntries(old.map(id => [id, '1\n1,0,1000,,\n0'])));
    await redis.raw.zadd(keys.completed, ...old.flatMap((id, i) => [longAgo + i, id]));
    assert.equal(await keptInRedis(name), 2502);
    const before = await scriptCalls();
    const worker = redis.track(new Worker<number>(name, () => undefined, { connection: redis.url }));
    await worker.waitUntilReady();
    await waitFor(async () => (await keptInRedis(name)) === 2, 5_000, 'the old kept jobs trimmed without an ack');
    assert.deepEqual((await q.list('completed')).jobs.map(job => job.id).sort(), [...recent].sort());
    assert.equal(await redis.raw.hlen(keys.results), 2);
    // Three batches (1,000, 1,000, 500) and the worker's first look: a few calls, then it sleeps.
    const settled = await scriptCalls();
    assert.ok(settled - before <= 12, `${settled - before} script calls to trim`);
    await sleep(3_000);
    const idle = (await scriptCalls()) - settled;
    assert.ok(idle <= 3, `an idle worker sent ${idle} script calls in 3 s`);
  });

  it('dead letters are unaffected: retried, then completed and kept', async () => {
    const name = uniqueQueue();
    const q = queue<string>(name);
    await q.setRetention({ completed: { count: 10 } });
    const c = consumer<string>(name);
    await q.add('x', { id: 'd', maxAttempts: 1 });
    const [job] = await c.claim();
    assert.equal((await c.fail('d', job!.token, { error: 'boom' })).result, 'dead');
    assert.equal((await q.stats()).completed, 0);
    assert.equal(await q.retryDead('d'), 1);
    const [retried] = await c.claim();
    assert.equal(await c.ack('d', retried!.token, { result: 'ok' }), 'acked');
    const info = await q.get('d');
    assert.equal(info?.state, 'completed');
    assert.equal(info?.result, 'ok');
    assert.equal((await q.list('dead')).jobs.length, 0);
  });
});
