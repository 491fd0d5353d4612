// migrateFromBullMQ (issue 22) against a real BullMQ (the dev dependency) on a private Redis: what
// is moved and how (due times, attempts, backoff), what is skipped and why, idempotent re-runs, a
// dry run, `remove`, a custom prefix, and the CLI's `sandglass migrate bullmq`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlowProducer, Queue as BullQueue, Worker as BullWorker } from 'bullmq';
// BullMQ 5 (the dev dependency `bullmq5`, an npm alias): the layout its queues leave behind.
import { Queue as Bull5Queue } from 'bullmq5';
import { ConnectionError, Queue, RedisCommandError, Worker, listQueues, migrateFromBullMQ, type MigrateProgress } from '../../src/index.js';
import { runCli, runCliJson } from '../helpers/cli.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
// Closed before the fixture's Redis stops (its own after hook).
const opened = { push: <T extends { close(): Promise<unknown> }>(item: T) => redis.track(item) };

function bullConnection() {
  const url = new URL(redis.url);
  return { host: url.hostname, port: Number(url.port) };
}

function bullQueue(name: string, prefix?: string): BullQueue {
  const queue = new BullQueue(name, { connection: bullConnection(), ...(prefix ? { prefix } : {}) });
  opened.push(queue);
  return queue;
}

