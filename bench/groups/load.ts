/** Loading and watching a grouped queue for the groups phase, through the public API only. */
import { Queue, type BulkJob } from '../../src/index.js';
import { PAYLOAD, type Payload } from '../drivers/types.js';
import { sleep } from '../stats.js';

/** Jobs per addBulk call. */
const CHUNK = 1_000;

export function openQueue(url: string, name: string): Queue<Payload> {
  return new Queue<Payload>(name, { connection: url });
}

/**
 * Adds the jobs in calls of CHUNK, one call at a time, and checks that every one was written: by
 * the ids returned, and, when no worker runs yet (`idle`), by the queue's count of waiting jobs.
 */
export async function addAll(queue: Queue<Payload>, jobs: readonly BulkJob<Payload>[], idle = true): Promise<void> {
  const before = idle ? await waiting(queue) : 0;
  const ids = new Set<string>();
  for (let done = 0; done < jobs.length; done += CHUNK) for (const id of await queue.addBulk(jobs.slice(done, done + CHUNK))) ids.add(id);
  if (ids.size !== jobs.length) throw new Error(`${queue.name}: added ${jobs.length} jobs but got ${ids.size} ids`);
  if (!idle) return;
  const added = (await waiting(queue)) - before;
  if (added !== jobs.length) throw new Error(`${queue.name}: added ${jobs.length} jobs but ${added} more are waiting`);
}

/** `count` jobs of group `group` ('' for none), due `delayMs` from now (0: at once). */
export function groupJobs(group: string, count: number, delayMs = 0): BulkJob<Payload>[] {
  return Array.from({ length: count }, () => ({
    payload: PAYLOAD,
    ...(group === '' ? {} : { group }),
    ...(delayMs > 0 ? { delay: delayMs } : {}),
  }));
}

/** Jobs waiting (delayed or due, not running). */
export async function waiting(queue: Queue<Payload>): Promise<number> {
  const stats = await queue.stats();
  return stats.delayed + stats.ready;
}

/** Resolves once the queue holds no waiting or running job; throws after `timeoutMs`. */
export async function drained(queue: Queue<Payload>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await queue.stats();
    const left = stats.delayed + stats.ready + stats.active;
    if (left === 0) return;
    if (Date.now() > deadline) throw new Error(`${queue.name}: ${left} jobs left after ${timeoutMs} ms`);
    await sleep(50);
  }
}
