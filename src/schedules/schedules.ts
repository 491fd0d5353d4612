// Recurring schedules over a queue's partitions (issue 9; README "Schedules"). The tick times are
// computed here (src/schedules/time.ts: cron, time zones, DST, catch-up); the scripts store them and
// create each tick's job atomically (lua/includes/schedules.lua, "Schedules"), so no process leads and none can
// double or lose a tick:
//   - an upsert writes the schedule with its first tick's job and the next few tick times;
//   - the claim that starts a schedule's pending tick creates the next tick's job in the same script;
//   - when that could not be done (the next tick time had passed: every process was down, or the
//     queue was behind; or the precomputed times ran low), the claim names the schedule and the
//     claiming process calls `tendSchedule`, which applies `catchUp` and writes more tick times.
import { NotFoundError } from '../core/errors.js';
import { encodeBackoff } from '../core/backoff.js';
import { resolveScheduleSpec, scheduleDefinitionHash, type ResolvedSchedule } from './spec.js';
import { missedTicks, nextTickAfter, upcomingTicks, type TickSpec } from './time.js';
import type { PartitionStorage, ScheduleWrite, ScheduleWriteResult } from '../store/partition-storage.js';
import type { StoredSchedule } from '../store/stored.js';
import { entryTickAt, tickEntry } from '../store/tick-ids.js';
import type { BackoffOption, ScheduleInfo, ScheduleSpec } from '../core/types.js';

/** Tick times kept ahead in a schedule's record: the claim script takes the next from them. */
const TICKS_AHEAD = 8;
/** A refill comes when fewer than this many are left (lua/includes/schedules.lua advanceSchedule says when). */
const TICKS_LOW = 3;
/** Compare-and-set attempts before giving up (only a burst of concurrent changes of one schedule retries). */
const WRITE_ATTEMPTS = 10;
/** `ScheduleInfo.upcoming` length. */
const UPCOMING = 5;

/** A partition store and the queue's partition count (tick ids are placed by it). */
export interface SchedulePlace {
  readonly store: PartitionStorage;
  readonly count: number;
}

/** What the stored spec JSON holds: the resolved definition but its key and payload (stored apart). */
type StoredSpec = Omit<ResolvedSchedule, 'key' | 'payloadJson'>;

function storedSpecOf(resolved: ResolvedSchedule): StoredSpec {
  const rest: Partial<ResolvedSchedule> = { ...resolved };
  delete rest.key;
  delete rest.payloadJson;
  return rest as StoredSpec;
}

function resolvedOf(stored: StoredSchedule): ResolvedSchedule {
  return { ...(JSON.parse(stored.specJson) as StoredSpec), key: stored.key, payloadJson: stored.payloadJson };
}

/** The tick times of a definition, without `limit` (the scripts count runs and stop at it). */
function tickSpecOf(resolved: ResolvedSchedule): TickSpec {
  return { ...resolved, limit: undefined };
}

/** Up to TICKS_AHEAD entries after `afterMs`, and whether the schedule ends after them (at once when `afterMs` is null: no tick at all). */
function ticksAfter(spec: TickSpec, afterMs: number | null, key: string, place: SchedulePlace): { ticks: string[]; complete: boolean } {
  if (afterMs === null) return { ticks: [], complete: true };
  const times = upcomingTicks(spec, afterMs + 1, TICKS_AHEAD);
  return { ticks: times.map(t => tickEntry(key, t, place.count, place.store.partition)), complete: times.length < TICKS_AHEAD };
}

/**
 * Creates or updates a schedule (an idempotent upsert). The spec is validated before Redis is
 * touched; the tick times are computed on the server's clock (an `every` grid without `startAt` is
 * anchored at the first upsert's server time, and keeps that anchor through later upserts).
 */
