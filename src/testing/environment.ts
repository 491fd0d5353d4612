import {
  Queue,
  Worker,
  defaultLogger,
  type BatchProcessor,
  type Logger,
  type Processor,
  type QueueOptions,
  type WorkerOptions,
} from '../index.js';
import { startLocalRedis, type LocalRedis } from '../deploy/local-redis.js';
import { assertInteger, assertOptions } from '../core/validate.js';
import { VirtualClockServer } from '../store/redis/virtual-clock.js';
import { toInstantMs, VirtualClock, type Instant } from './clock.js';
import { drain } from './drain.js';

/** Options of {@link createTestEnvironment}. */
export interface TestEnvironmentOptions {
  /** Where the virtual clock starts (a Date, epoch ms or an ISO text; the past is allowed). Default: the real now. */
  now?: Instant;
  /** Key prefix of the environment's queues and workers. @default 'sg' */
  prefix?: string;
  /** How long `drain()` waits for idle before it throws a DrainTimeoutError (real ms). @default 5000 */
  drainTimeoutMs?: number;
  /** The redis-server binary to start. @default 'redis-server' (from PATH) */
  redisCommand?: string;
  /** Logger of the environment's queues and workers. Default: sandglass's default logger. */
  logger?: Logger;
}

/** Options of `env.queue()`: those of a Queue, less what the environment gives (its Redis). */
export type TestQueueOptions = Omit<QueueOptions, 'connection'>;
/** Options of `env.worker()`: those of a Worker, less what the environment gives (its Redis). */
export type TestWorkerOptions = Omit<WorkerOptions, 'connection'>;

const KNOWN = ['now', 'prefix', 'drainTimeoutMs', 'redisCommand', 'logger'];

/**
 * A private real redis-server on a free port with a virtual clock, and the Queues and Workers bound
 * to it: see {@link createTestEnvironment}. Nothing is shared between two environments.
 */
export class TestEnvironment {
  /** The environment's Redis as a URL: pass it as `connection` to your own code's Queues and Workers (in this process). */
  readonly connection: string;
  /** The virtual clock: `advance('30m')`, `set('2027-03-28T00:59:00Z')`, `now()`. */
  readonly clock: VirtualClock;
  readonly #server: LocalRedis;
  readonly #clockServer: VirtualClockServer;
  readonly #prefix: string;
  readonly #logger: Logger;
  readonly #drainTimeoutMs: number;
  readonly #owned = new Set<{ close(): Promise<unknown> }>();
  #closed = false;

  /** @internal Made by createTestEnvironment. */
  constructor(parts: {
    server: LocalRedis;
    clockServer: VirtualClockServer;
    offsetMs: number;
    prefix: string;
    logger: Logger;
    drainTimeoutMs: number;
  }) {
    this.#server = parts.server;
    this.#clockServer = parts.clockServer;
    this.#prefix = parts.prefix;
    this.#logger = parts.logger;
    this.#drainTimeoutMs = parts.drainTimeoutMs;
    this.connection = parts.server.url;
    this.clock = new VirtualClock(parts.clockServer, parts.offsetMs, () => this.wake());
  }

  /** The redis-server process the environment started (its port, pid; `kill('SIGKILL')` for crash tests). */
  get server(): LocalRedis {
    return this.#server;
  }

  /** A Queue on the environment's Redis, closed by `close()`. */
  queue<T = unknown>(name: string, options: TestQueueOptions = {}): Queue<T> {
    return this.#own(new Queue<T>(name, { prefix: this.#prefix, logger: this.#logger, ...options, connection: this.connection }));
  }

  /** A Worker on the environment's Redis, closed by `close()`. */
  worker<T = unknown>(
    queues: string | readonly string[],
    handler: Processor<T>,
    options?: TestWorkerOptions & { batch?: undefined },
  ): Worker<T>;
  worker<T = unknown>(
    queues: string | readonly string[],
    handler: BatchProcessor<T>,
    options: TestWorkerOptions & { batch: { size: number } },
  ): Worker<T>;
  worker<T = unknown>(
    queues: string | readonly string[],
    handler: Processor<T> | BatchProcessor<T>,
    options: TestWorkerOptions = {},
  ): Worker<T> {
    const full = { prefix: this.#prefix, logger: this.#logger, ...options, connection: this.connection } as WorkerOptions;
    return this.#own(new Worker<T>(queues, handler as Processor<T>, full as WorkerOptions & { batch?: undefined }));
  }

  /**
   * Runs what is due: wakes the workers, then resolves when no job is due and unclaimed, none runs
   * and no schedule's tick is due, on every queue of the environment's Redis (jobs held back by a
   * limit or a pause wait for the clock and do not count). Throws a DrainTimeoutError naming what
   * is still due or running after `timeoutMs` (real ms).
   */
  async drain(options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? this.#drainTimeoutMs;
    assertInteger('timeoutMs', timeoutMs, 1, 3_600_000);
    await drain(
      { connection: this.connection, prefix: this.#prefix, logger: this.#logger, now: () => this.clock.now(), wake: () => this.wake() },
      timeoutMs,
    );
  }

  /**
   * Tells every sleeping worker on the environment's Redis (in any process) to look now, as a lost
   * wake-up message would make it do: the clock calls it after each move.
   */
  async wake(): Promise<void> {
    await this.#clockServer.wakeAll(this.#prefix);
  }

  /** Closes the environment's Queues and Workers, then stops its redis-server. Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#owned].map(item => item.close()));
    this.#clockServer.close();
    await this.#server.stop();
  }

  #own<R extends { close(): Promise<unknown> }>(item: R): R {
    this.#owned.add(item);
    return item;
  }
}

/**
 * Starts a test environment: a private real redis-server on a free port (no data kept on disk),
 * whose scripts read a virtual clock. Nothing waits for real time:
 *
 * @example
 * const env = await createTestEnvironment();
 * const queue = env.queue<Order>('order-timeout');
 * env.worker<Order>('order-timeout', closeOrder);
 * await queue.add({ orderId: 42 }, { delay: '30m' });
 * await env.clock.advance('30m');
 * await env.drain(); // closeOrder ran
 * await env.close();
 *
 * The virtual clock is put only on the server this call started: the library that carries it is
 * loaded only after the server's run_id is checked, and any other server refuses it.
 */
export async function createTestEnvironment(options: TestEnvironmentOptions = {}): Promise<TestEnvironment> {
  assertOptions('createTestEnvironment', options, KNOWN);
  const startAt = options.now === undefined ? undefined : toInstantMs(options.now, 'now');
  const drainTimeoutMs = options.drainTimeoutMs ?? 5_000;
  assertInteger('drainTimeoutMs', drainTimeoutMs, 1, 3_600_000);
  const server = await startLocalRedis({
    appendOnly: false,
    stopWithOwner: true,
    ...(options.redisCommand ? { command: options.redisCommand } : {}),
  });
  try {
    const offsetMs = startAt === undefined ? 0 : startAt - Date.now();
    const clockServer = await VirtualClockServer.open(server.port, offsetMs);
    return new TestEnvironment({
      server,
      clockServer,
      offsetMs,
      prefix: options.prefix ?? 'sg',
      logger: options.logger ?? defaultLogger,
      drainTimeoutMs,
    });
  } catch (error) {
    await server.stop();
    throw error;
  }
}
