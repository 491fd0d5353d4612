/**
 * Ownership of the data folder of `sandglass serve`'s private redis-server: one owner at a time.
 *
 * Two redis-servers on one folder write the same AOF files and lose jobs, so the folder carries an
 * owner record, `serve.lock` (JSON), created exclusively (`open(O_CREAT|O_EXCL)`): the first
 * `serve` gets it, a second one finds it and refuses. A record whose owner is gone (killed with -9,
 * a power cut) must not keep the folder locked forever, so a record is honoured only while its
 * owner lives: its pid exists AND that process started at the recorded time (Linux: field 22 of
 * /proc/<pid>/stat, elsewhere `ps -o lstart=`), so a pid reused by another process does not count.
 * A record written on another host (a shared network folder) cannot be checked and is honoured.
 * Node has no portable OS file lock without a native addon; this record is the lock, checked for
 * liveness, and taking over a dead owner's record is serialised by a short-lived `mkdir` mutex.
 *
 * The owner also writes its redis-server's pid and port into the record: the CLI finds a running
 * service's Redis there, and the next owner finds a redis-server its crashed predecessor left behind.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConflictError } from '../core/errors.js';

/** The data folder of `serve`'s private redis-server when none is given (relative to the working directory). */
export const DEFAULT_DATA_DIR = './.sandglass-data';

/** The owner record's file name in the data folder. */
export const LOCK_FILE = 'serve.lock';

/** The pid file the managed redis-server writes itself (`--pidfile`) and removes on a clean exit. */
export const REDIS_PID_FILE = 'redis-server.pid';

/** What `serve.lock` holds. */
export interface OwnerRecord {
  /** The owning `sandglass serve` process. */
  pid: number;
  /** When the OS says that process started (tells a reused pid from the owner); null if unknown. */
  startTime: string | null;
  host: string;
  /** ISO time the folder was claimed. */
  claimedAt: string;
  /** The managed redis-server, once it runs. */
  redis?: { pid: number; port: number; url: string };
}

/** A claimed data folder. */
export interface DataFolderClaim {
  readonly dir: string;
  /** Rewrites the record with the current redis-server (atomically: write a copy, rename it over). */
  setRedis(redis: OwnerRecord['redis']): void;
  /** Removes the record, if it is still this process's. */
  release(): void;
}

/** Takeover mutexes older than this are left over from a crash during a takeover (which takes ms). */
const STALE_MUTEX_MS = 10_000;

/**
 * Claims `dir` for this process, or throws {@link ConflictError} naming the live owner. A record of
 * a dead owner is taken over.
 */
export function claimDataFolder(dir: string): DataFolderClaim {
  const path = join(dir, LOCK_FILE);
  const mine: OwnerRecord = {
    pid: process.pid,
    startTime: processStartTime(process.pid),
    host: hostname(),
    claimedAt: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(mine), { flag: 'wx' });
      return claim(dir, path, mine);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const text = readText(path);
    if (text === undefined) continue; // removed meanwhile: try again
    const owner = parseRecord(text);
    if (owner === undefined && Date.now() - mtimeMs(path) < 2_000) {
      sleepSync(20); // being written by a starter right now
      continue;
    }
    if (owner !== undefined && isOwnerAlive(owner)) {
      throw new ConflictError(
        `The data folder ${dir} is in use by another sandglass serve (pid ${owner.pid}${owner.host === hostname() ? '' : ` on ${owner.host}`}, since ${owner.claimedAt}). ` +
          'Stop it first, or give this one another --data-dir (or REDIS_URL)',
      );
    }
    takeOver(path, text);
  }
  throw new ConflictError(`Could not claim the data folder ${dir}: its lock file ${path} keeps changing`);
}

/** The record of the live owner of `dir`, or undefined when no live process owns it. */
export function readDataFolderOwner(dir: string): OwnerRecord | undefined {
  const text = readText(join(dir, LOCK_FILE));
  const owner = text === undefined ? undefined : parseRecord(text);
  return owner !== undefined && isOwnerAlive(owner) ? owner : undefined;
}

/** True while `pid` names a running process (a process of another user counts; a zombie does not). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A dead process nobody reaped yet (no init reaping in some containers) still answers signal 0.
  return process.platform !== 'linux' || procStat(pid)?.[0] !== 'Z';
}

/** When the OS says `pid` started, as an opaque string to compare; null when it cannot tell. */
export function processStartTime(pid: number): string | null {
  if (process.platform === 'linux') return procStat(pid)?.[19] ?? null; // field 22: start time in clock ticks after boot
  if (process.platform === 'win32') return null;
  try {
    return (
      execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || null
    );
  } catch {
    return null;
  }
}

/** Fields 3 and on of /proc/<pid>/stat (state first), or undefined when there is no such process. */
function procStat(pid: number): string[] | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
}

function isOwnerAlive(owner: OwnerRecord): boolean {
  if (owner.host !== hostname()) return true;
  if (!isAlive(owner.pid)) return false;
  const startTime = processStartTime(owner.pid);
  return owner.startTime === null || startTime === null || startTime === owner.startTime;
}

function claim(dir: string, path: string, mine: OwnerRecord): DataFolderClaim {
  let current = mine;
  const stillMine = () => {
    const record = parseRecord(readText(path) ?? '');
    return record?.pid === mine.pid && record.claimedAt === mine.claimedAt;
  };
  return {
    dir,
    setRedis(redis) {
      current = { ...current, redis };
      const copy = `${path}.${process.pid}.tmp`;
      writeFileSync(copy, JSON.stringify(current));
      renameSync(copy, path);
    },
    release() {
      if (stillMine()) rmSync(path, { force: true });
    },
  };
}

/** Removes a dead owner's record, unless another starter replaced it meanwhile. */
function takeOver(path: string, deadText: string): void {
  const mutex = `${path}.takeover`;
  try {
    mkdirSync(mutex);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    if (Date.now() - mtimeMs(mutex) > STALE_MUTEX_MS) rmSync(mutex, { recursive: true, force: true });
    else sleepSync(20);
    return;
  }
  try {
    if (readText(path) === deadText) unlinkSync(path);
  } finally {
    rmSync(mutex, { recursive: true, force: true });
  }
}

/**
 * The pid of a redis-server still running on `dir` (its own pid file says so, and the process is a
 * redis-server working in that folder), or undefined. A crashed owner can leave one behind.
 */
export function findRedisOnFolder(dir: string): number | undefined {
  const pid = Number(readText(join(dir, REDIS_PID_FILE))?.trim());
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  if (process.platform === 'linux') {
    // redis-server changes its working directory to --dir: that tells it from a process that reused the pid.
    try {
      return realpathSync(`/proc/${pid}/cwd`) === realpathSync(dir) ? pid : undefined;
    } catch {
      return undefined;
    }
  }
  try {
    const command = execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return command.includes('redis-server') ? pid : undefined;
  } catch {
    return undefined;
  }
}

function parseRecord(text: string): OwnerRecord | undefined {
  try {
    const record = JSON.parse(text) as OwnerRecord;
    return Number.isInteger(record?.pid) && typeof record.claimedAt === 'string' ? record : undefined;
  } catch {
    return undefined;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function mtimeMs(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** A short blocking pause: claiming runs once at start, before anything else is served. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