export async function upsertSchedule(
  place: SchedulePlace,
  key: string,
  spec: ScheduleSpec,
  maxPayloadBytes: number,
): Promise<ScheduleInfo> {
  resolveScheduleSpec(key, spec, Date.now(), maxPayloadBytes); // refuses a bad spec before any call
  for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
    const { now, schedules } = await place.store.readSchedules(key);
    const current = schedules[0];
    const resolved = resolveScheduleSpec(key, spec, now, maxPayloadBytes);
    if (current && resolved.startAt === undefined) resolved.anchorMs = resolvedOf(current).anchorMs;
    const hash = scheduleDefinitionHash(resolved);
    if (current?.hash === hash) {
      // Unchanged (a deploy upserting it again): nothing to write, but a stalled one is tended.
      if (current.stalled || needsRefill(current)) await tendSchedule(place, key);
      return scheduleInfo(current, now);
    }
    const tickSpec = tickSpecOf(resolved);
    const firstAt = nextTickAfter(tickSpec, now - 1);
    const first = firstAt === null ? null : tickEntry(key, firstAt, place.count, place.store.partition);
    const after = ticksAfter(tickSpec, firstAt, key, place);
    const result = await place.store.writeSchedule({
      op: 'put',
      key,
      gen: current?.gen ?? null,
      hash,
      maxAttempts: resolved.maxAttempts === undefined ? '' : String(resolved.maxAttempts),
      backoff: encodeBackoff(resolved.backoff),
      limit: resolved.limit,
      payloadJson: resolved.payloadJson,
      group: resolved.group,
      specJson: JSON.stringify(storedSpecOf(resolved)),
      overlapSkip: resolved.overlap === 'skip',
      first,
      ...after,
    });
    if (result.status !== 'conflict') return scheduleInfo(result.schedule as StoredSchedule, result.now);
  }
  throw new Error(`Schedule ${key}: changed by others ${WRITE_ATTEMPTS} times while this upsert ran; try again`);
}

function needsRefill(stored: StoredSchedule): boolean {
  return !stored.paused && !stored.ended && !stored.complete && stored.ticks.length < TICKS_LOW;
}

/**
 * Creates the next tick(s) of a schedule whose claim could not (stalled: `catchUp` decides which
 * missed ticks run), or computes more tick times when few are left. Safe to call from any number
 * of processes at once: each write is a compare-and-set on the schedule's head tick.
 */
export async function tendSchedule(place: SchedulePlace, key: string): Promise<void> {
  for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
    const { now, schedules } = await place.store.readSchedules(key);
    const stored = schedules[0];
    if (!stored || stored.paused || stored.ended || stored.head === '') return;
    const resolved = resolvedOf(stored);
    const spec = tickSpecOf(resolved);
    let write: ScheduleWrite;
    if (stored.stalled) {
      const headAt = entryTickAt(stored.head);
      const missed = missedTicks(spec, headAt, now, resolved.catchUp);
      const nextAt = missed.length > 0 ? null : nextTickAfter(spec, Math.max(now, headAt));
      const create = (missed.length > 0 ? missed : nextAt === null ? [] : [nextAt]).map(t =>
        tickEntry(key, t, place.count, place.store.partition),
      );
      const lastAt = missed.at(-1) ?? nextAt;
      const after = ticksAfter(spec, lastAt, key, place);
      write = { op: 'advance', key, gen: stored.gen, head: stored.head, create, ...after, ended: create.length === 0 };
    } else if (needsRefill(stored)) {
      const lastListed = stored.ticks.at(-1) ?? stored.head;
      const more = ticksAfter(spec, entryTickAt(lastListed), key, place);
      write = {
        op: 'advance',
        key,
        gen: stored.gen,
        head: stored.head,
        create: [],
        ticks: [...stored.ticks, ...more.ticks],
        complete: more.complete,
        ended: false,
      };
    } else {
      return;
    }
    if ((await place.store.writeSchedule(write)).status !== 'conflict') return;
  }
}

/**
 * Tends the schedules a claim named (its `tend`), in the background: the claimer goes on delivering
 * the jobs it took. A failure is reported and harmless: the schedule stays stalled, and the next
 * claim of its tick, or an upsert of it, tends it again.
 */
export function tendInBackground(place: SchedulePlace, keys: readonly string[], reportError: (error: unknown) => void): void {
  // A stalled schedule is named by every claim of its partition until it is tended: one tend at a
  // time per schedule and process (the others' claims name it too; their writes are compare-and-set).
  let tending = tendingNow.get(place.store);
  if (!tending) tendingNow.set(place.store, (tending = new Set()));
  for (const key of new Set(keys)) {
    if (tending.has(key)) continue;
    tending.add(key);
    void tendWithRetries(place, key, reportError).finally(() => tending.delete(key));
  }
}

/** Delays of the retries of a failed tend (a Redis blip); after them, the partition's next claim names the schedule again. */
const TEND_RETRY_MS = [250, 1_000, 3_000];

async function tendWithRetries(place: SchedulePlace, key: string, reportError: (error: unknown) => void): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await tendSchedule(place, key);
      return;
    } catch (error) {
      reportError(error);
      const delayMs = TEND_RETRY_MS[attempt];
      if (delayMs === undefined) return;
      // unref: a retry never keeps a process alive that is otherwise done.
      await new Promise(resolve => setTimeout(resolve, delayMs).unref());
    }
  }
}
const tendingNow = new WeakMap<PartitionStorage, Set<string>>();

/** The schedule `key`, or null. */
export async function getSchedule(place: SchedulePlace, key: string): Promise<ScheduleInfo | null> {
  const { now, schedules } = await place.store.readSchedules(key);
  return schedules[0] ? scheduleInfo(schedules[0], now) : null;
}

