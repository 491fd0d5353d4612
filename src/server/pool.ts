/**
 * The service's Queue and PullConsumer objects, one per queue name, created on first use and kept
 * (they share one Redis connection per process). Bounded: past `maxEntries` names, the least
 * recently used idle object is closed, so requests naming many queues cannot grow memory forever.
 */
import { ClosedError, PullConsumer, Queue, type ConnectionOption, type Logger } from '../index.js';
import { NewQueues } from './new-queues.js';

export interface PoolOptions {
  connection: ConnectionOption;
  prefix: string;
  logger: Logger;
  /** Partition count of the queues the service creates (`--partitions`); existing ones keep theirs. Default: the library's (1). */
  partitions?: number;
  /** @default 1000 per kind */
  maxEntries?: number;
}

interface Entry<T> {
  /** Created on first use (it may first ask Redis whether the queue exists, see NewQueues). */
  item: Promise<T>;
  /** Calls running with this item; it is never closed under them. */
  busy: number;
}

/** A bounded LRU of closable objects by name. */
class Lru<T extends { close(): Promise<void> }> {
  readonly #entries = new Map<string, Entry<T>>();
  #closed = false;

  constructor(
    readonly create: (name: string) => Promise<T>,
    readonly maxEntries: number,
    readonly logger: Logger,
  ) {}

  async use<R>(name: string, run: (item: T) => Promise<R>): Promise<R> {
    if (this.#closed) throw new ClosedError('The service is closing');
    let entry = this.#entries.get(name);
    if (entry) this.#entries.delete(name);
    else entry = { item: this.create(name), busy: 0 };
    const current = entry;
    this.#entries.set(name, current); // most recent last
    this.#evict();
    current.busy += 1;
    try {
      let item: T;
      try {
        item = await current.item;
      } catch (error) {
        // Not created (Redis did not answer whether the queue exists): the next call tries again.
        if (this.#entries.get(name) === current) this.#entries.delete(name);
        throw error;
      }
      return await run(item);
    } finally {
      current.busy -= 1;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const items = [...this.#entries.values()].map(entry => entry.item);
    this.#entries.clear();
    await Promise.all(
      items.map(item => item.then(created => created.close()).catch(error => this.logger.warn(`closing: ${(error as Error).message}`))),
    );
  }

  #evict(): void {
    if (this.#entries.size <= this.maxEntries) return;
    for (const [name, entry] of this.#entries) {
      if (entry.busy > 0) continue;
      this.#entries.delete(name);
      void entry.item.then(item => item.close()).catch(() => undefined);
      return;
    }
  }
}

export class QueuePool {
  readonly #queues: Lru<Queue>;
  readonly #consumers: Lru<PullConsumer>;

  constructor(options: PoolOptions) {
    const { connection, prefix, logger } = options;
    const max = options.maxEntries ?? 1_000;
    const newQueues = new NewQueues({ connection, prefix, logger, partitions: options.partitions });
    // A consumer claims from a queue that may not exist yet, and would create it: it needs the count too.
    const partitionsOf = async (name: string) => {
      const partitions = await newQueues.partitionsFor(name);
      return partitions === undefined ? {} : { partitions };
    };
    this.#queues = new Lru(async name => new Queue(name, { connection, prefix, logger, ...(await partitionsOf(name)) }), max, logger);
    this.#consumers = new Lru(
      async name => new PullConsumer(name, { connection, prefix, logger, ...(await partitionsOf(name)) }),
      max,
      logger,
    );
  }

  /** Runs `run` with the Queue of `name`. */
  queue<R>(name: string, run: (queue: Queue) => Promise<R>): Promise<R> {
    return this.#queues.use(name, run);
  }

  /** Runs `run` with the PullConsumer of `name`. */
  consumer<R>(name: string, run: (consumer: PullConsumer) => Promise<R>): Promise<R> {
    return this.#consumers.use(name, run);
  }

  async close(): Promise<void> {
    await Promise.all([this.#consumers.close(), this.#queues.close()]);
  }
}
