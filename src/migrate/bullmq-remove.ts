// Deleting moved jobs from BullMQ, after sandglass holds them: one script per page, so that a job is
// never left half-deleted (its hash gone but its id still listed, which BullMQ would choke on).
import type { Cluster, Redis } from 'ioredis';
import type { BullMQKeys } from './bullmq-layout.js';

/**
 * KEYS: delayed, wait, paused, prioritized, then each job's hash and its logs list.
 * ARGV[1]: the queue's key base (`<prefix>:<queue>:`), for the deduplication key of a job that has one.
 * ARGV[2..]: the job ids, in the order of their keys.
 * The LREMs count from the right (-1): the pages are read from there, so each id is near it.
 */
const REMOVE_SCRIPT = `
local n = #ARGV - 1
for i = 1, n do
  local id = ARGV[i + 1]
  local hash = KEYS[4 + 2 * i - 1]
  local dedup = redis.call('HGET', hash, 'deid')
  if dedup then redis.call('DEL', ARGV[1] .. 'de:' .. dedup) end
  redis.call('ZREM', KEYS[1], id)
  redis.call('LREM', KEYS[2], -1, id)
  redis.call('LREM', KEYS[3], -1, id)
  redis.call('ZREM', KEYS[4], id)
  redis.call('DEL', hash, KEYS[4 + 2 * i])
end
return n
`;

/** Deletes the jobs `ids` of the BullMQ queue whose keys are `keys` (hash, logs, list and ZSET entries, deduplication key). */
export async function removeBullMQJobs(client: Redis | Cluster, keys: BullMQKeys, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const jobKeys = ids.flatMap(id => [`${keys.base}${id}`, `${keys.base}${id}:logs`]);
  await client.eval(
    REMOVE_SCRIPT,
    4 + jobKeys.length,
    keys.delayed,
    keys.wait,
    keys.paused,
    keys.prioritized,
    ...jobKeys,
    keys.base,
    ...ids,
  );
}