/** Every schedule of the given partitions, by key. */
export async function listSchedules(stores: readonly PartitionStorage[]): Promise<ScheduleInfo[]> {
  const parts = await Promise.all(stores.map(store => store.readSchedules()));
  const all = parts.flatMap(({ now, schedules }) => schedules.map(stored => scheduleInfo(stored, now)));
  return all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Pauses a schedule: no tick is created, its pending one (not started) is removed. */
export async function pauseSchedule(place: SchedulePlace, key: string): Promise<ScheduleInfo> {
  return infoOrNotFound(key, await place.store.writeSchedule({ op: 'pause', key }));
}

/** Resumes a paused schedule at its first tick from now on (missed ticks are not caught up). */
export async function resumeSchedule(place: SchedulePlace, key: string): Promise<ScheduleInfo> {
  for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
    const { now, schedules } = await place.store.readSchedules(key);
    const stored = schedules[0];
    if (!stored) throw notFound(key);
    if (!stored.paused) return scheduleInfo(stored, now);
    const spec = tickSpecOf(resolvedOf(stored));
    // A tick at or after the head's: the head (created before the pause) is never created again.
    const from = stored.head === '' ? now - 1 : Math.max(now - 1, entryTickAt(stored.head));
    const firstAt = nextTickAfter(spec, from);
    const first = firstAt === null ? null : tickEntry(key, firstAt, place.count, place.store.partition);
    const after = ticksAfter(spec, firstAt, key, place);
    const result = await place.store.writeSchedule({ op: 'resume', key, gen: stored.gen, first, ...after });
    if (result.status !== 'conflict') return infoOrNotFound(key, result);
  }
  throw new Error(`Schedule ${key}: changed by others ${WRITE_ATTEMPTS} times while this resume ran; try again`);
}

/** Removes a schedule and its pending tick. */
export async function removeSchedule(place: SchedulePlace, key: string): Promise<'removed' | 'not_found'> {
  const result = await place.store.writeSchedule({ op: 'remove', key });
  return result.status === 'removed' ? 'removed' : 'not_found';
}

function infoOrNotFound(key: string, result: ScheduleWriteResult): ScheduleInfo {
  if (result.status === 'not_found' || result.schedule === null) throw notFound(key);
  return scheduleInfo(result.schedule, result.now);
}

function notFound(key: string): NotFoundError {
  return new NotFoundError(`Schedule '${key}' does not exist`);
}

/** A stored schedule as users see it. */
export function scheduleInfo(stored: StoredSchedule, now: number): ScheduleInfo {
  const resolved = resolvedOf(stored);
  const spec = tickSpecOf(resolved);
  const headAt = stored.head === '' ? null : entryTickAt(stored.head);
  let nextAt: number | null = null;
  if (!stored.paused && !stored.ended && headAt !== null) {
    // Stalled: the head started and the next tick is being created by the claiming process.
    nextAt = stored.stalled ? nextTickAfter(spec, Math.max(headAt, now - 1)) : headAt;
  }
  let upcoming: number[] = [];
  if (nextAt !== null) {
    // The head counts among the runs already; `limit` leaves limit - runs ticks after it.
    const left = resolved.limit === undefined ? UPCOMING - 1 : Math.max(0, Math.min(UPCOMING - 1, resolved.limit - stored.runs));
    upcoming = [nextAt, ...upcomingTicks(spec, nextAt + 1, left)];
  }
  const info: ScheduleInfo = {
    key: stored.key,
    tz: resolved.tz,
    payload: JSON.parse(stored.payloadJson) as unknown,
    paused: stored.paused,
    nextAt,
    upcoming,
    lastTickAt: stored.last?.tickAt ?? null,
    runs: stored.runs,
    skipped: stored.skipped,
    overlap: resolved.overlap,
    catchUp: resolved.catchUp,
    lastRun:
      stored.last === null
        ? null
        : { id: stored.last.id, tickAt: stored.last.tickAt, state: stored.lastRunState === '' ? 'done' : stored.lastRunState },
  };
  if (resolved.cron !== undefined) info.cron = resolved.cron;
  if (resolved.every !== undefined) info.every = resolved.every;
  if (resolved.startAt !== undefined) info.startAt = resolved.startAt;
  if (resolved.endAt !== undefined) info.endAt = resolved.endAt;
  if (resolved.limit !== undefined) info.limit = resolved.limit;
  if (resolved.group !== undefined) info.group = resolved.group;
  if (resolved.maxAttempts !== undefined) info.maxAttempts = resolved.maxAttempts;
  if (resolved.backoff !== undefined) info.backoff = resolved.backoff as BackoffOption;
  return info;
}
