/** A queue's dead letters as `Queue` moves and deletes them (retryDead, purgeDead): in bounded batches per partition. */
import { repeatUntilZero } from '../core/repeat.js';
import { partitionOf } from '../store/placement.js';
import type { PartitionStorage } from '../store/partition-storage.js';
import type { QueueStorage } from '../store/queue-storage.js';
import { assertJobId } from '../core/validate.js';

/** Dead letters moved or deleted per storage call. */
const DEAD_BATCH = 1_000;
/** Dead letters are read and changed where they are: never a reason to create the queue. */
const READ = { create: false } as const;

/** Moves the given dead jobs (or all of them, when `ids` is undefined) back to due now; how many moved. */
export async function retryDeadJobs(storage: QueueStorage, ids: string | readonly string[] | undefined): Promise<number> {
  if (ids === undefined)
    return sum(await Promise.all((await storage.partitions(READ)).map(store => repeatUntilZero(() => store.retryDead([], DEAD_BATCH)))));
  const list = typeof ids === 'string' ? [ids] : [...ids];
  list.forEach(assertJobId);
  const stores = await storage.partitions(READ);
  const byPartition = stores.map(() => [] as string[]);
  for (const id of list) byPartition[partitionOf(id, stores.length)]?.push(id);
  let moved = 0;
  for (const [partition, partitionIds] of byPartition.entries()) {
    for (let start = 0; start < partitionIds.length; start += DEAD_BATCH) {
      moved += await (stores[partition] as PartitionStorage).retryDead(partitionIds.slice(start, start + DEAD_BATCH), DEAD_BATCH);
    }
  }
  return moved;
}

/** Deletes every dead job; how many were deleted. */
export async function purgeDeadJobs(storage: QueueStorage): Promise<number> {
  return sum(await Promise.all((await storage.partitions(READ)).map(store => repeatUntilZero(() => store.purgeDead(DEAD_BATCH)))));
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
