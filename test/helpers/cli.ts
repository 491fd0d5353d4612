// The sandglass CLI run as a user runs it: a child process (`node --import tsx src/cli.ts`).
import { spawn } from 'node:child_process';

/** The CLI's entry point, run with `node --import tsx` (for tests that spawn it themselves, e.g. `serve`). */
export const cliPath = new URL('../../src/cli.ts', import.meta.url).pathname;

/** What one CLI run printed and how it exited. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Wall-clock time of the run, ms. */
  ms: number;
}

/** Runs the CLI with `--redis <redisUrl>` and `args`; stdin gets `input` (or nothing) and is closed. */
export function runCli(redisUrl: string, args: readonly string[], input = ''): Promise<CliRun> {
  return runCliProcess(['--redis', redisUrl, ...args], process.env, input);
}

/** Runs the CLI with exactly `args` in the environment `env`; stdin gets `input` and is closed. */
export function runCliProcess(args: readonly string[], env: NodeJS.ProcessEnv, input = ''): Promise<CliRun> {
  const startedAt = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', cliPath, ...args], { stdio: 'pipe', env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', chunk => (stdout += String(chunk)));
    child.stderr.on('data', chunk => (stderr += String(chunk)));
    child.on('error', reject);
    child.on('close', code => resolve({ code: code ?? -1, stdout, stderr, ms: Date.now() - startedAt }));
    child.stdin.end(input);
  });
}

/** Runs the CLI with `--json`; stdout must be exactly one JSON document, parsed as `body`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function runCliJson(redisUrl: string, args: readonly string[]): Promise<{ code: number; body: any; stderr: string }> {
  const run = await runCli(redisUrl, ['--json', ...args]);
  const lines = run.stdout.trim().split('\n');
  if (lines.length !== 1) throw new Error(`Expected one JSON line on stdout, got: ${run.stdout}`);
  return { code: run.code, body: JSON.parse(run.stdout), stderr: run.stderr };
}
