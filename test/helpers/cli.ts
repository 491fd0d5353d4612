// The sandglass CLI run as a user runs it: a child process. Under `npm test` that is the built
// `node dist/cli.js` (what the packages ship), else `node --import tsx src/cli.ts`.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The CLI's entry point in the sources, run with `node --import tsx` (for tests that must run the sources). */
export const cliPath = new URL('../../src/cli.ts', import.meta.url).pathname;

const root = new URL('../..', import.meta.url).pathname;
const builtCli = join(root, 'dist', 'cli.js');

/**
 * The node arguments that start the CLI. `npm test` builds before its tests and then sets
 * SANDGLASS_TEST_BUILT=1: the tests run dist/cli.js, which starts in half the CPU of tsx (a CLI
 * test spawns hundreds). That is only true while dist is the build of the sources, so a source
 * file newer than dist/cli.js fails the test run instead of testing stale code.
 */
export const cliArgs: readonly string[] = process.env.SANDGLASS_TEST_BUILT === '1' ? [freshBuild()] : ['--import', 'tsx', cliPath];

function freshBuild(): string {
  const builtAt = statSync(builtCli, { throwIfNoEntry: false })?.mtimeMs;
  if (builtAt === undefined) throw new Error(`SANDGLASS_TEST_BUILT=1 but ${builtCli} does not exist: run npm run build`);
  const stale = (readdirSync(join(root, 'src'), { recursive: true }) as string[]).find(
    file => /\.(ts|lua)$/.test(file) && statSync(join(root, 'src', file)).mtimeMs > builtAt,
  );
  if (stale !== undefined) throw new Error(`SANDGLASS_TEST_BUILT=1 but src/${stale} is newer than dist/cli.js: run npm run build`);
  return builtCli;
}

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
    const child = spawn(process.execPath, [...cliArgs, ...args], { stdio: 'pipe', env });
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
