import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandglassError } from '../core/errors.js';

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
  /**
   * Tie the server's life to this process: it runs in its own process group (a Ctrl-C in the
   * terminal reaches only this process, which then stops it in order), and a tiny `sh` watcher
   * holding a pipe from this process sends it SIGTERM (a clean shutdown, AOF flushed) when this
   * process dies, even by SIGKILL. POSIX only; ignored on Windows.
   * @default false
   */
  stopWithOwner?: boolean;
}

/** How a server process ended: its exit code, or the signal that killed it. */
export interface LocalRedisExit {
  code: number | null;
  signal: NodeJS.Signals | null;
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
  /** Resolves when the current server process exits, for whatever reason. */
  exited(): Promise<LocalRedisExit>;
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
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    options.appendOnly === false ? 'no' : 'yes',
    '--appendfsync',
    options.fsync ?? 'always',
    '--enable-debug-command',
    'local',
    '--loglevel',
    'warning',
    '--logfile',
    '',
    ...(options.args ?? []),
  ];
  const command = options.command ?? 'redis-server';
  const tied = options.stopWithOwner === true && process.platform !== 'win32';
  let server = await launch(command, args, port, tied);

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    get pid() {
      return server.child.pid as number;
    },
    async stop() {
      server.watcher?.kill('SIGKILL');
      server.child.kill('SIGTERM');
      await server.exit;
    },
    async kill(signal) {
      const fatal = signal !== 'SIGSTOP' && signal !== 'SIGCONT';
      server.child.kill(signal);
      if (fatal) await server.exit;
    },
    async restart() {
      server = await launch(command, args, port, tied);
    },
    exited() {
      return server.exit;
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

interface Launched {
  child: ChildProcess;
  /** Settles when the process exits; never rejects. */
  exit: Promise<LocalRedisExit>;
  /** The `sh` that stops the server when this process dies (with stopWithOwner). */
  watcher: ChildProcess | undefined;
}

async function launch(command: string, args: string[], port: number, tied: boolean): Promise<Launched> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: tied });
  const exit = new Promise<LocalRedisExit>(resolve => child.once('exit', (code, signal) => resolve({ code, signal })));
  let stderr = '';
  child.stderr?.on('data', chunk => (stderr += String(chunk)));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', error => reject(spawnError(command, error)));
    child.once('exit', code => reject(new Error(`${command} exited with code ${code} before accepting connections: ${stderr.trim()}`)));
  });
  failed.catch(() => undefined);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (await ping(port)) {
      const watcher = tied && child.pid !== undefined ? watchOwner(child.pid) : undefined;
      // The watcher has no work once the server is gone (and must not signal a reused pid).
      void exit.then(() => watcher?.kill('SIGKILL'));
      return { child, exit, watcher };
    }
    await Promise.race([failed, new Promise(resolve => setTimeout(resolve, 20))]);
  }
  child.kill('SIGKILL');
  throw new Error(`${command} did not answer PING on port ${port} within 20 s`);
}

/**
 * Starts `sh`, detached, reading a pipe whose only writer is this process: the read returns when
 * this process exits by any means (the kernel closes the pipe), and the server gets SIGTERM.
 */
function watchOwner(serverPid: number): ChildProcess {
  const watcher = spawn('sh', ['-c', 'read _; kill -TERM "$1" 2>/dev/null', 'sandglass-redis-watch', String(serverPid)], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  watcher.on('error', () => undefined); // no sh: the next owner stops the orphan instead
  watcher.stdin?.on('error', () => undefined);
  // Neither the watcher nor its pipe keeps this process alive.
  watcher.unref();
  (watcher.stdin as Socket | null)?.unref();
  return watcher;
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
