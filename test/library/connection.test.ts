import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ConnectionError, PullConsumer, Queue, RedisOutOfMemoryError, ValidationError, Worker, type Logger } from '../../src/index.js';
import { closeWithin } from '../../src/deploy/close-within.js';
import { freePort, startLocalRedis, type LocalRedis } from '../../src/deploy/local-redis.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: true });
const extraServers: LocalRedis[] = [];
after(() => Promise.all(extraServers.map(server => server.stop())));

function captureLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug() {}, info() {}, warn: message => void warnings.push(message), error() {} };
}

describe('Redis faults', () => {
  it('survives SCRIPT FLUSH: calls reload their scripts by themselves', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    let runs = 0;
    redis.track(new Worker(name, () => void (runs += 1), { connection: redis.url }));
    await q.add('before');
    await waitFor(() => runs === 1, 3_000, 'the first job');
    await redis.raw.script('FLUSH');
    await q.add('after', { delay: 50 });
    await waitFor(() => runs === 2, 3_000, 'the job after SCRIPT FLUSH');
    assert.equal((await q.stats()).ready, 0);
  });

  it('warns at start when maxmemory-policy is not noeviction', async () => {
    const server = await startLocalRedis({ appendOnly: false, args: ['--maxmemory-policy', 'allkeys-lru'] });
    extraServers.push(server);
    const logger = captureLogger();
    const q = new Queue('evictable', { connection: server.url, logger });
    await waitFor(() => logger.warnings.length === 1, 3_000, 'the warning');
    assert.match(logger.warnings[0] as string, /maxmemory-policy is 'allkeys-lru'.*noeviction/);
    await q.close();

    const quiet = captureLogger();
    const ok = redis.track(new Queue('fine', { connection: redis.url, logger: quiet }));
    await ok.stats();
    await sleep(100);
    assert.deepEqual(quiet.warnings, []);
  });

  it('when maxmemory is reached, add fails with RedisOutOfMemoryError, writes nothing, and workers keep draining', async () => {
    const server = await startLocalRedis({ appendOnly: false, args: ['--maxmemory', '3mb', '--maxmemory-policy', 'noeviction'] });
    extraServers.push(server);
    const q = new Queue<string>('full', { connection: server.url });
    const dueSoon = await q.addBulk(Array.from({ length: 5 }, () => ({ payload: 'soon', delay: 1_500 })));
    const payload = 'x'.repeat(10_000);
    let error: unknown;
    let added = 0;
    for (let i = 0; i < 2_000 && !error; i++) {
      try {
        await q.add(payload, { delay: '1h' });
        added += 1;
      } catch (e) {
        error = e;
      }
    }
    assert.ok(error instanceof RedisOutOfMemoryError, `got ${String(error)}`);
    assert.equal(error.code, 'ERR_REDIS_OOM');
    // Waiting in all: the five due soon may be ready by now (filling Redis takes a while under load).
    const filled = await q.stats();
    assert.equal(filled.delayed + filled.ready, added + dueSoon.length, 'every acknowledged add is there, the refused one is not');
    // Redis is still full, yet the jobs falling due are claimed and acked (both free memory).
    const done: string[] = [];
    const worker = new Worker('full', job => void done.push(job.id), { connection: server.url });
    await waitFor(() => done.length === dueSoon.length, 5_000, 'workers to drain under maxmemory');
    await waitFor(async () => (await q.stats()).delayed === added, 2_000, 'the acks');
    assert.deepEqual(done.sort(), [...dueSoon].sort());
    assert.equal(await q.cancel(done[0] as string), 'not_found');
    await worker.close();
    await q.close();
  });

  it('with Redis gone, add fails with a ConnectionError; once it is back, workers resume by themselves and nothing is lost', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    const done = new Set<string>();
    const worker = redis.track(new Worker(name, job => void done.add(job.id), { connection: redis.url }));
    worker.on('error', () => undefined);
    await worker.waitUntilReady();
    const ids = await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ payload: i, delay: 1_000 + i * 10 })));

    await redis.server.kill('SIGKILL');
    const startedAt = Date.now();
    const error = await q.add('while down').catch((e: unknown) => e);
    assert.ok(error instanceof ConnectionError, `got ${String(error)}`);
    assert.equal(error.code, 'ERR_CONNECTION');
    assert.ok(Date.now() - startedAt < 10_000, 'fails within seconds, does not hang');

    await redis.server.restart();
    await waitFor(() => done.size === 20, 15_000, 'the jobs added before the crash');
    assert.deepEqual([...done].sort(), [...ids].sort());
    // A handler returns before its ack reaches Redis: the last acks may still be on their way.
    await waitFor(async () => (await q.stats()).active === 0, 5_000, 'the acks');
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });
});

