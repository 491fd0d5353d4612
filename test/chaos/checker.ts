// The chaos suite's checker: what the ledgers (outside Redis) and a final raw read of Redis say about
// lost, duplicated and early jobs, and whether every job is in exactly one state.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { partitionKeys } from '../../src/store/redis/keys.js';
import type { ChaosEntry } from './worker.js';

/** A worker process killed with SIGKILL: its ledger and when. */
export interface KillEvent {
  readonly source: string;
  readonly at: number;
}

/** A worker process frozen with SIGSTOP from `from` to `to` (local ms). */
export interface FreezeEvent {
  readonly source: string;
  readonly from: number;
  readonly to: number;
}

/** What Redis holds of one queue partition, read atomically (one read-only script). */
export interface RedisSnapshot {
  readonly jobs: ReadonlySet<string>;
  readonly due: ReadonlySet<string>;
  readonly active: ReadonlySet<string>;
  readonly dead: ReadonlySet<string>;
  readonly errors: ReadonlySet<string>;
  /** Ids with a lease in `leases` (lua/includes/leases.lua: one per active job). */
  readonly leases: ReadonlySet<string>;
  /** Completed jobs kept by retention: `completed` (ZSET) and `results` (HASH) ids (lua/includes/retention.lua, "Retention"). */
  readonly completed: ReadonlySet<string>;
  readonly results: ReadonlySet<string>;
  /** Ids with a deadline entry in `expiry` (lua/includes/keys.lua, "Deadlines": waiting jobs only). */
  readonly expiry: ReadonlySet<string>;
  /** The far-future tier (lua/includes/wheel.lua, "time wheel"). */
  readonly wheel: WheelSnapshot;
  /** Groups (lua/includes/groups.lua, "Groups"). */
  readonly groups: GroupSnapshot;
}

export interface GroupSnapshot {
  /** Job id -> its group, from its record (in `jobs` or a wheel bucket): grouped jobs only. */
  readonly recordGroup: ReadonlyMap<string, string>;
  /** Job id -> its group, from its lease: active grouped jobs only. */
  readonly leaseGroup: ReadonlyMap<string, string>;
  /** Job id -> [group, score] for every entry of every group queue `group:q:<group>` found by SCAN. */
  readonly queued: ReadonlyMap<string, readonly [string, number][]>;
  /** `group:due`: id -> score. */
  readonly groupDue: ReadonlyMap<string, number>;
  /** `group:jobs`: group -> count. */
  readonly jobsCount: ReadonlyMap<string, number>;
  /** `group:active`: group -> count. */
  readonly activeCount: ReadonlyMap<string, number>;
  /** `groups`: group -> turn or time. */
  readonly schedule: ReadonlyMap<string, number>;
  /** Groups flagged paused (`p:`) and held (`h:`) in `group:state`. */
  readonly paused: ReadonlySet<string>;
  readonly held: ReadonlySet<string>;
  /** Groups whose in-order retry must start first (`b:`): they may wait past their head. */
  readonly blocked: ReadonlySet<string>;
}

export interface WheelSnapshot {
  /** Job id -> the numbers of the buckets (listed in the `wheel` ZSET) whose entries name it. */
  readonly buckets: ReadonlyMap<string, readonly string[]>;
  /** Job id -> { bucket number, shard } of its index entries, over every index shard key found. */
  readonly index: ReadonlyMap<string, readonly { n: string; shard: number }[]>;
  /** Bucket numbers listed in `wheel` whose LIST is missing (empty). */
  readonly emptyBuckets: readonly string[];
  /** Bucket LIST keys found that `wheel` does not list (their jobs would never move). */
  readonly unlistedBuckets: readonly string[];
  /** The shard count the index's linear hashing state (meta idxLevel, idxSplit) implies. */
  readonly idxLevel: number;
  readonly idxSplit: number;
  /** counters `wheeled`, which stats reads as the tier's size. */
  readonly wheeledCounter: number;
  /** Entries over all listed buckets. */
  readonly entries: number;
}

