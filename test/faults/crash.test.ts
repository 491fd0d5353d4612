// Worker processes that die (SIGKILL) or freeze (SIGSTOP) in the middle of their jobs: the leases
// bring the jobs back, the fencing tokens keep a frozen worker from settling them. Real redis-server,
// real child processes (test/fixtures/worker-process.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Queue } from '../../src/index.js';
import {
  killAll,
  readLedger,
  readLedgers,
  spawnWorker,
  type LedgerEntry,
  type WorkerProcess,
  type WorkerProcessOptions,
} from '../fixtures/worker-process.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const LEASE_MS = 1_000;
const HANDLER_MS = 2_000;

const redis = useRedis({ appendOnly: false });
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sandglass-crash-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function ofKind(entries: readonly LedgerEntry[], kind: LedgerEntry['kind']): LedgerEntry[] {
  return entries.filter(entry => entry.kind === kind);
}

function idsOf(entries: readonly LedgerEntry[]): string[] {
  return entries.map(entry => entry.id).sort();
}

/** Spawns a worker of this file's queue shape and remembers it for cleanup. */
function spawner(workers: WorkerProcess[], name: string) {
  return async (label: string, options: Partial<WorkerProcessOptions> = {}): Promise<WorkerProcess> => {
    const worker = await spawnWorker({
      url: redis.url,
      queue: name,
      ledger: join(dir, `${name}-${label}.log`),
      leaseMs: LEASE_MS,
      handlerMs: HANDLER_MS,
      ...options,
    });
    workers.push(worker);
    return worker;
  };
}

test(
  'a worker process killed with SIGKILL mid-job: its jobs are delivered again after the lease by another process, none lost, no other duplicates',
  { timeout: 60_000 },
  async t => {
    const name = uniqueQueue('sigkill');
    const queue = new Queue<number>(name, { connection: redis.url });
    const workers: WorkerProcess[] = [];
    const spawn = spawner(workers, name);
    try {
      // The victim alone first, so that it surely holds jobs when it dies; its handlers take long
      // enough that none of them can end before the kill, however slow the machine. Without a
      // prefetch its 10 jobs fill it: with one, it would race the survivors for the other jobs added
      // just before the kill (and those it won would be reaped too, a correct but other count).
      const victim = await spawn('victim', { concurrency: 10, handlerMs: 30_000, prefetch: 0 });
      const victimIds = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ payload: i })));
      await waitFor(() => ofKind(readLedger(victim.ledger), 'start').length === 10, 10_000, 'the victim to start its 10 jobs');
      const survivors = await Promise.all([spawn('survivor-1', { concurrency: 20 }), spawn('survivor-2', { concurrency: 20 })]);
      const otherIds = await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ payload: 100 + i })));

      const beforeKill = readLedger(victim.ledger);
      assert.equal(ofKind(beforeKill, 'end').length, 0, 'precondition: the victim is in the middle of all its handlers');
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      t.diagnostic(`killed the victim ${killedAt - Math.min(...beforeKill.map(entry => entry.at))} ms into its handlers`);

      const all = [...victimIds, ...otherIds];
      // On a timeout the assertions below say what is missing.
      await waitFor(() => ofKind(readLedgers(survivors.map(s => s.ledger)), 'done').length >= all.length, 20_000).catch(() => undefined);
      await sleep(200); // a late duplicate would show up here

      const victimEntries = readLedger(victim.ledger);
      const survivorEntries = readLedgers(survivors.map(s => s.ledger));
      const entries = [...victimEntries, ...survivorEntries];
      assert.deepEqual(idsOf(ofKind(victimEntries, 'start')), [...victimIds].sort(), 'the victim ran exactly its own jobs');
      assert.deepEqual(ofKind(victimEntries, 'done'), [], 'the victim completed nothing');

      // Exactly one completion per job, all by the survivors.
      assert.deepEqual(idsOf(ofKind(entries, 'done')), [...all].sort(), 'every job completed exactly once');
      // The only jobs started twice are the victim's, and each of them was.
      const starts = ofKind(entries, 'start');
      const startedTwice = [...new Set(starts.map(e => e.id))].filter(id => starts.filter(e => e.id === id).length > 1).sort();
      assert.deepEqual(startedTwice, [...victimIds].sort(), "duplicate starts are exactly the killed worker's jobs");
      assert.deepEqual(
        idsOf(ofKind(survivorEntries, 'start').filter(e => otherIds.includes(e.id))),
        [...otherIds].sort(),
        'the others ran once',
      );

      for (const id of victimIds) {
        const first = starts.find(e => e.id === id && e.source === victim.ledger) as LedgerEntry;
        const again = starts.find(e => e.id === id && e.source !== victim.ledger);
        assert.ok(again, `job ${id} was delivered again`);
        assert.equal(again.attempt, 2, `job ${id}: the redelivery is attempt 2`);
        // The lease granted at the claim (just before `first.at`) had to run out first, and the
        // victim renewed it as long as it lived.
        assert.ok(
          again.at >= first.at + LEASE_MS - 100,
          `job ${id} redelivered ${again.at - first.at} ms after its first start, before its lease could run out`,
        );
        assert.ok(again.at > killedAt, `job ${id} redelivered ${killedAt - again.at} ms before the kill`);
        assert.ok(
          again.at <= killedAt + LEASE_MS + 3_000,
          `job ${id} redelivered promptly after its lease (${again.at - killedAt} ms after the kill)`,
        );
      }
      const delays = victimIds.map(id => (starts.find(e => e.id === id && e.source !== victim.ledger) as LedgerEntry).at - killedAt);
      t.diagnostic(`redelivered ${Math.min(...delays)}-${Math.max(...delays)} ms after the kill (lease ${LEASE_MS} ms)`);

      assert.deepEqual(ofKind(survivorEntries, 'error'), []);
      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
      assert.deepEqual(await queue.counters(), {
        added: 30,
        claimed: 40,
        completed: 30,
        retried: 0,
        dead: 0,
        reaped: 10,
        stale: 0,
        ticks: 0,
        ticksSkipped: 0,
        expired: 0,
      });
    } finally {
      await killAll(workers);
      await queue.close();
    }
  },
);

