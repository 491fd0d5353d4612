// The chaos suite's worker process: test/fixtures/worker-process.ts's protocol and ledger, plus a
// skewed clock and the producer's own lower bound of the due time.
//
// As a program (`node --import tsx test/chaos/worker.ts`) it reads the fixture's env vars (SG_URL,
// SG_QUEUE, SG_LEDGER, SG_CONCURRENCY, SG_LEASE_MS, SG_HANDLER_MS, SG_HANDLER_JITTER_MS) and:
//   SG_CLOCK_SKEW_MS  added to the Worker's `clock` option (default 0): the worker believes it is
//                     that much later (or earlier, when negative) than it is.
// A line `freeze-at-ack` on its stdin arms it: its next ack call, after the Worker settled on sending
// it and before it reaches Redis, prints `frozen <Date.now()>` on stdout and stops the process
// (SIGSTOP to itself); the harness sends SIGCONT. That is the moment where a frozen worker's late ack
// meets a job that another delivery completed meanwhile (issue 7, item 6).
// Ledger lines are the fixture's (`<kind> <id> <attempt> <attempt> <Date.now()> <job.dueAt>`) with a
// 7th field: the payload's `minDue`, the local time before the producer sent the add plus its
// delay, a bound that does not come from Redis. The times written are the real local clock, never the
// skewed one; Redis runs on the same machine, so they are comparable with its TIME.
//
// As a module it gives the harness spawnChaosWorker and readChaosLedger.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import {
  runWorkerProcess,
  spawnWorkerProgram,
  type LedgerEntry,
  type WorkerProcess,
  type WorkerProcessOptions,
} from '../fixtures/worker-process.js';

/** The payload every chaos producer adds. */
export interface ChaosPayload {
  n: number;
  /** Local epoch ms before the add was sent, plus its delay: the job may not start before. */
  minDue: number;
  pad?: string;
}

/** A ledger line of a chaos worker: the fixture's entry plus the producer's bound. */
export interface ChaosEntry extends LedgerEntry {
  readonly minDue: number;
}

export interface ChaosWorkerOptions extends WorkerProcessOptions {
  /** The worker's clock runs this far off. @default 0 */
  clockSkewMs?: number;
}

const PROGRAM = fileURLToPath(import.meta.url);

/** Starts a chaos worker process and resolves once it printed `ready`. */
export function spawnChaosWorker(options: ChaosWorkerOptions): Promise<WorkerProcess> {
  return spawnWorkerProgram(PROGRAM, options, { SG_CLOCK_SKEW_MS: String(options.clockSkewMs ?? 0) }, 'chaos worker');
}

/** The entries of a chaos ledger (none if the file is absent). */
export function readChaosLedger(path: string): ChaosEntry[] {
  if (!existsSync(path)) return [];
  const entries: ChaosEntry[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    const [kind, id, attempt, , at, dueAt, minDue, ...rest] = line.split(' ');
    if (kind === 'error') {
      entries.push({ kind, id: '-', attempt: 0, at: Number(at), dueAt: 0, minDue: 0, source: path, message: [minDue, ...rest].join(' ') });
      continue;
    }
    entries.push({
      kind: kind as LedgerEntry['kind'],
      id: id as string,
      attempt: Number(attempt),
      at: Number(at),
      dueAt: Number(dueAt),
      minDue: Number(minDue),
      source: path,
    });
  }
  return entries;
}

// --- the child process ---------------------------------------------------------------------------

/** Stops this process in its next ack call once `freeze-at-ack` arrives on stdin (see the header). */
function freezeAtAckOnRequest(): void {
  let armed = false;
  process.stdin.on('data', chunk => {
    if (String(chunk).includes('freeze-at-ack')) armed = true;
  });
  const ack = PartitionStore.prototype.ack;
  PartitionStore.prototype.ack = function (this: PartitionStore, leases) {
    if (armed) {
      armed = false;
      // A pipe write is synchronous on Linux: the line is out before the process stops.
      process.stdout.write(`frozen ${Date.now()}\n`);
      process.kill(process.pid, 'SIGSTOP');
    }
    return ack.call(this, leases);
  };
}

async function main(): Promise<void> {
  freezeAtAckOnRequest();
  const skewMs = Number(process.env.SG_CLOCK_SKEW_MS ?? 0);
  await runWorkerProcess<ChaosPayload>('chaos worker', {
    // The producer's own due-time bound, so that "early" is judged without trusting Redis.
    ledgerSuffix: job => ` ${job.payload?.minDue ?? 0}`,
    workerOptions: skewMs !== 0 ? { clock: () => Date.now() + skewMs } : {},
  });
}

if (process.argv[1] === PROGRAM) {
  main().catch(error => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
