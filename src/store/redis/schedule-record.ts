// A schedule's stored record (the `schedules` hash of its partition) and its tick entries, read and
// written exactly as lua/lib.lua ("Schedules") does.
import { partitionOf } from './partitions.js';

/** Where the last started tick's job is (lua/lib.lua lastRunState); '' when no tick started yet. */
export type LastRunState = '' | 'active' | 'waiting' | 'dead' | 'done';

/** A schedule's definition as stored: what its tick jobs are made of, and the spec (JSON) ticks are computed from. */
export interface StoredDefinition {
  /** scheduleDefinitionHash of the definition. */
  readonly hash: string;
  /** Of each tick's job: '' for the worker's default. */
  readonly maxAttempts: string;
  /** Of each tick's job, `backoff.ts` encoding; '' for the worker's default. */
  readonly backoff: string;
  readonly limit: number | undefined;
  readonly payloadJson: string;
  readonly specJson: string;
}

/** A schedule record, decoded. Entries are "<tickAt>[~<n>]": a tick's job id is "<key>@<entry>". */
export interface StoredSchedule extends StoredDefinition {
  readonly key: string;
  /** Bumped by every change of the definition or of paused (compare-and-set). */
  readonly gen: number;
  /** Ticks created. */
  readonly runs: number;
  readonly skipped: number;
  readonly paused: boolean;
  /** The head tick started and no tick follows it (`limit` or `endAt` reached). */
  readonly ended: boolean;
  /** The head tick started but the next one could not be created by the claim: a client must (catchUp). */
  readonly stalled: boolean;
  /** The entry of the last tick created, '' before the first. */
  readonly head: string;
  /** The next entries after `head`, computed ahead by a client. */
  readonly ticks: readonly string[];
  /** No tick follows `ticks` (the schedule ends after them). */
  readonly complete: boolean;
  /** The last tick whose job started. */
  readonly last: { readonly tickAt: number; readonly id: string } | null;
  readonly lastRunState: LastRunState;
}

const RECORD = /^(\d+),(\d+),(\d+),([a-z]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([0-9a-f]*),(\d*),([^,\n]*),(\d*)\n([^\n]*)\n([\s\S]*)$/;

export function decodeSchedule(key: string, value: string, lastRunState: string): StoredSchedule {
  const m = RECORD.exec(value);
  if (!m) throw new Error(`Schedule ${key} has a malformed record`);
  const [, gen, runs, skipped, flags, head, ticks, last, hash, maxAttempts, backoff, limit, payloadJson, specJson] = m as unknown as string[];
  const entries = ticks === '' ? [] : (ticks as string).split(',');
  const complete = entries.at(-1) === '$';
  if (complete) entries.pop();
  const comma = (last as string).indexOf(',');
  return {
    key,
    gen: Number(gen),
    runs: Number(runs),
    skipped: Number(skipped),
    paused: flags!.includes('p'),
    ended: flags!.includes('e'),
    stalled: flags!.includes('s'),
    head: head as string,
    ticks: entries,
    complete,
    last: comma < 0 ? null : { tickAt: Number(last!.slice(0, comma)), id: last!.slice(comma + 1) },
    lastRunState: lastRunState as LastRunState,
    hash: hash as string,
    maxAttempts: maxAttempts as string,
    backoff: backoff as string,
    limit: limit === '' ? undefined : Number(limit),
    payloadJson: payloadJson as string,
    specJson: specJson as string,
  };
}

/** The `ticks` field: the entries, then '$' when no tick follows them. */
export function encodeTickList(entries: readonly string[], complete: boolean): string {
  return complete ? [...entries, '$'].join(',') : entries.join(',');
}

/** The tick time of an entry. */
export function entryTickAt(entry: string): number {
  return Number.parseInt(entry, 10);
}

/**
 * The entry of the tick at `tickAt` of schedule `key`: its job must live in the schedule's
 * partition (the claim script creates it there), and a job's partition is that of its id, so on a
 * partitioned queue a suffix `~<n>` is added, the smallest n that lands the id there (about
 * `count` tries). Deterministic: every process finds the same entry.
 */
export function tickEntry(key: string, tickAt: number, count: number): string {
  const base = String(tickAt);
  if (count === 1) return base;
  const home = partitionOf(key, count);
  if (partitionOf(`${key}@${base}`, count) === home) return base;
  for (let n = 1; ; n++) {
    const entry = `${base}~${n}`;
    if (partitionOf(`${key}@${entry}`, count) === home) return entry;
  }
}

/**
 * The schedule of a tick job, from its id and the tick time in its record (lua/lib.lua): the key is
 * the id up to its last '@'.
 */
export function tickOfJob(id: string, tickAt: number): { key: string; tickAt: number } {
  return { key: id.slice(0, id.lastIndexOf('@')), tickAt };
}
