// Recurring schedules with real processes (issue 9): several processes upserting one schedule at
// once while worker processes are killed and restarted, catch-up after every process was down,
// unschedule and a changed definition under a running worker process, and DST through the API.
// Real redis-server; worker processes are test/fixtures/worker-process.ts (a ledger line per start),
// upserters test/fixtures/schedule-upserter.ts. Tick ids are `<key>@<tick ms>` (one partition).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Queue, type ScheduleSpec } from '../../src/index.js';
import {
  killAll,
  readLedger,
  readLedgers,
  spawnWorker,
  spawnWorkers,
  type LedgerEntry,
  type WorkerProcess,
} from '../fixtures/worker-process.js';
import { spawnUpserters } from '../fixtures/schedule-upserter.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sandglass-schedules-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A tick's start, read from a worker's ledger. */
interface TickStart {
  readonly key: string;
  readonly tickAt: number;
  readonly attempt: number;
  /** Local epoch ms when the handler started (the machine's clock, which Redis TIME reads too). */
  readonly at: number;
  /** The due time the server delivered the job at. */
  readonly dueAt: number;
  readonly source: string;
}

function tickStarts(entries: readonly LedgerEntry[], key?: string): TickStart[] {
  return entries.flatMap(entry => {
    const match = entry.kind === 'start' ? /^(.*)@(\d+)$/.exec(entry.id) : null;
    if (!match || (key !== undefined && match[1] !== key)) return [];
    return [
      { key: match[1] as string, tickAt: Number(match[2]), attempt: entry.attempt, at: entry.at, dueAt: entry.dueAt, source: entry.source },
    ];
  });
}

/** The distinct tick times, ascending. */
function distinctTicks(starts: readonly TickStart[]): number[] {
  return [...new Set(starts.map(s => s.tickAt))].sort((a, b) => a - b);
}

/** The gaps between consecutive values. */
function steps(values: readonly number[]): number[] {
  return values.slice(1).map((v, i) => v - (values[i] as number));
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((sorted.length * p) / 100) - 1)] ?? Number.NaN;
}

/** Offset of the Redis server's clock from this process's (ms; Redis TIME and Date.now read the same clock here). */
async function serverClockOffset(): Promise<{ offsetMs: number; rttMs: number }> {
  let best = { offsetMs: Number.NaN, rttMs: Infinity };
  for (let i = 0; i < 5; i++) {
    const before = Date.now();
    const [s, us] = await redis.raw.time();
    const after = Date.now();
    const server = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    if (after - before < best.rttMs) best = { offsetMs: server - (before + after) / 2, rttMs: after - before };
  }
  return best;
}

/** The tick times of a schedule's jobs still in the queue (waiting: created, not started). */
async function pendingTicks(queue: Queue, key: string): Promise<number[]> {
  const jobs = [...(await queue.list('delayed', { limit: 100 })).jobs, ...(await queue.list('ready', { limit: 100 })).jobs];
  return jobs
    .filter(job => job.schedule?.key === key)
    .map(job => job.schedule!.tickAt)
    .sort((a, b) => a - b);
}

/** Whether a worker's ledger shows no tick in flight: every start has its `done`. */
function idle(ledger: string): boolean {
  const entries = readLedger(ledger);
  return entries.filter(e => e.kind === 'start').length === entries.filter(e => e.kind === 'done').length;
}

/** SIGTERM (the worker finishes its handlers and acks them), then waits until every one is gone. */
async function stopGracefully(workers: readonly WorkerProcess[]): Promise<void> {
  await Promise.all(workers.map(worker => worker.kill('SIGTERM')));
  await Promise.all(workers.map(worker => worker.exited));
}

const LEASE_MS = 2_000;

