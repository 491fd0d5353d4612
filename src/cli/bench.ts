// `sandglass bench`: a quick, bounded benchmark of this machine and this Redis. Enqueue N jobs with
// addBulk, drain them with a Worker whose handler does nothing, then a short steady load that
// measures lateness (handler start minus due time). Loopback only: lateness compares the Redis
// server's clock with this process's, which is only meaningful on one machine, and a benchmark
// should never load a shared remote Redis by accident. The full comparison with BullMQ is
// `npm run bench` in the repository.
import type { Command } from 'commander';
import { Queue, ValidationError, Worker } from '../index.js';
import { startLocalRedis, type LocalRedis } from '../deploy/local-redis.js';
import { redactUrl } from '../deploy/redact-url.js';
import { closeWithin } from '../deploy/close-within.js';
import type { Cli } from './context.js';
import { durationArgument, integerArgument } from './input.js';

/** Keys of a bench against your Redis live under their own prefix, away from your queues. */
const BENCH_PREFIX = 'sandglass-bench';
const PAYLOAD_PAD = 'x'.repeat(80);
const PRODUCER_TICK_MS = 5;
const STEADY_DELAY_MS = 100;
/** The longest any phase may take before the bench gives up. */
const PHASE_TIMEOUT_MS = 60_000;

interface BenchFlags {
  local?: boolean;
  jobs: number;
  concurrency: number;
  rate: number;
  duration: number;
}

export interface BenchResult {
  redis: string;
  jobs: number;
  concurrency: number;
  enqueue: { durationMs: number; jobsPerSecond: number };
  drain: { durationMs: number; jobsPerSecond: number };
  lateness: { rate: number; durationMs: number; jobs: number; p50Ms: number; p99Ms: number; maxMs: number };
}

export function registerBenchCommand(program: Command, cli: Cli): void {
  program
    .command('bench')
    .description('quick benchmark on a loopback Redis (or a private one with --local): enqueue, drain, lateness')
    .option('--local', 'start a private redis-server (no AOF) for the run and stop it after')
    .option('--jobs <n>', 'jobs to enqueue and drain (100-200000)', integerArgument(100, 200_000), 20_000)
    .option('--concurrency <n>', 'worker concurrency (1-1000)', integerArgument(1, 1_000), 50)
    .option('--rate <n>', 'jobs/s of the steady load (1-10000)', integerArgument(1, 10_000), 1_000)
    .option('--duration <duration>', 'length of the steady load (500ms-30s)', durationArgument(500, 30_000), 3_000)
    .action(async (flags: BenchFlags) => {
      let server: LocalRedis | undefined;
      if (flags.local) {
        server = await startLocalRedis({ appendOnly: false });
      } else {
        assertLoopback(benchUrl(cli));
        await cli.queueNames(); // fails fast with a clear message when Redis is not there
      }
      // Never leave a private redis-server behind: not on an error, not on Ctrl-C.
      const stopServer = () => void server?.stop();
      const interrupt = () => void server?.stop().finally(() => process.exit(130));
      process.once('exit', stopServer);
      process.once('SIGINT', interrupt);
      process.once('SIGTERM', interrupt);
      try {
        const url = server?.url ?? benchUrl(cli);
        const label = server ? `${server.url} (private, no AOF)` : `${redactUrl(url)}, prefix ${BENCH_PREFIX}`;
        cli.note(`bench: ${flags.jobs} jobs, concurrency ${flags.concurrency}, Redis ${label}`);
        const result = await runBench(cli, url, server ? 'local' : redactUrl(url), flags);
        cli.result(result, formatResult(result));
      } finally {
        process.removeListener('exit', stopServer);
        process.removeListener('SIGINT', interrupt);
        process.removeListener('SIGTERM', interrupt);
        await server?.stop();
      }
    });
}

/** The single Redis bench runs on: a cluster or sentinels are refused, as a remote Redis is. */
function benchUrl(cli: Cli): string {
  const { url, description } = cli.redisTarget;
  if (url === undefined)
    throw new ValidationError(
      `bench runs only against a single Redis on this machine, not a ${description}; use --local for a private one`,
    );
  return url;
}

function assertLoopback(url: string): void {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    throw new ValidationError(`Invalid Redis URL: ${redactUrl(url)}`);
  }
  const loopback = host === 'localhost' || host === '[::1]' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
  if (!loopback)
    throw new ValidationError(
      `bench runs only against a Redis on this machine (127.0.0.1, ::1, localhost), not ${host}; use --local for a private one`,
    );
}

