/**
 * `npm run soak [-- --minutes=N]`: sandglass under a steady mixed load for N minutes (default 10),
 * then a drain and a check of everything that happened. Not part of `npm test`.
 *
 * On its own private redis-server (never the shared 6379): two worker processes
 * (bench/soak/worker.ts), one of them SIGKILLed and replaced by a fresh process every minute; a
 * producer adding jobs at a fixed rate with delays from 1 s to 2 min and a mix of handlers that
 * fail once, always, or unrecoverably; a schedule every second; a second queue under `concurrency`
 * and `rate` limits. Every 10 s it samples the worker processes' RSS and heap (after a forced GC),
 * Redis `used_memory`, the lateness p99 and the counts. At the end it drains both queues and judges
 * the ledger (ledger.ts): 0 lost, 0 early on the Redis clock, duplicates only after a kill, no tick
 * missing, the concurrency limit never exceeded, Redis memory back within 5% of its start. Prints
 * the samples as a table, writes them and the verdict to a JSON file, and exits 1 when a check fails.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { startLocalRedis, type LocalRedis } from '../../src/deploy/local-redis.js';
import { machineFacts } from '../machine.js';
import { infoNumber, openProbe, readInfo } from '../servers.js';
import { sleep } from '../stats.js';
import {
  busiestWindow,
  heapGrowth,
  judge,
  jobKey,
  lateness,
  Ledger,
  maxOverlap,
  memoryBack,
  type LedgerEvent,
  type Plan,
  type StartEvent,
} from './ledger.js';
import { parseSoakOptions, SOAK, type SoakOptions } from './options.js';
import { killAllWorkers, SoakWorker, type WorkerSettings } from './processes.js';
import { startProducer } from './producer.js';
import { formatChecks, formatTable, sampleCells, type Check, type Sample } from './report.js';
import type { SoakPayload } from './worker.js';

const MAIN = 'soak-main';
const LIMITED = 'soak-limited';
const startedAt = performance.now();
let server: LocalRedis | undefined;

/** Progress goes to stderr, so that stdout holds only the results. */
function log(message: string): void {
  process.stderr.write(`[${((performance.now() - startedAt) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);
}

/** Stops what this process started: the worker processes, then the Redis server. */
async function stopEverything(): Promise<void> {
  await killAllWorkers();
  await server?.stop().catch(() => undefined);
  server = undefined;
}

function onInterrupt(): void {
  log('interrupted: stopping the worker processes and the private Redis server; no results written');
  void stopEverything().finally(() => process.exit(130));
}

function onCrash(error: unknown): void {
  process.stderr.write(`soak crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  void stopEverything().finally(() => process.exit(2));
}

interface RedisMemory {
  readonly usedMemory: number;
  readonly clients: number;
  /** For reading a difference: INFO memory's byte counts (dataset, overhead, clients, scripts). */
  readonly info?: Record<string, number>;
  /** Every key with its MEMORY USAGE (the soak's keyspace is small once drained). */
  readonly keys?: Record<string, number>;
}

async function redisMemory(probe: Redis, detailed = false): Promise<RedisMemory> {
  const info = await readInfo(probe, 'memory', 'clients');
  const summary = { usedMemory: infoNumber(info, 'used_memory'), clients: infoNumber(info, 'connected_clients') };
  if (!detailed) return summary;
  const fields = [
    'used_memory_dataset',
    'used_memory_overhead',
    'used_memory_startup',
    'mem_clients_normal',
    'used_memory_scripts_eval',
    'number_of_cached_scripts',
    'used_memory_vm_eval',
    'used_memory_lua',
  ];
  const keys: Record<string, number> = {};
  for (const key of (await probe.keys('*')).sort().slice(0, 1000)) keys[key] = Number(await probe.memory('USAGE', key));
  return { ...summary, info: Object.fromEntries(fields.filter(f => info.has(f)).map(f => [f, Number(info.get(f))])), keys };
}

/** Waits until `check` holds, polling; false when `timeoutMs` passed first. */
async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 500): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