test(
  '5 processes upserting one every-1s schedule at once, again every 3 s, with 2 worker processes (one SIGKILLed and restarted): every tick runs once, none missing, none early, a duplicate only after the killed lease ran out',
  { timeout: 120_000 },
  async () => {
    const name = uniqueQueue('sched-deploys');
    const key = 'poll';
    const spec: ScheduleSpec = { every: '1s', payload: { kind: 'poll' } };
    const ledgers = ['w0', 'w1', 'w0-restarted'].map(n => join(dir, `${name}-${n}.log`));
    // Handlers of 300 ms: a kill catches a tick in flight (its lease must run out before it runs again).
    const workerOptions = (ledger: string) => ({ url: redis.url, queue: name, ledger, leaseMs: LEASE_MS, handlerMs: 300 });
    const [workers, upserters] = await Promise.all([
      spawnWorkers([workerOptions(ledgers[0]!), workerOptions(ledgers[1]!)]),
      spawnUpserters(5, { url: redis.url, queue: name, key, spec }),
    ]);
    const all: WorkerProcess[] = [...workers];
    const queue = new Queue(name, { connection: redis.url });
    try {
      const clock = await serverClockOffset();
      const t0 = Date.now() + 500;
      const runMs = 20_000;
      // The deploys: all 5 processes upsert at t0, t0 + 3 s, ... (7 rounds).
      const deploys = (async () => {
        for (let round = 0; round * 3_000 < runMs; round++) await upserters.upsertAt(round, t0 + round * 3_000);
      })();

      // Mid-way, SIGKILL worker 0 while it runs a tick (its handler started and did not end), and start
      // a new worker process at once. Should it not catch one in flight within 7 s, it is killed anyway.
      await sleep(t0 + 7_000 - Date.now());
      const inFlight = () => readLedger(ledgers[0]!).at(-1)?.kind === 'start';
      await waitFor(inFlight, 7_000, 'worker 0 running a tick').catch(() => undefined);
      await workers[0]!.kill('SIGKILL');
      const killedAt = Date.now();
      // Read after the kill: a last `start` never acked (the ack follows `end`), so that tick must run
      // again once its lease ran out; after a last `end` the ack may or may not have landed.
      const killedLedger = readLedger(ledgers[0]!);
      const lastKilledStart = tickStarts(killedLedger).at(-1);
      const openStart = killedLedger.at(-1)?.kind === 'start' ? lastKilledStart : undefined;
      const maybeOpen = killedLedger.at(-1)?.kind === 'end' ? lastKilledStart : undefined;
      all.push(await spawnWorker(workerOptions(ledgers[2]!)));

      await deploys;
      await sleep(t0 + runMs - Date.now());
      await stopGracefully(all);

      const reports = upserters.reports;
      assert.deepEqual(
        reports.filter(r => r.error !== undefined),
        [],
        'every upsert succeeded',
      );
      assert.equal(reports.length, 35);
      const entries = readLedgers(ledgers);
      assert.deepEqual(
        entries.filter(e => e.kind === 'error' || e.kind === 'failed'),
        [],
        'no worker errors or failures',
      );

      const starts = tickStarts(entries);
      assert.deepEqual(
        starts.filter(s => s.key !== key),
        [],
        'only ticks of the schedule ran',
      );
      const ticks = distinctTicks(starts);
      const pending = await pendingTicks(queue, key);
      const first = ticks[0]!;
      const last = ticks.at(-1)!;

      // The grid: anchored at the first upsert, 1 s apart, every tick between the first and last started.
      assert.deepEqual(
        steps(ticks).filter(step => step !== 1_000),
        [],
        `a tick missing or off the grid: ${ticks.map(tick => tick - first)}`,
      );
      const roundZero = reports.filter(r => r.round === 0);
      const firstCall = Math.min(...roundZero.map(r => r.calledAt));
      assert.ok(
        first >= firstCall + clock.offsetMs - clock.rttMs &&
          first <= Math.max(...roundZero.map(r => r.returnedAt)) + clock.offsetMs + clock.rttMs,
        'the grid is anchored at the first upsert',
      );
      for (const report of reports) {
        const off = report.info!.upcoming.filter(at => (at - first) % 1_000 !== 0);
        assert.deepEqual(off, [], `process ${report.process} round ${report.round} saw a tick off the grid`);
      }
      assert.ok(last - first >= 15_000, `the ticks ran through the run (${(last - first) / 1_000} s)`);

      // None early: the server delivered each tick at its tick time, and it started at or after it.
      assert.deepEqual(
        starts.filter(s => s.dueAt !== s.tickAt),
        [],
        'each tick was due at its tick time',
      );
      const early = starts.filter(s => s.at < s.tickAt);
      assert.deepEqual(early, [], 'no tick started before its tick time');

      // Once per tick; a second start only for the tick the killed worker was running, after its lease.
      const byTick = new Map<number, TickStart[]>();
      for (const s of starts) byTick.set(s.tickAt, [...(byTick.get(s.tickAt) ?? []), s]);
      const doubled = [...byTick].filter(([, list]) => list.length > 1);
      for (const [tickAt, list] of doubled) {
        assert.equal(list.length, 2, `tick ${tickAt} started ${list.length} times`);
        const [firstStart, second] = list.sort((a, b) => a.at - b.at) as [TickStart, TickStart];
        assert.equal(firstStart.source, ledgers[0], `tick ${tickAt} doubled, but not by the killed worker`);
        assert.ok(
          tickAt === openStart?.tickAt || tickAt === maybeOpen?.tickAt,
          `tick ${tickAt} doubled, but it was not the one in flight at the kill`,
        );
        assert.equal(second.attempt, 2);
        assert.ok(second.at >= tickAt + LEASE_MS, `the second start of tick ${tickAt} came before its first lease could end`);
      }
      if (openStart) {
        assert.equal(byTick.get(openStart.tickAt)?.length, 2, 'the tick in flight at the kill ran again once its lease ran out');
      }
      for (const s of starts) {
        if (s.attempt !== 1) assert.ok(s.at >= s.tickAt + LEASE_MS, `tick ${s.tickAt} attempt ${s.attempt} before a lease could end`);
      }

      // What is left: the next tick, created by the claim of the last one (and one a closing worker
      // may have claimed and handed back); with the ticks that ran, the grid with no gap. `runs`
      // counts every tick created, each one job (the queue's `added` counter).
      assert.ok(pending.length >= 1 && pending[0]! > last, `the next tick waits: ${pending.map(p => p - last)}`);
      const created = [...ticks, ...pending];
      assert.deepEqual(
        steps(created).filter(step => step !== 1_000),
        [],
        'the ticks created are the grid',
      );
      const info = (await queue.getSchedule(key))!;
      assert.equal(info.runs, created.length, 'runs = ticks created');
      assert.equal((await queue.counters()).added, info.runs, 'one job per tick created');
      assert.equal(info.nextAt, created.at(-1));
      const stats = await queue.stats();
      assert.equal(stats.active + stats.dead, 0);

      const rounds = [...new Set(reports.map(r => r.round))];
      const spread = Math.max(
        ...rounds.map(round => {
          const calls = reports.filter(r => r.round === round).map(r => r.calledAt);
          return Math.max(...calls) - Math.min(...calls);
        }),
      );
      const lateness = [...byTick.values()].map(list => Math.min(...list.map(s => s.at)) - list[0]!.tickAt).sort((a, b) => a - b);
      const figures =
        `schedule figures: ticks=${ticks.length} missing=0 duplicates=${doubled.length}${doubled.length ? ' (killed worker, tick in flight)' : ''}` +
        ` upserts=${reports.length} (5 processes x ${reports.length / 5} rounds, each round's calls within ${spread}ms)` +
        ` lateness p50=${percentile(lateness, 50)}ms p99=${percentile(lateness, 99)}ms max=${lateness.at(-1)}ms` +
        (doubled.length
          ? ` redelivery after kill: ${doubled.map(([, l]) => `${l[1]!.at - l[0]!.at}ms`).join(',')} (lease ${LEASE_MS}ms)`
          : '') +
        ` clock offset redis-local=${clock.offsetMs}ms (rtt ${clock.rttMs}ms)` +
        ` killed at +${killedAt - first}ms${openStart ? '' : ' (no tick in flight)'}`;
      console.log(figures);
    } finally {
      await killAll(all);
      await upserters.close();
      await queue.close();
    }
  },
);

