// The faults of the chaos suite, each a Scenario for the harness with its own pass criteria. The same
// code runs at CI size (test/faults/chaos.test.ts) and at full size (`npm run chaos`, test/chaos/run.ts).
import type { Redis } from 'ioredis';
import type { CheckReport } from './checker.js';
import { invariantProblems, percentile } from './checker.js';
import { sleep, type ChaosSize, type Criterion, type FaultContext, type Scenario, type WorkerSpec } from './harness.js';
import type { ChaosEntry } from './worker.js';

const HOUR = 3_600_000;

function workers(count: number, spec: WorkerSpec): WorkerSpec[] {
  return Array.from({ length: count }, () => ({ ...spec }));
}

/** Redis's count of error replies of one kind since start (INFO errorstats), e.g. NOSCRIPT, BUSY. */
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

/** Sleeps until `at` (local ms), or not at all when it has passed. */
function sleepUntil(at: number): Promise<void> {
  return sleep(Math.max(0, at - Date.now()));
}

/** First start of each job id, and its due time. */
function firstStarts(entries: readonly ChaosEntry[]): Map<string, ChaosEntry> {
  const first = new Map<string, ChaosEntry>();
  for (const entry of entries) {
    if (entry.kind !== 'start') continue;
    const seen = first.get(entry.id);
    if (!seen || entry.at < seen.at) first.set(entry.id, entry);
  }
  return first;
}

// --- 1. SIGKILL a random worker every 2 s ----------------------------------------------------------

export function sigkillScenario(): Scenario {
  const leaseMs = 2_000;
  return {
    name: 'sigkill-workers',
    description: 'SIGKILL a random worker process every 2 s and respawn it',
    workers: workers(3, { concurrency: 20, leaseMs, handlerMs: 5, handlerJitterMs: 95 }),
    maxDelayMs: 3_000,
    async fault(context: FaultContext) {
      const respawning = new Set<number>();
      const pending: Promise<void>[] = [];
      for (let at = Date.now() + 2_000; at < context.loadEndsAt; at += 2_000) {
        await sleepUntil(at);
        const candidates = context.pool.slots.map((_, i) => i).filter(i => !respawning.has(i));
        if (candidates.length === 0) continue;
        const index = candidates[Math.floor(Math.random() * candidates.length)] as number;
        respawning.add(index);
        pending.push(context.pool.killAndRespawn(index).finally(() => respawning.delete(index)));
      }
      await Promise.all(pending);
      context.note(`${context.pool.kills.length} workers SIGKILLed and respawned`);
    },
    criteria(report: CheckReport, context: FaultContext): Criterion[] {
      const expected = Math.floor(context.size.loadMs / 2_000) - 1;
      const notByKill = report.duplicates.filter(d => d.cause !== 'kill');
      return [
        { name: 'kills', ok: context.pool.kills.length >= expected, detail: `${context.pool.kills.length} SIGKILLs (>= ${expected})` },
        {
          name: 'duplicates explained',
          ok: notByKill.length === 0,
          detail: `${report.duplicates.length} duplicate starts, every one a job of a worker SIGKILLed while it held it: ${
            notByKill.length === 0
              ? 'yes'
              : `no, ${notByKill.length} are not (${notByKill
                  .slice(0, 3)
                  .map(d => `${d.id}: ${d.why}`)
                  .join(' | ')})`
          }`,
        },
      ];
    },
  };
}

// --- 2. SIGSTOP a worker past its lease, then SIGCONT ----------------------------------------------

