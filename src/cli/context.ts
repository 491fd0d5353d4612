// What every command shares: the global options, the exit codes, the output (human text or one JSON
// document), and opening queues with a bounded first contact with Redis.
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { closeWithin } from '../deploy/close-within.js';
import { DEFAULT_DATA_DIR, readDataFolderOwner } from '../deploy/data-folder.js';
import {
  ConflictError,
  ConnectionError,
  NotFoundError,
  PayloadTooLargeError,
  Queue,
  SandglassError,
  ValidationError,
  listQueues,
  type Logger,
} from '../index.js';
import {
  REDIS_SETTINGS,
  resolveRedisSettings,
  type OpenedRedis,
  type RedisSettingName,
  type RedisSettings,
  type RedisTarget,
} from '../deploy/redis-target.js';
import { cannotReachRedis, givenUpReason } from '../deploy/unreachable.js';
import { printable } from './format.js';

/** Exit codes a script can rely on. Listed in `sandglass --help` and docs/cli.md. */
export const EXIT = { ok: 0, failure: 1, usage: 2, notFound: 3, conflict: 4, partial: 5 } as const;

/**
 * Used when no Redis setting is given and no `sandglass serve` runs on the data folder
 * (`serve` itself then runs its own Redis).
 */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface GlobalOptions {
  dataDir?: string;
  prefix: string;
  json?: boolean;
  connectTimeout: number;
}

/** Ends a command with an exit code other than 0 after it printed what it had to say. */
export class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** Warnings of the library (e.g. an eviction policy that can lose jobs) go to stderr, once, plainly. */
const stderrLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: message => process.stderr.write(`sandglass: warning: ${message.replace(/^sandglass: /, '')}\n`),
  error: message => process.stderr.write(`sandglass: ${message.replace(/^sandglass: /, '')}\n`),
};

/** A Redis setting that is wrong or contradicts another: a usage error (exit 2, ERR_USAGE). */
export class RedisSettingsError extends Error {}

/** The state of one invocation, handed to every command group. */
export class Cli {
  #settings: RedisSettings | undefined;
  #target: RedisTarget | undefined;
  #redis: OpenedRedis | undefined;
  #announced = false;

  constructor(readonly program: Command) {}

  get options(): GlobalOptions {
    return this.program.opts<GlobalOptions>();
  }

  /** `--json` was given (also when parsing failed before the option was read). */
  get json(): boolean {
    return this.options.json === true || process.argv.includes('--json');
  }

  /**
   * Which Redis: the Redis settings (`--redis`, `--cluster`, `--sentinels` or their variables, see
   * redis-target.ts), else the private Redis of a `sandglass serve` that runs on the data folder
   * (its owner record names it, see data-folder.ts), else {@link DEFAULT_REDIS_URL}.
   * @throws {RedisSettingsError} a setting is malformed or contradicts another.
   */
  get redisTarget(): RedisTarget {
    this.#target ??= this.#settle().target as RedisTarget;
    return this.#target;
  }

  /** `--partitions` / SANDGLASS_PARTITIONS: the partition count of queues this invocation creates. */
  get partitions(): number | undefined {
    return this.#settle().partitions;
  }

  #settle(): RedisSettings {
    if (this.#settings) return this.#settings;
    // Flags given on the command line; the module reads the variables itself (and knows which wins).
    const flags: Partial<Record<RedisSettingName, string>> = {};
    // A setting's name is commander's key of its flag (--sentinel-name: sentinelName).
    for (const { name } of REDIS_SETTINGS) {
      if (this.program.getOptionValueSource(name) === 'cli') flags[name] = this.program.getOptionValue(name) as string;
    }
    try {
      this.#settings = resolveRedisSettings(flags, process.env, this.#fallback());
    } catch (error) {
      if (error instanceof ValidationError) throw new RedisSettingsError(error.message);
      throw error;
    }
    return this.#settings;
  }

