import type { Cluster, Redis } from 'ioredis';
import { ConflictError, IncompatibleStorageError } from '../../core/errors.js';
import { PartitionStore } from './partition-store.js';
import { runScript } from './scripts.js';
import { partitionKeys } from './keys.js';
import { partitionOf } from '../placement.js';

/**
 * The storage format this version reads and writes: `meta` field `format` of every partition,
 * written when the queue is created (lua/initQueue.lua). A queue without it is in format 1, the
 * format of sandglass before formats had a number. A queue in a newer format is refused (README,
 * "Upgrading"). Each change of format adds 1 here, its snapshot in test/fixtures/storage/, and the
 * way this version serves or upgrades the format before it.
 *
 * Format 2 adds groups (lua/includes/groups.lua): a format 1 queue is served as it is, and a
 * partition of it becomes format 2 when group data is first written there (a grouped job, group
 * limits or a pause, a schedule with a group), so that a process of format 1, which would leave
 * grouped jobs undelivered, refuses it from its next start.
 */
export const STORAGE_FORMAT = 2;

/**
 * A queue's partitions: their stores, once the partition count is known. The count is stored with
 * the queue (partition 0's meta) the first time any process uses it; a process that asks for
 * another count gets a ConflictError, because jobs placed by one count cannot be found by another.
 */
export class QueuePartitions {
  #stores: Promise<PartitionStore[]> | undefined;

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix: string,
    readonly queue: string,
    /** The count this process expects, or undefined to take whatever is stored (1 when none). */
    readonly requested: number | undefined,
  ) {}

  /**
   * The partition stores, in partition order. With `create`, a new queue gets its count stored;
   * without it (reads), nothing is written: a read of a queue that does not exist yet answers from
   * `requested ?? 1` partitions, and asks again next time. A known count is kept for good.
   */
  all(options: { create: boolean }): Promise<PartitionStore[]> {
    if (this.#stores) return this.#stores;
    const resolving = this.#resolve(options.create);
    const known = resolving.then(result => {
      if (!result.stored) this.#stores = undefined;
      return result.stores;
    });
    this.#stores = known;
    known.catch(() => (this.#stores = undefined));
    return known;
  }

  async storeFor(id: string, options: { create: boolean }): Promise<PartitionStore> {
    const stores = await this.all(options);
    return stores[partitionOf(id, stores.length)] as PartitionStore;
  }

  /**
   * Reads (and for a new queue, records) the partition count, and checks the storage format of
   * every partition before anything else touches the queue: once per QueuePartitions, not per call.
   *
   * @throws {IncompatibleStorageError} a partition is in a format newer than STORAGE_FORMAT; nothing was written.
   */
  async #resolve(create: boolean): Promise<{ stores: PartitionStore[]; stored: boolean }> {
    const keys = partitionKeys(this.prefix, this.queue, 0);
    const [stored, format, created] = (await runScript(this.redis, 'initQueue', keys, [
      create ? (this.requested ?? 1) : '',
      STORAGE_FORMAT,
    ])) as [number, number, number];
    if (format > STORAGE_FORMAT) throw new IncompatibleStorageError(this.queue, 0, format, STORAGE_FORMAT);
    if (stored !== 0 && this.requested !== undefined && stored !== this.requested) {
      throw new ConflictError(
        `Queue ${this.queue} has ${stored} partition(s); it cannot be opened with ${this.requested}. Open it without \`partitions\`, or migrate it (see README, "Partitions").`,
      );
    }
    const count = stored === 0 ? (this.requested ?? 1) : stored;
    const stores = Array.from({ length: count }, (_, partition) => new PartitionStore(this.redis, this.prefix, this.queue, partition));
    if (stored > 1) {
      // The other partitions carry the format too (they may live on other nodes), written there by
      // the process that created the queue (initQueue said so); a partition without one is in the
      // queue's format.
      const formats = (await Promise.all(
        stores.slice(1).map(store => runScript(this.redis, 'checkFormat', store.keys, [STORAGE_FORMAT, created === 1 ? '1' : '0'])),
      )) as number[];
      const newer = formats.findIndex(found => found > STORAGE_FORMAT);
      if (newer !== -1) throw new IncompatibleStorageError(this.queue, newer + 1, formats[newer] as number, STORAGE_FORMAT);
    }
    return { stores, stored: stored !== 0 };
  }
}
