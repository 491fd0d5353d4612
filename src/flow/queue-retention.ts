/**
 * A queue's retention of completed jobs as `Queue` sets and reads it (queue.setRetention,
 * getRetention): the rules of retention.ts applied to every partition's stored form.
 */
import { decodeRetention, encodeRetention, mergeRetention } from './retention.js';
import { repeatUntilZero } from '../core/repeat.js';
import type { PartitionStorage } from '../store/partition-storage.js';
import type { QueueStorage } from '../store/queue-storage.js';
import type { Retention, RetentionInput } from '../core/types.js';

/** Kept completed jobs removed per storage call when a new retention is trimmed to. */
const TRIM_BATCH = 1_000;

/**
 * Merges `input` into the stored retention (partition 0's), stores the result in every partition
 * and trims each to it before returning; the retention now in force. Bad input is refused before
 * anything is read or written; `register` (the queue's record for admin tools) runs alongside.
 */
export async function setQueueRetention(storage: QueueStorage, input: RetentionInput, register: () => Promise<void>): Promise<Retention> {
  mergeRetention(decodeRetention(''), input); // refuses bad input before anything is read or written
  const [stores] = await Promise.all([storage.partitions({ create: true }), register()]);
  const current = decodeRetention((await (stores[0] as PartitionStorage).retention('', 0)).retain);
  const next = mergeRetention(current, input);
  const retain = encodeRetention(next, stores.length);
  // Every partition stores it, then trims to it in bounded calls (a large backlog takes several).
  await Promise.all(
    stores.map(async store => {
      const { removed } = await store.retention(retain, TRIM_BATCH);
      if (removed === TRIM_BATCH) await repeatUntilZero(async () => (await store.retention('', TRIM_BATCH)).removed);
    }),
  );
  return next;
}

/** The retention as stored (partition 0's); reading never creates the queue. */
export async function getQueueRetention(storage: QueueStorage): Promise<Retention> {
  const [store] = await storage.partitions({ create: false });
  return decodeRetention((await (store as PartitionStorage).retention('', 0)).retain);
}
