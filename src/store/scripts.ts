import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { ConnectionError, RedisCommandError, RedisOutOfMemoryError } from '../errors.js';
import { PARTITION_KEY_NAMES, type PartitionKeys } from './keys.js';

/** The atomic operations, one Lua file each in ./lua. */
export const SCRIPT_NAMES = [
  'add',
  'claim',
  'ack',
  'fail',
  'extend',
  'release',
  'cancel',
  'reschedule',
  'getJob',
  'stats',
  'listJobs',
  'dueHistogram',
  'retryDead',
  'purgeDead',
  'setPaused',
  'initQueue',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

interface LoadedScript {
  readonly source: string;
  readonly sha: string;
}

function loadScripts(): Record<ScriptName, LoadedScript> {
  const dir = new URL('./lua/', import.meta.url);
  const prelude = readFileSync(new URL('lib.lua', dir), 'utf8');
  const scripts = {} as Record<ScriptName, LoadedScript>;
  for (const name of SCRIPT_NAMES) {
    // The prelude binds KEYS and ARGV[1] to names and holds the shared helpers; Redis has no
    // include mechanism, so each script is sent with it. The script's shebang must stay the
    // first line: its flags decide whether Redis runs it when `maxmemory` is reached (scripts
    // that free memory or only move jobs are `allow-oom`, so workers keep draining a full Redis;
    // `add` is refused before it writes anything).
    const body = readFileSync(new URL(`${name}.lua`, dir), 'utf8');
    const shebang = /^#!lua[^\n]*\n/.exec(body)?.[0];
    if (!shebang) throw new Error(`Script ${name}.lua must start with a '#!lua' line`);
    const source = `${shebang}${prelude}\n${body.slice(shebang.length)}`;
    scripts[name] = { source, sha: createHash('sha1').update(source).digest('hex') };
  }
  return scripts;
}

const SCRIPTS = loadScripts();

/** Source of one script as sent to Redis (for tests and tools). */
export function scriptSource(name: ScriptName): string {
  return SCRIPTS[name].source;
}

/**
 * Runs a script on one partition: EVALSHA, and EVAL when Redis answers NOSCRIPT (after a restart,
 * a failover or `SCRIPT FLUSH`), which also puts the script back into Redis's cache.
 * Errors come back as sandglass errors.
 */
export async function runScript(
  redis: Redis | Cluster,
  name: ScriptName,
  keys: PartitionKeys,
  args: ReadonlyArray<string | number>,
  extraKeys: readonly string[] = [],
): Promise<unknown> {
  const script = SCRIPTS[name];
  const keyList = [...PARTITION_KEY_NAMES.map(key => keys[key]), ...extraKeys];
  const argv = [keys.wakeChannel, ...args];
  const once = async () => {
    try {
      return await redis.evalsha(script.sha, keyList.length, ...keyList, ...argv);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await redis.eval(script.source, keyList.length, ...keyList, ...argv);
    }
  };
  try {
    return await retryWhileMigrating(once);
  } catch (error) {
    throw toSandglassError(error, name);
  }
}

/** How long a call waits out a slot migration (TRYAGAIN) before giving up. */
const MIGRATION_PATIENCE_MS = 5_000;

/**
 * While a Cluster slot moves, a script naming keys of which some are missing gets TRYAGAIN for as
 * long as the move lasts (every sandglass script names all of a partition's keys). Nothing ran, so
 * the call is retried with backoff for a few seconds; adds are idempotent by id and settles are
 * fenced, so a retry can never double an effect.
 */
async function retryWhileMigrating<R>(call: () => Promise<R>): Promise<R> {
  const giveUpAt = Date.now() + MIGRATION_PATIENCE_MS;
  for (let delayMs = 20; ; delayMs = Math.min(500, delayMs * 2)) {
    try {
      return await call();
    } catch (error) {
      if (!isMigrating(error) || Date.now() + delayMs > giveUpAt) throw error;
      await new Promise(resolve => setTimeout(resolve, delayMs));
    }
  }
}

/** TRYAGAIN, or ioredis giving up after redirections (ASK, MOVED, TRYAGAIN): none of them ran the script. */
function isMigrating(error: unknown): boolean {
  return error instanceof Error && (error.message.startsWith('TRYAGAIN') || error.message.startsWith('Too many Cluster redirections'));
}

/**
 * Runs a script, then `WAIT replicas timeoutMs` on the same connection (one pipeline, so a Cluster
 * client sends both to the node that owns the keys). Returns the script's reply and how many
 * replicas acknowledged the write.
 */
export async function runScriptAndWait(
  redis: Redis | Cluster,
  name: ScriptName,
  keys: PartitionKeys,
  args: ReadonlyArray<string | number>,
  replicas: number,
  timeoutMs: number,
): Promise<{ reply: unknown; acknowledged: number }> {
  const script = SCRIPTS[name];
  const keyList = PARTITION_KEY_NAMES.map(key => keys[key]);
  const argv = [keys.wakeChannel, ...args];
  const send = async (useSource: boolean) => {
    const pipeline = redis.pipeline();
    if (useSource) pipeline.eval(script.source, keyList.length, ...keyList, ...argv);
    else pipeline.evalsha(script.sha, keyList.length, ...keyList, ...argv);
    pipeline.call('WAIT', replicas, timeoutMs);
    const results = (await pipeline.exec()) ?? [];
    const [scriptError, reply] = results[0] ?? [new Error('empty pipeline reply'), undefined];
    const [waitError, acknowledged] = results[1] ?? [new Error('empty pipeline reply'), undefined];
    if (scriptError) throw scriptError;
    if (waitError) throw waitError;
    return { reply, acknowledged: Number(acknowledged) };
  };
  try {
    try {
      return await send(false);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await send(true);
    }
  } catch (error) {
    throw toSandglassError(error, name);
  }
}

/** Maps what ioredis throws to the typed errors of `errors.ts`. */
export function toSandglassError(error: unknown, operation: string): Error {
  if (!(error instanceof Error)) return new RedisCommandError(`${operation}: ${String(error)}`, { cause: error });
  const message = error.message;
  if (message.startsWith('OOM')) {
    return new RedisOutOfMemoryError(`${operation}: Redis is out of memory (maxmemory reached); nothing was written`, { cause: error });
  }
  if (
    message.startsWith('BUSY') ||
    message.startsWith('LOADING') ||
    message.startsWith('MASTERDOWN') ||
    message.startsWith('TRYAGAIN') ||
    message.startsWith('CLUSTERDOWN') ||
    message.startsWith('Too many Cluster redirections')
  ) {
    return new ConnectionError(`${operation}: Redis is not serving commands right now (${message.split('\n')[0]})`, { cause: error });
  }
  if (error.name === 'ReplyError') return new RedisCommandError(`${operation}: ${message}`, { cause: error });
  return new ConnectionError(`${operation}: Redis is unreachable (${message})`, { cause: error });
}
