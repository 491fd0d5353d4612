// The codec of a schedule's stored record (the `schedules` hash of its partition) and of its tick
// list, read and written exactly as lua/includes/schedules.lua ("Schedules") does, into the seam's stored shape
// (src/store/stored.ts). The tick ids themselves: src/store/tick-ids.ts.
import type { LastRunState, StoredSchedule } from '../stored.js';

const RECORD = /^(\d+),(\d+),(\d+),([a-z]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([0-9a-f]*),(\d*),([^,\n]*),(\d*)\n([^\n]*)\n([\s\S]*)$/;

/**
 * The `payload` field of a schedule's record: its ticks' payload JSON, after "\x1f<group>\x1f" when
 * the schedule has a group (the record is one field a line: the group line of a job's record,
 * lua/includes/groups.lua, is made from it when a tick is created).
 */
export function encodeSchedulePayload(group: string | undefined, payloadJson: string): string {
  return group === undefined ? payloadJson : `\x1f${group}\x1f${payloadJson}`;
}

function decodeSchedulePayload(field: string): { group: string | undefined; payloadJson: string } {
  if (field.charCodeAt(0) !== 31) return { group: undefined, payloadJson: field };
  const end = field.indexOf('\x1f', 1);
  return { group: field.slice(1, end), payloadJson: field.slice(end + 1) };
}

export function decodeSchedule(key: string, value: string, lastRunState: string): StoredSchedule {
  const m = RECORD.exec(value);
  if (!m) throw new Error(`Schedule ${key} has a malformed record`);
  const [, gen, runs, skipped, flags, head, ticks, last, hash, maxAttempts, backoff, limit, payloadJson, specJson] =
    m as unknown as string[];
  const entries = ticks === '' ? [] : (ticks as string).split(',');
  const complete = entries.at(-1) === '$';
  if (complete) entries.pop();
  const comma = (last as string).indexOf(',');
  const payload = decodeSchedulePayload(payloadJson as string);
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
    payloadJson: payload.payloadJson,
    ...(payload.group === undefined ? {} : { group: payload.group }),
    specJson: specJson as string,
  };
}

/** The `ticks` field: the entries, then '$' when no tick follows them. */
export function encodeTickList(entries: readonly string[], complete: boolean): string {
  return complete ? [...entries, '$'].join(',') : entries.join(',');
}
