// The chaos suite's checker: what the ledgers (outside Redis) and a final raw read of Redis say about
// lost, duplicated and early jobs, and whether every job is in exactly one state.
import type { Redis } from 'ioredis';
import { partitionKeys } from '../../src/store/keys.js';
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

/** What Redis holds of one queue partition, read in one MULTI. */
export interface RedisSnapshot {
  readonly jobs: ReadonlySet<string>;
  readonly due: ReadonlySet<string>;
  readonly active: ReadonlySet<string>;
  readonly dead: ReadonlySet<string>;
  readonly errors: ReadonlySet<string>;
}

export interface InvariantReport {
  readonly ok: boolean;
  readonly jobs: number;
  /** In the jobs hash but in no state zset. */
  readonly stateless: string[];
  /** In a state zset but not in the jobs hash (an index entry without its record). */
  readonly orphans: string[];
  /** In two state zsets at once. */
  readonly overlapping: string[];
  /** An error entry without its job. */
  readonly strayErrors: string[];
}

/**
 * Reads partition 0 of `queue` with raw reads, atomically: in one read-only script, because Redis
 * refuses to queue commands of a MULTI while it is out of memory, and the OOM fault reads under OOM.
 */
const SNAPSHOT_SCRIPT = `#!lua flags=no-writes
return { redis.call('HKEYS', KEYS[1]), redis.call('ZRANGE', KEYS[2], 0, -1), redis.call('ZRANGE', KEYS[3], 0, -1),
  redis.call('ZRANGE', KEYS[4], 0, -1), redis.call('HKEYS', KEYS[5]) }`;

export async function snapshot(raw: Redis, queue: string, prefix = 'sg'): Promise<RedisSnapshot> {
  const keys = partitionKeys(prefix, queue, 0);
  const replies = (await raw.eval(SNAPSHOT_SCRIPT, 5, keys.jobs, keys.due, keys.active, keys.dead, keys.errors)) as string[][];
  const [jobs, due, active, dead, errors] = replies.map(list => new Set(list)) as [Set<string>, Set<string>, Set<string>, Set<string>, Set<string>];
  return { jobs, due, active, dead, errors };
}

/** Every job in exactly one state: jobs hash keys == due ∪ active ∪ dead, the three disjoint. */
export function checkInvariant(snap: RedisSnapshot): InvariantReport {
  const stateless: string[] = [];
  const overlapping: string[] = [];
  for (const id of snap.jobs) {
    const states = Number(snap.due.has(id)) + Number(snap.active.has(id)) + Number(snap.dead.has(id));
    if (states === 0) stateless.push(id);
    if (states > 1) overlapping.push(id);
  }
  const orphans = [...new Set([...snap.due, ...snap.active, ...snap.dead])].filter(id => !snap.jobs.has(id));
  const strayErrors = [...snap.errors].filter(id => !snap.jobs.has(id));
  return {
    ok: stateless.length + overlapping.length + orphans.length + strayErrors.length === 0,
    jobs: snap.jobs.size,
    stateless,
    orphans,
    overlapping,
    strayErrors,
  };
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
  for (const [id, record] of byJob) if (record.ends > 0 && !input.final.jobs.has(id)) completedIds.add(id);
  const lost = [...input.acknowledged].filter(id => !completedIds.has(id) && !input.final.dead.has(id));
  const stuck = lost.filter(id => input.final.due.has(id) || input.final.active.has(id));
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
  if (killedAt !== undefined && killedAt >= earlier.at - 1 && killedAt <= later.at) return { cause: 'kill', why: `earlier worker SIGKILLed at ${killedAt}: ${describe}` };
  const freeze = input.freezes.find(f => f.source === earlier.source && f.from <= later.at && f.to - f.from >= input.leaseMs);
  if (freeze) return { cause: 'freeze', why: `earlier worker frozen ${freeze.from}-${freeze.to}: ${describe}` };
  if (later.at >= earlier.at + input.leaseMs - CLAIM_TO_START_SLACK_MS) return { cause: 'lease', why: `lease ran out: ${describe}` };
  return { cause: 'unexplained', why: `started again ${later.at - earlier.at} ms later, before the lease (${input.leaseMs} ms) could run out: ${describe}` };
}
