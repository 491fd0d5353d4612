import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ConnectionError, Queue, RedisOutOfMemoryError, Worker, type Logger } from '../src/index.js';
import { startLocalRedis, type LocalRedis } from '../src/local-redis.js';
import { sleep, uniqueQueue, useRedis, waitFor } from './helpers/redis.js';

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
    assert.equal((await q.stats()).delayed, added + dueSoon.length, 'every acknowledged add is there, the refused one is not');
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
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false });
  });
});