  #fallback(): { url: string; from: string; private?: boolean } {
    const dir = resolve(this.options.dataDir || DEFAULT_DATA_DIR);
    const owner = readDataFolderOwner(dir);
    if (owner?.redis)
      return { url: owner.redis.url, from: `private redis-server of sandglass serve pid ${owner.pid}, data in ${dir}`, private: true };
    return {
      url: DEFAULT_REDIS_URL,
      from: `default: no --redis, --cluster, --sentinels, their variables or sandglass serve running on ${dir}`,
    };
  }

  /** The one client of this invocation, opened on first use; every queue shares it. Closed by {@link close}. */
  get redis(): OpenedRedis {
    this.#redis ??= this.redisTarget.open();
    return this.#redis;
  }

  /** Closes the invocation's client, if one was opened; never waits long on an unreachable Redis. */
  async close(): Promise<void> {
    const redis = this.#redis;
    this.#redis = undefined;
    if (redis) await closeWithin(redis, 1_000);
  }

  get logger(): Logger {
    return stderrLogger;
  }

  /**
   * Prints a command's result: `value` as one JSON document with --json, else `human` (if any).
   * Human text may carry job data: it is stripped of terminal control characters.
   */
  result(value: unknown, human: string | string[] | undefined): void {
    if (this.json) process.stdout.write(`${JSON.stringify(value)}\n`);
    else if (human !== undefined) process.stdout.write(`${printable(Array.isArray(human) ? human.join('\n') : human)}\n`);
  }

  /** Progress and notes for a person: stderr, so stdout stays the result. */
  note(message: string): void {
    process.stderr.write(`${printable(message)}\n`);
  }

  /**
   * A queue on the invocation's client and --prefix. `create`: the queue may not exist yet, so it
   * gets --partitions (a queue that exists keeps its own count; asking it for another would be a conflict).
   */
  openQueue(name: string, create = false): Queue {
    const partitions = create ? this.partitions : undefined;
    return new Queue(name, {
      connection: this.redis.client,
      prefix: this.options.prefix,
      logger: this.logger,
      ...(partitions === undefined ? {} : { partitions }),
    });
  }

  /** Checks that Redis answers, opens the queue, runs `work`, closes the queue (not the client). */
  async withQueue<R>(name: string, work: (queue: Queue) => Promise<R>): Promise<R> {
    const names = await this.queueNames();
    const exists = names.includes(name);
    if (exists && !this.json && this.program.getOptionValueSource('partitions') === 'cli') {
      this.note(`sandglass: queue ${name} exists: it keeps its partition count (--partitions applies to new queues)`);
    }
    const queue = this.openQueue(name, !exists);
    try {
      return await work(queue);
    } finally {
      await closeWithin(queue, 1_000);
    }
  }

  /**
   * The queue names under the prefix, and the first contact with Redis: bounded by --connect-timeout,
   * because a Redis behind a firewall that drops packets would otherwise hang the call for minutes.
   */
  async queueNames(): Promise<string[]> {
    const target = this.redisTarget;
    const shown = target.description;
    if (!this.json && !this.#announced) this.note(`sandglass: Redis ${shown} (${target.from})`);
    this.#announced = true;
    const redis = this.redis;
    const timeoutMs = this.options.connectTimeout;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new ConnectionError(unreachable(shown, `no answer within ${timeoutMs / 1000} s`, redis.lastError())));
      }, timeoutMs);
    });
    try {
      return await Promise.race([listQueues({ connection: redis.client, prefix: this.options.prefix, logger: this.logger }), deadline]);
    } catch (error) {
      if (isMoved(error)) {
        throw new RedisSettingsError(
          `Redis at ${shown} is a node of a Redis Cluster (it answered MOVED): give the nodes with --cluster host:port,host:port,... (or REDIS_CLUSTER_NODES) instead of --redis`,
        );
      }
      if (error instanceof Error && /\b(WRONGPASS|NOAUTH|NOPERM)\b/.test(error.message)) {
        const reason = error.message.replace(/^listQueues: /, '');
        throw new ConnectionError(
          `Redis at ${shown} refused the credentials: ${reason} (check the user and password in the URL, or REDIS_USERNAME / REDIS_PASSWORD)`,
          { cause: error },
        );
      }
      if (error instanceof ConnectionError && !error.message.startsWith('Cannot reach')) {
        // The library's message names the address as the client has it; the CLI names the target as the user gave it.
        const reason = givenUpReason(
          error.message
            .replace(/^listQueues: /, '')
            .replace(/^Cannot reach Redis at .*?: /, '')
            .replace(/ \(last error: .*\)$/, ''),
        );
        throw new ConnectionError(unreachable(shown, reason, redis.lastError()), { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The library's words for an unreachable Redis, with the fix when the last error is a certificate the client does not trust. */
function unreachable(shown: string, reason: string, last: string | undefined): string {
  const untrusted = last !== undefined && /self[- ]signed|unable to (get|verify)|certificate/i.test(last);
  return cannotReachRedis(
    shown,
    reason,
    last,
    untrusted ? 'give the CA of the server certificate with --tls-ca <file> or REDIS_TLS_CA' : undefined,
  );
}

/** A Redis error that says the key lives on another node of a cluster (the client is not a Cluster client). */
function isMoved(error: unknown): boolean {
  for (let current = error; current instanceof Error; current = (current as { cause?: unknown }).cause) {
    if (/(^|\s)MOVED \d+ /.test(current.message)) return true;
  }
  return false;
}

/** The exit code for an error thrown by a command. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof ExitCode) return error.code;
  if (error instanceof ValidationError || error instanceof PayloadTooLargeError) return EXIT.usage;
  if (error instanceof NotFoundError) return EXIT.notFound;
  if (error instanceof ConflictError) return EXIT.conflict;
  return EXIT.failure;
}

/** `{ code, message }` of an error, as printed in `{ "error": ... }`. */
export function describeError(error: unknown): { code: string; message: string } {
  if (error instanceof SandglassError) return { code: error.code, message: error.message };
  return { code: 'ERR_UNEXPECTED', message: error instanceof Error ? error.message : String(error) };
}
