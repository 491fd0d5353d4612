import type { Cluster, Redis } from 'ioredis';
import { queueRegistryKey } from './keys.js';
import { toSandglassError, withinCallTimeout } from './scripts.js';

/** A registry command, bounded by the connection's call timeout, its errors typed as `operation`'s. */
async function registryCall<R>(redis: Redis | Cluster, operation: string, work: () => Promise<R>): Promise<R> {
  try {
    return await withinCallTimeout(redis, operation, work());
  } catch (error) {
    throw toSandglassError(error, operation, redis);
  }
}

/** Records a queue name under the prefix, for admin tools that list queues. */
export async function registerQueue(redis: Redis | Cluster, prefix: string, queue: string): Promise<void> {
  await registryCall(redis, 'add', () => redis.sadd(queueRegistryKey(prefix), queue));
}

/** Names of the queues used under the prefix, sorted. */
export async function listQueueNames(redis: Redis | Cluster, prefix: string): Promise<string[]> {
  return (await registryCall(redis, 'listQueues', () => redis.smembers(queueRegistryKey(prefix)))).sort();
}

/**
 * Whether the queue is recorded under the prefix: the one test of "this queue exists" (a job was
 * added to it, or it was paused with `create`). Queues are never unrecorded, so a yes stays true.
 */
export async function isQueueRegistered(redis: Redis | Cluster, prefix: string, queue: string, operation: string): Promise<boolean> {
  return (await registryCall(redis, operation, () => redis.sismember(queueRegistryKey(prefix), queue))) === 1;
}
