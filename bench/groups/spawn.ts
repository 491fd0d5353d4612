/**
 * Starts and stops group worker processes (bench/groups/worker-process.ts), each a new cold Node
 * process, and reads back their ledgers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GroupLedger } from './ledger.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = 'bench/groups/worker-process.ts';

export interface GroupWorkerSpec {
  readonly url: string;
  readonly queue: string;
  readonly concurrency: number;
  /** How long each handler takes after reading its payload, ms. */
  readonly handlerMs: number;
  /** Kill the process (by its pid) when it has not finished this long after its start. */
  readonly timeoutMs: number;
}

export interface GroupWorker {
  readonly pid: number;
  /** The command line, as a reader would type it from the repository root. */
  readonly command: string;
  /** Resolves when the worker listens. */
  readonly ready: Promise<void>;
  /** Resolves with the monotonic time (us) of its first handler start. */
  readonly firstStart: Promise<number>;
  /** Closes the worker, waits for the process to exit and returns its ledger. */
  stop(): Promise<GroupLedger>;
}

/** Where the ledgers of one phase go; removed by `removeLedgers`. */
export function ledgerDir(): string {
  return mkdtempSync(join(tmpdir(), 'sandglass-bench-groups-'));
}

export function removeLedgers(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

let serial = 0;

export function startGroupWorker(spec: GroupWorkerSpec, dir: string): GroupWorker {
  const ledgerFile = join(dir, `worker-${serial++}.json`);
  const args = ['--import', 'tsx', SCRIPT, spec.url, spec.queue, String(spec.concurrency), String(spec.handlerMs), ledgerFile];
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4_000)));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', code => resolve(code));
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), spec.timeoutMs);
  void exited.finally(() => clearTimeout(timer)).catch(() => undefined);
  const failed = (what: string) =>
    exited.then(code => {
      throw new Error(`group worker process ${child.pid} exited (${code}) before ${what}: ${stderr.trim().slice(-2_000)}`);
    });

  let onReady: () => void = () => undefined;
  let onFirstStart: (us: number) => void = () => undefined;
  const ready = Promise.race([new Promise<void>(resolve => (onReady = resolve)), failed('it was ready')]);
  const firstStart = Promise.race([new Promise<number>(resolve => (onFirstStart = resolve)), failed('its first start')]);
  // Awaited by the phase or not at all: an unobserved rejection must not end the bench.
  ready.catch(() => undefined);
  firstStart.catch(() => undefined);
  let stdout = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (let nl = stdout.indexOf('\n'); nl >= 0; nl = stdout.indexOf('\n')) {
      const line = stdout.slice(0, nl).trim();
      stdout = stdout.slice(nl + 1);
      if (line === 'ready') onReady();
      else if (line.startsWith('first-start ')) onFirstStart(Number(line.slice('first-start '.length)));
    }
  });

  return {
    pid: child.pid as number,
    command: `node ${args.slice(0, -1).join(' ')} <ledger file>`,
    ready,
    firstStart,
    async stop() {
      child.stdin?.end('stop\n');
      const code = await exited;
      if (code !== 0) throw new Error(`group worker process ${child.pid} exited with ${code}: ${stderr.trim().slice(-2_000)}`);
      const ledger = JSON.parse(readFileSync(ledgerFile, 'utf8')) as GroupLedger;
      // A run that needed retries after Redis errors is not the figure it claims to be.
      if (ledger.errors > 0)
        throw new Error(`group worker process ${child.pid} reported ${ledger.errors} error(s), first: ${ledger.firstError ?? '?'}`);
      return ledger;
    },
  };
}

/** Stops every worker (also after a failure: none is left running) and returns their ledgers. */
export async function stopAll(workers: readonly GroupWorker[]): Promise<GroupLedger[]> {
  const settled = await Promise.allSettled(workers.map(worker => worker.stop()));
  const failure = settled.find(result => result.status === 'rejected');
  if (failure) throw failure.reason;
  return settled.map(result => (result as PromiseFulfilledResult<GroupLedger>).value);
}

/**
 * Runs `during` while the workers run, then stops them (also when `during` throws: no process
 * outlives a failed measurement) and returns what `during` returned and their ledgers.
 */
export async function whileRunning<T>(
  workers: readonly GroupWorker[],
  during: () => Promise<T>,
): Promise<{ value: T; ledgers: GroupLedger[] }> {
  let value: T;
  try {
    value = await during();
  } catch (error) {
    await stopAll(workers).catch(() => undefined);
    throw error;
  }
  return { value, ledgers: await stopAll(workers) };
}
