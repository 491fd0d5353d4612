/**
 * Redis key names, built in one place. Every key of a queue partition shares the hash tag
 * `{<queue>:<partition>}`, so a partition's scripts touch one Cluster slot, and partitions of one
 * queue can live on different nodes. The README's "Redis keys" table lists the same names; a test
 * keeps the two in sync.
 */
export interface PartitionKeys {
  /** ZSET id -> dueAt (ms): waiting jobs, delayed and ready. */
  readonly due: string;
  /** ZSET id -> lease deadline (ms): jobs claimed by a worker. */
  readonly active: string;
  /** ZSET id -> dead-lettered at (ms). */
  readonly dead: string;
  /** HASH id -> job record (header line + payload JSON). */
  readonly jobs: string;
  /** HASH id -> last error message, for jobs that failed at least once. */
  readonly errors: string;
  /** HASH of running totals (added, claimed, completed, ...) and the fencing-token sequence. */
  readonly counters: string;
  /** HASH of queue settings and state: `paused`, `donePeriod`, `retain` (the retention of completed jobs), `expiring`, `expireAfter`, `limited`; in partition 0 also `partitions`, the queue's partition count, and the limits. */
  readonly meta: string;
  /**
   * HASHes id -> fencing token of the claim that completed the job: one per 30 s period, taking turns,
   * so a completed job is remembered 60 to 90 s (lua/includes/done.lua).
   */
  readonly done0: string;
  readonly done1: string;
  readonly done2: string;
  /** HASH id -> "<token>,<dueAt>" of each active job: the lease a claim granted (lua/includes/leases.lua). */
  readonly leases: string;
  /**
   * ZSET bucket number -> bucket start (ms): the far-future tier, buckets of jobs due beyond the
   * horizon, each moved into `due` shortly before it starts (lua/includes/wheel.lua).
   */
  readonly wheel: string;
  /**
   * HASH schedule key -> schedule record (lua/includes/schedules.lua, "Schedules"): the recurring schedules whose
   * key hashes to this partition, with their tick state.
   */
  readonly schedules: string;
  /**
   * HASH id -> "<expireAfterMs>" or "<expireAfterMs>d" (`onExpire: 'drop'`): the deadline of a
   * waiting job added with `expireAfter` (or under the queue's default), by which it must start
   * (lua/includes/keys.lua, "Deadlines"). Only waiting jobs with a deadline have an entry.
   */
  readonly expiry: string;
  /**
   * ZSET id -> finishedAt (ms): the completed jobs the queue keeps (`queue.setRetention`; lua/includes/retention.lua,
   * "Retention"). Empty unless the queue retains completed jobs.
   */
  readonly completed: string;
  /** HASH id -> "<result JSON>\n<record>" of each job in `completed`. */
  readonly results: string;
  /**
   * ZSET group -> turn or time (lua/includes/groups.lua, "Groups"): the groups a claim may serve. A
   * score below 10^12 is a turn (the group has due work: lower turns are served first); a score
   * at or above is the time (ms) to look at the group again (its head falls due, its rate window
   * reopens). Member '' is the default group (jobs without a group, in `due`). Empty unless the
   * partition has grouped jobs.
   */
  readonly groups: string;
  /** ZSET id -> dueAt (ms): every grouped job waiting in a group's queue, for counts, lists and look-ups by id. */
  readonly groupDue: string;
  /** ZSET group -> jobs of the group not finished (waiting, in the wheel too, and active): the groups with work, busiest first. */
  readonly groupJobs: string;
  /** HASH group -> jobs of the group running now (absent: none). */
  readonly groupActive: string;
  /**
   * HASH of per-group state, fields by kind: `p:<group>` paused, `h:<group>` held by its
   * concurrency limit, `l:<group>` its own limits "<concurrency>,<rateMax>,<ratePer>", `b:<group>`
   * the id of an in-order group's retry that must start first.
   */
  readonly groupState: string;
  /** Pub/sub channel: the due time of a job that became the earliest one. */
  readonly wakeChannel: string;
}

/** The names of a partition's keys, in the order the scripts' KEYS arrays use them. */
export const PARTITION_KEY_NAMES = [
  'due',
  'active',
  'dead',
  'jobs',
  'errors',
  'counters',
  'meta',
  'done0',
  'done1',
  'done2',
  'leases',
  'wheel',
  'schedules',
  'expiry',
  'completed',
  'results',
  'groups',
  'groupDue',
  'groupJobs',
  'groupActive',
  'groupState',
] as const;
export type PartitionKeyName = (typeof PARTITION_KEY_NAMES)[number];