describe('migrateFromBullMQ', () => {
  it('moves delayed and waiting jobs with their ids, due times, remaining attempts and backoff; skips what it cannot move, with reasons', async () => {
    const source = uniqueQueue();
    const target = uniqueQueue();
    const bq = bullQueue(source);
    // Delayed jobs due in 300 to 1,200 ms; their due times as BullMQ computed them.
    const due = new Map<string, number>();
    for (let i = 0; i < 30; i += 1) {
      const job = await bq.add('delayed', { n: i }, { delay: 300 + i * 30 });
      due.set(job.id as string, job.timestamp + 300 + i * 30);
    }
    const waiting = await bq.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'now', data: { w: i } })));
    const retrying = await bq.add('retry', { r: 1 }, { delay: 400, attempts: 5, backoff: { type: 'exponential', delay: 1000 } });
    due.set(retrying.id as string, retrying.timestamp + 400);
    const fixed = await bq.add('fixed', { f: 1 }, { attempts: 2, backoff: 250, priority: 3 });
    await bq.upsertJobScheduler('hourly-report', { every: 3_600_000 }, { name: 'report', data: { kind: 'report' } });
    const flow = new FlowProducer({ connection: bullConnection() });
    opened.push(flow);
    const tree = await flow.add({
      name: 'parent',
      queueName: source,
      data: {},
      children: [{ name: 'child', queueName: source, data: {} }],
    });
    // A job a BullMQ worker holds: taken by hand, the worker then closed (the lock stays).
    const taker = new BullWorker(source, null, { connection: bullConnection() });
    const held = (await taker.getNextJob('token-1')) as { id: string };
    await taker.close();
    assert.ok(held, 'a BullMQ worker took a job');
    // A job whose data is not JSON, written the way BullMQ lays jobs out.
    await redis.raw.hset(`bull:${source}:raw-1`, 'name', 'raw', 'data', '{not json', 'opts', '{}', 'timestamp', Date.now(), 'delay', 0);
    await redis.raw.lpush(`bull:${source}:wait`, 'raw-1');

    const progress: MigrateProgress[] = [];
    const result = await migrateFromBullMQ({
      connection: redis.url,
      bullmqQueue: source,
      queue: target,
      onProgress: p => progress.push(p),
    });
    const movable = [...due.keys(), ...waiting.map(job => job.id as string), fixed.id as string].filter(id => id !== held.id);
    assert.equal(result.moved, movable.length, JSON.stringify(result.skipped));
    assert.equal(result.existing, 0);
    const reasons = new Map(result.skipped.map(({ id, reason }) => [id, reason]));
    assert.match(reasons.get(held.id) ?? '', /^active: a BullMQ worker holds it/);
    assert.match(reasons.get('raw-1') ?? '', /data is not JSON/);
    assert.match(reasons.get(tree.children?.[0]?.job.id as string) ?? '', /part of a flow/);
    assert.match(reasons.get(tree.job.id as string) ?? '', /flow parent/);
    const repeatable = result.skipped.find(({ reason }) => reason.startsWith('repeatable'));
    assert.match(repeatable?.reason ?? '', /queue\.schedule\("hourly-report", \{ every: 3600000 \}\)/);
    assert.equal(result.skipped.length, 5);
    assert.ok(progress.length > 0 && progress.at(-1)?.moved === movable.length);

    const q = new Queue(target, { connection: redis.url });
    opened.push(q);
    const retried = await q.get(retrying.id as string);
    assert.equal(retried?.maxAttempts, 5);
    assert.equal(retried?.dueAt, due.get(retrying.id as string));
    assert.equal((await q.get(fixed.id as string))?.maxAttempts, 2);
    assert.equal((await q.stats()).delayed + (await q.stats()).ready, movable.length);

    // Run again before anything ran: nothing is added twice.
    const again = await migrateFromBullMQ({ connection: redis.url, bullmqQueue: source, queue: q });
    assert.deepEqual([again.moved, again.existing, again.skipped.length], [0, movable.length, 5]);

    // Each moved job runs once, none before its BullMQ due time.
    const runs = new Map<string, number>();
    const early: string[] = [];
    const worker = new Worker(
      target,
      async job => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        const dueAt = due.get(job.id);
        if (dueAt !== undefined && Date.now() < dueAt) early.push(`${job.id} ${dueAt - Date.now()} ms early`);
      },
      { connection: redis.url, concurrency: 20 },
    );
    opened.push(worker);
    await waitFor(() => runs.size === movable.length, 10_000, 'every moved job');
    await new Promise(resolve => setTimeout(resolve, 300));
    assert.deepEqual(early, []);
    assert.deepEqual(
      [...runs.values()].filter(count => count !== 1),
      [],
    );
    assert.deepEqual([...runs.keys()].sort(), [...movable].sort());
  });

  it('a dry run writes nothing and shows what would move; what an earlier run moved counts as there', async () => {
    const source = uniqueQueue();
    const target = uniqueQueue();
    const bq = bullQueue(source);
    await bq.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'x', data: { i }, opts: { delay: 60_000 } })));
    const keysBefore = (await redis.raw.keys(`bull:${source}:*`)).sort();
    const result = await migrateFromBullMQ({ connection: redis.url, bullmqQueue: source, queue: target, dryRun: true });
    assert.deepEqual([result.moved, result.dryRun?.toMove, result.dryRun?.sample.length], [0, 12, 5]);
    assert.deepEqual(result.dryRun?.sample[0]?.payload, { i: 0 });
    assert.ok(!(await listQueues({ connection: redis.url })).includes(target), 'the target queue was not created');
    assert.deepEqual((await redis.raw.keys(`sg:{${target}*`)).length, 0);
    assert.deepEqual((await redis.raw.keys(`bull:${source}:*`)).sort(), keysBefore);

    // After a real run, a dry run counts what that run moved as there, and only the new as to move.
    assert.equal((await migrateFromBullMQ({ connection: redis.url, bullmqQueue: source, queue: target })).moved, 12);
    await bq.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'x', data: { i: 100 + i }, opts: { delay: 60_000 } })));
    const again = await migrateFromBullMQ({ connection: redis.url, bullmqQueue: source, queue: target, dryRun: true });
    assert.deepEqual([again.moved, again.existing, again.dryRun?.toMove], [0, 12, 3]);
    assert.deepEqual(
      again.dryRun?.sample.map(job => (job.payload as { i: number }).i),
      [100, 101, 102],
    );
  });

  it('remove deletes moved jobs from BullMQ (custom prefix) and leaves skipped ones; a re-run finds nothing', async () => {
    const source = uniqueQueue();
    const target = uniqueQueue();
    const bq = bullQueue(source, 'legacy');
    const jobs = await bq.addBulk(Array.from({ length: 1_200 }, (_, i) => ({ name: 'x', data: { i }, opts: { delay: 30_000 + (i % 7) } })));
    const waiting = await bq.add('now', { now: true });
    await bq.upsertJobScheduler('every-minute', { every: 60_000 }, { name: 'tick' });
    // A scheduler's first job is due at once: it waits in `wait`, not in `delayed`.
    const isTick = (id: string) => id.startsWith('repeat:');
    const scheduledDelayed = (await redis.raw.zrange(`legacy:${source}:delayed`, 0, -1)).filter(isTick);
    const scheduledWaiting = (await redis.raw.lrange(`legacy:${source}:wait`, 0, -1)).filter(isTick);
    const scheduled = [...scheduledDelayed, ...scheduledWaiting];
    assert.equal(scheduled.length, 1);
    await redis.raw.hset(`legacy:${source}:bad`, 'data', 'nope', 'opts', '{}', 'timestamp', Date.now());
    await redis.raw.zadd(`legacy:${source}:delayed`, (Date.now() + 5_000) * 0x1000, 'bad');

    const missed = await migrateFromBullMQ({ connection: redis.url, bullmqQueue: source, queue: target });
    assert.equal(missed.moved, 0, 'the default prefix bull finds nothing');
    const result = await migrateFromBullMQ({
      connection: redis.url,
      bullmqQueue: source,
      bullmqPrefix: 'legacy',
      queue: target,
      remove: true,
    });
    assert.deepEqual([result.moved, result.removed, result.skipped.length], [1_201, 1_201, 1 + scheduled.length]);
    for (const job of [...jobs, waiting]) assert.equal(await redis.raw.exists(`legacy:${source}:${job.id}`), 0, `job ${job.id} removed`);
    assert.deepEqual((await redis.raw.zrange(`legacy:${source}:delayed`, 0, -1)).sort(), [...scheduledDelayed, 'bad'].sort());
    assert.deepEqual(await redis.raw.lrange(`legacy:${source}:wait`, 0, -1), scheduledWaiting);
    assert.equal(await redis.raw.hget(`legacy:${source}:bad`, 'data'), 'nope');
    for (const id of scheduled) assert.equal(await redis.raw.exists(`legacy:${source}:${id}`), 1);
    const q = new Queue(target, { connection: redis.url });
    opened.push(q);
    assert.equal((await q.stats()).delayed + (await q.stats()).ready, 1_201);
    assert.equal((await q.get(jobs[5]?.id as string))?.dueAt, (jobs[5]?.timestamp as number) + 30_005);

    const again = await migrateFromBullMQ({
      connection: redis.url,
      bullmqQueue: source,
      bullmqPrefix: 'legacy',
      queue: target,
      remove: true,
    });
    assert.deepEqual([again.moved, again.existing, again.removed, again.skipped.length], [0, 0, 0, 1 + scheduled.length]);
  });

  it('reads the paused list of a queue paused by BullMQ 5 (which renamed wait to paused); jobs sandglass refuses stay there', async () => {
    const source = uniqueQueue();
    const target = uniqueQueue();
    const bq = bullQueue(source);
    const jobs = await bq.addBulk(Array.from({ length: 700 }, (_, i) => ({ name: 'x', data: { i } })));
    // Two jobs sandglass refuses, among the others of a page: a payload over 256 KiB, an id over 200 characters.
    await bq.add('big', { text: 'x'.repeat(300 * 1024) }, { jobId: 'big' });
    await bq.add('long', { long: true }, { jobId: 'l'.repeat(201) });
    await bq.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'x', data: { after: i } })));
    await redis.raw.rename(`bull:${source}:wait`, `bull:${source}:paused`);
    const result = await migrateFromBullMQ({ connection: redis.url, bullmqQueue: source, queue: target, remove: true });
    assert.deepEqual([result.moved, result.removed], [703, 703]);
    const reasons = new Map(result.skipped.map(({ id, reason }) => [id, reason]));
    assert.match(reasons.get('big') ?? '', /^sandglass refused it: .*payload/i);
    assert.match(reasons.get('l'.repeat(201)) ?? '', /not a sandglass job id/);
    assert.deepEqual((await redis.raw.lrange(`bull:${source}:paused`, 0, -1)).sort(), ['big', 'l'.repeat(201)].sort());
    const q = new Queue(target, { connection: redis.url });
    opened.push(q);
    assert.deepEqual((await q.get(jobs[699]?.id as string))?.payload, { i: 699 });
  });

  it('moves the jobs of a real BullMQ 5 queue (delayed, waiting, paused by BullMQ 5 itself), skipping its repeatable job with the schedule to make', async () => {
    const source = uniqueQueue('bull5');
    const target = uniqueQueue();
    const bq = new Bull5Queue(source, { connection: bullConnection() });
    opened.push(bq);
    const due = new Map<string, number>();
    for (let i = 0; i < 10; i += 1) {
      const job = await bq.add('delayed', { n: i }, { jobId: `d${i}`, delay: 400 + i * 20, attempts: 4 });
      due.set(job.id as string, job.timestamp + 400 + i * 20);
    }
    await bq.add('now', { w: 1 }, { jobId: 'w1' });
    // BullMQ 5's repeat option: a repeatable job (a repeat key on its next delayed job).
    await bq.add('digest', { kind: 'digest' }, { repeat: { every: 3_600_000 } });
    await bq.pause(); // BullMQ 5 moves the waiting jobs to its paused list
    await bq.add('while-paused', { p: 1 }, { jobId: 'p1' });
    const result = await migrateFromBullMQ({ connection: redis.url, bullmqQueue: source, queue: target });
    assert.equal(result.moved, 12, JSON.stringify(result));
    assert.equal(result.skipped.length, 1, JSON.stringify(result.skipped));
    assert.match(result.skipped[0]?.reason ?? '', /repeatable .*queue\.schedule\(.*\{ every: 3600000 \}\)/);
    const ran = new Map<string, number>();
    const worker = new Worker(target, job => void ran.set(job.id, Date.now()), { connection: redis.url });
    opened.push(worker);
    await waitFor(() => ran.size === 12, 10_000);
    for (const [id, at] of due) assert.ok((ran.get(id) ?? 0) >= at, `${id} ran at ${ran.get(id)}, before its BullMQ due time ${at}`);
    const info = await opened.push(new Queue(target, { connection: redis.url })).get('d0');
    assert.equal(info, null, 'd0 completed (not kept)');
  });

  it('refuses bad options with a ValidationError; a failing BullMQ Redis gives a typed error', async () => {
    await assert.rejects(migrateFromBullMQ({ connection: redis.url, bullmqQueue: '', queue: 'x' }), /expected `bullmqQueue`/);
    await assert.rejects(migrateFromBullMQ({ connection: redis.url, bullmqQueue: 'a', queue: 'bad name!' }), /expected `queue`/);
    await assert.rejects(
      migrateFromBullMQ({ connection: redis.url, bullmqQueue: 'a', queue: 'x', dryRun: true, remove: true }),
      /exclude each other/,
    );
    // BullMQ's Redis unreachable, or a key of the wrong type: typed errors.
    await assert.rejects(
      migrateFromBullMQ({ connection: redis.url, bullmqConnection: { port: 1, maxRetriesPerRequest: 0 }, bullmqQueue: 'a', queue: 'x' }),
      (error: Error) => error instanceof ConnectionError && /Reading the BullMQ jobs at bull:a:\*/.test(error.message),
    );
    const wrong = uniqueQueue();
    await redis.raw.set(`bull:${wrong}:delayed`, 'not a zset');
    await assert.rejects(
      migrateFromBullMQ({ connection: redis.url, bullmqQueue: wrong, queue: 'x' }),
      (error: Error) => error instanceof RedisCommandError && /WRONGTYPE/.test(error.message),
    );
  });
});

