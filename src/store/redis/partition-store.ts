import type { Cluster, Redis } from 'ioredis';
import { decodeClaimed, decodeKept, decodeRecord, groupedPayload } from './record.js';
import { claimMemoKey, failMemoKey, limiterKeys, partitionKeys, type PartitionKeys } from './keys.js';
import { runScript, runScriptAndWait, type ScriptName } from './scripts.js';
import type { CancelResult, GroupInfo, GroupLimits, GroupTotals, IfExists, JobState, RescheduleResult } from '../../core/types.js';
import type { Due } from '../../core/validate.js';
import type {
  AddOutcome,
  AddStatus,
  ClaimResult,
  DueHistogram,
  EncodedJob,
  FailEntry,
  FailResult,
  JobSnapshot,
  LeaseRef,
  ListPosition,
  ListResult,
  PartitionStats,
  PartitionStorage,
  ResentFail,
  ScheduleWrite,
  ScheduleWriteResult,
} from '../partition-storage.js';
import { decodeSchedule, encodeSchedulePayload, encodeTickList } from './schedule-record.js';
import type { StoredSchedule } from '../stored.js';

export type { AddStatus, ClaimResult, EncodedJob, FailEntry, LeaseRef } from '../partition-storage.js';

const NO_KEYS: string[] = [];

/** How often claims trim a partition that keeps completed jobs, and one that keeps none (ms). */
const TRIM_KEPT_MS = 60_000;
const TRIM_KEPT_IDLE_MS = 600_000;

/** add.lua's status codes, by position. */
const ADD_STATUSES: readonly AddStatus[] = ['kept', 'added', 'replaced', 'running', 'completed-recently', 'tick'];

/**
 * A job as getJob.lua and listJobs.lua answer it, `score` being its score in the state's sorted set:
 * the due time (delayed, ready), the lease end (active), when it was dead-lettered (dead) or when
 * it completed (completed, whose `record` is "<result JSON>\n<record>").
 */
function snapshot(state: JobState, id: string, record: string, score: number, lastError: string, expiry: string): JobSnapshot {
  const error = lastError === '' ? undefined : lastError;
  if (state === 'completed') {
    const { job, resultJson } = decodeKept(id, record);
    return { state, job, dueAt: job.dueAt ?? score, finishedAt: score, resultJson, lastError: error };
  }
  const job = decodeRecord(id, record);
  // A waiting job's due time is its score; an active or dead one's is in its record.
  if (state === 'delayed' || state === 'ready') {
    // Its deadline, if it has one: the due time + the `expiry` entry's ms (lua/includes/keys.lua, "Deadlines").
    const expireAfterMs = expiry === '' ? Number.NaN : Number.parseInt(expiry, 10);
    return Number.isNaN(expireAfterMs)
      ? { state, job, dueAt: score, lastError: error }
      : { state, job, dueAt: score, expiresAt: score + expireAfterMs, lastError: error };
  }
  const dueAt = job.dueAt ?? score;
  if (state === 'active') return { state, job, dueAt, leaseUntil: score, lastError: error };
  // Only an expired job is dead without a delivery that ended (lua/includes/keys.lua, "Deadlines").
  return { state, job, dueAt, deadAt: score, reason: job.attempts === 0 ? 'expired' : 'failed', lastError: error };
}

/** Group limits as `meta` `groupLimits` and `l:<group>` hold them: "<concurrency>,<rateMax>,<ratePer>" (lua/includes/groups.lua). */
export function encodeGroupLimits(limits: GroupLimits): string {
  return `${limits.concurrency ?? ''},${limits.rate?.max ?? ''},${limits.rate?.per ?? ''}`;
}

function decodeGroupLimits(text: string): GroupLimits {
  const [concurrency = '', max = '', per = ''] = text.split(',');
  const limits: GroupLimits = {};
  if (concurrency !== '') limits.concurrency = Number(concurrency);
  if (max !== '' && per !== '') limits.rate = { max: Number(max), per: Number(per) };
  return limits;
}

/**
 * The storage of one queue partition in Redis: a typed call per Lua script. The only place that
 * knows each script's ARGV order and reply shape, and turns them into domain values.
 */