export function partitionKeys(prefix: string, queue: string, partition: number): PartitionKeys {
  const tag = `${prefix}:{${queue}:${partition}}`;
  return {
    due: `${tag}:due`,
    active: `${tag}:active`,
    dead: `${tag}:dead`,
    jobs: `${tag}:jobs`,
    errors: `${tag}:errors`,
    counters: `${tag}:counters`,
    meta: `${tag}:meta`,
    done0: `${tag}:done:0`,
    done1: `${tag}:done:1`,
    done2: `${tag}:done:2`,
    leases: `${tag}:leases`,
    wheel: `${tag}:wheel`,
    schedules: `${tag}:schedules`,
    expiry: `${tag}:expiry`,
    completed: `${tag}:completed`,
    results: `${tag}:results`,
    groups: `${tag}:groups`,
    groupDue: `${tag}:group:due`,
    groupJobs: `${tag}:group:jobs`,
    groupActive: `${tag}:group:active`,
    groupState: `${tag}:group:state`,
    wakeChannel: `${tag}:wake`,
  };
}

/**
 * STRING, expires with the lease: the jobs one claim call took ("id\ntoken\n..."), so that a claim
 * resent after a lost reply answers with the same jobs instead of leaving them to run out their lease.
 */
export function claimMemoKey(prefix: string, queue: string, partition: number, claimId: string): string {
  return `${prefix}:{${queue}:${partition}}:claim:${claimId}`;
}

/**
 * ZSET token -> failedAt (ms), expires: the tokens whose fail was applied in the last 90 s, so that a
 * fail resent after a lost reply answers as the first send did (lua/fail.lua), not `stale`.
 */
export function failMemoKey(prefix: string, queue: string, partition: number): string {
  return `${prefix}:{${queue}:${partition}}:failed`;
}

/**
 * LIST, one bucket of the far-future tier (time wheel): entries "<id>\n<dueAt - bucket start>\n<record>"
 * of jobs due in one bucket width; `n` = floor(dueAt / width) * 100000 + sub-bucket. The scripts
 * build it in Lua (lua/includes/wheel.lua, wheelBucketKey); this is for tools and tests.
 */
export function wheelBucketKey(prefix: string, queue: string, partition: number, n: number | string): string {
  return `${prefix}:{${queue}:${partition}}:wheel:${n}`;
}

/**
 * HASH, one shard of the wheel's index, id -> bucket number; the shard of an id is chosen by linear
 * hashing on its SHA-1 (lua/includes/wheel.lua, wheelShardKey).
 */
export function wheelIndexKey(prefix: string, queue: string, partition: number, shard: number | string): string {
  return `${prefix}:{${queue}:${partition}}:wheel:idx:${shard}`;
}

/**
 * The limiter of a queue with `rate` or `concurrency` limits (lua/limiter.lua): in partition 0's
 * slot, one for all partitions. `starts`: ZSET of the starts of the last window (a sliding-window
 * log); `slots`: ZSET of the jobs holding a concurrency slot, member -> deadline; `wakeChannel`:
 * published when a slot frees while the limit was full.
 */
export function limiterKeys(prefix: string, queue: string): { starts: string; slots: string; wakeChannel: string } {
  const tag = `${prefix}:{${queue}:0}`;
  return { starts: `${tag}:limiter:starts`, slots: `${tag}:limiter:slots`, wakeChannel: `${tag}:limiter:wake` };
}

/** ZSET id -> dueAt (ms): the waiting jobs of one group, in due order (lua/includes/groups.lua). */
export function groupQueueKey(prefix: string, queue: string, partition: number, group: string): string {
  return `${prefix}:{${queue}:${partition}}:group:q:${group}`;
}

/** ZSET token -> claimed at (ms), expires: the starts of one group within its rate window (lua/includes/groups.lua). */
export function groupRateKey(prefix: string, queue: string, partition: number, group: string): string {
  return `${prefix}:{${queue}:${partition}}:group:r:${group}`;
}

/** SET of queue names that have been used under this prefix (for admin tools). */
export function queueRegistryKey(prefix: string): string {
  return `${prefix}:queues`;
}
