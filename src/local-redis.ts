import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandglassError } from './errors.js';

/** Options of {@link startLocalRedis}. */
export interface LocalRedisOptions {
  /** TCP port. Default: a free one. */
  port?: number;
  /** Data folder (AOF files). Default: a new temporary folder. */
  dir?: string;
  /** Keep an append-only file, so data survives a crash or restart. @default true */
  appendOnly?: boolean;
  /**
   * `appendfsync` policy. With 'always' Redis writes and syncs every change before it replies, so
   * nothing acknowledged is lost when the process dies. With 'everysec' Redis may postpone the
   * write by up to 2 s while a slow background fsync runs, and still reply: a crash then loses
   * acknowledged writes (seen in this project's own restart test on a busy disk).
   * @default 'always'
   */
  fsync?: 'always' | 'everysec';
  /** More `redis-server` arguments, e.g. `['--maxmemory', '10mb']`. */
  args?: string[];
  /** @default 'redis-server' (from PATH) */
  command?: string;
}

/** A private `redis-server` process started by {@link startLocalRedis}. */
export interface LocalRedis {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** The process id of the current server process. */
  readonly pid: number;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Sends a signal (e.g. SIGKILL to simulate a crash) and waits for exit when it is fatal. */
  kill(signal: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port and folder (after stop or kill). */
  restart(): Promise<void>;
}

/**
 * Starts a private `redis-server` on loopback, for the demo, the tests, the benchmark and the
 * zero-config service. It listens on 127.0.0.1 only and keeps its data in `dir`.
 *
 * @throws {@link RedisServerNotFoundError} when `redis-server` (or `command`) cannot be run.
 */
export async function startLocalRedis(options: LocalRedisOptions = {}): Promise<LocalRedis> {
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'sandglass-redis-'));
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--save', '',
    '--appendonly', options.appendOnly === false ? 'no' : 'yes',
    '--appendfsync', options.fsync ?? 'always',
    '--enable-debug-command', 'local',
    '--loglevel', 'warning',
    '--logfile', '',
    ...(options.args ?? []),
  ];
  let child: ChildProcess = await launch(options.command ?? 'redis-server', args, port);

  const exited = (proc: ChildProcess) =>
    proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve() : new Promise<void>(resolve => proc.once('exit', () => resolve()));

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    get pid() {
      return child.pid as number;
    },
    async stop() {
      const done = exited(child);
      child.kill('SIGTERM');
      await done;
    },
    async kill(signal) {
      const fatal = signal !== 'SIGSTOP' && signal !== 'SIGCONT';
      const done = fatal ? exited(child) : Promise.resolve();
      child.kill(signal);
      await done;
    },
    async restart() {
      child = await launch(options.command ?? 'redis-server', args, port);
    },
  };
}

/**
 * `redis-server` (or the `command` given to {@link startLocalRedis}) could not be run: it is not
 * installed, not on the PATH, or not executable. Nothing was started.
 */
export class RedisServerNotFoundError extends SandglassError {
  /** The command that could not be run. */
  readonly command: string;

  constructor(command: string, options?: { cause?: unknown }) {
    const message =
      `Could not run ${command}: not found or not executable. Install Redis >= 7.0 ` +
      '(on Debian: apt-get install -y redis-server), or pass the path of redis-server as the `command` option.';
    super('ERR_REDIS_SERVER_NOT_FOUND', message, options);
    this.command = command;
  }
}

/** The spawn error of a command that cannot be run at all, as a typed error; others as they are. */
function spawnError(command: string, error: NodeJS.ErrnoException): Error {
  if (error.code === 'ENOENT' || error.code === 'EACCES') return new RedisServerNotFoundError(command, { cause: error });
  return new Error(`Could not start ${command}: ${error.message}`, { cause: error });
}

async function launch(command: string, args: string[], port: number): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', chunk => (stderr += String(chunk)));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', error => reject(spawnError(command, error)));
    child.once('exit', code => reject(new Error(`${command} exited with code ${code} before accepting connections: ${stderr.trim()}`)));
  });
  failed.catch(() => undefined);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (await ping(port)) return child;
    await Promise.race([failed, new Promise(resolve => setTimeout(resolve, 20))]);
  }
  child.kill('SIGKILL');
  throw new Error(`${command} did not answer PING on port ${port} within 20 s`);
}

/** True once the server answers PING (and has finished loading its data). */
function ping(port: number): Promise<boolean> {
  return new Promise(resolve => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(1_000);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', data => {
      socket.destroy();
      resolve(String(data).startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
