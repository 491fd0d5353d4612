// Redis misbehaving under load: its script cache emptied again and again, and the server killed and
// restarted. Real redis-server with AOF, real worker processes (test/fixtures/worker-process.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { countByJob, killAll, readLedgers, spawnWorkers, type WorkerProcess } from '../fixtures/worker-process.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis(); // AOF on: the restart test needs it
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sandglass-faults-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function spawnQueueWorkers(name: string, count: number, leaseMs: number): Promise<WorkerProcess[]> {
  const ledger = (i: number) => join(dir, `${name}-w${i}.log`);
  return spawnWorkers(
    Array.from({ length: count }, (_, i) => ({
      url: redis.url,
      queue: name,
      ledger: ledger(i),
      concurrency: 20,
      leaseMs,
      handlerMs: 1,
      handlerJitterMs: 5,
    })),
  );
}

/** Redis's count of replies of one error kind (INFO errorstats), e.g. NOSCRIPT. */
async function errorCount(raw: Redis, prefix: string): Promise<number> {
  const info = await raw.info('errorstats');
  return Number(new RegExp(`errorstat_${prefix}:count=(\\d+)`).exec(info)?.[1] ?? 0);
}

/**
 * The reloads a flush of the scripts and functions caused so far: NOSCRIPT replies (each answered by
 * EVAL) plus FUNCTION LOADs (each "Function not found" answered by loading the library again, and
 * each connection's first probe).
 */
async function reloadCount(raw: Redis): Promise<number> {
  const loads = Number(/cmdstat_function\|load:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0);
  return (await errorCount(raw, 'NOSCRIPT')) + loads;
}

test(
  'SCRIPT FLUSH and FUNCTION FLUSH again and again under load loses nothing: every job completes exactly once',
  { timeout: 60_000 },
  async t => {
    const total = 8_000;
    const raw = redis.raw;
    const name = uniqueQueue('script-flush');
    const workers = await spawnQueueWorkers(name, 2, 10_000);
    const queue = new Queue<number>(name, { connection: redis.url });
    let flushing = true;
    let flushes = 0;
    const flusher = (async () => {
      while (flushing) {
        await raw.script('FLUSH');
        await raw.call('FUNCTION', 'FLUSH');
        flushes += 1;
        await sleep(5);
      }
    })();
    try {
      const reloadsBefore = await reloadCount(raw);
      const ids: string[] = [];
      for (let i = 0; i < total; i += 200) {
        ids.push(
          ...(await queue.addBulk(Array.from({ length: 200 }, (_, k) => ({ payload: i + k, delay: Math.floor(Math.random() * 500) })))),
        );
        await sleep(10);
      }
      // On a timeout the assertions below say what is missing.
      await waitFor(async () => (await queue.counters()).completed >= total, 40_000).catch(() => undefined);
      flushing = false;
      await flusher;
      await waitFor(
        () => readLedgers(workers.map(w => w.ledger)).filter(e => e.kind === 'done').length >= total,
        5_000,
        'the last done lines',
      ).catch(() => undefined);

      const reloads = (await reloadCount(raw)) - reloadsBefore;
      t.diagnostic(`${flushes} SCRIPT and FUNCTION FLUSHes, ${reloads} reloads (NOSCRIPT answered by EVAL, or FUNCTION LOAD)`);
      assert.ok(flushes >= 20 && reloads >= 20, `the fault really happened (${flushes} flushes, ${reloads} reloads)`);

      const entries = readLedgers(workers.map(w => w.ledger));
      const starts = countByJob(entries, 'start');
      const dones = countByJob(entries, 'done');
      assert.deepEqual(
        entries.filter(e => e.kind === 'error' || e.kind === 'stale' || e.kind === 'failed'),
        [],
        'no errors, stale acks or failures',
      );
      assert.deepEqual(
        ids.filter(id => starts.get(id) !== 1),
        [],
        'every job started exactly once',
      );
      assert.deepEqual(
        ids.filter(id => dones.get(id) !== 1),
        [],
        'every job completed exactly once',
      );
      assert.equal(starts.size, total, 'nothing else ran');
      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
      assert.deepEqual(await queue.counters(), {
        added: total,
        claimed: total,
        completed: total,
        retried: 0,
        dead: 0,
        reaped: 0,
        stale: 0,
        ticks: 0,
        ticksSkipped: 0,
        expired: 0,
      });
    } finally {
      flushing = false;
      await flusher.catch(() => undefined);
      await killAll(workers);
      await queue.close();
    }
  },
);