describe('sandglass migrate bullmq', () => {
  it('moves the jobs and reports moved / already there / skipped with reasons; --dry-run and --json', async () => {
    const source = uniqueQueue();
    const bq = bullQueue(source, 'cli');
    await bq.addBulk(Array.from({ length: 8 }, (_, i) => ({ name: 'x', data: { i }, opts: { delay: 60_000 } })));
    await redis.raw.hset(`cli:${source}:bad`, 'data', 'nope', 'opts', '{}', 'timestamp', Date.now());
    await redis.raw.lpush(`cli:${source}:wait`, 'bad');

    const dry = await runCli(redis.url, ['migrate', 'bullmq', source, '--bullmq-prefix', 'cli', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /dry run: would move 8 job\(s\)/);
    assert.ok(!(await listQueues({ connection: redis.url })).includes(source));

    const run = await runCli(redis.url, ['migrate', 'bullmq', source, '--bullmq-prefix', 'cli', '--bullmq-redis', redis.url]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /moved 8, already there 0, skipped 1/);
    assert.match(run.stdout, /bad: its data is not JSON/);

    const again = await runCliJson(redis.url, ['migrate', 'bullmq', source, '--to', source, '--bullmq-prefix', 'cli', '--remove']);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(
      [again.body.moved, again.body.existing, again.body.removed, again.body.skipped],
      [0, 8, 8, [{ id: 'bad', reason: 'its data is not JSON' }]],
    );
    assert.equal(await redis.raw.zcard(`cli:${source}:delayed`), 0);

    const usage = await runCli(redis.url, ['migrate', 'bullmq', source, '--dry-run', '--remove']);
    assert.equal(usage.code, 2);
  });
});