export function sigstopScenario(): Scenario {
  const leaseMs = 1_500;
  const freezeMs = Math.round(leaseMs * 2.5);
  return {
    name: 'sigstop-worker',
    description: `SIGSTOP a random worker for ${freezeMs} ms (2.5x its ${leaseMs} ms lease), then SIGCONT; again and again, and meanwhile another one inside its ack call (its handler done, the ack not yet in Redis)`,
    // Four workers: the two freeze loops stop two of them most of the time, and the other two must
    // still keep up with the load (20 at a time, 110 ms a job on average: ~360 jobs/s), or a backlog
    // builds that the drain window cannot clear on a loaded machine.
    workers: workers(4, { concurrency: 20, leaseMs, handlerMs: 20, handlerJitterMs: 180 }),
    maxDelayMs: 2_000,
    async fault(context: FaultContext) {
      // Two loops on different workers (one always runs): a freeze at any moment, and a freeze at
      // the one moment where a late ack meets a job that another delivery completed meanwhile: only
      // Redis can tell that ack apart from a resend of an ack that applied.
      const frozen = new Set<number>();
      const pick = () => {
        const free = context.pool.slots.map((_, i) => i).filter(i => !frozen.has(i));
        return free[Math.floor(Math.random() * free.length)] as number;
      };
      const loop = async (startMs: number, freeze: (index: number) => Promise<unknown>) => {
        await sleep(startMs);
        while (Date.now() + freezeMs < context.loadEndsAt + 1_000) {
          const index = pick();
          frozen.add(index);
          try {
            await freeze(index);
          } finally {
            frozen.delete(index);
          }
          await sleep(500);
        }
      };
      await Promise.all([
        loop(1_000, index => context.pool.freeze(index, freezeMs)),
        loop(500, index => context.pool.freezeAtAck(index, freezeMs)),
      ]);
      context.note(`${context.pool.freezes.length} freezes of ${freezeMs} ms done when the load ended`);
    },
    criteria(report: CheckReport, context: FaultContext, entries: readonly ChaosEntry[]): Criterion[] {
      const takenOver = report.duplicates.filter(d => d.cause === 'freeze');
      const outcome = new Map<string, string>();
      for (const e of entries) if (e.kind === 'done' || e.kind === 'stale') outcome.set(`${e.source}\n${e.id}\n${e.attempt}`, e.kind);
      const notRefused = takenOver.filter(d => outcome.get(`${d.earlier.source}\n${d.id}\n${d.earlier.attempt}`) !== 'stale');
      // Taken over while its worker was stopped inside the ack call: the job's handler had ended.
      const inAck = takenOver.filter(d =>
        context.pool.ackFreezes.some(f => f.source === d.earlier.source && f.from <= d.later.at && f.to >= d.later.at),
      );
      const others = report.duplicates.filter(d => d.cause !== 'freeze');
      return [
        {
          name: 'freezes',
          ok: context.pool.freezes.length >= 1,
          detail: `${context.pool.freezes.length} freezes past the lease, ${context.pool.ackFreezes.length} inside an ack call`,
        },
        {
          name: 'jobs taken over',
          ok: takenOver.length >= 1,
          detail: `${takenOver.length} jobs of a frozen worker were delivered again after its lease ran out`,
        },
        {
          name: 'acks frozen in flight',
          ok: inAck.length >= 1,
          detail: `${inAck.length} jobs taken over while their worker was stopped inside its ack call (their late acks must be refused)`,
        },
        {
          name: 'frozen acks refused',
          ok: notRefused.length === 0 && takenOver.length >= 1,
          detail: `${takenOver.length - notRefused.length} of ${takenOver.length} taken-over runs ended \`stale\` in the frozen worker's ledger${
            notRefused.length
              ? `; not: ${notRefused
                  .slice(0, 3)
                  .map(
                    d =>
                      `${d.id} attempt ${d.earlier.attempt} -> ${outcome.get(`${d.earlier.source}\n${d.id}\n${d.earlier.attempt}`) ?? 'no outcome'}`,
                  )
                  .join(', ')}`
              : ''
          }`,
        },
        {
          name: 'duplicates explained',
          ok: others.length === 0,
          detail: `${report.duplicates.length} duplicate starts, all of a frozen worker's jobs after its lease: ${
            others.length === 0
              ? 'yes'
              : `no (${others
                  .slice(0, 3)
                  .map(d => `${d.id}: ${d.cause} ${d.why}`)
                  .join(' | ')})`
          }`,
        },
      ];
    },
  };
}

// --- 3. kill -9 redis-server repeatedly, restart it ------------------------------------------------

