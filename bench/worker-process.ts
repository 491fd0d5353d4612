/**
 * A worker as a user deploys it: its own Node process, started cold (no warm-up, nothing compiled
 * yet) against a queue that already holds the due jobs, with a handler that reads the payload.
 *
 *   node --import tsx bench/worker-process.ts <sandglass|bullmq> <redis url> <queue> <concurrency> <batch size|0> <jobs>
 *
 * The clock starts just before the worker is constructed (the libraries are already imported, as
 * in a service that starts its workers after loading its code) and stops at the <jobs>-th
 * 'completed' event. Prints one JSON line (WorkerProcessResult) on stdout, then closes the worker
 * and exits; exit code 1 when the drain stalled or the worker reported errors.
 */
import type { Payload } from './drivers/types.js';
import { Progress } from './measure.js';

export interface WorkerProcessResult {
  readonly library: string;
  readonly jobs: number;
  /** Worker construction to the last completion. */
  readonly elapsedMs: number;
  readonly jobsPerSecond: number;
  /** Worker construction to the first completion: start-up as a deployment sees it. */
  readonly firstCompletionMs: number;
  /** This process's CPU in the same window (process.cpuUsage), microseconds. */
  readonly cpuUserUs: number;
  readonly cpuSystemUs: number;
  /** Sum of the payloads' `pad.length` the handler read: jobs x 90 when every payload arrived. */
  readonly payloadChars: number;
  /** The window on the monotonic clock (process.hrtime, us): V8 CPU profiles use the same clock. */
  readonly windowStartUs: number;
  readonly windowEndUs: number;
  readonly errors: number;
  readonly firstError?: string;
  readonly stalled?: string;
}

/** A drain that stops moving for this long ends the process with a stall report. */
const STALL_MS = 30_000;

interface Closable {
  close(): Promise<void>;
}

/** What the handler and the events report to the measurement. */
interface Hooks {
  readonly onPayload: (chars: number) => void;
  readonly onCompleted: () => void;
  readonly onError: (error: Error) => void;
}

/** Constructs the worker (and so starts it): the moment the clock starts. */
type StartWorker = (hooks: Hooks) => Closable;

interface WorkerArgs {
  readonly url: string;
  readonly queue: string;
  readonly concurrency: number;
  readonly batchSize: number;
}

/** Imports sandglass (untimed) and returns how to start its worker. */
async function loadSandglass({ url, queue, concurrency, batchSize }: WorkerArgs): Promise<StartWorker> {
  const { Worker } = await import('../src/index.js');
  return ({ onPayload, onCompleted, onError }) => {
    const options = { connection: url, concurrency };
    const worker =
      batchSize > 0
        ? new Worker<Payload>(
            queue,
            async batch => {
              for (const job of batch) onPayload(job.payload.pad.length);
            },
            { ...options, batch: { size: batchSize } },
          )
        : new Worker<Payload>(queue, async job => onPayload(job.payload.pad.length), options);
    worker.on('completed', onCompleted);
    worker.on('error', onError);
    return worker;
  };
}

/** Imports BullMQ (untimed) and returns how to start its worker. */
async function loadBullmq({ url, queue, concurrency, batchSize }: WorkerArgs): Promise<StartWorker> {
  if (batchSize > 0) throw new Error('BullMQ (open source) has no batch handler');
  const { Worker } = await import('bullmq');
  const { hostname, port } = new URL(url);
  return ({ onPayload, onCompleted, onError }) => {
    // As in the in-process driver: BullMQ's production setting for worker connections.
    const worker = new Worker<Payload>(queue, async job => onPayload(job.data.pad.length), {
      connection: { host: hostname, port: Number(port), maxRetriesPerRequest: null },
      concurrency,
    });
    worker.on('completed', onCompleted);
    worker.on('error', onError);
    return worker;
  };
}

function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

async function main(argv: readonly string[]): Promise<number> {
  const [library, url, queue, concurrencyText, batchText, jobsText] = argv;
  const concurrency = Number(concurrencyText);
  const batchSize = Number(batchText);
  const jobs = Number(jobsText);
  if ((library !== 'sandglass' && library !== 'bullmq') || !url || !queue || !(concurrency > 0) || !(batchSize >= 0) || !(jobs > 0)) {
    throw new Error('usage: worker-process.ts <sandglass|bullmq> <redis url> <queue> <concurrency> <batch size|0> <jobs>');
  }
  // Only the measured library is loaded, and before the clock starts: a service imports its code first.
  const args = { url, queue, concurrency, batchSize };
  const startWorker = library === 'sandglass' ? await loadSandglass(args) : await loadBullmq(args);

  const progress = new Progress();
  let payloadChars = 0;
  let errors = 0;
  let firstError: string | undefined;
  let firstCompletionMs = Number.NaN;
  const windowStartUs = monotonicUs();
  const cpuStart = process.cpuUsage();
  const started = performance.now();
  const worker = startWorker({
    onPayload: chars => {
      payloadChars += chars;
    },
    onCompleted: () => {
      if (progress.count === 0) firstCompletionMs = performance.now() - started;
      progress.increment();
    },
    onError: error => {
      errors += 1;
      firstError ??= error.message;
    },
  });

  let stalled: string | undefined;
  try {
    await progress.reach(jobs, STALL_MS);
  } catch (error) {
    stalled = (error as Error).message;
  }
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuStart);
  const windowEndUs = monotonicUs();
  const result: WorkerProcessResult = {
    library,
    jobs,
    elapsedMs,
    jobsPerSecond: (jobs * 1000) / elapsedMs,
    firstCompletionMs,
    cpuUserUs: cpu.user,
    cpuSystemUs: cpu.system,
    payloadChars,
    windowStartUs,
    windowEndUs,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    ...(stalled === undefined ? {} : { stalled }),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  await worker.close();
  return stalled !== undefined || errors > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  // process.exit, not a natural end: a library's timers must not keep the process (and the
  // parent's wait) alive; --cpu-prof still writes its profile on exit.
  code => process.exit(code),
  error => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