test(
  "catchUp after every process was down for several ticks: 'latest' runs the most recent missed tick once, then the grid; 'all' runs each missed tick once, oldest first",
  { timeout: 60_000 },
  async t => {
    const name = uniqueQueue('sched-catchup');
    const ledgers = ['before', 'after'].map(n => join(dir, `${name}-${n}.log`));
    const queue = new Queue(name, { connection: redis.url });
    const all: WorkerProcess[] = [];
    try {
      all.push(await spawnWorker({ url: redis.url, queue: name, ledger: ledgers[0]! }));
      const anchor = (await queue.schedule('latest', { every: '1s' })).nextAt!;
      await queue.schedule('all', { every: '1s', catchUp: 'all' });
      const count = (key: string) => tickStarts(readLedger(ledgers[0]!), key).length;
      await waitFor(() => count('latest') >= 2 && count('all') >= 2, 15_000, '2 ticks of each');
      // Down half-way between two ticks, with no tick in flight (every start acked): no lease has to run out.
      await sleep(anchor + 500 + 1_000 * Math.ceil((Date.now() - anchor - 500) / 1_000) - Date.now());
      await waitFor(() => idle(ledgers[0]!), 5_000, 'no tick in flight');
      await all[0]!.kill('SIGKILL');
      const before = tickStarts(readLedger(ledgers[0]!));
      // Every process down for more than 3 intervals after the last tick that ran.
      await sleep(4_500);
      const restartAt = Date.now();
      all.push(await spawnWorker({ url: redis.url, queue: name, ledger: ledgers[1]! }));
      await waitFor(() => tickStarts(readLedger(ledgers[1]!), 'latest').length >= 4, 20_000, "4 ticks of 'latest' after the restart");
      await stopGracefully(all);

      const afterStarts = tickStarts(readLedger(ledgers[1]!));
      for (const s of [...before, ...afterStarts]) assert.ok(s.at >= s.tickAt, `tick ${s.key}@${s.tickAt} started early`);
      for (const s of afterStarts) assert.equal(s.attempt, 1, `${s.key}@${s.tickAt}: no tick was in flight at the kill`);

      // 'latest': the tick pending at the kill (created by the last claim) runs late, then the most
      // recent missed tick, once, then the grid.
      const lastBefore = distinctTicks(before.filter(s => s.key === 'latest')).at(-1)!;
      const latest = afterStarts.filter(s => s.key === 'latest').map(s => s.tickAt);
      assert.equal(new Set(latest).size, latest.length, `'latest' ran a tick twice: ${latest}`);
      const [pendingAtKill, caughtUp, ...grid] = latest as [number, number, ...number[]];
      assert.equal(pendingAtKill, lastBefore + 1_000, 'the tick pending at the kill runs');
      assert.equal((caughtUp - pendingAtKill) % 1_000, 0);
      assert.ok(caughtUp - pendingAtKill >= 3_000, `one tick for the missed ones, the most recent: +${caughtUp - pendingAtKill} ms`);
      assert.ok(
        caughtUp > restartAt - 1_000,
        `the caught-up tick is the most recent one missed (${caughtUp - restartAt} ms from the restart)`,
      );
      assert.deepEqual(
        steps([caughtUp, ...grid]),
        grid.map(() => 1_000),
        `then the grid: ${latest.map(x => x - lastBefore)}`,
      );

      // 'all': no tick missing or doubled across the outage, the missed ones in order.
      const allBefore = before.filter(s => s.key === 'all').map(s => s.tickAt);
      const allAfter = afterStarts.filter(s => s.key === 'all').map(s => s.tickAt);
      const allTicks = [...allBefore, ...allAfter];
      assert.deepEqual(
        steps(allTicks),
        allTicks.slice(1).map(() => 1_000),
        `'all' in order, each tick once: ${allTicks.map(x => x - allTicks[0]!)}`,
      );
      assert.ok(allAfter.filter(tick => tick < restartAt).length >= 4, "'all' caught up every missed tick");

      for (const key of ['latest', 'all']) {
        const ran = distinctTicks(tickStarts(readLedgers(ledgers), key)).length;
        const info = (await queue.getSchedule(key))!;
        assert.equal(info.runs, ran + (await pendingTicks(queue, key)).length, `${key}: runs = ticks created`);
      }
      const latestLate = afterStarts.find(s => s.key === 'latest' && s.tickAt === caughtUp)!;
      t.diagnostic(
        `latest: pending tick +${pendingAtKill - lastBefore} ms, caught up +${caughtUp - lastBefore} ms (started ${latestLate.at - latestLate.tickAt} ms late); all: ${allAfter.filter(x => x < restartAt).length} missed ticks run`,
      );
    } finally {
      await killAll(all);
      await queue.close();
    }
  },
);

