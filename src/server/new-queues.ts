/**
 * The service's `--partitions` / SANDGLASS_PARTITIONS: the partition count of the queues it
 * creates. A queue that exists keeps its own count (opening it with another would be a conflict),
 * so a queue is opened with the setting only while it does not exist yet. Existence is the
 * library's: the queue is listed by `listQueues`; a listed queue stays listed, so the answer is kept.
 */
import { listQueues, Queue, type ConnectionOption, type Logger } from '../index.js';

export interface NewQueuesOptions {
  connection: ConnectionOption;
  prefix: string;
  logger: Logger;
  /** The count for new queues; undefined: the library's default (1), and no lookups. */
  partitions: number | undefined;
}

export class NewQueues {
  readonly #known = new Set<string>();

  constructor(readonly options: NewQueuesOptions) {}

  /**
   * The `partitions` option to open `name` with: the setting while the queue does not exist,
   * else undefined (the stored count). One `listQueues` call per name not yet known to exist.
   */
  async partitionsFor(name: string): Promise<number | undefined> {
    const { connection, prefix, logger, partitions } = this.options;
    if (partitions === undefined || this.#known.has(name)) return undefined;
    for (const listed of await listQueues({ connection, prefix, logger })) this.#known.add(listed);
    return this.#known.has(name) ? undefined : partitions;
  }

  /**
   * Creates the queues of `names` that do not exist yet with the setting's count. For the queues
   * of webhook bindings, before their workers start: a worker on a queue that does not exist
   * creates it, with one partition. `setLimits({})` changes no limit; it records the queue and its
   * count, which is all that is wanted here.
   * @throws {ConflictError} a queue exists unlisted (a worker created it) with another count.
   */
  async create(names: readonly string[]): Promise<void> {
    const { connection, prefix, logger } = this.options;
    for (const name of new Set(names)) {
      const partitions = await this.partitionsFor(name);
      if (partitions === undefined) continue;
      const queue = new Queue(name, { connection, prefix, logger, partitions });
      try {
        await queue.setLimits({});
        this.#known.add(name);
      } finally {
        await queue.close();
      }
    }
  }
}
