import type { Cluster, Redis } from 'ioredis';
import { queueRegistryKey } from './keys.js';
import { toSandglassError } from './scripts.js';

/** Records a queue name under the prefix, for admin tools that list queues. */
export async function registerQueue(redis: Redis | Cluster, prefix: string, queue: string): Promise<void> {
  try {
    await redis.sadd(queueRegistryKey(prefix), queue);
  } catch (error) {
    throw toSandglassError(error, 'add');
  }
}

/** Names of the queues used under the prefix, sorted. */
export async function listQueueNames(redis: Redis | Cluster, prefix: string): Promise<string[]> {
  try {
    return (await redis.smembers(queueRegistryKey(prefix))).sort();
  } catch (error) {
    throw toSandglassError(error, 'listQueues');
  }
}