export function redisCrashScenario(intervalMs: number): Scenario {
  const restarts: { killedAt: number; restartedAt: number }[] = [];
  return {
    name: 'redis-kill-9',
    description: `SIGKILL redis-server (AOF, appendfsync always) every ${intervalMs / 1000} s, restart it 300 ms later on the same files`,
    workers: workers(3, { concurrency: 20, leaseMs: 3_000, handlerMs: 5, handlerJitterMs: 45 }),
    maxDelayMs: 3_000,
    async fault(context: FaultContext) {
      for (let at = Date.now() + intervalMs; at < context.loadEndsAt; at += intervalMs) {
        await sleepUntil(at);
        const killedAt = Date.now();
        await context.server.kill('SIGKILL');
        await sleep(300);
        await context.server.restart();
        restarts.push({ killedAt, restartedAt: Date.now() });
      }
      context.note(`${restarts.length} crashes; restarted after ${restarts.map(r => r.restartedAt - r.killedAt).join('/')} ms`);
    },
    criteria(_report: CheckReport, context: FaultContext, entries: readonly ChaosEntry[]): Criterion[] {
      const dones = entries
        .filter(e => e.kind === 'done')
        .map(e => e.at)
        .sort((a, b) => a - b);
      const resume = restarts.map(r => (dones.find(at => at > r.restartedAt) ?? Number.POSITIVE_INFINITY) - r.restartedAt);
      const last = restarts.at(-1);
      const idle = context.pool.slots.filter(
        slot => !entries.some(e => e.source === slot.handle.ledger && e.kind === 'done' && last && e.at > last.restartedAt),
      );
      const first = firstStarts(entries);
      const survived = [...context.producer.acknowledged].filter(([id, ackAt]) => {
        const start = first.get(id)?.at;
        return start !== undefined && restarts.some(r => ackAt < r.killedAt && start > r.restartedAt);
      }).length;
      const expected = Math.max(1, Math.floor(context.size.loadMs / intervalMs) - 1);
      return [
        { name: 'crashes', ok: restarts.length >= expected, detail: `${restarts.length} kill -9 of redis-server (>= ${expected})` },
        {
          name: 'resumes',
          ok: resume.every(ms => ms <= 5_000),
          detail: `first completed job ${Math.min(...resume)}-${Math.max(...resume)} ms after each restart (<= 5000)`,
        },
        {
          name: 'every worker resumed',
          ok: idle.length === 0,
          detail: `${context.pool.slots.length - idle.length} of ${context.pool.slots.length} workers completed jobs after the last restart, untouched`,
        },
        { name: 'survived in AOF', ok: survived > 0, detail: `${survived} jobs acknowledged before a crash first ran after the restart` },
      ];
    },
  };
}

// --- 4. Redis commands: SCRIPT FLUSH, CLIENT KILL, CLIENT PAUSE, BUSY script -----------------------

const BUSY_SCRIPT =
  "local t=redis.call('TIME'); while true do local n=redis.call('TIME'); if (n[1]-t[1])*1000000+(n[2]-t[2]) > 3000000 then break end end";

interface Window {
  readonly kind: string;
  readonly from: number;
  readonly to: number;
}

const LEASE_MS = 5_000;
const COMMAND_WORKERS = workers(3, { concurrency: 20, leaseMs: LEASE_MS, handlerMs: 5, handlerJitterMs: 45 });
/**
 * The time the workers need for one job of a backlog at their full concurrency (a handler's mean
 * time over every slot), and how many times that a loaded 2-core machine may take. A fault that
 * holds every worker (BUSY, CLIENT PAUSE) leaves hundreds of jobs due at once; the last of them
 * starts once the ones before it ran: its lateness is the backlog's run time, not a wait.
 */
const BACKLOG_MS_PER_JOB =
  COMMAND_WORKERS.reduce((sum, spec) => sum + spec.handlerMs + spec.handlerJitterMs / 2, 0) /
  COMMAND_WORKERS.length /
  COMMAND_WORKERS.reduce((sum, spec) => sum + spec.concurrency, 0);
const BACKLOG_SLOWDOWN = 3;