async function runBench(cli: Cli, url: string, redisLabel: string, flags: BenchFlags): Promise<BenchResult> {
  const name = `bench-${process.pid}-${Date.now()}`;
  const queue = new Queue(name, { connection: url, prefix: BENCH_PREFIX, logger: cli.logger });
  const done = new Counter();
  const lateness: number[] = [];
  let measureFrom = Number.POSITIVE_INFINITY;
  const worker = new Worker(
    name,
    job => {
      if (job.dueAt >= measureFrom) lateness.push(Date.now() - job.dueAt);
    },
    { connection: url, prefix: BENCH_PREFIX, concurrency: flags.concurrency, logger: cli.logger },
  );
  worker.on('completed', () => done.add(1));
  worker.on('error', error => cli.note(`bench: worker: ${error.message}`));
  try {
    // Enqueue while the worker is paused, so the drain starts from a full queue.
    await queue.pause({ create: true });
    cli.note(`enqueue: adding ${flags.jobs} jobs with addBulk...`);
    const enqueueStart = performance.now();
    for (let start = 0; start < flags.jobs; start += 5_000) {
      const count = Math.min(5_000, flags.jobs - start);
      await queue.addBulk(Array.from({ length: count }, (_, i) => ({ payload: { n: start + i, pad: PAYLOAD_PAD } })));
    }
    const enqueueMs = performance.now() - enqueueStart;

    cli.note('drain: running them with a no-op handler...');
    const drainStart = performance.now();
    await queue.resume();
    await done.reach(flags.jobs, PHASE_TIMEOUT_MS, 'drain');
    const drainMs = performance.now() - drainStart;

    cli.note(`lateness: ${flags.rate} jobs/s for ${flags.duration / 1000} s, each due ${STEADY_DELAY_MS} ms after it is added...`);
    const warmUpMs = Math.min(1_000, flags.duration / 4);
    const added = await produceSteadily(queue, flags.rate, flags.duration, () => (measureFrom = Date.now() + STEADY_DELAY_MS), warmUpMs);
    await done.reach(flags.jobs + added, PHASE_TIMEOUT_MS, 'steady load');
    const sorted = lateness.sort((a, b) => a - b);
    return {
      redis: redisLabel,
      jobs: flags.jobs,
      concurrency: flags.concurrency,
      enqueue: { durationMs: Math.round(enqueueMs), jobsPerSecond: perSecond(flags.jobs, enqueueMs) },
      drain: { durationMs: Math.round(drainMs), jobsPerSecond: perSecond(flags.jobs, drainMs) },
      lateness: {
        rate: flags.rate,
        durationMs: flags.duration,
        jobs: sorted.length,
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99),
        maxMs: sorted.at(-1) ?? 0,
      },
    };
  } finally {
    await closeWithin(worker, 5_000);
    await closeWithin(queue, 1_000);
  }
}

/** Adds, every tick, the jobs owed at `rate` since the start; calls `startMeasuring` once the warm-up is over. */
async function produceSteadily(
  queue: Queue,
  rate: number,
  durationMs: number,
  startMeasuring: () => void,
  warmUpMs: number,
): Promise<number> {
  const startedAt = Date.now();
  let added = 0;
  let measuring = false;
  for (let elapsed = 0; elapsed < durationMs; elapsed = Date.now() - startedAt) {
    if (!measuring && elapsed >= warmUpMs) {
      measuring = true;
      startMeasuring();
    }
    const owed = Math.floor((rate * elapsed) / 1000) - added;
    if (owed > 0) {
      await queue.addBulk(
        Array.from({ length: owed }, (_, i) => ({ payload: { n: added + i, pad: PAYLOAD_PAD }, delay: STEADY_DELAY_MS })),
      );
      added += owed;
    }
    await new Promise(resolve => setTimeout(resolve, PRODUCER_TICK_MS));
  }
  return added;
}

/** Counts completions; `reach` resolves once the count gets to a target, or fails after a timeout. */
class Counter {
  #count = 0;
  #waiter: { target: number; resolve: () => void } | undefined;

  add(n: number): void {
    this.#count += n;
    if (this.#waiter && this.#count >= this.#waiter.target) this.#waiter.resolve();
  }

  reach(target: number, timeoutMs: number, what: string): Promise<void> {
    if (this.#count >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`bench: ${what} did not finish within ${timeoutMs / 1000} s (${this.#count} of ${target} jobs done)`)),
        timeoutMs,
      );
      this.#waiter = {
        target,
        resolve: () => {
          clearTimeout(timer);
          this.#waiter = undefined;
          resolve();
        },
      };
    });
  }
}

function perSecond(count: number, ms: number): number {
  return ms > 0 ? Math.round((count * 1000) / ms) : 0;
}

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1] as number;
}

function formatResult(result: BenchResult): string[] {
  const n = (value: number) => value.toLocaleString('en-US');
  const { lateness } = result;
  return [
    `enqueue (addBulk)      ${n(result.enqueue.jobsPerSecond).padStart(9)} jobs/s  (${n(result.jobs)} jobs in ${result.enqueue.durationMs} ms)`,
    `drain (no-op handler)  ${n(result.drain.jobsPerSecond).padStart(9)} jobs/s  (concurrency ${result.concurrency}, ${result.drain.durationMs} ms)`,
    `lateness at ${n(lateness.rate)} jobs/s for ${lateness.durationMs / 1000} s: p50 ${lateness.p50Ms} ms, p99 ${lateness.p99Ms} ms, max ${lateness.maxMs} ms (${n(lateness.jobs)} jobs)`,
  ];
}
