// What every command shares: the global options, the exit codes, the output (human text or one JSON
// document), and opening queues with a bounded first contact with Redis.
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_DATA_DIR, readDataFolderOwner } from '../data-folder.js';
import { ConflictError, ConnectionError, NotFoundError, PayloadTooLargeError, Queue, SandglassError, ValidationError, listQueues, type Logger } from '../index.js';
import { redactUrl } from '../redact-url.js';
import { printable } from './format.js';

/** Exit codes a script can rely on. Listed in `sandglass --help` and docs/cli.md. */
export const EXIT = { ok: 0, failure: 1, usage: 2, notFound: 3, conflict: 4, partial: 5 } as const;

/**
 * Used when neither `--redis` nor REDIS_URL is given and no `sandglass serve` runs on the data folder
 * (`serve` itself then runs its own Redis).
 */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** The Redis a command talks to, and why that one. */
export interface RedisTarget {
  url: string;
  /** Where the URL came from, for the note printed in human output. */
  from: string;
}

export interface GlobalOptions {
  redis?: string;
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

/** The state of one invocation, handed to every command group. */
export class Cli {
  #target: RedisTarget | undefined;
  #announced = false;

  constructor(readonly program: Command) {}

  get options(): GlobalOptions {
    return this.program.opts<GlobalOptions>();
  }

  /** `--json` was given (also when parsing failed before the option was read). */
  get json(): boolean {
    return this.options.json === true || process.argv.includes('--json');
  }

  get redisUrl(): string {
    return this.redisTarget.url;
  }

  /**
   * Which Redis: `--redis`, else REDIS_URL, else the private Redis of a `sandglass serve` that runs
   * on the data folder (its owner record names it, see data-folder.ts), else {@link DEFAULT_REDIS_URL}.
   */
  get redisTarget(): RedisTarget {
    this.#target ??= this.#findRedis();
    return this.#target;
  }

  #findRedis(): RedisTarget {
    const { redis } = this.options;
    if (redis !== undefined && redis !== '') return { url: redis, from: this.program.getOptionValueSource('redis') === 'env' ? 'REDIS_URL' : '--redis' };
    const dir = resolve(this.options.dataDir || DEFAULT_DATA_DIR);
    const owner = readDataFolderOwner(dir);
    if (owner?.redis) return { url: owner.redis.url, from: `private redis-server of sandglass serve pid ${owner.pid}, data in ${dir}` };
    return { url: DEFAULT_REDIS_URL, from: `default: no --redis, REDIS_URL or sandglass serve running on ${dir}` };
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

  /** A queue on the global --redis and --prefix. Queues of one process share one connection. */
  openQueue(name: string): Queue {
    return new Queue(name, { connection: this.redisUrl, prefix: this.options.prefix, logger: this.logger });
  }

  /** Opens the queue, checks that Redis answers, runs `work`, closes the queue. */
  async withQueue<R>(name: string, work: (queue: Queue) => Promise<R>): Promise<R> {
    const queue = this.openQueue(name);
    try {
      // The probe shares the queue's connection (same URL), so the queue's first call finds it open.
      await this.queueNames();
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
    const url = redactUrl(this.redisUrl);
    if (!this.json && !this.#announced) this.note(`sandglass: Redis ${url} (${this.redisTarget.from})`);
    this.#announced = true;
    const timeoutMs = this.options.connectTimeout;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ConnectionError(`Cannot reach Redis at ${url}: no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      return await Promise.race([listQueues({ connection: this.redisUrl, prefix: this.options.prefix, logger: this.logger }), deadline]);
    } catch (error) {
      if (error instanceof ConnectionError && !error.message.startsWith('Cannot reach')) {
        const reason = error.message
          .replace(/^listQueues: /, '')
          .replace(/Reached the max retries per request limit \(which is (\d+)\)\..*\)$/, 'gave up after $1 connection attempts)');
        throw new ConnectionError(`Cannot reach Redis at ${url}: ${reason}`, { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Closes a queue, but never waits on an unreachable Redis for long: the process exits anyway. */
export async function closeWithin(item: { close(): Promise<unknown> }, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([item.close().catch(() => undefined), new Promise(resolve => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
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
