// The CLI and `sandglass serve` run as a user runs them, with whatever Redis settings a test gives
// (flags and environment), for the tests of the CLI and the service on Cluster, Sentinel, TLS and
// ACL users. The environment is cleaned of every Redis setting the machine may have.
import { spawn, type ChildProcess } from 'node:child_process';
import { cliArgs, runCliProcess, type CliRun } from './cli.js';
import { waitFor } from './redis.js';

const REDIS_VARIABLES = [
  'REDIS_URL',
  'REDIS_CLUSTER_NODES',
  'REDIS_SENTINELS',
  'REDIS_SENTINEL_NAME',
  'REDIS_TLS_CA',
  'REDIS_TLS_CERT',
  'REDIS_TLS_KEY',
  'REDIS_USERNAME',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'SANDGLASS_PARTITIONS',
  'SANDGLASS_TOKEN',
  'SANDGLASS_WEBHOOKS',
  'SANDGLASS_PREFIX',
];

function environment(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REDIS_VARIABLES) delete clean[name];
  return { ...clean, ...env };
}

/** Runs `sandglass <args>` with `env` added to a clean environment; stdin gets `input`. */
export function sandglass(args: readonly string[], env: Record<string, string> = {}, input = ''): Promise<CliRun> {
  return runCliProcess(args, environment(env), input);
}

/** `sandglass --json <args>`: stdout parsed as the one JSON document it must be. */
export async function sandglassJson(
  args: readonly string[],
  env: Record<string, string> = {},
  input = '',
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ code: number; body: any; stderr: string }> {
  const run = await sandglass(['--json', ...args], env, input);
  try {
    return { code: run.code, body: JSON.parse(run.stdout), stderr: run.stderr };
  } catch {
    throw new Error(`Expected one JSON document on stdout, got: ${run.stdout} (stderr: ${run.stderr})`);
  }
}

/** A running `sandglass serve`. */
export interface Serve {
  readonly child: ChildProcess;
  /** Base URL once it listens. */
  readonly url: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, and its exit code. */
  stop(): Promise<number | null>;
}

/** Starts `sandglass <args> serve --port 0` and waits until it listens (or fails with its output). */
export async function startServe(args: readonly string[], env: Record<string, string> = {}): Promise<Serve> {
  const child = spawn(process.execPath, [...cliArgs, ...args, 'serve', '--port', '0', '--log-level', 'info'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: environment(env),
  });
  let output = '';
  child.stdout?.on('data', chunk => (output += String(chunk)));
  child.stderr?.on('data', chunk => (output += String(chunk)));
  const exited = new Promise<number | null>(resolve => child.on('close', code => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    await waitFor(() => gone || /listening on http:\/\/127\.0\.0\.1:\d+/.test(output), 60_000, 'serve to listen');
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}: ${output}`);
  }
  if (gone) throw new Error(`serve exited early: ${output}`);
  const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1] as string;
  return {
    child,
    url,
    output: () => output,
    async stop() {
      if (!gone) child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`serve still running 30 s after SIGTERM: ${output}`)), 30_000)),
      );
      try {
        return await Promise.race([exited, late]);
      } catch (error) {
        child.kill('SIGKILL');
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** A JSON request to the service; the answer's status and parsed body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function request(url: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    ...(init.body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON (metrics, the dashboard page): the text
  }
  return { status: response.status, body };
}