test(
  'a worker frozen with SIGSTOP past its lease, then continued: its acks are refused as stale and each job completes exactly once',
  { timeout: 60_000 },
  async t => {
    const name = uniqueQueue('sigstop');
    const queue = new Queue<number>(name, { connection: redis.url });
    const workers: WorkerProcess[] = [];
    const spawn = spawner(workers, name);
    try {
      // Frozen as soon as it started its jobs, before the other worker exists, so that it surely
      // holds them; its leases run out while it is stopped.
      const frozen = await spawn('frozen', { concurrency: 10 });
      const ids = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ payload: i })));
      await waitFor(() => ofKind(readLedger(frozen.ledger), 'start').length === 10, 10_000, 'the frozen worker to start its 10 jobs');
      const stoppedAt = Date.now();
      await frozen.kill('SIGSTOP');
      assert.equal(ofKind(readLedger(frozen.ledger), 'end').length, 0, 'precondition: frozen in the middle of all its handlers');
      const other = await spawn('other', { concurrency: 20 });
      // The other worker takes the jobs back once the frozen one's leases ran out.
      await waitFor(() => ofKind(readLedger(other.ledger), 'start').length === 10, 10_000).catch(() => undefined);
      const takenOver = ofKind(readLedger(other.ledger), 'start');
      const resumedAt = Date.now();
      await frozen.kill('SIGCONT');
      t.diagnostic(
        `frozen ${resumedAt - stoppedAt} ms; taken over ${Math.min(...takenOver.map(e => e.at)) - stoppedAt} ms after the freeze`,
      );

      // The other worker completes the jobs; the frozen one hears that its acks were stale.
      await waitFor(
        () => ofKind(readLedger(other.ledger), 'done').length >= 10 && ofKind(readLedger(frozen.ledger), 'stale').length >= 10,
        15_000,
      ).catch(() => undefined);
      await sleep(200);
      const frozenEntries = readLedger(frozen.ledger);
      const otherEntries = readLedger(other.ledger);
      const sorted = [...ids].sort();

      assert.deepEqual(idsOf(takenOver), sorted, "the other worker ran exactly the frozen worker's jobs");
      assert.ok(
        takenOver.every(e => e.attempt === 2 && e.at >= stoppedAt),
        'as second attempts, after the freeze',
      );
      assert.deepEqual(idsOf(ofKind(frozenEntries, 'end')), sorted, "the frozen worker's handlers ran to their end after SIGCONT");
      assert.deepEqual(idsOf(ofKind(frozenEntries, 'stale')), sorted, 'the `stale` event fired in the frozen worker for each of its jobs');
      assert.deepEqual(ofKind(frozenEntries, 'done'), [], 'no ack of the frozen worker landed');
      assert.deepEqual(idsOf(ofKind([...frozenEntries, ...otherEntries], 'done')), sorted, 'each job completed exactly once');
      const refusedWhileRunning = ids.filter(id => {
        const stale = frozenEntries.find(e => e.kind === 'stale' && e.id === id) as LedgerEntry;
        const done = otherEntries.find(e => e.kind === 'done' && e.id === id) as LedgerEntry;
        return stale.at < done.at;
      });
      t.diagnostic(`${refusedWhileRunning.length} of 10 stale acks were refused while the redelivery was still running`);

      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
      assert.deepEqual(await queue.counters(), {
        added: 10,
        claimed: 20,
        completed: 10,
        retried: 0,
        dead: 0,
        reaped: 10,
        stale: 10,
        ticks: 0,
        ticksSkipped: 0,
        expired: 0,
      });
    } finally {
      await killAll(workers);
      await queue.close();
    }
  },
);