export interface InvariantReport {
  readonly ok: boolean;
  /** Jobs that exist: in the jobs hash or in a wheel bucket. */
  readonly jobs: number;
  /** In the jobs hash but in no state zset and no wheel bucket. */
  readonly stateless: string[];
  /** In a state zset but not in the jobs hash (an index entry without its record). */
  readonly orphans: string[];
  /** In two places at once: two state zsets, two bucket entries, or a zset and a bucket. */
  readonly overlapping: string[];
  /** An error entry without its job. */
  readonly strayErrors: string[];
  /** Wheel problems: an index entry and the bucket holding the id disagree (either missing or another bucket), an index entry in a shard its id does not hash to, a job in a bucket that also has a `jobs` record, a bucket listed but empty or kept but not listed, the `wheeled` counter off. */
  readonly wheel: string[];
  /** An active job without a lease, or a lease of a job that is not active. */
  readonly leases: string[];
  /** A kept completed job that also exists as a job (in `jobs` or a wheel bucket), or that is in only one of `completed` and `results`. */
  readonly completed: string[];
  /** A deadline entry (`expiry`) of a job that is not waiting (in `due` or a wheel bucket). */
  readonly expiry: string[];
  /**
   * Group problems: a grouped job in `due` or in a queue not its group's, a queue entry without its
   * `group:due` twin (or the other way), a group's counts (`group:jobs`, `group:active`) off, a
   * lease naming another group than the record, a group with due work that no claim would serve
   * (not paused, not held, and no `groups` entry at or before its head), a held group with nothing running.
   */
  readonly groups: string[];
}

/** What broke in a report, field by field, with the first few entries of each: for a criterion's detail. */
export function invariantProblems(report: InvariantReport, shown = 3): string {
  const fields = ['stateless', 'orphans', 'overlapping', 'strayErrors', 'wheel', 'leases', 'completed', 'expiry', 'groups'] as const;
  return fields
    .filter(field => report[field].length > 0)
    .map(field => `${field} ${report[field].length}: ${report[field].slice(0, shown).join(', ')}`)
    .join('; ');
}

/**
 * Reads partition 0 of `queue` with raw reads, atomically: in one read-only script, because Redis
 * refuses to queue commands of a MULTI while it is out of memory, and the OOM fault reads under OOM.
 * The wheel's bucket and index keys are found by SCAN (MATCH on the partition's tag), so that a key
 * the `wheel` ZSET or the linear hashing state forgot is seen too.
 */
