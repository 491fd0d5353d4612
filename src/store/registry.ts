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

/**
 * Whether the queue is recorded under the prefix: the one test of "this queue exists" (a job was
 * added to it, or it was paused with `create`). Queues are never unrecorded, so a yes stays true.
 */
export async function isQueueRegistered(redis: Redis | Cluster, prefix: string, queue: string, operation: string): Promise<boolean> {
  try {
    return (await redis.sismember(queueRegistryKey(prefix), queue)) === 1;
  } catch (error) {
    throw toSandglassError(error, operation);
  }
}
