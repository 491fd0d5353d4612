// The codec of a schedule's stored record (the `schedules` hash of its partition) and of its tick
// list, read and written exactly as lua/includes/schedules.lua ("Schedules") does, into the seam's stored shape
// (src/store/stored.ts). The tick ids themselves: src/store/tick-ids.ts.
import type { LastRunState, StoredSchedule } from '../stored.js';

const RECORD = /^(\d+),(\d+),(\d+),([a-z]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([0-9a-f]*),(\d*),([^,\n]*),(\d*)\n([^\n]*)\n([\s\S]*)$/;

export function decodeSchedule(key: string, value: string, lastRunState: string): StoredSchedule {
  const m = RECORD.exec(value);
  if (!m) throw new Error(`Schedule ${key} has a malformed record`);
  const [, gen, runs, skipped, flags, head, ticks, last, hash, maxAttempts, backoff, limit, payloadJson, specJson] =
    m as unknown as string[];
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