export function redisCommandsScenario(phaseMs: number): Scenario {
  const windows: Window[] = [];
  const counts = { flushes: 0, killed: 0, pauses: 0, busy: 0 };
  let noscript = 0;
  let busyReplies = 0;
  return {
    name: 'redis-commands',
    description: `cycles of SCRIPT FLUSH and FUNCTION FLUSH every 20 ms and CLIENT KILL TYPE normal/pubsub every 250 ms (${phaseMs} ms each), CLIENT PAUSE 2000 WRITE, a 3 s foreign Lua loop (BUSY)`,
    workers: COMMAND_WORKERS,
    maxDelayMs: 3_000,
    async fault(context: FaultContext) {
      const raw = context.raw;
      const noscriptBefore = await reloadCount(raw);
      const busyBefore = await errorCount(raw, 'BUSY');
      const window = async (kind: string, body: () => Promise<void>) => {
        const from = Date.now();
        await body();
        windows.push({ kind, from, to: Date.now() });
      };
      const repeat = async (ms: number, every: number, action: () => Promise<void>) => {
        const end = Date.now() + ms;
        while (Date.now() < end) {
          await action();
          await sleep(every);
        }
      };
      const cycleMs = 2 * phaseMs + 2_000 + 3_000 + 4 * 1_000;
      do {
        await sleep(1_000);
        await window('SCRIPT FLUSH', () =>
          repeat(phaseMs, 20, async () => {
            await raw.script('FLUSH');
            await raw.call('FUNCTION', 'FLUSH');
            counts.flushes += 1;
          }),
        );
        await sleep(1_000);
        await window('CLIENT KILL', () =>
          repeat(phaseMs, 250, async () => {
            counts.killed += Number(await raw.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'));
            counts.killed += Number(await raw.call('CLIENT', 'KILL', 'TYPE', 'pubsub', 'SKIPME', 'yes'));
          }),
        );
        await sleep(1_000);
        await window('CLIENT PAUSE', async () => {
          await raw.call('CLIENT', 'PAUSE', '2000', 'WRITE');
          counts.pauses += 1;
          await sleep(2_000);
        });
        await sleep(1_000);
        await raw.config('SET', 'busy-reply-threshold', '100');
        const busyClient = context.rawClient();
        await window('BUSY script', async () => {
          await busyClient.eval(BUSY_SCRIPT, 0);
          counts.busy += 1;
        });
        busyClient.disconnect();
        await raw.config('SET', 'busy-reply-threshold', '5000');
      } while (Date.now() + cycleMs < context.loadEndsAt);
      noscript = (await reloadCount(raw)) - noscriptBefore;
      busyReplies = (await errorCount(raw, 'BUSY')) - busyBefore;
      context.note(
        `${counts.flushes} SCRIPT and FUNCTION FLUSHes (${noscript} reloads: NOSCRIPT or FUNCTION LOAD), ${counts.killed} connections killed, ${counts.pauses} CLIENT PAUSEs, ${counts.busy} BUSY scripts (${busyReplies} BUSY replies)`,
      );
    },
    criteria(report: CheckReport, _context: FaultContext, entries: readonly ChaosEntry[]): Criterion[] {
      const first = firstStarts(entries);
      const criteria: Criterion[] = [
        {
          name: 'faults happened',
          ok: noscript > 0 && counts.killed > 0 && counts.pauses > 0 && busyReplies > 0,
          detail: `${noscript} script reloads, ${counts.killed} connections killed, ${counts.pauses} pauses, ${busyReplies} BUSY replies`,
        },
      ];
      for (const kind of [...new Set(windows.map(w => w.kind))]) {
        // Jobs due during the fault: how long after the end of the fault (or after their due time,
        // if later) they started.
        const late: number[] = [];
        // A claim whose reply was lost (its connection killed) leaves its jobs leased to nobody
        // until the lease runs out: they first start as a later attempt. Bound: that many leases.
        const afterLostClaim: { late: number; bound: number }[] = [];
        for (const w of windows.filter(x => x.kind === kind)) {
          for (const start of first.values()) {
            if (start.dueAt < w.from || start.dueAt > w.to) continue;
            const ms = start.at - Math.max(start.dueAt, w.to);
            if (start.attempt === 1) late.push(ms);
            else afterLostClaim.push({ late: ms, bound: (start.attempt - 1) * LEASE_MS + 1_000 });
          }
        }
        const max = late.length ? Math.max(...late) : 0;
        const overBound = afterLostClaim.filter(x => x.late > x.bound);
        // Released: the first job waiting when the fault ended started within a second of its end
        // (no worker stuck in a backoff), and the jobs it held back ran as a backlog does: p99
        // within that second plus the backlog's run time on a loaded machine.
        const waited = late.filter(ms => ms >= 0);
        const resumedMs = waited.length ? Math.min(...waited) : 0;
        const backlogMs = Math.ceil(1_000 + BACKLOG_SLOWDOWN * late.length * BACKLOG_MS_PER_JOB);
        const p99 = percentile(late, 99);
        criteria.push({
          name: `released after ${kind}`,
          // Jobs of a lost claim are only reported: their lease may run out during the next faults.
          ok: late.length > 0 && resumedMs <= 1_000 && p99 <= backlogMs,
          detail:
            `${late.length + afterLostClaim.length} jobs fell due during it; the first of those still waiting started ${resumedMs} ms after the fault ended (<= 1000); ` +
            `${late.length} first claimed by a worker that ran them started p99 ${p99} ms, at most ${max} ms after it (p99 <= 1000 + the backlog's run time x ${BACKLOG_SLOWDOWN}: ${backlogMs})` +
            (afterLostClaim.length
              ? `; ${afterLostClaim.length} whose first claim's reply was lost started after its lease, at most ${Math.max(...afterLostClaim.map(x => x.late))} ms after the end (not asserted; ${overBound.length} over lease x ${LEASE_MS} + 1000, their lease ran out during the next faults)`
              : ''),
        });
      }
      void report;
      return criteria;
    },
  };
}

// --- 5. maxmemory under noeviction ---------------------------------------------------------------

export function oomScenario(): Scenario {
  let window: Window | undefined;
  const invariants: { ok: boolean; jobs: number; problems: string }[] = [];
  const halfWritten: string[] = [];
  return {
    name: 'maxmemory-noeviction',
    description: 'CONFIG SET maxmemory 64 KiB below used_memory (noeviction) for half the run while adding 1 KiB payloads',
    redis: { args: ['--maxmemory-policy', 'noeviction'] },
    workers: workers(3, { concurrency: 20, leaseMs: 3_000, handlerMs: 5, handlerJitterMs: 45 }),
    maxDelayMs: 4_000,
    padBytes: 1_024,
    async fault(context: FaultContext) {
      const raw = context.raw;
      await sleep(context.size.loadMs * 0.25);
      const used = Number(/used_memory:(\d+)/.exec(await raw.info('memory'))?.[1]);
      const from = Date.now();
      // Just below what is used now: adds fail until the workers drain some jobs, then succeed
      // until the limit is reached again, for as long as it is in force.
      const limit = used - 64 * 1024;
      await raw.config('SET', 'maxmemory', String(limit));
      const until = from + context.size.loadMs * 0.5;
      while (Date.now() < until) {
        await sleep(500);
        const report = await context.invariantNow();
        invariants.push({ ok: report.ok, jobs: report.jobs, problems: report.ok ? '' : invariantProblems(report) });
        // No add that failed with OOM left anything behind.
        const failed = context.producer.failedIds.get('RedisOutOfMemoryError') ?? [];
        if (failed.length > 0) {
          const present = (await raw.hmget(`sg:{${context.queueName}:0}:jobs`, ...failed.slice(-500))).filter(v => v !== null).length;
          if (present > 0) halfWritten.push(`${present} ids of failed adds found in the jobs hash`);
        }
      }
      await raw.config('SET', 'maxmemory', '0');
      window = { kind: 'OOM', from, to: Date.now() };
      context.note(
        `maxmemory ${limit} bytes (used_memory was ${used}) for ${window.to - window.from} ms; ${invariants.length} invariant checks while it was in force (up to ${Math.max(0, ...invariants.map(i => i.jobs))} jobs)`,
      );
    },
    criteria(_report: CheckReport, context: FaultContext, entries: readonly ChaosEntry[]): Criterion[] {
      const failures = context.producer.failures;
      const oom = failures.get('RedisOutOfMemoryError') ?? 0;
      const otherKinds = [...failures.keys()].filter(kind => kind !== 'RedisOutOfMemoryError');
      const failedIds = new Set(context.producer.failedIds.get('RedisOutOfMemoryError') ?? []);
      const ranFailed = entries.filter(e => e.kind === 'start' && failedIds.has(e.id)).length;
      const drainedDuring = window
        ? entries.filter(e => e.kind === 'done' && e.at >= (window as Window).from && e.at <= (window as Window).to).length
        : 0;
      const broken = invariants.filter(i => !i.ok);
      const badInvariants = broken.length;
      return [
        {
          name: 'add refused with a typed error',
          ok: oom > 0 && otherKinds.length === 0,
          detail: `${oom} add calls failed with RedisOutOfMemoryError (${failedIds.size} jobs); other errors: ${otherKinds.length ? otherKinds.join(', ') : 'none'}`,
        },
        {
          name: 'nothing half-written',
          ok: badInvariants === 0 && invariants.length > 0 && halfWritten.length === 0 && ranFailed === 0,
          detail: `invariant held at ${invariants.length - badInvariants} of ${invariants.length} checks under OOM${broken.length ? ` (first broken: ${broken[0]?.problems})` : ''}; ${halfWritten.length ? halfWritten.join('; ') : 'no failed add left a record'}; ${ranFailed} refused jobs ran`,
        },
        { name: 'workers keep draining', ok: drainedDuring > 0, detail: `${drainedDuring} jobs completed while maxmemory was in force` },
      ];
    },
  };
}

// --- 6. clocks skewed by +-1 h -------------------------------------------------------------------

export function clockSkewScenario(): Scenario {
  const skews = [HOUR, -HOUR, HOUR, -HOUR];
  return {
    name: 'clock-skew',
    description: 'four workers whose clocks are 1 h ahead, 1 h behind, 1 h ahead, 1 h behind',
    workers: skews.map(clockSkewMs => ({ concurrency: 15, leaseMs: 5_000, handlerMs: 1, handlerJitterMs: 9, clockSkewMs })),
    maxDelayMs: 3_000,
    async fault(context: FaultContext) {
      await sleepUntil(context.loadEndsAt);
    },
    criteria(report: CheckReport): Criterion[] {
      return [
        {
          name: 'early',
          ok: report.early.length === 0,
          detail: `${report.early.length} starts before their due time (Redis dueAt and the producer's own bound)`,
        },
        {
          name: 'on time',
          ok: report.lateness.p99 <= 1_000,
          detail: `lateness p50 ${report.lateness.p50} ms, p99 ${report.lateness.p99} ms, max ${report.lateness.max} ms (p99 <= 1000)`,
        },
      ];
    },
  };
}

export type Scale = 'ci' | 'full';

/** Every fault with its size at a scale. */
export function chaosPlan(scale: Scale): { scenario: Scenario; size: ChaosSize }[] {
  if (scale === 'ci') {
    const size = { jobs: 2_400, loadMs: 7_000 };
    return [
      { scenario: sigkillScenario(), size },
      { scenario: sigstopScenario(), size: { jobs: 2_000, loadMs: 7_500 } },
      { scenario: redisCrashScenario(2_500), size },
      { scenario: redisCommandsScenario(1_500), size: { jobs: 3_600, loadMs: 12_000 } },
      { scenario: oomScenario(), size: { jobs: 2_400, loadMs: 8_000 } },
      { scenario: clockSkewScenario(), size: { jobs: 2_000, loadMs: 5_000 } },
    ];
  }
  return [
    { scenario: sigkillScenario(), size: { jobs: 30_000, loadMs: 60_000 } },
    { scenario: sigstopScenario(), size: { jobs: 16_000, loadMs: 60_000 } },
    { scenario: redisCrashScenario(6_000), size: { jobs: 24_000, loadMs: 60_000 } },
    { scenario: redisCommandsScenario(3_000), size: { jobs: 30_000, loadMs: 75_000 } },
    { scenario: oomScenario(), size: { jobs: 24_000, loadMs: 60_000 } },
    { scenario: clockSkewScenario(), size: { jobs: 24_000, loadMs: 45_000 } },
  ];
}