async function waiting(queues: readonly Queue<unknown>[]): Promise<number> {
  const all = await Promise.all(queues.map(queue => queue.stats()));
  return all.reduce((sum, s) => sum + s.delayed + s.ready + s.active, 0);
}

async function deadIds(queue: Queue<unknown>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null | undefined;
  do {
    const page = await queue.listDead({ limit: 1000, ...(cursor ? { cursor } : {}) });
    ids.push(...page.jobs.map(job => jobKey(queue.name, job.id)));
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

/**
 * Exercises every script the soak will use (add, claim, ack, fail to retry and to dead, lease
 * renewal, the limiter, a schedule, cancel, listing and purging dead letters) before the baseline of Redis
 * memory is read: Redis caches each script's source, about 130 KB in all, which would otherwise
 * count as growth. Its jobs (ids `warm...`) go to a ledger of their own.
 */
async function warmUp(queues: readonly Queue<SoakPayload | null>[], warm: Ledger): Promise<void> {
  const plans: Plan[] = ['ok', 'once', 'always', 'unrecoverable'];
  for (const queue of queues) {
    const jobs = plans.map(plan => ({ id: `warm-${plan}`, payload: { plan, ms: 0 }, maxAttempts: 2 }));
    // One job outlives a third of the lease, so its lease is renewed.
    jobs.push({ id: 'warm-long', payload: { plan: 'ok', ms: SOAK.leaseMs / 3 + 1_000 }, maxAttempts: 2 });
    for (const job of jobs) warm.expect(queue.name, job.id, job.payload.plan);
    await queue.addBulk(jobs);
  }
  const main = queues[0] as Queue<SoakPayload | null>;
  // For --inject=lose, which cancels a job: a script the load does not use otherwise.
  await main.add({ plan: 'ok', ms: 0 }, { id: 'warm-cancel', delay: 60_000 });
  await main.cancel('warm-cancel');
  await main.schedule('warm-up', { every: SOAK.schedule.everyMs, catchUp: 'all' });
  const ticked = await waitUntil(
    () =>
      [...warm.jobs.values()].filter(job => job.id.startsWith('warm-up@') && job.outcomes.some(o => o.kind === 'completed')).length >= 2,
    30_000,
  );
  await main.unschedule('warm-up');
  const drained = await waitUntil(async () => (await waiting(queues)) === 0, 30_000);
  if (!ticked || !drained) throw new Error('the warm-up did not finish within 30 s');
  await sleep(1_000);
  for (const queue of queues) {
    await queue.list('dead');
    await queue.purgeDead();
    await queue.counters();
  }
}

async function main(): Promise<number> {
  const options = parseSoakOptions(process.argv.slice(2));
  process.once('SIGINT', onInterrupt);
  process.once('SIGTERM', onInterrupt);
  process.once('uncaughtException', onCrash);
  process.once('unhandledRejection', onCrash);
  const machine = await machineFacts();
  log(
    `Redis ${machine.redis}, Node ${machine.node}, ${machine.cpus} CPUs, load average ${machine.loadAverageAtStart.toFixed(2)}; ${options.minutes} min of load at ${options.rate} + ${options.limitedRate} jobs/s`,
  );
  // stopWithOwner: the server dies with this process even when this process is SIGKILLed.
  // Slow log off: its up to 128 entries (copies of slow calls' arguments, up to about 0.5 MB on a
  // loaded machine) are Redis's own memory, not the queues', and would count in used_memory.
  // Latency tracking off: Redis 7 allocates a latency histogram (about 24 KB) for each command name
  // at its first call, also inside scripts, so every command first run after the baseline (an
  // error path's, the end's MEMORY USAGE) adds that much, bounded by the number of command names
  // and nothing to do with the queues (a 30-minute run ended +6.7% with it on, all of it there).
  server = await startLocalRedis({
    appendOnly: false,
    stopWithOwner: true,
    args: ['--slowlog-log-slower-than', '-1', '--latency-tracking', 'no'],
  });
  const probe = openProbe(server);
  const mainQueue = new Queue<SoakPayload | null>(MAIN, { connection: server.url });
  const limitedQueue = new Queue<SoakPayload | null>(LIMITED, { connection: server.url });
  const queues = [mainQueue, limitedQueue];
  try {
    return await soak(options, server, probe, queues, machine);
  } finally {
    await Promise.allSettled(queues.map(queue => queue.close()));
    probe.disconnect();
    await stopEverything();
  }
}

async function soak(
  options: SoakOptions,
  redis: LocalRedis,
  probe: Redis,
  queues: Queue<SoakPayload | null>[],
  machine: Awaited<ReturnType<typeof machineFacts>>,
): Promise<number> {
  const [mainQueue, limitedQueue] = queues as [Queue<SoakPayload | null>, Queue<SoakPayload | null>];
  await limitedQueue.setLimits(SOAK.limits);

  const ledger = new Ledger();
  const warm = new Ledger();
  const tally = { started: 0, completed: 0, retried: 0, dead: 0, errors: 0 };
  let mainWindow: StartEvent[] = [];
  let limitedWindow: StartEvent[] = [];
  /** Starts that are not redeliveries after a kill: the lateness figures are made of these. */
  const timely: StartEvent[] = [];
  const onEvent = (event: LedgerEvent): void => {
    if (event.kind !== 'error' && event.id.startsWith('warm')) {
      warm.record(event);
      return;
    }
    if (event.kind === 'start') {
      tally.started += 1;
      // A start again after a run that did not fail is a redelivery (the lease of a killed
      // process ran out): late by a lease by design, so not part of the lateness figures.
      const job = ledger.jobs.get(jobKey(event.queue, event.id));
      const previous = job?.starts.at(-1);
      const retry =
        previous !== undefined &&
        job !== undefined &&
        job.ends.some(e => !e.ok && e.attempt === previous.attempt && e.proc === previous.proc);
      if (previous === undefined || retry) {
        timely.push(event);
        (event.queue === MAIN ? mainWindow : limitedWindow).push(event);
      }
    } else if (event.kind === 'completed') tally.completed += 1;
    else if (event.kind === 'retry') tally.retried += 1;
    else if (event.kind === 'dead') tally.dead += 1;
    else if (event.kind === 'error') {
      tally.errors += 1;
      if (tally.errors <= 5) log(`worker ${event.proc} error: ${event.message}`);
    }
    ledger.record(event);
  };

  const settings: WorkerSettings = { url: redis.url, mainQueue: MAIN, limitedQueue: LIMITED, leaseMs: SOAK.leaseMs };
  const workerA = await SoakWorker.start('A', settings, onEvent);
  let workerB = await SoakWorker.start('B1', settings, onEvent);
  log(`worker processes A (pid ${workerA.pid}) and B1 (pid ${workerB.pid}) ready`);

  await warmUp(queues, warm);
  await sleep(3_000);
  const baseline = await redisMemory(probe, true);
  log(`warm-up done; Redis used_memory at the start ${baseline.usedMemory} bytes (${baseline.clients} clients)`);

  // --- steady load --------------------------------------------------------------------------------
  const loadStartedAt = Date.now();
  const loadMs = options.minutes * 60_000;
  const loadEndsAt = loadStartedAt + loadMs;
  await mainQueue.schedule(SOAK.schedule.key, { every: SOAK.schedule.everyMs, catchUp: 'all' });
  const producers = [
    startProducer({
      queue: mainQueue,
      prefix: 'm',
      rate: options.rate,
      handlerMs: SOAK.mainHandlerMs,
      ledger,
      log,
      ...(options.inject === 'lose'
        ? {
            onFirstAdd: async (id: string) => {
              const answer = await mainQueue.cancel(id);
              log(`--inject=lose: cancelled ${MAIN}/${id} behind the ledger's back (${answer}); the ledger check must now fail`);
            },
          }
        : {}),
    }),
    startProducer({ queue: limitedQueue, prefix: 'l', rate: options.limitedRate, handlerMs: SOAK.limitedHandlerMs, ledger, log }),
  ];

  let restarts = 0;
  let restarting = false;
  const restarter = (async () => {
    for (let k = 1; loadStartedAt + k * SOAK.restartEveryMs < loadEndsAt - 5_000; k += 1) {
      await sleep(loadStartedAt + k * SOAK.restartEveryMs - Date.now());
      restarting = true;
      const victim = workerB;
      await victim.kill();
      // Taken once the process is gone: every start it reported came before this instant.
      ledger.killed(victim.label, Date.now());
      restarts += 1;
      workerB = await SoakWorker.start(`B${restarts + 1}`, settings, onEvent);
      restarting = false;
      log(`SIGKILLed ${victim.label} (pid ${victim.pid}); ${workerB.label} (pid ${workerB.pid}) ready`);
    }
  })();

  let phase: Sample['phase'] = 'load';
  const samples: Sample[] = [];
  const takeSample = async (): Promise<Sample> => {
    const ofMain = lateness(mainWindow);
    const ofLimited = lateness(limitedWindow);
    mainWindow = [];
    limitedWindow = [];
    const [a, b, memory, left] = await Promise.all([
      workerA.sample(),
      restarting ? undefined : workerB.sample(),
      redisMemory(probe),
      waiting(queues),
    ]);
    const sample: Sample = {
      atMs: Date.now() - loadStartedAt,
      phase,
      added: producers.reduce((sum, p) => sum + p.added(), 0),
      started: tally.started,
      completed: tally.completed,
      retried: tally.retried,
      dead: tally.dead,
      waiting: left,
      latenessP99Ms: ofMain.p99,
      latenessMaxMs: ofMain.max,
      limitedLatenessP99Ms: ofLimited.p99,
      workerA: a,
      workerB: b,
      redisUsedMemory: memory.usedMemory,
      restarts,
    };
    samples.push(sample);
    log(sampleCells(sample).join(' '));
    return sample;
  };
  let sampling = true;
  const sampler = (async () => {
    for (let k = 1; sampling; k += 1) {
      await sleep(Math.max(0, loadStartedAt + k * SOAK.sampleEveryMs - Date.now()));
      if (sampling) await takeSample();
    }
  })();

  await sleep(loadEndsAt - Date.now());
  await Promise.all(producers.map(p => p.stop()));
  await restarter;
  await mainQueue.unschedule(SOAK.schedule.key);
  phase = 'drain';
  log(
    `load stopped after ${options.minutes} min: ${producers.reduce((sum, p) => sum + p.added(), 0)} jobs added, ${restarts} restart(s); draining`,
  );

  // --- drain and verdict --------------------------------------------------------------------------
  const drainTimeoutMs = SOAK.delayMs.max + SOAK.drainSlackMs;
  const drained = await waitUntil(async () => (await waiting(queues)) === 0, drainTimeoutMs, 1_000);
  const drainMs = Date.now() - loadEndsAt;
  // The `completed` lines follow the acks that emptied the queues.
  await sleep(2_000);
  const dead = new Set([...(await deadIds(mainQueue)), ...(await deadIds(limitedQueue))]);
  const verdict = judge(ledger, dead, SOAK.schedule.everyMs);
  const limits = limitFigures(ledger);
  const mainLateness = lateness(timely.filter(s => s.queue === MAIN));
  const limitedLateness = lateness(timely.filter(s => s.queue === LIMITED));
  const counters = { [MAIN]: await mainQueue.counters(), [LIMITED]: await limitedQueue.counters() };
  log(
    `drain ${drained ? 'done' : 'TIMED OUT'} after ${(drainMs / 1000).toFixed(0)} s; ${verdict.lost} lost, ${verdict.early} early, ${verdict.unexplainedDuplicates} unexplained duplicates`,
  );

  // --- Redis memory back to its start ------------------------------------------------------------
  phase = 'end';
  for (const queue of queues) await queue.purgeDead();
  const allowed = baseline.usedMemory * (1 + SOAK.memoryTolerance);
  // The `done` buckets remember a completed job 60-90 s and a claim memo lives a lease: both expire
  // by themselves, so the reading waits them out (and a while more, should it still be above).
  await sleep(Math.max(0, loadEndsAt + drainMs + SOAK.memoryQuietMs - Date.now()));
  await waitUntil(async () => (await redisMemory(probe)).usedMemory <= allowed, SOAK.memorySettleMs - SOAK.memoryQuietMs, 2_000);
  const end = await redisMemory(probe, true);
  const memory = memoryBack(baseline.usedMemory, end.usedMemory, SOAK.memoryTolerance);
  sampling = false;
  await sampler;
  await takeSample();
  await Promise.all([workerA.stop(), workerB.stop()]);

  // --- report -------------------------------------------------------------------------------------
  const loadSamples = samples.filter(s => s.phase === 'load');
  const growth = heapGrowth(
    loadSamples.map(s => ({ atMs: s.atMs, heapUsed: s.workerA?.heapUsed })),
    SOAK.heap.fromMs,
    60_000,
  );
  const heapJudged = options.minutes >= SOAK.heap.judgedFromMinutes;
  const expectedRestarts = Math.max(0, Math.ceil((loadMs - 5_000) / SOAK.restartEveryMs) - 1);
  const checks: Check[] = [
    {
      name: 'drained',
      ok: drained,
      detail: drained
        ? `both queues empty ${(drainMs / 1000).toFixed(0)} s after the load stopped`
        : `not empty after ${drainTimeoutMs / 1000} s`,
    },
    {
      name: 'lost',
      ok: verdict.lost === 0,
      detail: `${verdict.lost} of ${verdict.jobs} jobs and ${verdict.ticks} ticks${example(verdict.examples.lost)}`,
    },
    {
      name: 'early',
      ok: verdict.early === 0,
      detail: `${verdict.early} of ${verdict.starts} handler starts before dueAt on the Redis clock${example(verdict.examples.early)}`,
    },
    {
      name: 'duplicates only after a kill',
      ok: verdict.unexplainedDuplicates === 0,
      detail: `${verdict.redeliveredAfterKill} redeliveries after a SIGKILL, ${verdict.unexplainedDuplicates} unexplained, ${verdict.stale} stale acks${example(verdict.examples.unexplainedDuplicates)}`,
    },
    {
      name: 'outcomes as planned',
      ok: verdict.wrongOutcome === 0,
      detail: `${verdict.completed} completed, ${verdict.deadAsPlanned} dead letters as planned, ${verdict.wrongOutcome} otherwise${example(verdict.examples.wrongOutcome)}`,
    },
    {
      name: 'ticks',
      ok: verdict.ticksMissing === 0 && verdict.ticks > 0,
      detail: `${verdict.ticks} ticks run, ${verdict.ticksMissing} missing${example(verdict.examples.ticksMissing)}`,
    },
    {
      name: 'concurrency limit',
      ok: limits.maxRunning <= SOAK.limits.concurrency,
      detail: `at most ${limits.maxRunning} handlers of ${LIMITED} at once (limit ${SOAK.limits.concurrency}); busiest 1 s of starts ${limits.busiestSecond} (rate ${SOAK.limits.rate.max}/s, measured at the handlers, not judged)`,
    },
    {
      name: 'worker restarts',
      ok: restarts === expectedRestarts,
      detail: `${restarts} SIGKILL + fresh process (expected ${expectedRestarts})`,
    },
    {
      name: 'Redis memory back',
      ok: memory.ok,
      detail: `used_memory ${baseline.usedMemory} -> ${end.usedMemory} bytes (${pct(memory.change)}; at most ${pct(SOAK.memoryTolerance)})`,
    },
    {
      name: 'heap growth after 2 min',
      ok: !heapJudged || (growth !== undefined && growth.growth < SOAK.heap.tolerance),
      detail: `${growth ? `worker A heapUsed after GC ${growth.from} -> ${growth.to} bytes (${pct(growth.growth)})` : 'too short to say'}${heapJudged ? `; at most ${pct(SOAK.heap.tolerance)}` : `; judged on runs of ${SOAK.heap.judgedFromMinutes} min or more`}`,
    },
  ];
  const failed = checks.filter(check => !check.ok);

  console.log(
    `\nsandglass soak: ${options.minutes} min of load, ${options.rate} + ${options.limitedRate} jobs/s, Redis ${machine.redis}, Node ${machine.node}, ${machine.cpus} CPUs, commit ${machine.git.commit.slice(0, 12)}, load average ${machine.loadAverageAtStart.toFixed(2)}`,
  );
  for (const line of formatTable(samples)) console.log(line);
  console.log(
    `\nlateness on the Redis clock, whole run: ${MAIN} p50 ${fmt(mainLateness.p50)} / p99 ${fmt(mainLateness.p99)} / max ${fmt(mainLateness.max)} ms over ${mainLateness.count} starts; ${LIMITED} p99 ${fmt(limitedLateness.p99)} ms (held by its limits)`,
  );
  console.log(formatChecks(checks).join('\n'));
  console.log(failed.length === 0 ? '\nAll checks passed.' : `\n${failed.length} CHECK(S) FAILED: ${failed.map(c => c.name).join(', ')}`);

  const out = resolve(options.outFile);
  mkdirSync(dirname(out), { recursive: true });
  const results = {
    machine,
    command: `npm run soak -- ${process.argv.slice(2).join(' ')}`.trim(),
    options,
    load: SOAK,
    durationSeconds: (performance.now() - startedAt) / 1000,
    ledgerTransport: 'stdout lines of the worker processes (no Redis keys)',
    redis: { baseline, end, memoryChange: memory.change },
    drainSeconds: drainMs / 1000,
    restarts,
    lateness: { [MAIN]: mainLateness, [LIMITED]: limitedLateness },
    limits,
    heapGrowth: growth ?? null,
    counters,
    verdict,
    workerErrors: { count: tally.errors, first: ledger.errors.slice(0, 5) },
    strayLines: workerA.strayLines + workerB.strayLines,
    checks,
    samples,
  };
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nJSON: ${out}`);
  return failed.length === 0 ? 0 : 1;
}

/** The limited queue's handlers at once (a run in a killed process ends at the kill) and its busiest second. */
function limitFigures(ledger: Ledger): { maxRunning: number; busiestSecond: number } {
  const intervals: { from: number; to: number }[] = [];
  const starts: number[] = [];
  for (const job of ledger.jobs.values()) {
    if (job.queue !== LIMITED) continue;
    for (const start of job.starts) {
      starts.push(start.localAt);
      const end = job.ends.find(e => e.attempt === start.attempt && e.proc === start.proc);
      intervals.push({ from: start.localAt, to: end?.localAt ?? ledger.kills.get(start.proc) ?? Date.now() });
    }
  }
  return { maxRunning: maxOverlap(intervals), busiestSecond: busiestWindow(starts, SOAK.limits.rate.per) };
}

function example(list: readonly string[]): string {
  return list.length > 0 ? `; e.g. ${list.slice(0, 3).join('; ')}` : '';
}

function pct(share: number): string {
  return `${share >= 0 ? '+' : ''}${(share * 100).toFixed(1)}%`;
}

function fmt(value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '-';
}

main().then(
  code => process.exit(code),
  error => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    void stopEverything().finally(() => process.exit(2));
  },
);