const SNAPSHOT_SCRIPT = `#!lua flags=no-writes
local tag = string.sub(KEYS[2], 1, -5)
local function escape(s) return (string.gsub(s, '[%*%?%[%]\\\\]', '\\\\%0')) end
local bucketKeys, shardKeys = {}, {}
local cursor = '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', escape(tag) .. ':wheel:*', 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local rest = string.sub(key, #tag + 8)
    if string.sub(rest, 1, 4) == 'idx:' then shardKeys[#shardKeys + 1] = string.sub(rest, 5)
    elseif string.match(rest, '^%d+$') then bucketKeys[#bucketKeys + 1] = rest end
  end
until cursor == '0'
local listed = redis.call('ZRANGE', KEYS[6], 0, -1)
local entries = {}
for _, n in ipairs(listed) do
  for _, e in ipairs(redis.call('LRANGE', tag .. ':wheel:' .. n, 0, -1)) do
    entries[#entries + 1] = n
    entries[#entries + 1] = string.sub(e, 1, string.find(e, '\\n', 1, true) - 1)
  end
end
local index = {}
for _, s in ipairs(shardKeys) do
  local all = redis.call('HGETALL', tag .. ':wheel:idx:' .. s)
  for i = 1, #all, 2 do
    index[#index + 1] = s
    index[#index + 1] = all[i]
    index[#index + 1] = all[i + 1]
  end
end
local meta = redis.call('HMGET', KEYS[7], 'idxLevel', 'idxSplit')
-- Groups: each record's group (the line after its header), each lease's, and every group queue.
local function groupOf(rec)
  local nl = string.find(rec, '\\n', 1, true)
  if not nl or string.byte(rec, nl + 1) ~= 31 then return nil end
  return string.sub(rec, nl + 2, string.find(rec, '\\n', nl + 2, true) - 1)
end
local grouped = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local g = groupOf(all[i + 1])
  if g then grouped[#grouped + 1] = all[i]; grouped[#grouped + 1] = g end
end
for _, n in ipairs(listed) do
  for _, e in ipairs(redis.call('LRANGE', tag .. ':wheel:' .. n, 0, -1)) do
    local nl1 = string.find(e, '\\n', 1, true)
    local nl2 = string.find(e, '\\n', nl1 + 1, true)
    local g = groupOf(string.sub(e, nl2 + 1))
    if g then grouped[#grouped + 1] = string.sub(e, 1, nl1 - 1); grouped[#grouped + 1] = g end
  end
end
local leaseGroups = {}
local leaseAll = redis.call('HGETALL', KEYS[9])
for i = 1, #leaseAll, 2 do
  local g = string.match(leaseAll[i + 1], '^%d+,%d+,(.+)$')
  if g then leaseGroups[#leaseGroups + 1] = leaseAll[i]; leaseGroups[#leaseGroups + 1] = g end
end
local queued = {}
cursor = '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', escape(tag) .. ':group:q:*', 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local g = string.sub(key, #tag + 10)
    local members = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    for i = 1, #members, 2 do
      queued[#queued + 1] = members[i]; queued[#queued + 1] = g; queued[#queued + 1] = members[i + 1]
    end
  end
until cursor == '0'
local state = redis.call('HKEYS', KEYS[17])
return { redis.call('HKEYS', KEYS[1]), redis.call('ZRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1),
  redis.call('ZRANGE', KEYS[4], 0, -1), redis.call('HKEYS', KEYS[5]), listed, bucketKeys, entries, index,
  { meta[1] or '0', meta[2] or '0', redis.call('HGET', KEYS[8], 'wheeled') or '0' }, redis.call('HKEYS', KEYS[9]),
  redis.call('ZRANGE', KEYS[10], 0, -1), redis.call('HKEYS', KEYS[11]), redis.call('HKEYS', KEYS[12]),
  grouped, leaseGroups, queued, redis.call('ZRANGE', KEYS[13], 0, -1, 'WITHSCORES'), redis.call('ZRANGE', KEYS[14], 0, -1, 'WITHSCORES'),
  redis.call('HGETALL', KEYS[15]), redis.call('ZRANGE', KEYS[16], 0, -1, 'WITHSCORES'), state }`;