describe("Redis refusing connections: the error says where and why, in the CLI's words", () => {
  it("queue.add and a Worker against a closed port name 127.0.0.1:<port> and ECONNREFUSED, not ioredis's maxRetriesPerRequest", async () => {
    const port = await freePort();
    const queue = new Queue(uniqueQueue('refused'), { connection: `redis://:secret@127.0.0.1:${port}` });
    const worker = new Worker(uniqueQueue('refused'), () => undefined, { connection: { host: '127.0.0.1', port } });
    const workerErrors: Error[] = [];
    worker.on('error', error => void workerErrors.push(error));
    try {
      const error = await queue.add('x').catch((e: unknown) => e);
      assert.ok(error instanceof ConnectionError, `got ${String(error)}`);
      assert.match(error.message, new RegExp(`^\\w+: Cannot reach Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}: `));
      assert.match(error.message, new RegExp(`\\(last error: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)`));
      assert.doesNotMatch(error.message, /maxRetriesPerRequest|max retries per request/);
      assert.doesNotMatch(error.message, /secret/, 'the password is not shown');

      await waitFor(() => workerErrors.length > 0, 10_000, "the worker's first error");
      const first = workerErrors[0] as Error;
      assert.match(first.message, new RegExp(`Cannot reach Redis at redis://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
      assert.doesNotMatch(first.message, /unreachable or frozen|maxRetriesPerRequest/);
    } finally {
      await Promise.all([closeWithin(queue, 1_000), closeWithin(worker, 1_000)]);
    }
  });
});

/** Each call must fail with a ConnectionError within its bound; generous slack for a loaded machine. */
async function expectFailsWithin(boundMs: number, what: string, call: () => Promise<unknown>): Promise<number> {
  const startedAt = Date.now();
  const error = await call().then(
    () => new Error(`${what} succeeded while Redis was unreachable`),
    (e: unknown) => e,
  );
  const elapsedMs = Date.now() - startedAt;
  assert.ok(error instanceof ConnectionError, `${what}: got ${String(error)}`);
  assert.equal(error.code, 'ERR_CONNECTION');
  assert.ok(elapsedMs < boundMs + 3_000, `${what} failed after ${elapsedMs} ms (bound ${boundMs} ms)`);
  return elapsedMs;
}

describe('Redis unreachable: every call fails within the call timeout, and a Redis that comes back is used again', () => {
  it('refuses a commandTimeout that is not a whole number of ms, before connecting', () => {
    for (const commandTimeout of [0, -1, 1.5, Number.NaN, '3000']) {
      assert.throws(() => new Queue('bad-timeout', { connection: { port: redis.server.port, commandTimeout } as never }), ValidationError);
    }
  });

  for (const fault of ['SIGKILL', 'SIGSTOP'] as const) {
    it(`${fault === 'SIGKILL' ? 'killed (SIGKILL)' : 'frozen (SIGSTOP, a blackhole)'}: successive and parallel adds each fail typed in time, the 10th too; then Worker, PullConsumer and adds go on`, async () => {
      const name = uniqueQueue(fault);
      const byDefault = redis.track(new Queue<number>(name, { connection: redis.url }));
      // commandTimeout (ioredis's option name) sets the bound; a short one keeps ten calls fast.
      const connection = { host: '127.0.0.1', port: redis.server.port, commandTimeout: 1_000 };
      const short = redis.track(new Queue<number>(name, { connection }));
      const pullName = uniqueQueue(`${fault}-pull`);
      const pull = redis.track(new PullConsumer<number>(pullName, { connection }));
      const pullQueue = redis.track(new Queue<number>(pullName, { connection }));
      const done: number[] = [];
      const worker = redis.track(new Worker<number>(name, job => void done.push(job.payload), { connection: redis.url }));
      worker.on('error', () => undefined);
      await worker.waitUntilReady();
      await short.add(0);
      await waitFor(() => done.length === 1, 5_000, 'the first job');

      await redis.server.kill(fault);
      let restored = false;
      try {
        const timings: number[] = [];
        // The default bound: 3 s. Before, the second call alone took ~9 s (ioredis's retry rounds
        // grow), and with a frozen server every call hung until it woke.
        for (let i = 0; i < 2; i++) timings.push(await expectFailsWithin(3_000, `default add #${i + 1}`, () => byDefault.add(i)));
        for (let i = 0; i < 10; i++) timings.push(await expectFailsWithin(1_000, `add #${i + 1}`, () => short.add(i)));
        const parallel = await Promise.all(
          Array.from({ length: 10 }, (_, i) => expectFailsWithin(1_000, `parallel add #${i + 1}`, () => short.add(i))),
        );
        const pulled = await expectFailsWithin(1_000, 'PullConsumer.claim', () => pull.claim());
        console.log(
          `${fault}: adds failed after ${timings.join(', ')} ms; 10 parallel after ${Math.min(...parallel)}-${Math.max(...parallel)} ms; a pull claim after ${pulled} ms`,
        );
      } finally {
        if (fault === 'SIGKILL') await redis.server.restart();
        else await redis.server.kill('SIGCONT');
        restored = true;
      }
      assert.ok(restored);
      // Back: the same Queue, Worker and PullConsumer objects carry on, nothing restarted. (Adds that
      // failed may still be applied now, as after a lost reply: their commands reached Redis late.)
      await waitFor(
        async () =>
          await short.add(100).then(
            () => true,
            () => false,
          ),
        15_000,
        'an add to succeed again',
      );
      await byDefault.add(200);
      await waitFor(() => done.includes(100) && done.includes(200), 15_000, 'the worker to run jobs added after the outage');
      await pullQueue.add(300);
      const [job] = await pull.claim({ waitMs: 5_000 });
      assert.equal(job?.payload, 300, 'the PullConsumer claims again');
      assert.equal(await pull.ack(job.id, job.token), 'acked');
    });
  }

  it('a claim that timed out on a frozen Redis is resent with its own id: the jobs it took run once Redis wakes, not after their lease', async () => {
    const name = uniqueQueue('resend');
    const connection = { host: '127.0.0.1', port: redis.server.port, commandTimeout: 1_000 };
    const queue = redis.track(new Queue<number>(name, { connection }));
    const runs: number[] = [];
    const worker = redis.track(new Worker<number>(name, job => void runs.push(job.payload), { connection, leaseMs: 30_000 }));
    let claimErrors = 0;
    worker.on('error', () => void (claimErrors += 1));
    await worker.waitUntilReady();
    await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ payload: i, delay: 1_000 })));
    // Frozen after the worker heard of the jobs (pub/sub), before they fall due: its claim at the due
    // time reaches the socket, not an answer.
    await sleep(500);
    await redis.server.kill('SIGSTOP');
    await sleep(3_000);
    await redis.server.kill('SIGCONT');
    const wokeAt = Date.now();
    // The first claim ran when Redis woke and took the jobs, but its caller had given up on it.
    // Without the resend they would wait out their 30 s lease.
    await waitFor(() => runs.length === 5, 10_000, 'the jobs the timed-out claim took');
    console.log(`resend: 5 jobs ran ${Date.now() - wokeAt} ms after Redis woke (lease 30 s)`);
    assert.deepEqual(runs.sort(), [0, 1, 2, 3, 4], 'each once');
    assert.ok(claimErrors > 0, 'the worker did claim while Redis was frozen');
  });
});
