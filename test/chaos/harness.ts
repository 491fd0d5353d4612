// The chaos harness: a private redis-server, N worker processes (test/chaos/worker.ts), a producer
// adding jobs with random delays at a steady rate, and one fault running against them. After the load
// and the fault it waits for the queue to drain, reads Redis raw, and hands everything to the checker.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { startLocalRedis, type LocalRedis, type LocalRedisOptions } from '../../src/deploy/local-redis.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import type { WorkerProcess } from '../fixtures/worker-process.js';
import {
  check,
  checkInvariant,
  invariantProblems,
  snapshot,
  type CheckReport,
  type FreezeEvent,
  type InvariantReport,
  type KillEvent,
} from './checker.js';
import { readChaosLedger, spawnChaosWorker, type ChaosEntry, type ChaosPayload } from './worker.js';

export function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** How big a run is. */
export interface ChaosSize {
  /** Jobs the producer sends in total. */
  readonly jobs: number;
  /** How long the producer sends them (and the fault runs), ms. */
  readonly loadMs: number;
}

export interface WorkerSpec {
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly handlerMs: number;
  readonly handlerJitterMs: number;
  readonly clockSkewMs?: number;
}

/** One pass criterion: printed and asserted. */
export interface Criterion {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** A live slot of the worker pool. */
interface Slot {
  spec: WorkerSpec;
  handle: WorkerProcess;
  generation: number;
}

/** The worker processes of a scenario: spawns, kills, freezes, respawns, and remembers every ledger. */
export class WorkerPool {
  readonly slots: Slot[] = [];
  readonly all: WorkerProcess[] = [];
  readonly kills: KillEvent[] = [];
  readonly freezes: FreezeEvent[] = [];
  /** The freezes that stopped a worker inside its ack call (also in `freezes`). */
  readonly ackFreezes: FreezeEvent[] = [];
  /** Per armed process: how long its stop in an ack call is to last, and who waits for it. */
  readonly #armed = new Map<WorkerProcess, { ms: number; resolve: (event: FreezeEvent) => void }>();
  readonly #url: string;
  readonly #queue: string;
  readonly #dir: string;

  constructor(url: string, queue: string, dir: string) {
    this.#url = url;
    this.#queue = queue;
    this.#dir = dir;
  }

  async #spawn(index: number, spec: WorkerSpec, generation: number): Promise<WorkerProcess> {
    const handle = await spawnChaosWorker({
      url: this.#url,
      queue: this.#queue,
      ledger: join(this.#dir, `w${index}-g${generation}.log`),
      concurrency: spec.concurrency,
      leaseMs: spec.leaseMs,
      handlerMs: spec.handlerMs,
      handlerJitterMs: spec.handlerJitterMs,
      ...(spec.clockSkewMs === undefined ? {} : { clockSkewMs: spec.clockSkewMs }),
    });
    this.all.push(handle);
    this.#continueAckFreezes(handle);
    return handle;
  }

  /** A worker that stopped itself in an ack call (`frozen <at>` on stdout) gets SIGCONT when its time is up. */
  #continueAckFreezes(handle: WorkerProcess): void {
    handle.child.stdout?.on('data', chunk => {
      const match = /frozen (\d+)/.exec(String(chunk));
      if (!match) return;
      const from = Number(match[1]);
      const armed = this.#armed.get(handle);
      this.#armed.delete(handle);
      setTimeout(
        () => {
          void handle.kill('SIGCONT').then(() => {
            const event = { source: handle.ledger, from, to: Date.now() };
            this.freezes.push(event);
            this.ackFreezes.push(event);
            armed?.resolve(event);
          });
        },
        Math.max(0, from + (armed?.ms ?? 0) - Date.now()),
      );
    });
  }

