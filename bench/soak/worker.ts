/**
 * A soak worker process: one sandglass Worker on the soak's main queue and one on its limited
 * queue, in their own Node process, reporting every delivery to the parent on stdout.
 *
 *   node --expose-gc --import tsx bench/soak/worker.ts   (settings in the env, below)
 *
 * SOAK_URL (Redis), SOAK_MAIN and SOAK_LIMITED (queue names), SOAK_LEASE_MS. Lines on stdout (the
 * protocol parsed by ledger.ts parseLine), each one process.stdout.write, which is a synchronous
 * write(2) for a pipe on Linux, so a line written before a SIGKILL reaches the parent:
 *   ready
 *   start <queue> <id> <attempt> <dueAt> <Redis TIME, ms> <Date.now()>
 *   end <queue> <id> <attempt> <Date.now()> ok|fail
 *   completed|retry|dead|stale <queue> <id> <attempt>
 *   error <message>
 *   memory <JSON of process.memoryUsage() after gc()>     (answer to a `sample` line on stdin)
 * It exits when its stdin closes (the soak died) and closes its workers gracefully on SIGTERM.
 */
import { Redis } from 'ioredis';
import { UnrecoverableError, Worker, type Job } from '../../src/index.js';
import type { Plan } from './ledger.js';

/** The payload the soak's producer adds; a schedule's ticks carry null. */
export interface SoakPayload {
  readonly plan: Plan;
  /** How long the handler takes, ms. */
  readonly ms: number;
}

function need(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`soak worker: ${name} is not set`);
  return value;
}

function emit(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** `--expose-gc` gives `gc`; without it the heap figure is whatever the last GC left. */
const gc = (globalThis as { gc?: () => void }).gc;

async function main(): Promise<void> {
  const url = need('SOAK_URL');
  const leaseMs = Number(need('SOAK_LEASE_MS'));
  // Its own connection, for TIME only: the Workers' connections carry nothing of the soak's.
  const clock = new Redis(url, { maxRetriesPerRequest: 3 });
  clock.on('error', () => undefined);

  const handler = async (job: Job<SoakPayload | null>): Promise<void> => {
    const localAt = Date.now();
    // Read before anything else: an upper bound of the Redis clock at the start, so an early
    // start cannot hide behind this read (it can only make a start look later than it was).
    const [seconds, micros] = await clock.time();
    emit(`start ${job.queue} ${job.id} ${job.attempt} ${job.dueAt} ${Number(seconds) * 1000 + Number(micros) / 1000} ${localAt}`);
    const plan = job.payload?.plan ?? 'ok';
    const ms = job.payload?.ms ?? 0;
    if (ms > 0) await new Promise(resolve => setTimeout(resolve, ms));
    const fails = plan === 'always' || plan === 'unrecoverable' || (plan === 'once' && job.attempt === 1);
    emit(`end ${job.queue} ${job.id} ${job.attempt} ${Date.now()} ${fails ? 'fail' : 'ok'}`);
    if (plan === 'unrecoverable') throw new UnrecoverableError('soak: planned unrecoverable failure');
    if (fails) throw new Error('soak: planned failure');
  };

  const options = { connection: url, leaseMs, backoff: { type: 'fixed' as const, delayMs: 1_000 } };
  const workers = [
    new Worker<SoakPayload | null>(need('SOAK_MAIN'), handler, { ...options, concurrency: 20 }),
    // More handlers than the queue's concurrency limit, so that the limit, not the worker, holds them.
    new Worker<SoakPayload | null>(need('SOAK_LIMITED'), handler, { ...options, concurrency: 4 }),
  ];
  for (const worker of workers) {
    worker.on('completed', job => emit(`completed ${job.queue} ${job.id} ${job.attempt}`));
    worker.on('failed', (job, _error, retryAt) =>
      emit(`${retryAt === undefined ? 'dead' : 'retry'} ${job.queue} ${job.id} ${job.attempt}`),
    );
    worker.on('stale', job => emit(`stale ${job.queue} ${job.id} ${job.attempt}`));
    worker.on('error', error => emit(`error ${error.message.replace(/\s+/g, ' ')}`));
  }

  let input = '';
  process.stdin.setEncoding('utf8').on('data', (chunk: string) => {
    input += chunk;
    let newline: number;
    while ((newline = input.indexOf('\n')) >= 0) {
      const command = input.slice(0, newline);
      input = input.slice(newline + 1);
      if (command === 'sample') {
        gc?.();
        const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
        emit(`memory ${JSON.stringify({ rss, heapUsed, heapTotal, external })}`);
      }
    }
  });
  // The stdin pipe closes when the soak dies: do not outlive it.
  process.stdin.on('end', () => process.exit(0));
  process.once('SIGTERM', () => {
    void Promise.allSettled(workers.map(worker => worker.close())).finally(() => {
      clock.disconnect();
      process.exit(0);
    });
  });

  await Promise.all(workers.map(worker => worker.waitUntilReady()));
  emit('ready');
}

main().catch(error => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
