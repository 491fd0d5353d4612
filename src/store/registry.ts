import type { Cluster, Redis } from 'ioredis';
import { queueRegistryKey } from './keys.js';
import { toSandglassError, withinCallTimeout } from './scripts.js';

/** Records a queue name under the prefix, for admin tools that list queues. */
export async function registerQueue(redis: Redis | Cluster, prefix: string, queue: string): Promise<void> {
  try {
    await withinCallTimeout(redis, 'add', redis.sadd(queueRegistryKey(prefix), queue));
  } catch (error) {
    throw toSandglassError(error, 'add');
  }
}

/** Names of the queues used under the prefix, sorted. */
export async function listQueueNames(redis: Redis | Cluster, prefix: string): Promise<string[]> {
  try {
    return (await withinCallTimeout(redis, 'listQueues', redis.smembers(queueRegistryKey(prefix)))).sort();
  } catch (error) {
    throw toSandglassError(error, 'listQueues');
  }
}