export async function snapshot(raw: Redis, queue: string, prefix = 'sg'): Promise<RedisSnapshot> {
  const keys = partitionKeys(prefix, queue, 0);
  const replies = (await raw.eval(
    SNAPSHOT_SCRIPT,
    17,
    keys.jobs,
    keys.due,
    keys.active,
    keys.dead,
    keys.errors,
    keys.wheel,
    keys.meta,
    keys.counters,
    keys.leases,
    keys.completed,
    keys.results,
    keys.expiry,
    keys.groupDue,
    keys.groupJobs,
    keys.groupActive,
    keys.groups,
    keys.groupState,
  )) as string[][];
  const [jobs, due, active, dead, errors] = replies.slice(0, 5).map(list => new Set(list)) as [
    Set<string>,
    Set<string>,
    Set<string>,
    Set<string>,
    Set<string>,
  ];
  const [listed, bucketKeys, entries, index, state, leased, completed, results, expiring] = replies.slice(5, 14) as [
    string[],
    string[],
    string[],
    string[],
    [string, string, string],
    string[],
    string[],
    string[],
    string[],
  ];
  const [grouped, leaseGroups, queuedFlat, groupDueFlat, jobsCountFlat, activeFlat, scheduleFlat, stateFields] = replies.slice(
    14,
  ) as string[][];
  const pairs = (flat: readonly string[], step = 2) => {
    const out: string[][] = [];
    for (let i = 0; i < flat.length; i += step) out.push(flat.slice(i, i + step));
    return out;
  };
  const queued = new Map<string, [string, number][]>();
  for (const [id, group, score] of pairs(queuedFlat as string[], 3))
    queued.set(id as string, [...(queued.get(id as string) ?? []), [group as string, Number(score)]]);
  const groups: GroupSnapshot = {
    recordGroup: new Map(pairs(grouped as string[]).map(([id, g]) => [id as string, g as string])),
    leaseGroup: new Map(pairs(leaseGroups as string[]).map(([id, g]) => [id as string, g as string])),
    queued,
    groupDue: new Map(pairs(groupDueFlat as string[]).map(([id, s]) => [id as string, Number(s)])),
    jobsCount: new Map(pairs(jobsCountFlat as string[]).map(([g, s]) => [g as string, Number(s)])),
    activeCount: new Map(pairs(activeFlat as string[]).map(([g, s]) => [g as string, Number(s)])),
    schedule: new Map(pairs(scheduleFlat as string[]).map(([g, s]) => [g as string, Number(s)])),
    paused: new Set((stateFields as string[]).filter(f => f.startsWith('p:')).map(f => f.slice(2))),
    held: new Set((stateFields as string[]).filter(f => f.startsWith('h:')).map(f => f.slice(2))),
    blocked: new Set((stateFields as string[]).filter(f => f.startsWith('b:')).map(f => f.slice(2))),
  };
  const buckets = new Map<string, string[]>();
  for (let i = 0; i < entries.length; i += 2) {
    const id = entries[i + 1] as string;
    buckets.set(id, [...(buckets.get(id) ?? []), entries[i] as string]);
  }
  const indexed = new Map<string, { n: string; shard: number }[]>();
  for (let i = 0; i < index.length; i += 3) {
    const id = index[i + 1] as string;
    indexed.set(id, [...(indexed.get(id) ?? []), { n: index[i + 2] as string, shard: Number(index[i]) }]);
  }
  const listedSet = new Set(listed);
  const existing = new Set(bucketKeys);
  return {
    jobs,
    due,
    active,
    dead,
    errors,
    leases: new Set(leased),
    completed: new Set(completed),
    results: new Set(results),
    expiry: new Set(expiring),
    wheel: {
      buckets,
      index: indexed,
      emptyBuckets: listed.filter(n => !existing.has(n)),
      unlistedBuckets: bucketKeys.filter(n => !listedSet.has(n)),
      idxLevel: Number(state[0]),
      idxSplit: Number(state[1]),
      wheeledCounter: Number(state[2]),
      entries: entries.length / 2,
    },
    groups,
  };
}

/** The index shard of a job id under linear hashing (lua/includes/wheel.lua, wheelShardKey). */
export function wheelShardOf(id: string, idxLevel: number, idxSplit: number): number {
  const h = Number.parseInt(createHash('sha1').update(id).digest('hex').slice(0, 8), 16);
  const s = h % 2 ** idxLevel;
  return s < idxSplit ? h % 2 ** (idxLevel + 1) : s;
}

/**
 * Every job in exactly one state: a job exists iff the jobs hash or a wheel bucket has it, and then
 * exactly one of due, active, dead and one wheel bucket entry holds it; every wheel index entry
 * names the bucket holding its id, from the shard its id hashes to, and every bucket entry has one;
 * a lease only for an active job, a deadline (`expiry` entry) only for a waiting one.
 * A completed job kept by retention is in `completed` and `results` and nowhere else, so every id
 * is in exactly one of due, active, dead, completed and a wheel bucket.
 */
