/**
 * A queue's limits as `Queue` sets and reads them (queue.setLimits, getLimits): the rules of
 * limits.ts applied to what the queue's limiter storage holds.
 */
import { mergeLimits } from './limits.js';
import type { QueueStorage } from '../store/queue-storage.js';
import type { LimitsInput, QueueLimits } from '../core/types.js';

/**
 * Merges `input` into the stored limits and stores the result for every partition; the limits
 * now in force. A bad limit is refused before anything is read or written; `register` (the queue's
 * record for admin tools) comes first of all writes.
 */
export async function setQueueLimits(storage: QueueStorage, input: LimitsInput, register: () => Promise<void>): Promise<QueueLimits> {
  mergeLimits({}, input); // refused before anything is written
  await register();
  const limiter = await storage.limiter({ create: true });
  const next = mergeLimits(await limiter.read(), input);
  await limiter.write(next);
  return next;
}

/** The limits as stored (`{}` when there are none); reading never creates the queue. */
export async function getQueueLimits(storage: QueueStorage): Promise<QueueLimits> {
  return (await storage.limiter({ create: false })).read();
}