test(
  'with a worker process running, unschedule stops the ticks within one tick, and a schedule changed between ticks (every 1s -> 2s) goes on on the new grid with no tick lost or doubled',
  { timeout: 60_000 },
  async t => {
    const name = uniqueQueue('sched-change');
    const ledger = join(dir, `${name}.log`);
    const queue = new Queue(name, { connection: redis.url });
    const worker = await spawnWorker({ url: redis.url, queue: name, ledger });
    try {
      const stop = await queue.schedule('stop', { every: '1s' });
      const change = await queue.schedule('change', { every: '1s' });
      const anchor = change.nextAt!;
      const count = (key: string) => tickStarts(readLedger(ledger), key).length;
      await waitFor(() => count('stop') >= 2 && count('change') >= 2, 15_000, '2 ticks of each');

      // Unschedule at the very instant the pending tick falls due (the claim and the removal race).
      const pendingStop = distinctTicks(tickStarts(readLedger(ledger), 'stop')).at(-1)! + 1_000;
      assert.equal((pendingStop - stop.nextAt!) % 1_000, 0);
      await sleep(pendingStop - Date.now());
      assert.equal(await queue.unschedule('stop'), 'removed');
      const unscheduledAt = Date.now();

      // Change the other half-way between two of its ticks, once the first of the two started.
      let tick = anchor + 1_000 * Math.ceil((Date.now() - anchor) / 1_000);
      for (;;) {
        await waitFor(
          () => tickStarts(readLedger(ledger), 'change').some(s => s.tickAt === tick),
          10_000,
          `tick +${tick - anchor} of 'change'`,
        );
        if (Date.now() < tick + 600) break;
        tick += 1_000;
      }
      await sleep(tick + 500 - Date.now());
      const changeCalledAt = Date.now();
      const changed = await queue.schedule('change', { every: '2s' });
      const changeReturnedAt = Date.now();
      assert.equal(changed.every, 2_000);
      assert.deepEqual(
        changed.upcoming.filter(at => (at - anchor) % 2_000 !== 0),
        [],
        'the new grid keeps the anchor of the first upsert',
      );
      assert.ok(changed.nextAt! >= changeCalledAt);

      await waitFor(
        () => tickStarts(readLedger(ledger), 'change').filter(s => s.tickAt > changeReturnedAt).length >= 2,
        10_000,
        '2 ticks on the new grid',
      );
      await waitFor(() => idle(ledger), 5_000, 'the last tick acked');

      const stops = tickStarts(readLedger(ledger), 'stop');
      assert.deepEqual(
        stops.filter(s => s.tickAt > unscheduledAt + 1_000).map(s => s.tickAt - unscheduledAt),
        [],
        'no tick later than one interval after unschedule returned',
      );
      assert.equal(await queue.getSchedule('stop'), null);
      assert.deepEqual(await pendingTicks(queue, 'stop'), [], 'no tick of the removed schedule left');

      const changes = tickStarts(readLedger(ledger), 'change');
      const ticks = changes.map(s => s.tickAt);
      assert.equal(new Set(ticks).size, ticks.length, `a tick ran twice: ${ticks.map(x => x - anchor)}`);
      for (const s of changes) assert.ok(s.at >= s.tickAt, `tick ${s.tickAt} started early`);
      // Old: the ticks before the new definition's first; its pending tick (after the change) was replaced.
      const old = ticks.filter(at => at < changed.nextAt!);
      const fresh = ticks.filter(at => at >= changed.nextAt!);
      assert.deepEqual(ticks, [...old, ...fresh], 'the ticks in order');
      assert.deepEqual(
        old,
        old.map((_, i) => anchor + i * 1_000),
        'the old grid, no tick lost',
      );
      assert.ok(old.at(-1)! >= tick, 'every tick before the change ran');
      assert.deepEqual(
        steps(fresh),
        fresh.slice(1).map(() => 2_000),
        'the new grid',
      );
      assert.equal((fresh[0]! - anchor) % 2_000, 0);
      assert.equal(fresh[0], changed.nextAt, 'the first new tick is the first one after the change');
      assert.ok(fresh[0]! - changeReturnedAt < 2_000, 'the new grid goes on within one of its intervals');
      assert.ok(fresh[0]! - old.at(-1)! <= 2_000, 'no gap longer than the new interval across the change');
      const info = (await queue.getSchedule('change'))!;
      assert.equal(
        info.runs,
        ticks.length + (await pendingTicks(queue, 'change')).length,
        'runs = ticks created (the replaced pending tick never ran: not counted)',
      );
      t.diagnostic(
        `unschedule at +${unscheduledAt - pendingStop} ms from the due tick; stop ticks ${stops.map(s => s.tickAt - pendingStop)}; change ticks ${ticks.map(x => x - anchor)}, changed at +${changeCalledAt - anchor}`,
      );
    } finally {
      await killAll([worker]);
      await queue.close();
    }
  },
);