test(
  'a worker that gets back a job it is still running (after losing the lease) keeps renewing the new lease: the job completes once, not dead-lettered',
  { timeout: 90_000 },
  async t => {
    // Worker A freezes with job X; B takes X over and is killed; A, continued, claims X again while
    // its first, stale run of X is still in its handler. Two runs of X now live in A: the first must
    // end as stale, and the second must keep its lease and complete.
    const name = uniqueQueue('reclaim');
    const queue = new Queue<string>(name, { connection: redis.url });
    const workers: WorkerProcess[] = [];
    const spawn = spawner(workers, name);
    try {
      // A handler long enough that A claims X again while its first run is still in it, even when
      // spawning B takes seconds on a loaded machine (6 s was not always enough).
      const a = await spawn('a', { concurrency: 10, handlerMs: 15_000 });
      const id = await queue.add('x', { id: `${name}-x` });
      await waitFor(() => ofKind(readLedger(a.ledger), 'start').length === 1, 10_000, 'A to start X');
      const startedAt = Date.now();
      await a.kill('SIGSTOP');
      const b = await spawn('b', { concurrency: 10, handlerMs: 30_000 });
      await waitFor(() => ofKind(readLedger(b.ledger), 'start').length === 1, 10_000, 'B to take X over');
      await b.kill('SIGKILL');
      await a.kill('SIGCONT');
      await waitFor(() => ofKind(readLedger(a.ledger), 'start').length === 2, 10_000, "A to claim X again once B's lease ran out");
      const reclaimedAt = (ofKind(readLedger(a.ledger), 'start')[1] as LedgerEntry).at;
      t.diagnostic(`A claimed X again ${reclaimedAt - startedAt} ms after its first start (its first run ends at 15000 ms)`);
      assert.ok(reclaimedAt < startedAt + 15_000, 'precondition: the second run began while the first was still running');

      // Both of A's runs end; at most a few seconds after the second one the job must be settled.
      await waitFor(() => ofKind(readLedger(a.ledger), 'end').length === 2, 35_000).catch(() => undefined);
      // Each run's settle outcome (done or stale) is written once its reply is back: wait for both,
      // not a fixed pause, which a loaded machine can outlast.
      await waitFor(() => {
        const ledger = readLedger(a.ledger);
        return ofKind(ledger, 'done').length + ofKind(ledger, 'stale').length >= 2;
      }, 5_000).catch(() => undefined);
      const entries = readLedger(a.ledger);
      const outcome = (kind: LedgerEntry['kind']) => ofKind(entries, kind).map(e => `${kind} attempt ${e.attempt}`);
      t.diagnostic(`A's ledger: ${entries.map(e => `${e.kind}#${e.attempt}`).join(' ')}`);
      const info = await queue.get(id);
      assert.equal(info, null, `the job is gone, not ${info?.state}${info?.lastError ? ` (${info.lastError})` : ''}`);
      assert.deepEqual(outcome('start'), ['start attempt 1', 'start attempt 3']);
      assert.deepEqual(outcome('stale'), ['stale attempt 1'], 'only the first run, whose lease was lost, is refused');
      assert.deepEqual(outcome('done'), ['done attempt 3'], 'the second run, whose lease A renewed, completes the job');
      assert.deepEqual(await queue.counters(), {
        added: 1,
        claimed: 3,
        completed: 1,
        retried: 0,
        dead: 0,
        reaped: 2,
        stale: 1,
        ticks: 0,
        ticksSkipped: 0,
        expired: 0,
      });
    } finally {
      await killAll(workers);
      await queue.close();
    }
  },
);
