/**
 * The soak's worker processes (bench/soak/worker.ts) seen from the parent: start one, feed its
 * stdout lines to the ledger, ask it for a memory sample, SIGKILL it, stop it. Every process
 * started is tracked, so that an error or Ctrl-C can stop them all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseLine, type LedgerEvent, type MemoryReport } from './ledger.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = 'bench/soak/worker.ts';

export interface WorkerSettings {
  readonly url: string;
  readonly mainQueue: string;
  readonly limitedQueue: string;
  readonly leaseMs: number;
}

const live = new Set<SoakWorker>();

export class SoakWorker {
  readonly label: string;
  readonly #child: ChildProcess;
  readonly #exited: Promise<void>;
  #stderr = '';
  #pendingSample: ((memory: MemoryReport) => void) | undefined;
  /** Lines that were not part of the protocol (a library's stray output). */
  strayLines = 0;

  private constructor(label: string, child: ChildProcess, onEvent: (event: LedgerEvent) => void, onReady: () => void) {
    this.label = label;
    this.#child = child;
    this.#exited = new Promise(resolve => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
    let buffered = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        const parsed = parseLine(line, label);
        if (parsed === undefined) this.strayLines += 1;
        else if (parsed.kind === 'ready') onReady();
        else if (parsed.kind === 'memory') {
          this.#pendingSample?.(parsed.memory);
          this.#pendingSample = undefined;
        } else onEvent(parsed);
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.#stderr = (this.#stderr + chunk).slice(-20_000)));
    // A write to the stdin of a process that just died must not crash the soak.
    child.stdin?.on('error', () => undefined);
  }

  /** Starts a worker process and resolves once it printed `ready`. */
  static async start(
    label: string,
    settings: WorkerSettings,
    onEvent: (event: LedgerEvent) => void,
    readyTimeoutMs = 60_000,
  ): Promise<SoakWorker> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SOAK_URL: settings.url,
      SOAK_MAIN: settings.mainQueue,
      SOAK_LIMITED: settings.limitedQueue,
      SOAK_LEASE_MS: String(settings.leaseMs),
    };
    delete env.NODE_OPTIONS;
    // --expose-gc: the process runs gc() before each memory sample, so the heap figure is what
    // survives a full collection, not whatever garbage the last minor GC left.
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', SCRIPT], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let markReady = (): void => undefined;
    const ready = new Promise<void>(resolve => (markReady = resolve));
    const worker = new SoakWorker(label, child, onEvent, () => markReady());
    live.add(worker);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ready,
        worker.#exited.then(() => {
          throw new Error(`worker process ${label} exited before it was ready: ${worker.#stderr.trim().slice(-2000)}`);
        }),
        new Promise(
          (_, reject) =>
            (timer = setTimeout(
              () =>
                reject(new Error(`worker process ${label} not ready within ${readyTimeoutMs} ms: ${worker.#stderr.trim().slice(-2000)}`)),
              readyTimeoutMs,
            )),
        ),
      ]);
    } catch (error) {
      await worker.kill();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return worker;
  }

  get pid(): number {
    return this.#child.pid as number;
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  stderr(): string {
    return this.#stderr;
  }

  /** Its memory after a forced GC, or undefined when it does not answer within `timeoutMs`. */
  async sample(timeoutMs = 5_000): Promise<MemoryReport | undefined> {
    if (!this.running || this.#pendingSample) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const answer = new Promise<MemoryReport | undefined>(resolve => {
      this.#pendingSample = resolve;
      timer = setTimeout(() => {
        this.#pendingSample = undefined;
        resolve(undefined);
      }, timeoutMs);
    });
    this.#child.stdin?.write('sample\n');
    try {
      return await answer;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL, and resolves once the process is gone. */
  async kill(): Promise<void> {
    live.delete(this);
    if (this.running) this.#child.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGTERM (the worker closes gracefully), SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<void> {
    live.delete(this);
    if (!this.running) return;
    this.#child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const graceful = await Promise.race([
      this.#exited.then(() => true),
      new Promise<boolean>(resolve => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!graceful) {
      this.#child.kill('SIGKILL');
      await this.#exited;
    }
  }
}

/** SIGKILLs every worker process still running (error paths and Ctrl-C). */
export async function killAllWorkers(): Promise<void> {
  const workers = [...live];
  live.clear();
  await Promise.allSettled(workers.map(worker => worker.kill()));
}
