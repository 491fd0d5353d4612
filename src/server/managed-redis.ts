/**
 * The private redis-server of `sandglass serve` (no REDIS_URL): one per data folder, supervised.
 *
 * - Ownership: the data folder is claimed first (data-folder.ts); a second `serve` on it refuses.
 * - Orphans: a redis-server left running on the folder by an owner that died without stopping it is
 *   stopped cleanly (SIGTERM: Redis flushes its AOF and exits) before a new one starts, so two never
 *   run on one folder. It is stopped rather than adopted: an adopted server is not this process's
 *   child, so its death could only be polled for. Normally there is none: the server is tied to its
 *   owner (`stopWithOwner`) and stops when the owner dies, even by SIGKILL.
 * - Supervision: when the server dies, the death is logged (exit code or signal), the service is
 *   "down" (readiness 503, Redis routes answer 503 at once), and the server is started again on the
 *   same folder (AOF) and port after a backoff. After {@link MAX_CRASHES} deaths within
 *   {@link CRASH_WINDOW_MS} it gives up: {@link ManagedRedis.failed} settles and the service exits
 *   non-zero, so a process manager or a person sees it, instead of a service that answers 503 forever.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger as PinoLogger } from 'pino';
import { claimDataFolder, findRedisOnFolder, isAlive, REDIS_PID_FILE, type DataFolderClaim } from '../deploy/data-folder.js';
import { ConnectionError, SandglassError } from '../index.js';
import { RedisServerNotFoundError, startLocalRedis, type LocalRedis, type LocalRedisExit } from '../deploy/local-redis.js';

/** Deaths within {@link CRASH_WINDOW_MS} after which the service gives up. */
export const MAX_CRASHES = 5;
export const CRASH_WINDOW_MS = 60_000;
/** Longest wait before a restart. */
const MAX_RESTART_DELAY_MS = 5_000;
/** How long an orphaned redis-server may take to exit on SIGTERM before it is killed. */
const ORPHAN_STOP_MS = 10_000;

/** Options of {@link ManagedRedis.start}. */
export interface ManagedRedisOptions {
  dataDir: string;
  log: PinoLogger;
  /** @default 'redis-server' */
  command?: string;
  /** Wait before the first restart after a death; doubled for each further death in the window, at most 5 s. @default 500 */
  restartDelayMs?: number;
}