  /**
   * Arms the worker of slot `index` to SIGSTOP itself in its next ack call, after the Worker settled
   * on sending it and before it reaches Redis (test/chaos/worker.ts); SIGCONT follows `ms` later.
   * Resolves with the freeze, or undefined when no ack came within `armMs` (it stays armed: a later
   * stop is continued after `ms` all the same).
   */
  freezeAtAck(index: number, ms: number, armMs = 2_000): Promise<FreezeEvent | undefined> {
    const handle = (this.slots[index] as Slot).handle;
    return new Promise(resolve => {
      const timer = setTimeout(() => resolve(undefined), armMs);
      this.#armed.set(handle, {
        ms,
        resolve: event => {
          clearTimeout(timer);
          resolve(event);
        },
      });
      handle.child.stdin?.write('freeze-at-ack\n');
    });
  }

  async start(specs: readonly WorkerSpec[]): Promise<void> {
    const handles = await Promise.allSettled(specs.map((spec, index) => this.#spawn(index, spec, 0)));
    const failure = handles.find(result => result.status === 'rejected');
    if (failure) throw failure.reason;
    handles.forEach((result, index) => {
      if (result.status === 'fulfilled') this.slots.push({ spec: specs[index] as WorkerSpec, handle: result.value, generation: 0 });
    });
  }

  /** SIGKILLs the worker of slot `index` and starts a fresh one in its place (new ledger). */
  async killAndRespawn(index: number): Promise<void> {
    const slot = this.slots[index] as Slot;
    const at = Date.now();
    await slot.handle.kill('SIGKILL');
    this.kills.push({ source: slot.handle.ledger, at });
    slot.generation += 1;
    slot.handle = await this.#spawn(index, slot.spec, slot.generation);
  }

  /** SIGSTOPs the worker of slot `index` for `ms`, then SIGCONTs it. */
  async freeze(index: number, ms: number): Promise<FreezeEvent> {
    const slot = this.slots[index] as Slot;
    const from = Date.now();
    await slot.handle.kill('SIGSTOP');
    try {
      await sleep(ms);
    } finally {
      await slot.handle.kill('SIGCONT');
    }
    const event = { source: slot.handle.ledger, from, to: Date.now() };
    this.freezes.push(event);
    return event;
  }

  ledgers(): string[] {
    return this.all.map(handle => handle.ledger);
  }

  entries(): ChaosEntry[] {
    return this.ledgers().flatMap(readChaosLedger);
  }

  /** SIGCONT (in case) and SIGKILL every process ever spawned; waits for them to exit. */
  async killAll(): Promise<void> {
    await Promise.all(
      this.all.map(async handle => {
        await handle.kill('SIGCONT');
        await handle.kill('SIGKILL');
      }),
    );
  }
}

/** The producer: adds `size.jobs` jobs at a steady rate, with random delays and explicit ids. */
export class Producer {
  /** Ids whose add resolved, with the local time it resolved at. */
  readonly acknowledged = new Map<string, number>();
  readonly attempted = new Set<string>();
  /** Failed add calls: error class name -> count. */
  readonly failures = new Map<string, number>();
  /** Ids of adds that failed, by error class. */
  readonly failedIds = new Map<string, string[]>();
  #stopped = false;
  readonly done: Promise<void>;

  constructor(
    queue: Queue<ChaosPayload>,
    size: ChaosSize,
    options: { maxDelayMs: number; batch?: number; padBytes?: number; prefix: string },
  ) {
    const batch = options.batch ?? 50;
    const batches = Math.ceil(size.jobs / batch);
    const intervalMs = size.loadMs / batches;
    const pad = options.padBytes ? 'x'.repeat(options.padBytes) : undefined;
    this.done = (async () => {
      const startedAt = Date.now();
      for (let b = 0; b < batches && !this.#stopped; b++) {
        const wait = startedAt + b * intervalMs - Date.now();
        if (wait > 0) await sleep(wait);
        const now = Date.now();
        const jobs = Array.from({ length: Math.min(batch, size.jobs - b * batch) }, (_, k) => {
          const n = b * batch + k;
          const delay = Math.floor(Math.random() * options.maxDelayMs);
          const payload: ChaosPayload = { n, minDue: now + delay, ...(pad ? { pad } : {}) };
          // One job in three is grouped (README, "Groups"): the invariant covers group queues and counts.
          return { id: `${options.prefix}-${n}`, payload, delay, ...(n % 3 === 0 ? { group: `tenant-${n % 7}` } : {}) };
        });
        jobs.forEach(job => this.attempted.add(job.id));
        try {
          const ids = await queue.addBulk(jobs);
          const at = Date.now();
          for (const id of ids) this.acknowledged.set(id, at);
        } catch (error) {
          const kind = error instanceof Error ? error.constructor.name : typeof error;
          this.failures.set(kind, (this.failures.get(kind) ?? 0) + 1);
          this.failedIds.set(kind, [...(this.failedIds.get(kind) ?? []), ...jobs.map(job => job.id)]);
        }
      }
    })();
  }

  stop(): void {
    this.#stopped = true;
  }

  get failedAdds(): number {
    let total = 0;
    for (const count of this.failures.values()) total += count;
    return total;
  }
}

/** What a fault gets to work with. */
export interface FaultContext {
  readonly server: LocalRedis;
  readonly queueName: string;
  readonly pool: WorkerPool;
  readonly producer: Producer;
  readonly size: ChaosSize;
  /** A raw client (reconnects by itself; survives CLIENT KILL ... SKIPME yes). */
  readonly raw: Redis;
  /** A new raw client, closed by the harness. */
  rawClient(): Redis;
  /** Local time the load ends at. */
  readonly loadEndsAt: number;
  /** Reads Redis raw now and checks that every job is in exactly one state. */
  invariantNow(): Promise<InvariantReport>;
  /** Notes printed with the result. */
  note(text: string): void;
}

export interface Scenario {
  readonly name: string;
  readonly description: string;
  readonly workers: readonly WorkerSpec[];
  readonly maxDelayMs: number;
  readonly padBytes?: number;
  readonly redis?: LocalRedisOptions;
  /** Runs during the load; resolves when the fault is over (at the latest soon after loadEndsAt). */
  fault(context: FaultContext): Promise<void>;
  /** The fault's own criteria, on top of the common ones (which it may replace by name). */
  criteria(report: CheckReport, context: FaultContext, entries: readonly ChaosEntry[]): Criterion[] | Promise<Criterion[]>;
  /** Common criteria this fault does not apply. */
  readonly skip?: readonly string[];
}

export interface ScenarioResult {
  readonly name: string;
  readonly description: string;
  readonly sent: number;
  readonly report: CheckReport;
  readonly criteria: Criterion[];
  readonly notes: string[];
  readonly pass: boolean;
  readonly durationMs: number;
  readonly drained: boolean;
  readonly failedAdds: Record<string, number>;
}

/** The wheel's bucket width in the chaos runs (the smallest it allows): jobs delayed 2-4 s reach the wheel. */
const WHEEL_SLOT_MS = 1_000;

/** Runs one scenario at one size, start to finish, and always cleans up its processes. */
export async function runScenario(
  scenario: Scenario,
  size: ChaosSize,
  log: (line: string) => void = () => undefined,
): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const dir = mkdtempSync(join(tmpdir(), `sandglass-chaos-${scenario.name}-`));
  mkdirSync(join(dir, 'redis'));
  const server = await startLocalRedis({ ...scenario.redis, dir: join(dir, 'redis') });
  const clients: Redis[] = [];
  const rawClient = () => {
    const client = new Redis(server.url, { maxRetriesPerRequest: null, lazyConnect: false });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };
  const raw = rawClient();
  const queueName = `chaos-${scenario.name}`;
  const pool = new WorkerPool(server.url, queueName, dir);
  let queue: Queue<ChaosPayload> | undefined;
  let producer: Producer | undefined;
  const notes: string[] = [];
  let wheelSampler: NodeJS.Timeout | undefined;
  try {
    // The far-future tier at its narrowest buckets, so that the jobs delayed more than about two
    // of them wait in wheel buckets and every fault also hits adds into the wheel and its moves.
    await raw.hset(partitionKeys('sg', queueName, 0).meta, 'wheelSlotMs', WHEEL_SLOT_MS);
    let wheelPeak = 0;
    wheelSampler = setInterval(() => {
      raw.hget(partitionKeys('sg', queueName, 0).counters, 'wheeled').then(
        value => (wheelPeak = Math.max(wheelPeak, Number(value ?? 0))),
        () => undefined,
      );
    }, 250);
    await pool.start(scenario.workers);
    queue = new Queue<ChaosPayload>(queueName, { connection: server.url });
    // The grouped jobs' groups have a concurrency limit (high enough not to slow the recovery criteria): their running counts meet every fault too.
    await queue.setGroupLimits({ concurrency: 64 });
    log(
      `${scenario.name}: ${scenario.workers.length} workers ready after ${Date.now() - startedAt} ms; ${size.jobs} jobs over ${size.loadMs} ms`,
    );
    producer = new Producer(queue, size, {
      maxDelayMs: scenario.maxDelayMs,
      prefix: scenario.name,
      ...(scenario.padBytes ? { padBytes: scenario.padBytes } : {}),
    });
    const context: FaultContext = {
      server,
      queueName,
      pool,
      producer,
      size,
      raw,
      rawClient,
      loadEndsAt: Date.now() + size.loadMs,
      invariantNow: async () => checkInvariant(await snapshot(raw, queueName)),
      note: text => {
        notes.push(text);
        log(`${scenario.name}: ${text}`);
      },
    };
    await Promise.all([scenario.fault(context), producer.done]);
    clearInterval(wheelSampler);
    context.note(`up to ${wheelPeak} jobs waited in the wheel at once (sampled every 250 ms; ${WHEEL_SLOT_MS} ms buckets)`);
    log(`${scenario.name}: load and fault over after ${Date.now() - startedAt} ms; draining`);

    // Drain: nothing waiting or active any more. A job whose lease was cut short by the fault comes
    // back after its lease; allow several leases.
    const leaseMs = Math.max(...scenario.workers.map(w => w.leaseMs));
    const drainDeadline = Date.now() + scenario.maxDelayMs + 4 * leaseMs + 10_000;
    let drained = false;
    while (Date.now() < drainDeadline) {
      const stats = await queue.stats().catch(() => undefined);
      if (stats && stats.delayed + stats.ready + stats.active === 0) {
        drained = true;
        break;
      }
      await sleep(100);
    }
    await sleep(300); // the last `done` lines (completed events follow the ack's reply)
    const final = await snapshot(raw, queueName);
    await pool.killAll();
    const entries = pool.entries();
    const report = check({
      entries,
      acknowledged: new Set(producer.acknowledged.keys()),
      attempted: producer.attempted,
      kills: pool.kills,
      freezes: pool.freezes,
      leaseMs,
      final,
    });
    const common: Criterion[] = [
      { name: 'drained', ok: drained, detail: drained ? 'queue empty' : `not drained: ${report.stuck.length} stuck` },
      {
        name: 'lost',
        ok: report.lost.length === 0,
        detail: `${report.lost.length} lost of ${report.acknowledged} acknowledged${report.lost.length ? ` (e.g. ${report.lost.slice(0, 5).join(', ')}; ${report.stuck.length} stuck in Redis)` : ''}`,
      },
      {
        name: 'done twice',
        ok: report.doneTwice.length === 0,
        detail: `${report.doneTwice.length} jobs acked twice${report.doneTwice.length ? ` (e.g. ${report.doneTwice.slice(0, 5).join(', ')})` : ''}`,
      },
      {
        name: 'duplicates explained',
        ok: report.duplicatesByCause.unexplained === 0,
        detail: `${report.duplicates.length} duplicate starts: ${describeCauses(report)}${
          report.duplicatesByCause.unexplained
            ? `; e.g. ${report.duplicates
                .filter(d => d.cause === 'unexplained')
                .slice(0, 3)
                .map(d => `${d.id}: ${d.why}`)
                .join(' | ')}`
            : ''
        }`,
      },
      {
        name: 'early',
        ok: report.early.length === 0,
        detail: `${report.early.length} early starts${
          report.early.length
            ? ` (e.g. ${report.early
                .slice(0, 3)
                .map(e => `${e.id} ${e.dueAt - e.at} ms before dueAt, ${e.minDue - e.at} ms before minDue`)
                .join('; ')})`
            : ''
        }`,
      },
      { name: 'phantoms', ok: report.phantoms.length === 0, detail: `${report.phantoms.length} started jobs no producer sent` },
      {
        name: 'invariant',
        ok: report.invariant.ok,
        detail: report.invariant.ok
          ? `every job in exactly one state (${report.invariant.jobs} left, all dead letters: ${report.dead})`
          : invariantProblems(report.invariant),
      },
    ];
    const own = await scenario.criteria(report, context, entries);
    const ownNames = new Set(own.map(c => c.name));
    const criteria = [...common.filter(c => !ownNames.has(c.name) && !scenario.skip?.includes(c.name)), ...own];
    const failures = Object.fromEntries(producer.failures);
    return {
      name: scenario.name,
      description: scenario.description,
      sent: producer.attempted.size,
      report,
      criteria,
      notes,
      pass: criteria.every(c => c.ok),
      durationMs: Date.now() - startedAt,
      drained,
      failedAdds: failures,
    };
  } finally {
    clearInterval(wheelSampler);
    producer?.stop();
    await producer?.done.catch(() => undefined);
    await pool.killAll();
    await queue?.close().catch(() => undefined);
    for (const client of clients) client.disconnect();
    await server.kill('SIGCONT').catch(() => undefined);
    await server.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

export function describeCauses(report: CheckReport): string {
  const { kill, freeze, lease, unexplained } = report.duplicatesByCause;
  const parts = [
    kill && `${kill} after a SIGKILL`,
    freeze && `${freeze} after a freeze`,
    lease && `${lease} after a lease ran out`,
    unexplained && `${unexplained} UNEXPLAINED`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'none';
}

/** PASS or FAIL. */
export function passCell(result: ScenarioResult): string {
  return result.pass ? 'PASS' : 'FAIL';
}

/** Formats a result as the lines printed for it. */
export function formatResult(result: ScenarioResult): string {
  const lines = [`${result.pass ? 'PASS' : 'FAIL'} ${result.name} (${(result.durationMs / 1000).toFixed(1)} s): ${result.description}`];
  for (const c of result.criteria) lines.push(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  const r = result.report;
  lines.push(
    `  sent ${result.sent}, acknowledged ${r.acknowledged}, failed add calls ${JSON.stringify(result.failedAdds)}, completed ${r.completed}, dead ${r.dead}, stale acks ${r.stale}, worker error lines ${r.errors}, lateness p50 ${r.lateness.p50} ms p99 ${r.lateness.p99} ms max ${r.lateness.max} ms`,
  );
  for (const note of result.notes) lines.push(`  note: ${note}`);
  return lines.join('\n');
}

/** The summary table: fault | jobs | lost | duplicates (explained) | early | invariant ok | pass. */
export function formatTable(results: readonly ScenarioResult[]): string {
  const header = ['fault', 'jobs', 'lost', 'duplicates (explained)', 'early', 'invariant ok', 'pass'];
  const rows = results.map(r => [
    r.name,
    String(r.report.acknowledged),
    String(r.report.lost.length),
    `${r.report.duplicates.length} (${describeCauses(r.report)})`,
    String(r.report.early.length),
    r.report.invariant.ok && !r.criteria.some(c => c.name.startsWith('invariant') && !c.ok) ? 'yes' : 'NO',
    passCell(r),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map(row => (row[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i] as number)).join(' | ')} |`;
  return [line(header), `|${widths.map(w => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}
