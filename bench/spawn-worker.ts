/**
 * Runs bench/worker-process.ts in a new Node process (the same command for both libraries) and
 * returns what it measured. Optionally with `--cpu-prof`, which writes a V8 CPU profile of the
 * child into a directory when it exits.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LibraryName } from './drivers/types.js';
import type { WorkerProcessResult } from './worker-process.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = 'bench/worker-process.ts';

export interface WorkerProcessSpec {
  readonly library: LibraryName;
  readonly url: string;
  readonly queue: string;
  readonly concurrency: number;
  readonly batchSize?: number;
  readonly jobs: number;
  /** Write a CPU profile of the child here (`node --cpu-prof --cpu-prof-dir`). */
  readonly cpuProfDir?: string;
  /** Kill the child (by its pid) when it has not exited after this long. */
  readonly timeoutMs: number;
}

export interface WorkerProcessRun extends WorkerProcessResult {
  /** The command line, as a reader would type it from the repository root. */
  readonly command: string;
  /** Profiles the child wrote (paths), when profiled. */
  readonly profiles: string[];
}

export async function runWorkerProcess(spec: WorkerProcessSpec): Promise<WorkerProcessRun> {
  const args = [
    ...(spec.cpuProfDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', spec.cpuProfDir]),
    '--import',
    'tsx',
    SCRIPT,
    spec.library,
    spec.url,
    spec.queue,
    String(spec.concurrency),
    String(spec.batchSize ?? 0),
    String(spec.jobs),
  ];
  const profilesBefore = spec.cpuProfDir === undefined ? new Set<string>() : listProfiles(spec.cpuProfDir);
  const { code, stdout, stderr } = await run(process.execPath, args, spec.timeoutMs);
  const line = stdout.trim().split('\n').pop() ?? '';
  let result: WorkerProcessResult;
  try {
    result = JSON.parse(line) as WorkerProcessResult;
  } catch {
    throw new Error(
      `worker process (${spec.library}) exited with ${code} and no result: ${stderr.trim().slice(-2000) || stdout.trim().slice(-500)}`,
    );
  }
  if (result.stalled !== undefined) throw new Error(`${spec.library} worker process: ${result.stalled}`);
  // A drain that needed retries after Redis errors is not the figure it claims to be.
  if (result.errors > 0)
    throw new Error(`${spec.library} worker process reported ${result.errors} error(s), first: ${result.firstError ?? '?'}`);
  if (code !== 0) throw new Error(`worker process (${spec.library}) exited with ${code}: ${stderr.trim().slice(-2000)}`);
  const profiles = spec.cpuProfDir === undefined ? [] : [...listProfiles(spec.cpuProfDir)].filter(path => !profilesBefore.has(path));
  return { ...result, command: `node ${args.join(' ')}`, profiles };
}

function listProfiles(dir: string): Set<string> {
  mkdirSync(dir, { recursive: true });
  return new Set(
    readdirSync(dir)
      .filter(name => name.endsWith('.cpuprofile'))
      .map(name => `${dir}/${name}`),
  );
}

function run(
  command: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`worker process ${child.pid} did not exit within ${timeoutMs} ms; killed. stderr: ${stderr.trim().slice(-1000)}`));
    }, timeoutMs);
    child.once('error', error => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', code => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