export class ManagedRedis {
  readonly #redis: LocalRedis;
  readonly #claim: DataFolderClaim;
  readonly #log: PinoLogger;
  readonly #restartDelayMs: number;
  #down: string | undefined;
  #stopping = false;
  #wake: (() => void) | undefined;
  /** A restart in progress: stop() waits for it, so that no server starts after the service stopped. */
  #restarting: Promise<void> | undefined;
  #fail!: (error: Error) => void;
  /** Settles (never rejects) when supervision gave up: the server keeps dying. */
  readonly failed = new Promise<Error>(resolve => (this.#fail = resolve));

  private constructor(redis: LocalRedis, claim: DataFolderClaim, log: PinoLogger, restartDelayMs: number) {
    this.#redis = redis;
    this.#claim = claim;
    this.#log = log;
    this.#restartDelayMs = restartDelayMs;
    void this.#supervise();
  }

  /** Claims the folder, stops an orphan, starts the server; throws ConflictError when the folder is in use. */
  static async start(options: ManagedRedisOptions): Promise<ManagedRedis> {
    const { dataDir, log } = options;
    mkdirSync(dataDir, { recursive: true });
    const claim = claimDataFolder(dataDir);
    try {
      await stopOrphan(dataDir, log);
      const redis = await startLocalRedis({
        dir: dataDir,
        appendOnly: true,
        stopWithOwner: true,
        command: options.command,
        args: ['--pidfile', join(dataDir, REDIS_PID_FILE)],
      });
      claim.setRedis({ pid: redis.pid, port: redis.port, url: redis.url });
      return new ManagedRedis(redis, claim, log, options.restartDelayMs ?? 500);
    } catch (error) {
      claim.release();
      // The library's hint names its `command` option, which `serve` has not: give serve's own ways out.
      if (error instanceof RedisServerNotFoundError)
        throw new SandglassError(error.code, redisServerMissing(error.command), { cause: error });
      throw error;
    }
  }

  get url(): string {
    return this.#redis.url;
  }

  get pid(): number {
    return this.#redis.pid;
  }

  get dir(): string {
    return this.#redis.dir;
  }

  /** Why the server is known to be down right now (it died and is being restarted), else undefined. */
  downReason(): string | undefined {
    return this.#down;
  }

  /** Stops the server (SIGTERM, AOF flushed) and releases the data folder. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#restarting?.catch(() => undefined);
    await this.#redis.stop();
    this.#claim.release();
  }

  async #supervise(): Promise<void> {
    const deaths: number[] = [];
    let exit = await this.#redis.exited();
    let pid = this.#redis.pid;
    for (;;) {
      if (this.#stopping) return;
      const now = Date.now();
      deaths.push(now);
      while ((deaths[0] as number) < now - CRASH_WINDOW_MS) deaths.shift();
      const how = describeExit(exit);
      this.#down = `the private redis-server (pid ${pid}) ${how}; restarting it`;
      if (deaths.length >= MAX_CRASHES) {
        const message = `The private redis-server died ${deaths.length} times within ${CRASH_WINDOW_MS / 1000} s (last: pid ${pid} ${how}); giving up. Its log is not kept: run redis-server --dir ${this.dir} --appendonly yes by hand to see why`;
        this.#down = message;
        this.#log.fatal({ redisPid: pid, code: exit.code, signal: exit.signal, dataDir: this.dir }, message);
        this.#fail(new ConnectionError(message));
        return;
      }
      const delayMs = Math.min(this.#restartDelayMs * 2 ** (deaths.length - 1), MAX_RESTART_DELAY_MS);
      this.#log.error(
        { redisPid: pid, code: exit.code, signal: exit.signal, dataDir: this.dir, restartInMs: delayMs },
        `The private redis-server (pid ${pid}) ${how}: restarting it on the same data folder and port in ${delayMs} ms`,
      );
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, delayMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (this.#stopping) return;
      try {
        this.#restarting = this.#redis.restart();
        await this.#restarting;
        if (this.#stopping) return; // stop() stops the new server
        pid = this.#redis.pid;
        this.#claim.setRedis({ pid, port: this.#redis.port, url: this.#redis.url });
        this.#down = undefined;
        this.#log.info(
          { redisPid: pid, redis: this.url, dataDir: this.dir },
          `The private redis-server is running again (pid ${pid}), with its data from the AOF`,
        );
        exit = await this.#redis.exited();
      } catch (error) {
        // Counted as another death; the same exit is reported with the reason the start failed.
        this.#log.error({ dataDir: this.dir, error: (error as Error).message }, 'Could not restart the private redis-server');
        exit = { code: null, signal: null };
      }
    }
  }
}

/** What `serve` says when it cannot run redis-server: install it, or give it a Redis to use. */
export function redisServerMissing(command: string): string {
  return (
    `Could not run ${command}: not found or not executable. Without --redis (or REDIS_URL, --cluster, --sentinels) ` +
    'sandglass serve starts a private redis-server: install Redis >= 7.0 (on Debian: apt-get install -y redis-server), ' +
    'or pass the Redis to use with --redis <url>'
  );
}

function describeExit(exit: LocalRedisExit): string {
  if (exit.signal) return `was killed by ${exit.signal}`;
  if (exit.code !== null) return `exited with code ${exit.code}`;
  return 'could not be started';
}

/** Stops a redis-server a dead owner left running on the folder, and waits until it is gone. */
async function stopOrphan(dataDir: string, log: PinoLogger): Promise<void> {
  const pid = findRedisOnFolder(dataDir);
  if (pid === undefined) return;
  log.warn(
    { redisPid: pid, dataDir },
    `A redis-server (pid ${pid}) still runs on ${dataDir}, left by a sandglass serve that did not stop it: stopping it (SIGTERM, AOF flushed) before starting a new one`,
  );
  process.kill(pid, 'SIGTERM');
  if (await exitedWithin(pid, ORPHAN_STOP_MS)) return;
  // Frozen (SIGSTOP) or stuck: with appendfsync always, SIGKILL loses nothing that was acknowledged.
  log.warn({ redisPid: pid }, `redis-server (pid ${pid}) did not exit within ${ORPHAN_STOP_MS / 1000} s of SIGTERM: killing it`);
  process.kill(pid, 'SIGKILL');
  if (!(await exitedWithin(pid, ORPHAN_STOP_MS)))
    throw new ConnectionError(`Could not stop the redis-server (pid ${pid}) left running on ${dataDir}: stop it, then start again`);
}

async function exitedWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await new Promise(resolve => setTimeout(resolve, 20));
  }
  return !isAlive(pid);
}
