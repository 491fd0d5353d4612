// Lost claim replies (Redis ran the claim, the client never heard) and failed settles, under
// real faults: the fault proxy (test/chaos/proxy.ts) loses exactly one chosen call's reply, or
// holds one call while Redis is made to refuse writes (min-replicas-to-write). Every Worker under
// test connects through the proxy with a short call timeout; the Queue and the bystander workers go
// straight to Redis.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { ClaimLoop, type ClaimHost } from '../../src/worker/claim-loop.js';
import { acquireConnection } from '../../src/connection/connection.js';
import { Queue, Worker } from '../../src/index.js';
import type { StoredJob } from '../../src/store/stored.js';
import { dropRepliesAfterRequest, holdRequest, latency, startFaultProxy, type FaultProxy } from '../chaos/proxy.js';
import { mostOverlapping } from '../helpers/limits.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/** A claim call names its memo key, `<prefix>:{<queue>:<p>}:claim:<claim id>`; no other call does. */
const CLAIM_CALL = '}:claim:';
/** How long the chosen connection swallows replies before the proxy resets it (longer than CALL_TIMEOUT_MS). */
const LOST_FOR_MS = 800;
const CALL_TIMEOUT_MS = 300;
const silent = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

interface Harness {
  proxy: FaultProxy;
  name: string;
  queue: Queue<string>;
  /** A connection of its own through the proxy, with a short call timeout: a lost reply fails the call. */
  viaProxy(timeoutMs?: number): { host: string; port: number; commandTimeout: number };
  own<T extends { close(): Promise<unknown> }>(item: T): T;
}

async function harness(t: TestContext): Promise<Harness> {
  const proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: redis.server.port } });
  const owned: { close(): Promise<unknown> }[] = [];
  t.after(async () => {
    proxy.setMode('pass');
    for (const item of owned.reverse()) await item.close();
    await proxy.close();
  });
  const own = <T extends { close(): Promise<unknown> }>(item: T): T => {
    owned.push(item);
    return item;
  };
  const name = uniqueQueue('lost');
  return {
    proxy,
    name,
    queue: own(new Queue<string>(name, { connection: redis.url })),
    viaProxy: (timeoutMs = CALL_TIMEOUT_MS) => ({ host: '127.0.0.1', port: proxy.port, commandTimeout: timeoutMs }),
    own,
  };
}

/** When the proxy next resets a connection (Redis answers the client again from then on). */
async function nextReset(proxy: FaultProxy, timeoutMs: number): Promise<number> {
  const before = proxy.stats().resets;
  await waitFor(() => proxy.stats().resets > before, timeoutMs, 'the proxy to reset the chosen connection');
  return Date.now();
}

