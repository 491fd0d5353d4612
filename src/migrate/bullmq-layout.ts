// BullMQ's Redis layout (v5 and v6; docs/migrating-from-bullmq.md): the keys of a queue and what a
// delayed job's score means. Only the parts a migration reads or deletes.

/** The keys of one BullMQ queue under `prefix` (BullMQ's default prefix is `bull`). */
export interface BullMQKeys {
  /** `<prefix>:<queue>:`: a job's hash is this followed by its id. */
  readonly base: string;
  /** ZSET of delayed jobs (also jobs waiting for a retry's backoff); the score encodes the due time. */
  readonly delayed: string;
  /** LIST of waiting jobs; workers take from the right. */
  readonly wait: string;
  /** LIST of waiting jobs of a paused queue in BullMQ 5 before 5.x moved pausing to a flag in `meta` (still read by v6). */
  readonly paused: string;
  /** ZSET of waiting jobs with a priority. */
  readonly prioritized: string;
  /** LIST of jobs a BullMQ worker holds. */
  readonly active: string;
  /** ZSET of flow parents waiting for their children. */
  readonly waitingChildren: string;
}

/** The keys of BullMQ queue `queue` under `prefix`. */
export function bullmqKeys(prefix: string, queue: string): BullMQKeys {
  const base = `${prefix}:${queue}:`;
  return {
    base,
    delayed: `${base}delayed`,
    wait: `${base}wait`,
    paused: `${base}paused`,
    prioritized: `${base}prioritized`,
    active: `${base}active`,
    waitingChildren: `${base}waiting-children`,
  };
}

/**
 * The due time (epoch ms) a delayed job's score encodes: BullMQ stores `due * 0x1000 + n`, the low
 * 12 bits keeping jobs of the same millisecond in order (getDelayedScore.lua).
 */
export function dueOfDelayedScore(score: number): number {
  return Math.floor(score / 0x1000);
}
