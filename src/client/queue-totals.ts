/**
 * A queue's counts as `Queue` reports them (stats, counters, dueHistogram): the sums of its
 * partitions' answers, each read atomically on its server's clock.
 */
import { ValidationError } from '../core/errors.js';
import type { DueHistogram, PartitionStats } from '../store/partition-storage.js';
import type { QueueCounters, QueueStats } from '../core/types.js';
import { MAX_DELAY_MS, assertInteger } from '../core/validate.js';

/**
 * How recently the queue's limiter must have refused a claim for `stats().limited` to count the
 * ready jobs as held back by the limit (a refused worker asks again within this when work waits).
 */
const LIMITED_RECENTLY_MS = 1_000;

export function totalStats(all: readonly PartitionStats[]): QueueStats {
  const total = { delayed: 0, ready: 0, active: 0, dead: 0, paused: all.some(part => part.paused), limited: 0, completed: 0 };
  let heldBack = false;
  for (const part of all) {
    total.delayed += part.delayed;
    total.ready += part.ready;
    total.active += part.active;
    total.dead += part.dead;
    total.completed += part.completed;
    if (part.limitedAt !== -1 && part.limitedAt > part.now - LIMITED_RECENTLY_MS) heldBack = true;
  }
  // Ready jobs of a queue whose limit has no room now, or held work back just now, wait on the limit.
  if (heldBack) total.limited = total.ready;
  return total;
}

export function totalCounters(all: readonly PartitionStats[]): QueueCounters {
  const read = (name: keyof QueueCounters) => all.reduce((sum, part) => sum + (part.counters[name] ?? 0), 0);
  return {
    added: read('added'),
    claimed: read('claimed'),
    completed: read('completed'),
    retried: read('retried'),
    dead: read('dead'),
    reaped: read('reaped'),
    stale: read('stale'),
    ticks: read('ticks'),
    ticksSkipped: read('ticksSkipped'),
    expired: read('expired'),
  };
}

/** The rule of `dueHistogram`'s bounds: at most 100 offsets in ms, increasing, each 1 ms to MAX_DELAY_MS. */
export function assertHistogramBounds(boundsMs: readonly number[]): void {
  if (!Array.isArray(boundsMs) || boundsMs.length > 100)
    throw new ValidationError('Expected `boundsMs` to be an array of at most 100 offsets in ms');
  boundsMs.forEach((bound, i) => {
    assertInteger(`boundsMs[${i}]`, bound, 1, MAX_DELAY_MS);
    if (i > 0 && bound <= (boundsMs[i - 1] as number)) throw new ValidationError('Expected `boundsMs` to increase');
  });
}

export function totalHistogram(
  boundsMs: readonly number[],
  all: readonly DueHistogram[],
): { now: number; ready: number; buckets: { untilMs: number; count: number }[]; later: number } {
  const sumAt = (i: number) => all.reduce((sum, part) => sum + (part.counts[i] as number), 0);
  return {
    now: Math.max(...all.map(part => part.now)),
    ready: all.reduce((sum, part) => sum + part.ready, 0),
    buckets: boundsMs.map((untilMs, i) => ({ untilMs, count: sumAt(i) })),
    later: sumAt(boundsMs.length),
  };
}