export function checkInvariant(snap: RedisSnapshot): InvariantReport {
  const stateless: string[] = [];
  const overlapping: string[] = [];
  const wheel: string[] = [];
  const { buckets, index } = snap.wheel;
  for (const id of new Set([...snap.jobs, ...buckets.keys()])) {
    const inBuckets = buckets.get(id)?.length ?? 0;
    const inGroupQueues = snap.groups.queued.get(id)?.length ?? 0;
    const states = Number(snap.due.has(id)) + Number(snap.active.has(id)) + Number(snap.dead.has(id)) + inBuckets + inGroupQueues;
    if (states === 0) stateless.push(id);
    if (states > 1) overlapping.push(id);
    if (inBuckets > 0 && snap.jobs.has(id)) wheel.push(`${id}: in a wheel bucket and in the jobs hash`);
  }
  const orphans = [...new Set([...snap.due, ...snap.active, ...snap.dead, ...snap.groups.queued.keys()])].filter(id => !snap.jobs.has(id));
  const strayErrors = [...snap.errors].filter(id => !snap.jobs.has(id) && !buckets.has(id));
  for (const [id, held] of buckets) {
    const entries = index.get(id) ?? [];
    if (entries.length !== 1 || entries[0]?.n !== held[0])
      wheel.push(`${id}: in bucket(s) ${held.join(', ')}, index says ${entries.map(e => e.n).join(', ') || 'nothing'}`);
  }
  for (const [id, entries] of index) {
    if (!buckets.has(id)) wheel.push(`${id}: index entry (bucket ${entries.map(e => e.n).join(', ')}) but no bucket holds it`);
    const shard = wheelShardOf(id, snap.wheel.idxLevel, snap.wheel.idxSplit);
    for (const entry of entries) if (entry.shard !== shard) wheel.push(`${id}: index entry in shard ${entry.shard}, hashes to ${shard}`);
  }
  for (const n of snap.wheel.emptyBuckets) wheel.push(`bucket ${n}: listed in wheel but empty`);
  for (const n of snap.wheel.unlistedBuckets) wheel.push(`bucket ${n}: holds entries but wheel does not list it`);
  if (snap.wheel.wheeledCounter !== snap.wheel.entries)
    wheel.push(`counter wheeled ${snap.wheel.wheeledCounter}, buckets hold ${snap.wheel.entries}`);
  const leases = [
    ...[...snap.active].filter(id => !snap.leases.has(id)).map(id => `${id}: active without a lease`),
    ...[...snap.leases].filter(id => !snap.active.has(id)).map(id => `${id}: a lease but not active`),
  ];
  const completed = [
    ...[...snap.completed].filter(id => snap.jobs.has(id) || buckets.has(id)).map(id => `${id}: kept completed and also a job`),
    ...[...snap.completed].filter(id => !snap.results.has(id)).map(id => `${id}: in completed without its results entry`),
    ...[...snap.results].filter(id => !snap.completed.has(id)).map(id => `${id}: a results entry but not in completed`),
  ];
  const expiry = [...snap.expiry]
    .filter(id => !snap.due.has(id) && !buckets.has(id) && !snap.groups.queued.has(id))
    .map(id => `${id}: a deadline but not waiting`);
  const groups = checkGroups(snap);
  return {
    ok:
      stateless.length +
        overlapping.length +
        orphans.length +
        strayErrors.length +
        wheel.length +
        leases.length +
        completed.length +
        expiry.length +
        groups.length ===
      0,
    jobs: new Set([...snap.jobs, ...buckets.keys()]).size,
    stateless,
    orphans,
    overlapping,
    strayErrors,
    wheel,
    leases,
    completed,
    expiry,
    groups,
  };
}

/** The group invariants of {@link InvariantReport.groups} (lua/includes/groups.lua, "Groups"). */
function checkGroups(snap: RedisSnapshot): string[] {
  const problems: string[] = [];
  const g = snap.groups;
  const expectedJobs = new Map<string, number>();
  const expectedActive = new Map<string, number>();
  const heads = new Map<string, number>();
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  for (const [id, entries] of g.queued) {
    const [group, score] = entries[0] as [string, number];
    if (entries.length > 1) problems.push(`${id}: in ${entries.length} group queues`);
    if (g.recordGroup.get(id) !== group)
      problems.push(`${id}: in group ${group}'s queue, its record says ${g.recordGroup.get(id) ?? 'no group'}`);
    if (g.groupDue.get(id) !== Math.floor(score))
      problems.push(`${id}: queued at ${score}, group:due says ${g.groupDue.get(id) ?? 'nothing'}`);
    heads.set(group, Math.min(heads.get(group) ?? Number.POSITIVE_INFINITY, Math.floor(score)));
  }
  for (const id of g.groupDue.keys()) if (!g.queued.has(id)) problems.push(`${id}: in group:due but in no group queue`);
  for (const [id, group] of g.recordGroup) {
    if (snap.due.has(id)) problems.push(`${id}: of group ${group}, but in due`);
    if (g.queued.has(id) || snap.wheel.buckets.has(id) || snap.active.has(id)) bump(expectedJobs, group);
    if (snap.active.has(id)) {
      bump(expectedActive, group);
      if (g.leaseGroup.get(id) !== group) problems.push(`${id}: of group ${group}, its lease says ${g.leaseGroup.get(id) ?? 'no group'}`);
    }
  }
  for (const group of new Set([...expectedJobs.keys(), ...g.jobsCount.keys()])) {
    if ((expectedJobs.get(group) ?? 0) !== (g.jobsCount.get(group) ?? 0))
      problems.push(`group ${group}: group:jobs ${g.jobsCount.get(group) ?? 0}, holds ${expectedJobs.get(group) ?? 0} waiting or active`);
  }
  for (const group of new Set([...expectedActive.keys(), ...g.activeCount.keys()])) {
    if ((expectedActive.get(group) ?? 0) !== (g.activeCount.get(group) ?? 0))
      problems.push(`group ${group}: group:active ${g.activeCount.get(group) ?? 0}, ${expectedActive.get(group) ?? 0} active`);
  }
  for (const [group, head] of heads) {
    // (A group waiting for its rate window may also wait past its head: the chaos workload sets no group rate.)
    if (g.paused.has(group) || g.held.has(group) || g.blocked.has(group)) continue;
    const at = g.schedule.get(group);
    if (at === undefined || (at >= 1e12 && at > head))
      problems.push(`group ${group}: due work from ${head}, but no claim would serve it (groups says ${at ?? 'nothing'})`);
  }
  for (const group of g.held) if ((g.activeCount.get(group) ?? 0) === 0) problems.push(`group ${group}: held with nothing running`);
  return problems;
}