describe('lost claim replies', () => {
  it('a limited queue: the jobs of a claim whose reply was lost start within 2 s of Redis answering, as the same attempt (maxAttempts 1)', async t => {
    const h = await harness(t);
    await h.queue.setLimits({ concurrency: 1 });
    const runs: { id: string; attempt: number; at: number }[] = [];
    const worker = h.own(
      new Worker<string>(h.name, job => void runs.push({ id: job.id, attempt: job.attempt, at: Date.now() }), {
        connection: h.viaProxy(),
        concurrency: 1,
        leaseMs: 6_000,
        maxAttempts: 1,
      }),
    );
    worker.on('error', () => undefined);
    await worker.waitUntilReady();
    // Warm-up: the worker has learned that the queue is limited, and claims through the limiter.
    await h.queue.add('warm-up');
    await waitFor(() => runs.length === 1, 5_000, 'the warm-up job');
    await sleep(100);
    h.proxy.setMode(dropRepliesAfterRequest(CLAIM_CALL, LOST_FOR_MS));
    const id = await h.queue.add('claimed in the dark');
    const answeredAt = await nextReset(h.proxy, 5_000);
    await waitFor(() => runs.length === 2, 4_000, 'the job of the lost claim to run');
    const run = runs[1] as (typeof runs)[number];
    assert.equal(run.id, id);
    assert.equal(run.attempt, 1, 'the lost reply cost no attempt');
    assert.ok(run.at - answeredAt < 2_000, `started ${run.at - answeredAt} ms after Redis answered again`);
    await waitFor(async () => (await h.queue.get(id)) === null, 2_000, 'the ack');
    t.diagnostic(`started ${run.at - answeredAt} ms after Redis answered again (lease 6 s)`);
  });

  it('two claims of one partition in flight, both replies lost: both are resent, every job comes back within 2 s', async t => {
    const h = await harness(t);
    const connection = acquireConnection(h.viaProxy(), silent);
    const delivered: { job: StoredJob; at: number }[] = [];
    const capacity = 4; // claims of 2 jobs each (half the capacity)
    const host: ClaimHost = {
      room: () => capacity - delivered.length,
      hungry: () => delivered.length < capacity,
      idle: () => capacity - delivered.length,
      deliver: (_source, jobs) => delivered.push(...jobs.map(job => ({ job, at: Date.now() }))),
      reportError: error => t.diagnostic(`claim loop: ${(error as Error).message}`),
    };
    const loop = new ClaimLoop(connection, host, {
      capacity,
      batchSize: 1,
      leaseMs: 10_000,
      maxAttempts: 1,
      safetyIntervalMs: 60_000,
      clock: Date.now,
    });
    // Closed before the proxy (an unsubscribe through a closed proxy would wait for ever).
    h.own({
      close: async () => {
        await loop.stop();
        await connection.release();
      },
    });
    await loop.start([h.name], 'sg', undefined);
    await waitFor(() => loop.sources.length === 1 && loop.sources[0]?.inFlight === 0, 5_000, 'the first claim');
    const dueAt = Date.now() + 400;
    for (let n = 0; n < 4; n++) await h.queue.add(`job ${n}`, { at: dueAt });
    await sleep(100);
    // As after a claim that came back full: the partition gets two claims in flight at once.
    (loop.sources[0] as { lastFull: boolean }).lastFull = true;
    h.proxy.setMode(dropRepliesAfterRequest(CLAIM_CALL, LOST_FOR_MS));
    const answeredAt = await nextReset(h.proxy, 5_000);
    await waitFor(() => delivered.length === 4, 4_000, 'the 4 jobs of both lost claims');
    const lastMs = Math.max(...delivered.map(d => d.at)) - answeredAt;
    assert.ok(lastMs < 2_000, `the last came back ${lastMs} ms after Redis answered again`);
    assert.deepEqual(
      delivered.map(d => d.job.attempts),
      [1, 1, 1, 1],
      'the same attempt: the lost replies counted none',
    );
    assert.equal(new Set(delivered.map(d => d.job.id)).size, 4);
  });

  it('jobs a closing worker hands back free their concurrency slots: a concurrency 1 queue goes on at once, not after a lease', async t => {
    const h = await harness(t);
    await h.queue.setLimits({ concurrency: 1 });
    const runs: { by: string; attempt: number }[] = [];
    // 100 ms each way: acquire, claim and settle take 600 ms, so close() lands during the claim.
    const closing = new Worker<string>(h.name, job => void runs.push({ by: 'closing', attempt: job.attempt }), {
      connection: h.viaProxy(2_000),
      concurrency: 1,
      leaseMs: 10_000,
    });
    closing.on('error', () => undefined);
    await closing.waitUntilReady();
    h.proxy.setMode(latency(100));
    const id = await h.queue.add('handed back');
    const active = `sg:{${h.name}:0}:active`;
    await waitFor(async () => (await redis.raw.zcard(active)) === 1, 5_000, 'the claim to take the job');
    await closing.close();
    assert.equal(runs.length, 0, 'the closing worker did not run it');
    const startedAt = Date.now();
    const next = h.own(
      new Worker<string>(h.name, job => void runs.push({ by: 'next', attempt: job.attempt }), {
        connection: redis.url,
        concurrency: 1,
        leaseMs: 10_000,
      }),
    );
    next.on('error', () => undefined);
    await waitFor(() => runs.length === 1, 4_000, 'the next worker to run the handed-back job');
    assert.deepEqual(runs, [{ by: 'next', attempt: 1 }]);
    assert.ok(Date.now() - startedAt < 2_000);
    await waitFor(async () => (await h.queue.get(id)) === null, 2_000, 'the ack');
  });

  it('a settle that Redis refuses is retried before the job starts: concurrency 1 is never exceeded across workers', async t => {
    const h = await harness(t);
    await h.queue.setLimits({ concurrency: 1 });
    const intervals: [number, number][] = [];
    const handler = async () => {
      const start = Date.now();
      await sleep(2_500);
      intervals.push([start, Date.now()]);
    };
    const leaseMs = 1_200;
    const first = h.own(new Worker<string>(h.name, handler, { connection: h.viaProxy(), concurrency: 1, leaseMs }));
    first.on('error', () => undefined);
    let acked = 0;
    first.on('completed', () => acked++);
    await first.waitUntilReady();
    await h.queue.add('warm-up');
    await waitFor(() => acked === 1, 10_000, 'the warm-up job to be acked');
    // The settle of the claim that takes 'a' reaches Redis while it refuses writes (NOREPLICAS) for
    // 150 ms: a real failure of that one call, not a lost reply. Only that settle: a claim that
    // found nothing (the worker looks again after an ack) settles too, and refusing writes then
    // would refuse the add of 'a' instead.
    let restored: Promise<unknown> | undefined;
    const refuseTheSettleOfA = (): ReturnType<typeof holdRequest> =>
      holdRequest('\r\nsettle\r\n', async () => {
        if ((await h.queue.get('a'))?.state !== 'active') return h.proxy.setMode(refuseTheSettleOfA());
        await redis.raw.config('SET', 'min-replicas-to-write', '1');
        restored = sleep(150).then(() => redis.raw.config('SET', 'min-replicas-to-write', '0'));
      });
    h.proxy.setMode(refuseTheSettleOfA());
    t.after(() => redis.raw.config('SET', 'min-replicas-to-write', '0'));
    await h.queue.add('a', { id: 'a' });
    await waitFor(() => restored !== undefined, 5_000, 'the settle to be refused');
    await restored;
    // A second worker, straight to Redis, wants the one slot while the first job runs.
    const second = h.own(new Worker<string>(h.name, handler, { connection: redis.url, concurrency: 1, leaseMs }));
    second.on('error', () => undefined);
    await h.queue.add('b');
    await waitFor(() => intervals.length === 3, 15_000, 'both jobs');
    const most = mostOverlapping(intervals.slice(1));
    assert.equal(most, 1, `handlers at once: ${most} (${JSON.stringify(intervals.slice(1))})`);
  });
});