test("DST through the API: getSchedule(...).upcoming of '30 2 * * *' fires a non-existent 02:30 at 03:00 and a doubled one once, at its first occurrence (Europe/Berlin and America/New_York, 2027)", async () => {
  const queue = new Queue(uniqueQueue('sched-dst'), { connection: redis.url });
  const utc = (iso: string) => Date.parse(`${iso}Z`);
  const cases: { key: string; cron: string; tz: string; startAt: string; upcoming: string[] }[] = [
    // Berlin, 28 March 2027: 02:00 CET -> 03:00 CEST; 02:30 does not exist and fires at 03:00 CEST (01:00 UTC).
    {
      key: 'berlin-spring',
      cron: '30 2 * * *',
      tz: 'Europe/Berlin',
      startAt: '2027-03-26T23:00:00',
      upcoming: ['2027-03-27T01:30:00', '2027-03-28T01:00:00', '2027-03-29T00:30:00', '2027-03-30T00:30:00', '2027-03-31T00:30:00'],
    },
    // Berlin, 31 October 2027: 03:00 CEST -> 02:00 CET; 02:30 occurs twice and fires at the first (00:30 UTC).
    {
      key: 'berlin-fall',
      cron: '30 2 * * *',
      tz: 'Europe/Berlin',
      startAt: '2027-10-29T22:00:00',
      upcoming: ['2027-10-30T00:30:00', '2027-10-31T00:30:00', '2027-11-01T01:30:00', '2027-11-02T01:30:00', '2027-11-03T01:30:00'],
    },
    // New York, 14 March 2027: 02:00 EST -> 03:00 EDT; 02:30 fires at 03:00 EDT (07:00 UTC).
    {
      key: 'ny-spring',
      cron: '30 2 * * *',
      tz: 'America/New_York',
      startAt: '2027-03-13T05:00:00',
      upcoming: ['2027-03-13T07:30:00', '2027-03-14T07:00:00', '2027-03-15T06:30:00', '2027-03-16T06:30:00', '2027-03-17T06:30:00'],
    },
    // New York, 7 November 2027: 02:00 EDT -> 01:00 EST; 02:30 occurs once (02:30 EST)...
    {
      key: 'ny-fall',
      cron: '30 2 * * *',
      tz: 'America/New_York',
      startAt: '2027-11-06T04:00:00',
      upcoming: ['2027-11-06T06:30:00', '2027-11-07T07:30:00', '2027-11-08T07:30:00', '2027-11-09T07:30:00', '2027-11-10T07:30:00'],
    },
    // ...and 01:30 twice: it fires at the first (01:30 EDT, 05:30 UTC).
    {
      key: 'ny-fall-doubled',
      cron: '30 1 * * *',
      tz: 'America/New_York',
      startAt: '2027-11-06T04:00:00',
      upcoming: ['2027-11-06T05:30:00', '2027-11-07T05:30:00', '2027-11-08T06:30:00', '2027-11-09T06:30:00', '2027-11-10T06:30:00'],
    },
  ];
  try {
    for (const c of cases) {
      const returned = await queue.schedule(c.key, { cron: c.cron, tz: c.tz, startAt: utc(c.startAt) });
      const info = (await queue.getSchedule(c.key))!;
      const expected = c.upcoming.map(utc);
      assert.deepEqual(
        info.upcoming.map(at => new Date(at).toISOString()),
        expected.map(at => new Date(at).toISOString()),
        c.key,
      );
      assert.deepEqual(returned.upcoming, info.upcoming, `${c.key}: the upsert answers what getSchedule reads`);
      assert.equal(info.nextAt, expected[0]);
      // The first tick is a job already, due at its tick time.
      const job = await queue.get(`${c.key}@${expected[0]}`);
      assert.deepEqual(job?.schedule, { key: c.key, tickAt: expected[0] });
      assert.equal(job?.dueAt, expected[0]);
    }
    const listed = await queue.listSchedules();
    assert.deepEqual(
      listed.map(s => s.key),
      cases.map(c => c.key).sort(),
    );
    for (const s of listed) assert.deepEqual(s.upcoming, cases.find(c => c.key === s.key)!.upcoming.map(utc));
  } finally {
    await queue.close();
  }
});