export interface CheckInput {
  readonly entries: readonly ChaosEntry[];
  /** Ids whose add resolved. */
  readonly acknowledged: ReadonlySet<string>;
  /** Every id a producer sent (acknowledged or not). */
  readonly attempted: ReadonlySet<string>;
  readonly kills: readonly KillEvent[];
  readonly freezes: readonly FreezeEvent[];
  readonly leaseMs: number;
  /** Redis after the drain. */
  readonly final: RedisSnapshot;
}

export type DuplicateCause = 'kill' | 'freeze' | 'lease';

export interface Duplicate {
  readonly id: string;
  readonly cause: DuplicateCause | 'unexplained';
  readonly why: string;
  /** The run that lost the job, and the one that started it again. */
  readonly earlier: ChaosEntry;
  readonly later: ChaosEntry;
}

export interface CheckReport {
  readonly acknowledged: number;
  /** Acknowledged jobs neither completed (handler ended and the job left Redis) nor dead. */
  readonly lost: string[];
  /** Of the lost: still waiting or active in Redis after the drain. */
  readonly stuck: string[];
  /** Ids whose `completed` event fired twice (two acks applied): never allowed. */
  readonly doneTwice: string[];
  /** Every start after a job's first, with its explanation. */
  readonly duplicates: Duplicate[];
  readonly duplicatesByCause: Record<DuplicateCause | 'unexplained', number>;
  /** Starts before the job's due time (Redis's dueAt, or the producer's own bound). */
  readonly early: ChaosEntry[];
  /** Starts of ids no producer sent. */
  readonly phantoms: string[];
  readonly dead: number;
  readonly completed: number;
  /** First start minus dueAt, ms: p50, p99, max. */
  readonly lateness: { p50: number; p99: number; max: number };
  readonly stale: number;
  readonly errors: number;
  readonly invariant: InvariantReport;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** How much earlier than its `start` line a claim may have happened (a busy event loop). */
const CLAIM_TO_START_SLACK_MS = 1_000;

export function check(input: CheckInput): CheckReport {
  const byJob = new Map<string, { starts: ChaosEntry[]; ends: number; dones: ChaosEntry[] }>();
  let stale = 0;
  let errors = 0;
  const early: ChaosEntry[] = [];
  for (const entry of input.entries) {
    if (entry.kind === 'error') {
      errors += 1;
      continue;
    }
    if (entry.kind === 'stale') stale += 1;
    let record = byJob.get(entry.id);
    if (!record) byJob.set(entry.id, (record = { starts: [], ends: 0, dones: [] }));
    if (entry.kind === 'start') {
      record.starts.push(entry);
      if (entry.at < entry.dueAt || entry.at < entry.minDue) early.push(entry);
    } else if (entry.kind === 'end') record.ends += 1;
    else if (entry.kind === 'done') record.dones.push(entry);
  }

  const completedIds = new Set<string>();
  const { jobs: left, wheel } = input.final;
  for (const [id, record] of byJob) if (record.ends > 0 && !left.has(id) && !wheel.buckets.has(id)) completedIds.add(id);
  const lost = [...input.acknowledged].filter(id => !completedIds.has(id) && !input.final.dead.has(id));
  const stuck = lost.filter(id => input.final.due.has(id) || input.final.active.has(id) || wheel.buckets.has(id));
  const doneTwice = [...byJob].filter(([, record]) => record.dones.length > 1).map(([id]) => id);
  const phantoms = [...byJob.keys()].filter(id => !input.attempted.has(id));

  const killsBySource = new Map<string, number>();
  for (const kill of input.kills) killsBySource.set(kill.source, kill.at);
  const duplicates: Duplicate[] = [];
  const lateness: number[] = [];
  for (const [id, record] of byJob) {
    // In claim order: a higher attempt is a later claim, even when its start line came first (a
    // frozen worker writes its `start` after it is continued).
    const starts = [...record.starts].sort((a, b) => a.attempt - b.attempt || a.at - b.at);
    if (starts.length > 0) lateness.push(Math.min(...starts.map(s => s.at)) - (starts[0] as ChaosEntry).dueAt);
    for (let i = 1; i < starts.length; i++) {
      const earlier = starts[i - 1] as ChaosEntry;
      const later = starts[i] as ChaosEntry;
      duplicates.push({ id, earlier, later, ...explain(earlier, later, record.dones, killsBySource, input) });
    }
  }
  const duplicatesByCause = { kill: 0, freeze: 0, lease: 0, unexplained: 0 };
  for (const duplicate of duplicates) duplicatesByCause[duplicate.cause] += 1;

  return {
    acknowledged: input.acknowledged.size,
    lost,
    stuck,
    doneTwice,
    duplicates,
    duplicatesByCause,
    early,
    phantoms,
    dead: input.final.dead.size,
    completed: completedIds.size,
    lateness: { p50: percentile(lateness, 50), p99: percentile(lateness, 99), max: lateness.length ? Math.max(...lateness) : 0 },
    stale,
    errors,
    invariant: checkInvariant(input.final),
  };
}

/**
 * Why a job was started again: the earlier run's claim must have lost its lease, because its worker
 * was killed, or frozen past the lease, or the lease ran out otherwise (Redis down, BUSY...). A new
 * claim always has a higher attempt; the same attempt twice, or a start after an applied ack, is
 * unexplained.
 */
function explain(
  earlier: ChaosEntry,
  later: ChaosEntry,
  dones: readonly ChaosEntry[],
  killsBySource: ReadonlyMap<string, number>,
  input: CheckInput,
): { cause: Duplicate['cause']; why: string } {
  const describe = `attempt ${earlier.attempt} at ${earlier.at} (${earlier.source}) then attempt ${later.attempt} at ${later.at} (${later.source})`;
  if (later.attempt <= earlier.attempt) return { cause: 'unexplained', why: `same attempt claimed twice: ${describe}` };
  if (dones.some(done => done.attempt === earlier.attempt && done.source === earlier.source)) {
    return { cause: 'unexplained', why: `started again after the earlier run's ack applied: ${describe}` };
  }
  const killedAt = killsBySource.get(earlier.source);
  if (killedAt !== undefined && killedAt >= earlier.at - 1 && killedAt <= later.at)
    return { cause: 'kill', why: `earlier worker SIGKILLed at ${killedAt}: ${describe}` };
  const freeze = input.freezes.find(f => f.source === earlier.source && f.from <= later.at && f.to - f.from >= input.leaseMs);
  if (freeze) return { cause: 'freeze', why: `earlier worker frozen ${freeze.from}-${freeze.to}: ${describe}` };
  if (later.at >= earlier.at + input.leaseMs - CLAIM_TO_START_SLACK_MS) return { cause: 'lease', why: `lease ran out: ${describe}` };
  return {
    cause: 'unexplained',
    why: `started again ${later.at - earlier.at} ms later, before the lease (${input.leaseMs} ms) could run out: ${describe}`,
  };
}