test(
  'a Redis crash (SIGKILL, AOF on) and restart mid-load loses no acknowledged job, and workers resume on their own',
  { timeout: 60_000 },
  async t => {
    const leaseMs = 3_000;
    const name = uniqueQueue('restart');
    const workers = await spawnQueueWorkers(name, 2, leaseMs);
    const queue = new Queue<number>(name, { connection: redis.url });
    // Jobs whose add resolved, with the local time it resolved at; and every id ever sent.
    const acknowledged = new Map<string, number>();
    const attempted = new Set<string>();
    let failedAdds = 0;
    let producing = true;
    const producer = (async () => {
      for (let n = 0; producing; n += 50) {
        try {
          const batch = Array.from({ length: 50 }, (_, k) => ({
            id: `${name}-${n + k}`,
            payload: n + k,
            delay: Math.floor(Math.random() * 1_500),
          }));
          batch.forEach(job => attempted.add(job.id));
          const ids = await queue.addBulk(batch);
          const now = Date.now();
          for (const id of ids) acknowledged.set(id, now);
        } catch {
          failedAdds += 1; // not acknowledged: such jobs may or may not exist, both are fine
        }
        await sleep(20);
      }
    })();
    let killedAt = 0;
    let restartedAt = 0;
    try {
      await sleep(1_500);
      const pidBefore = redis.server.pid;
      killedAt = Date.now();
      await redis.server.kill('SIGKILL');
      await sleep(500);
      await redis.server.restart();
      restartedAt = Date.now();
      assert.notEqual(redis.server.pid, pidBefore, 'a new redis-server process');
      await sleep(1_500);
      producing = false;
      await producer;

      const ledgers = workers.map(w => w.ledger);
      const missing = () => {
        const ended = new Set(
          readLedgers(ledgers)
            .filter(e => e.kind === 'end')
            .map(e => e.id),
        );
        return [...acknowledged.keys()].filter(id => !ended.has(id));
      };
      // A worker writes `done` (or `stale`) once its ack's reply is back, after Redis applied it: a
      // job can be no longer active while its line is still to come.
      const unsettled = () => {
        const entries = readLedgers(ledgers);
        const settled = new Set(entries.filter(e => e.kind === 'done' || e.kind === 'stale').map(e => e.id));
        return [...acknowledged.keys()].filter(id => !settled.has(id));
      };
      // Handlers whose ack was cut off run again once their lease has run out: allow for that.
      await waitFor(
        async () => missing().length === 0 && unsettled().length === 0 && (await queue.stats()).active === 0,
        30_000,
        'every acknowledged job to run',
      ).catch(() => undefined);

      const entries = readLedgers(ledgers);
      const ended = countByJob(entries, 'end');
      const dones = countByJob(entries, 'done');
      const stale = countByJob(entries, 'stale');
      const addedBeforeKill = [...acknowledged].filter(([, at]) => at < killedAt).map(([id]) => id);
      const firstStart = new Map<string, number>();
      for (const e of entries) if (e.kind === 'start' && !firstStart.has(e.id)) firstStart.set(e.id, e.at);
      const survivedInRedis = addedBeforeKill.filter(id => (firstStart.get(id) ?? Infinity) >= restartedAt);
      const duplicates = [...dones].filter(([, count]) => count > 1).length;
      t.diagnostic(
        `${acknowledged.size} acknowledged adds (${failedAdds} add calls failed); ${survivedInRedis.length} added before the crash first ran after the restart; ` +
          `${entries.filter(e => e.kind === 'error').length} worker errors reported; ${duplicates} jobs completed twice; ${stale.size} stale acks`,
      );

      assert.deepEqual(missing(), [], 'every job whose add resolved ran to the end of its handler');
      assert.ok(survivedInRedis.length > 0, 'some acknowledged jobs were waiting in Redis across the crash (the AOF brought them back)');
      assert.deepEqual(
        [...acknowledged.keys()].filter(id => !dones.has(id) && !stale.has(id)),
        [],
        'every acknowledged job was acked (done, or stale when the first ack landed but its reply was lost)',
      );
      assert.deepEqual(
        await queue.stats(),
        { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 },
        'nothing left behind, nothing dead-lettered',
      );
      for (const worker of workers) {
        const resumed = entries.filter(e => e.source === worker.ledger && e.kind === 'done' && e.at > restartedAt);
        assert.ok(resumed.length > 0, `worker ${worker.pid} completed jobs after the restart without being touched`);
      }
      assert.deepEqual(
        [...ended.keys()].filter(id => !attempted.has(id)),
        [],
        'only added jobs ran',
      );
    } finally {
      producing = false;
      await producer;
      await killAll(workers);
      await queue.close();
    }
  },
);
