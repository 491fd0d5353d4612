// Groups with real worker processes (issue 20): a group's concurrency over 3 processes, a SIGKILLed
// process's group slots coming back with their leases, a group's rate, and a concurrency-1 group run
// in order by 3 processes. Times are the handlers' own (test/fixtures/worker-process.ts ledgers).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { killAll, readLedgers, spawnWorkers, type LedgerEntry, type WorkerProcess } from '../fixtures/worker-process.js';
import { busiestWindow, mostOverlapping } from '../helpers/limits.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sandglass-groups-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** [start, end] of each handler run that ended, by group, matched by job id and attempt within a ledger. */
function spansByGroup(entries: readonly LedgerEntry[]): Map<string, [number, number][]> {
  const open = new Map<string, number>();
  const out = new Map<string, [number, number][]>();
  for (const entry of entries) {
    const key = `${entry.source} ${entry.id} ${entry.attempt}`;
    if (entry.kind === 'start') open.set(key, entry.at);
    if (entry.kind === 'end' && open.has(key)) {
      const group = entry.group ?? '';
      out.set(group, [...(out.get(group) ?? []), [open.get(key) as number, entry.at]]);
    }
  }
  return out;
}

async function spawn(queue: string, count: number, options: { concurrency: number; handlerMs?: number; leaseMs?: number }, label: string) {
  return spawnWorkers(
    Array.from({ length: count }, (_, i) => ({ url: redis.url, queue, ledger: join(dir, `${label}-${i}.log`), ...options })),
  );
}

async function drained(queue: Queue): Promise<boolean> {
  const stats = await queue.stats();
  return stats.delayed + stats.ready + stats.active === 0;
}

test("group concurrency 2 over 3 worker processes: never more than 2 of a group at once; a SIGKILLed holder's group slots come back with its leases", async () => {
  const name = uniqueQueue('group-conc-procs');
  const queue = redis.track(new Queue(name, { connection: redis.url }));
  await queue.setGroupLimits({ concurrency: 2 });
  const workers = await spawn(name, 3, { concurrency: 20, handlerMs: 30, leaseMs: 2_000 }, 'conc');
  try {
    const groups = Array.from({ length: 20 }, (_, g) => `tenant-${g}`);
    await queue.addBulk(groups.flatMap(group => Array.from({ length: 50 }, (_, n) => ({ id: `${group}-${n}`, payload: n, group }))));
    // Let them run a while, then kill one process while it holds group slots.
    await waitFor(() => readLedgers(workers.map(w => w.ledger)).filter(e => e.kind === 'end').length >= 200, 30_000, '200 jobs');
    const victim = workers[0] as WorkerProcess;
    await victim.kill('SIGKILL');
    await waitFor(() => drained(queue), 60_000, 'drained');
    const byGroup = spansByGroup(readLedgers(workers.map(w => w.ledger)));
    assert.equal(byGroup.size, 20, 'every group ran');
    for (const [group, spans] of byGroup) {
      assert.ok(mostOverlapping(spans) <= 2, `${group}: ${mostOverlapping(spans)} handlers at once`);
    }
    assert.ok(
      [...byGroup.values()].some(spans => mostOverlapping(spans) === 2),
      'some group used both its slots',
    );
    // Every job completed; the victim's were delivered again after its leases ran out.
    const ended = new Set(
      readLedgers(workers.slice(1).map(w => w.ledger))
        .filter(e => e.kind === 'done')
        .map(e => e.id),
    );
    // The victim may have been killed after its ack landed and before it wrote `done`: a job whose
    // handler ended there and that is gone from Redis (the queue drained, none dead) completed.
    const victimDone = new Set(
      readLedgers([victim.ledger])
        .filter(e => e.kind === 'done' || e.kind === 'end')
        .map(e => e.id),
    );
    assert.equal((await queue.stats()).dead, 0, 'none dead');
    assert.equal(new Set([...ended, ...victimDone]).size, 1_000, 'all 1,000 jobs completed');
    assert.deepEqual(await queue.groupTotals(), { withWork: 0, held: 0, paused: 0 });
  } finally {
    await killAll(workers);
  }
});

test('group rate 5 per second over 3 worker processes: a group starts at most 5 in a second, and its jobs spread over the windows', async () => {
  const name = uniqueQueue('group-rate-procs');
  const queue = redis.track(new Queue(name, { connection: redis.url }));
  await queue.setGroupLimits({ rate: { max: 5, per: '1s' } });
  const workers = await spawn(name, 3, { concurrency: 20 }, 'rate');
  try {
    const groups = ['r0', 'r1', 'r2', 'r3'];
    await queue.addBulk(groups.flatMap(group => Array.from({ length: 15 }, (_, n) => ({ payload: n, group }))));
    await waitFor(() => drained(queue), 30_000, 'drained');
    const starts = readLedgers(workers.map(w => w.ledger)).filter(e => e.kind === 'start');
    for (const group of groups) {
      const at = starts.filter(e => e.group === group).map(e => e.at);
      assert.equal(at.length, 15, `${group} started each job once`);
      // The limit holds on the Redis clock at the claim; a handler starts a few ms after its claim,
      // so the windows measured here are a little shorter than the limit's.
      const busiest = busiestWindow(at, 900);
      assert.ok(busiest <= 5, `${group}: ${busiest} starts in 900 ms`);
      const spread = Math.max(...at) - Math.min(...at);
      assert.ok(spread >= 1_900, `${group}: 15 starts at 5/s spread over ${spread} ms`);
    }
  } finally {
    await killAll(workers);
  }
});

test('a concurrency-1 group of 500 jobs over 3 worker processes runs one at a time, in due order', async () => {
  const name = uniqueQueue('group-order-procs');
  const queue = redis.track(new Queue(name, { connection: redis.url }));
  await queue.setGroupLimits({ concurrency: 1 }, { group: 'orders-of-shop-7' });
  const workers = await spawn(name, 3, { concurrency: 10 }, 'order');
  try {
    const at = Date.now();
    // Due order by time, and jobs of one due time in the order they were added.
    await queue.addBulk(
      Array.from({ length: 500 }, (_, n) => ({ id: `o-${n}`, payload: n, group: 'orders-of-shop-7', at: at + Math.floor(n / 10) })),
    );
    await queue.addBulk(Array.from({ length: 200 }, (_, n) => ({ payload: n, group: `noise-${n % 5}` })));
    await waitFor(() => drained(queue), 60_000, 'drained');
    const entries = readLedgers(workers.map(w => w.ledger));
    const starts = entries.filter(e => e.kind === 'start' && e.group === 'orders-of-shop-7');
    assert.equal(starts.length, 500, 'each job started once');
    // In order and one at a time: each job starts no sooner than the one before it ended. (Clocks
    // are ms: two runs in one ms tie, so the order is read from start >= end, not from a sort.)
    const startOf = new Map(starts.map(e => [e.id, e.at]));
    const endOf = new Map(entries.filter(e => e.kind === 'end').map(e => [e.id, e.at]));
    for (let n = 1; n < 500; n++) {
      const start = startOf.get(`o-${n}`) as number;
      const previousEnd = endOf.get(`o-${n - 1}`) as number;
      assert.ok(start >= previousEnd, `o-${n} started at ${start}, before o-${n - 1} ended at ${previousEnd}`);
    }
    const spans = spansByGroup(entries).get('orders-of-shop-7') ?? [];
    assert.equal(mostOverlapping(spans), 1, 'one at a time');
    assert.ok(new Set(starts.map(e => e.source)).size >= 2, 'more than one process ran the group');
  } finally {
    await killAll(workers);
  }
});