export class PartitionStore implements PartitionStorage {
  readonly keys: PartitionKeys;
  // When this process last had a claim trim the kept completed jobs (claim.lua ARGV[9]), whether
  // that left more to do, and whether the partition keeps completed jobs (as the last claim that
  // read `meta` said; undefined until one did).
  #trimmedAt = Number.NEGATIVE_INFINITY;
  #trimMore = false;
  #keeps: boolean | undefined;

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix: string,
    readonly queue: string,
    readonly partition: number,
  ) {
    this.keys = partitionKeys(prefix, queue, partition);
  }

  #run(name: ScriptName, args: ReadonlyArray<string | number>): Promise<unknown> {
    return runScript(this.redis, name, this.keys, args);
  }

  async setDefaultGroupLimits(limits: GroupLimits): Promise<void> {
    await this.#run('groupAdmin', ['setDefault', encodeGroupLimits(limits)]);
  }

  async setGroupLimits(group: string, limits: GroupLimits | undefined): Promise<void> {
    await this.#run('groupAdmin', ['setGroup', group, limits === undefined ? '' : encodeGroupLimits(limits)]);
  }

  async readGroupLimits(group: string | undefined): Promise<{ own: GroupLimits | undefined; fallback: GroupLimits }> {
    const [own, fallback] = (await this.#run('groupAdmin', ['read', group ?? ''])) as [string | null, string | null];
    return { own: own ? decodeGroupLimits(own) : undefined, fallback: fallback ? decodeGroupLimits(fallback) : {} };
  }

  async setGroupPaused(group: string, paused: boolean): Promise<boolean> {
    return ((await this.#run('groupAdmin', [paused ? 'pause' : 'resume', group])) as number) === 1;
  }

  async listGroups(from: number, limit: number): Promise<{ total: number; groups: GroupInfo[] }> {
    const reply = (await this.#run('groupAdmin', ['list', from, limit])) as [number, number, ...(string | number)[]];
    const groups: GroupInfo[] = [];
    for (let i = 2; i + 5 < reply.length; i += 6) {
      const jobs = Number(reply[i + 1]);
      const active = Number(reply[i + 2]);
      groups.push({
        group: String(reply[i]),
        waiting: jobs - active,
        ready: Number(reply[i + 3]),
        active,
        limited: Number(reply[i + 4]) === 1,
        paused: Number(reply[i + 5]) === 1,
      });
    }
    return { total: Number(reply[1]), groups };
  }

  async groupTotals(): Promise<GroupTotals> {
    const [withWork, held, paused] = (await this.#run('groupAdmin', ['totals'])) as [number, number, number];
    return { withWork, held, paused };
  }

  /**
   * Adds jobs. With `replication`, also waits for that many replicas to confirm the write
   * (`acknowledged` is then their count).
   */
  async add(jobs: readonly EncodedJob[], ifExists: IfExists, replication?: { replicas: number; timeoutMs: number }): Promise<AddOutcome> {
    const args: (string | number)[] = [ifExists];
    for (const job of jobs) {
      const delay = 'delayMs' in job.due ? job.due.delayMs : '';
      const at = 'atMs' in job.due ? job.due.atMs : '';
      // A traceparent travels as the end of `backoff`: the record's header as add.lua writes it.
      const backoff = job.traceparent === undefined ? job.backoff : `${job.backoff},${job.traceparent}`;
      args.push(job.id, delay, at, job.maxAttempts, backoff, groupedPayload(job.group, job.payloadJson), encodeExpiry(job));
    }
    let reply: number[];
    let acknowledged: number | undefined;
    if (replication) {
      const result = await runScriptAndWait(this.redis, 'add', this.keys, args, replication.replicas, replication.timeoutMs);
      reply = result.reply as number[];
      acknowledged = result.acknowledged;
    } else {
      reply = (await this.#run('add', args)) as number[];
    }
    const statuses: AddStatus[] = [];
    for (let i = 1; i < reply.length; i += 2) statuses.push(addStatus(reply[i] as number));
    return acknowledged === undefined ? { now: reply[0] as number, statuses } : { now: reply[0] as number, statuses, acknowledged };
  }

  /**
   * Reaps, then claims. `claimId` (unique per call) makes the call safe to resend: a resend after a
   * lost reply answers with the jobs the first run took, if they are still held under its tokens.
   * `answeredClaimId` names this caller's last claim whose reply arrived and took jobs (only those
   * leave a memo); its memo is deleted.
   */
  async claim(
    limit: number,
    leaseMs: number,
    reapLimit: number,
    defaultMaxAttempts: number,
    ids: { claimId: string; answeredClaimId: string | undefined },
    askSchedules = true,
    granted = false,
  ): Promise<ClaimResult> {
    const memoKey = claimMemoKey(this.prefix, this.queue, this.partition, ids.claimId);
    // The memo of a claim whose reply already arrived is no longer needed: drop it now.
    const answeredKey = claimMemoKey(this.prefix, this.queue, this.partition, ids.answeredClaimId ?? '-');
    const forget = ids.answeredClaimId === undefined ? '0' : '1';
    // Acks trim the kept completed jobs; a queue that gets none any more is trimmed by its claims:
    // the first of this process, then one a minute while the partition keeps jobs (every 10 min
    // while it keeps none: setRetention may have changed that), at once again after a full batch.
    // An idle claim pays one HMGET and a ZRANGEBYSCORE for it, inside its one call.
    const sinceMs = Date.now() - this.#trimmedAt;
    const trimKept = this.#trimMore || sinceMs >= (this.#keeps === false ? TRIM_KEPT_IDLE_MS : TRIM_KEPT_MS);
    const args = [
      limit,
      leaseMs,
      reapLimit,
      defaultMaxAttempts,
      forget,
      askSchedules ? '1' : '0',
      granted ? '1' : '0',
      trimKept ? '1' : '0',
    ];
    const reply = (await runScript(this.redis, 'claim', this.keys, args, [memoKey, answeredKey])) as [
      number,
      number,
      number,
      string,
      string,
      ...(string | number)[],
    ];
    // A fresh claim's tokens run on from the first; the answer to a resend lists them (claim.lua).
    // firstToken 0: no job, or the answer to a resend (its tokens follow; it names no schedules).
    const resent = reply[2] === 0 && reply[3] !== '';
    const jobs = decodeClaimed(reply[3], reply[4], reply[2], resent ? (reply.slice(5) as string[]) : undefined);
    const tend = resent || !reply[5] ? NO_KEYS : (reply[5] as string).split('\n');
    const scheduled = resent || reply[6] === -1 ? undefined : reply[6] === 1;
    const limited = resent || reply[7] === -1 ? undefined : reply[7] === 1;
    const maxResultBytes = resent || reply[8] === -1 ? undefined : (reply[8] as number);
    if (maxResultBytes !== undefined) this.#keeps = maxResultBytes > 0;
    const trimmed = resent ? -1 : (reply[9] as number);
    if (trimmed !== -1) {
      this.#trimmedAt = Date.now();
      // A full batch of trimming answers "call again now" (claim.lua): then trim again.
      this.#trimMore = trimmed > 0 && reply[1] === reply[0];
    }
    return { now: reply[0], nextAt: reply[1], jobs, tend, scheduled, limited, maxResultBytes };
  }

  /**
   * Completes jobs. Returns the positions in `leases` whose ack was refused because the token does
   * not hold the job (`stale`: another claim holds it, or another claim completed it) and those of
   * which no job exists nor completed lately (`notFound`). Every other position is acked: completed
   * now, or earlier under the same token (an ack resent after a lost reply). `results`, one JSON
   * text per lease ('' for none), travel only when given: a queue that keeps no completed jobs gets
   * the one argument of entries, as before retention existed.
   */
  async ack(leases: readonly LeaseRef[], results?: readonly string[]): Promise<{ stale: number[]; notFound: number[] }> {
    const args = results === undefined ? [encodeEntries(leases)] : [encodeEntries(leases), encodeResults(results)];
    const reply = (await this.#run('ack', args)) as number[];
    const split = reply.indexOf(-1, 1);
    return split === -1 ? { stale: reply.slice(1), notFound: [] } : { stale: reply.slice(1, split), notFound: reply.slice(split + 1) };
  }

  /**
   * Returns the positions in `entries` whose fail was rejected (stale token, or no such job; the
   * script counts them in `stale`), and those an earlier send of the same fail applied, with its
   * outcome (a resend after a lost reply).
   */
  async fail(entries: readonly FailEntry[]): Promise<FailResult> {
    const args = entries.flatMap(entry => [entry.id, entry.token, entry.retryDelayMs, entry.message]);
    const reply = (await runScript(this.redis, 'fail', this.keys, args, [
      failMemoKey(this.prefix, this.queue, this.partition),
    ])) as number[];
    const split = reply.indexOf(-1, 1);
    if (split === -1) return { now: reply[0] as number, stale: reply.slice(1), resent: [] };
    const resent: ResentFail[] = [];
    for (let i = split + 1; i + 1 < reply.length; i += 2) {
      const outcome = reply[i + 1] as number;
      resent.push(
        outcome === -1
          ? { index: reply[i] as number, result: 'dead' }
          : { index: reply[i] as number, result: 'retried', retryAt: outcome === 0 ? undefined : outcome },
      );
    }
    return { now: reply[0] as number, stale: reply.slice(1, split), resent };
  }

  /** Renews leases; returns the positions in `leases` this caller no longer holds. */
  async extend(leaseMs: number, leases: readonly LeaseRef[]): Promise<number[]> {
    return (await this.extendAt(leaseMs, leases)).lost;
  }

  /** `extend`, with the server's now at which the new leases of `leaseMs` began. */
  async extendAt(leaseMs: number, leases: readonly LeaseRef[]): Promise<{ now: number; lost: number[] }> {
    const reply = (await this.#run('extend', [leaseMs, encodeEntries(leases)])) as number[];
    return { now: reply[0] as number, lost: reply.slice(1) };
  }

  /**
   * Hands jobs back (due again at once, the attempt not counted). `freeSlots`: their concurrency
   * slots are freed in the same call; only for partition 0, whose slot holds the queue's limiter
   * (another partition's call would name keys of two Cluster slots).
   */
  async release(leases: readonly LeaseRef[], freeSlots = false): Promise<number> {
    if (!freeSlots) return (await this.#run('release', [encodeEntries(leases)])) as number;
    const limiter = limiterKeys(this.prefix, this.queue);
    return (await runScript(
      this.redis,
      'release',
      this.keys,
      [encodeEntries(leases), limiter.wakeChannel, this.partition],
      [limiter.starts, limiter.slots],
    )) as number;
  }

  async cancel(id: string): Promise<CancelResult> {
    const status = (await this.#run('cancel', [id])) as number;
    return status === 1 ? 'cancelled' : status === 2 ? 'running' : 'not_found';
  }

  async reschedule(id: string, due: Due): Promise<{ result: RescheduleResult; dueAt: number }> {
    const delay = 'delayMs' in due ? due.delayMs : '';
    const at = 'atMs' in due ? due.atMs : '';
    const [status, dueAt] = (await this.#run('reschedule', [id, delay, at])) as [number, number];
    const result: RescheduleResult = status === 1 ? 'rescheduled' : status === 2 ? 'running' : 'not_found';
    return { result, dueAt };
  }

  async get(id: string): Promise<JobSnapshot | null> {
    const reply = (await this.#run('getJob', [id])) as [JobState, string, string, string, string] | null;
    if (!reply) return null;
    const [state, record, score, lastError, expiry] = reply;
    return snapshot(state, id, record, Number(score), lastError, expiry);
  }

  async stats(): Promise<PartitionStats> {
    // Partition 0 holds the queue's limiter: its stats also say whether a limit has no room now.
    const limiter = this.partition === 0 ? limiterKeys(this.prefix, this.queue) : undefined;
    const reply = (
      limiter ? await runScript(this.redis, 'stats', this.keys, ['1'], [limiter.starts, limiter.slots]) : await this.#run('stats', [])
    ) as [number, number, number, number, number, number, number, number, ...string[]];
    const counters: Record<string, number> = {};
    for (let i = 8; i < reply.length; i += 2) counters[reply[i] as string] = Number(reply[i + 1]);
    // stats.lua counts all waiting jobs and the ready ones among them.
    return {
      now: reply[0],
      delayed: reply[1] - reply[2],
      ready: reply[2],
      active: reply[3],
      dead: reply[4],
      paused: reply[5] === 1,
      limitedAt: reply[6],
      completed: reply[7],
      counters,
    };
  }

  /**
   * Up to `limit` jobs in one state after `after` (the last job of the previous page, in the
   * state's order), or from the start. `count` is how many the page held, records lost or not.
   */
  async listJobs(state: JobState, after: ListPosition | undefined, limit: number): Promise<ListResult> {
    const reply = (await this.#run('listJobs', [state, after?.at ?? '', after?.id ?? '', limit])) as [number, ...string[]];
    const entries: JobSnapshot[] = [];
    for (let i = 1; i < reply.length; i += 5) {
      const record = reply[i + 1] as string;
      if (record === '') continue;
      entries.push(snapshot(state, reply[i] as string, record, Number(reply[i + 2]), reply[i + 3] as string, reply[i + 4] as string));
    }
    return { now: reply[0], count: (reply.length - 1) / 5, entries };
  }

  /** Counts of waiting jobs: ready, then one per window ending at each bound (ms from now), then the rest. */
  async dueHistogram(boundsMs: readonly number[]): Promise<DueHistogram> {
    const reply = (await this.#run('dueHistogram', boundsMs)) as number[];
    return { now: reply[0] as number, ready: reply[1] as number, counts: reply.slice(2) };
  }

  /** Moves the given dead jobs, or up to `limit` of the oldest, back to due now. */
  async retryDead(ids: readonly string[], limit: number): Promise<number> {
    return (await this.#run('retryDead', [limit, ...ids])) as number;
  }

  async purgeDead(limit: number): Promise<number> {
    return (await this.#run('purgeDead', [limit])) as number;
  }

  async setPaused(paused: boolean): Promise<void> {
    await this.#run('setPaused', [paused ? '1' : '0']);
  }

  async retention(retain: string, limit: number): Promise<{ retain: string; removed: number }> {
    const [stored, removed] = (await this.#run('retention', [retain, limit])) as [string, number];
    return { retain: stored, removed };
  }

  async readSchedules(key?: string): Promise<{ now: number; schedules: StoredSchedule[] }> {
    const reply = (await this.#run('scheduleRead', [key ?? ''])) as [number, ...string[]];
    const schedules: StoredSchedule[] = [];
    for (let i = 1; i < reply.length; i += 3)
      schedules.push(decodeSchedule(reply[i] as string, reply[i + 1] as string, reply[i + 2] as string));
    return { now: reply[0], schedules };
  }

  async writeSchedule(write: ScheduleWrite): Promise<ScheduleWriteResult> {
    let args: (string | number)[];
    switch (write.op) {
      case 'put':
        args = [
          write.gen === null ? '' : write.gen,
          write.hash,
          write.maxAttempts,
          write.backoff,
          encodeSchedulePayload(write.group, write.payloadJson),
          write.specJson,
          write.overlapSkip ? 'o' : '',
          write.first ?? '',
          encodeTickList(write.ticks, write.complete),
          write.limit ?? '',
        ];
        break;
      case 'advance':
        args = [write.gen, write.head, write.create.join(','), encodeTickList(write.ticks, write.complete), write.ended ? '1' : '0'];
        break;
      case 'resume':
        args = [write.gen, write.first ?? '', encodeTickList(write.ticks, write.complete), write.first === null ? '1' : '0'];
        break;
      default:
        args = [''];
    }
    const [status, now, record, lastRunState] = (await this.#run('scheduleWrite', [write.op, write.key, ...args])) as [
      ScheduleWriteResult['status'],
      number,
      string,
      string,
    ];
    return { status, now, schedule: record === '' ? null : decodeSchedule(write.key, record, lastRunState) };
  }
}

/**
 * Entries of ack, extend and release as the one argument their scripts read (lua/includes/leases.lua, readEntries):
 * "<id>\t<token>\n" each. Two arguments per entry would cost a length prefix and a string object
 * each on both sides (ioredis flattens and measures every argument; Redis parses each into its own
 * string); ids never hold a control character.
 */
function encodeEntries(leases: readonly LeaseRef[]): string {
  let body = '';
  for (let i = 0; i < leases.length; i++) {
    const lease = leases[i] as LeaseRef;
    body += lease.id + '\t' + lease.token + '\n';
  }
  return body;
}

/** The results of an ack as its one extra argument (ack.lua ARGV[3]): "<JSON>\n" each; JSON holds no raw newline. */
function encodeResults(results: readonly string[]): string {
  let body = '';
  for (let i = 0; i < results.length; i++) body += (results[i] as string) + '\n';
  return body;
}

/**
 * A job's deadline as add.lua reads it: "<expireAfterMs>" or "<expireAfterMs>d" (drop), the form
 * of its `expiry` entry (lua/includes/keys.lua, "Deadlines"); '' or 'd' for the queue's default deadline.
 */
function encodeExpiry(job: EncodedJob): string {
  const drop = job.dropOnExpire ? 'd' : '';
  return job.expireAfterMs === undefined ? drop : String(job.expireAfterMs) + drop;
}

function addStatus(code: number): AddStatus {
  const status = ADD_STATUSES[code];
  if (status === undefined) throw new Error(`add answered an unknown status ${code}`);
  return status;
}
