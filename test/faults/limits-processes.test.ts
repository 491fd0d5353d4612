// Queue limits with real worker processes (issue 10): `rate` over 3 processes on 1 and 4 partitions,
// `concurrency` over 3 processes with 100 ms handlers, and a SIGKILLed process's slot coming back
// with its lease. Times are the handlers' own start and end (test/fixtures/worker-process.ts ledgers).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { killAll, readLedgers, spawnWorkers, type LedgerEntry, type WorkerProcess } from '../fixtures/worker-process.js';
import { busiestWindow, mostOverlapping, mostStartsAtHandlers } from '../helpers/limits.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sandglass-limits-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function starts(entries: readonly LedgerEntry[]): number[] {
  return entries.filter(entry => entry.kind === 'start').map(entry => entry.at);
}

/** [start, end] of each handler run that ended, matched by job id and attempt within a ledger. */
function spans(entries: readonly LedgerEntry[]): [number, number][] {
  const open = new Map<string, number>();
  const out: [number, number][] = [];
  for (const entry of entries) {
    const key = `${entry.source} ${entry.id} ${entry.attempt}`;
    if (entry.kind === 'start') open.set(key, entry.at);
    if (entry.kind === 'end' && open.has(key)) out.push([open.get(key) as number, entry.at]);
  }
  return out;
}

async function spawn(
  queue: string,
  count: number,
  options: { concurrency: number; handlerMs?: number; leaseMs?: number },
  label: string,
): Promise<WorkerProcess[]> {
  return spawnWorkers(
    Array.from({ length: count }, (_, i) => ({ url: redis.url, queue, ledger: join(dir, `${label}-${i}.log`), ...options })),
  );
}

// Windows are measured where the handlers start, in 3 processes: see mostStartsAtHandlers. A
// sustained excess of 20% is caught by the drain time too (500 starts take >= 9 s).
const RATE = 50;
const MOST_PER_WINDOW = mostStartsAtHandlers({ max: RATE, per: 1_000 });

for (const partitions of [1, 4]) {
  test(`rate ${RATE}/s over 3 worker processes x concurrency 20, ${partitions} partition(s): no 1 s window of handler starts holds more than ${MOST_PER_WINDOW}, 500 jobs drain in ~10 s`, async () => {
    const name = uniqueQueue(`rate-procs-${partitions}`);
    const queue = redis.track(new Queue(name, { connection: redis.url, partitions }));
    await queue.setLimits({ rate: { max: RATE, per: '1s' } });
    const workers = await spawn(name, 3, { concurrency: 20 }, `rate-${partitions}`);
    try {
      await queue.addBulk(Array.from({ length: 500 }, (_, n) => ({ payload: n })));
      const addedAt = Date.now();
      let all: number[] = [];
      await waitFor(() => (all = starts(readLedgers(workers.map(w => w.ledger)))).length >= 500, 40_000, '500 starts');
      const tookMs = Math.max(...all) - addedAt;
      const busiest = busiestWindow(all, 1_000);
      assert.ok(busiest <= MOST_PER_WINDOW, `busiest 1 s window: ${busiest} starts`);
      assert.equal(all.length, 500, 'each job started once');
      // 500 starts at 50/s: the last one ~10 s after the first.
      assert.ok(tookMs >= 9_000, `drained in ${tookMs} ms: faster than the limit allows`);
      assert.ok(tookMs <= 14_000, `drained in ${tookMs} ms: the limit was under-used`);
      assert.equal(new Set(workers.map(w => starts(readLedgers([w.ledger])).length > 0)).size, 1, 'every process took part');
    } finally {
      await killAll(workers);
    }
  });
}

test("concurrency 3 over 3 worker processes, 100 ms handlers: at most 3 overlap, 20-30 jobs/s; a SIGKILLed holder's slot comes back with its lease", async () => {
  const name = uniqueQueue('conc-procs');
  const queue = redis.track(new Queue(name, { connection: redis.url }));
  await queue.setLimits({ concurrency: 3 });
  const workers = await spawn(name, 3, { concurrency: 5, handlerMs: 100, leaseMs: 2_000 }, 'conc');
  try {
    await queue.addBulk(Array.from({ length: 150 }, (_, n) => ({ payload: n })));
    const addedAt = Date.now();
    let entries: LedgerEntry[] = [];
    await waitFor(() => spans((entries = readLedgers(workers.map(w => w.ledger)))).length >= 60, 20_000, '60 jobs');
    const done = spans(entries);
    const rate = (done.length * 1_000) / (Math.max(...done.map(span => span[1])) - addedAt);
    assert.ok(mostOverlapping(done) <= 3, `${mostOverlapping(done)} handlers at once`);
    assert.ok(rate >= 20 && rate <= 31, `${rate.toFixed(1)} jobs/s`);

    // Kill a process while it holds slots (its handlers run 100 ms: it holds one most of the time).
    const victim = workers[0] as WorkerProcess;
    await victim.kill('SIGKILL');
    const killedAt = Date.now();
    const survivors = workers.slice(1);
    // The rest drain, and after the victim's leases (2 s) run out, all 3 slots are used again.
    await waitFor(
      async () => {
        const stats = await queue.stats();
        return stats.delayed + stats.ready + stats.active === 0;
      },
      30_000,
      'drained',
    );
    const later = spans(readLedgers(survivors.map(w => w.ledger))).filter(([start]) => start > killedAt + 2_500);
    assert.ok(later.length > 0 && mostOverlapping(later) === 3, `after the lease, ${mostOverlapping(later)} at once (slots came back)`);
    const everything = spans(readLedgers(workers.map(w => w.ledger)));
    assert.ok(mostOverlapping(everything.filter(([start]) => start > killedAt)) <= 3);
  } finally {
    await killAll(workers);
  }
});
