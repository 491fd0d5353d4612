// The codec of job records: the `jobs` hash's values and claim replies, read exactly as lua/includes/records.lua
// writes them, into the stored shape of the seam (src/store/stored.ts).
import { decodeBackoff } from '../../core/backoff.js';
import type { StoredJob } from '../stored.js';

// The optional fields after backoff: a tick time (digits), then a traceparent ("00-..."), lua/includes/records.lua.
const HEADER = /^(\d+),(\d+),(\d*),(\d*),([^,\n]*)(?:,(\d+))?(?:,([0-9a-f]{2}-[^,\n]*))?\n/;
/** '-', the 3rd character of a traceparent: what tells it from a tick time (digits only). */
const DASH = 45;
/** \x1f, the first character of a grouped job's group line (between header and payload, lua/includes/groups.lua). */
const GROUP_MARK = 31;

/**
 * The record's text after its header line: a grouped job's group line "\x1f<group>\n", then the
 * payload JSON (which never starts with \x1f). Returns the group (undefined for none) and where the
 * payload starts.
 */
function groupLine(record: string, afterHeader: number): { group: string | undefined; payloadStart: number } {
  if (record.charCodeAt(afterHeader) !== GROUP_MARK) return { group: undefined, payloadStart: afterHeader };
  const end = record.indexOf('\n', afterHeader + 1);
  if (end < 0) throw new Error('A grouped record has no payload');
  return { group: record.slice(afterHeader + 1, end), payloadStart: end + 1 };
}

/** The payload argument of a grouped job's add (add.lua): its group line, then the payload JSON. */
export function groupedPayload(group: string | undefined, payloadJson: string): string {
  return group === undefined ? payloadJson : `\x1f${group}\n${payloadJson}`;
}

/**
 * The jobs of a claim reply (claim.lua): `dueList` "<id>\t<dueAt>\t..." and `records`
 * "<record>\t...", in the same order. A record is as stored: it does not count the delivery under
 * way (attempt = its attempts + 1) and its token and due time are the lease's. Tokens are
 * `tokens[k]` when given (the answer to a resent claim), else `firstToken + k`.
 *
 * Runs once per claimed job on a worker's hot path: it walks both strings with indexOf instead of
 * splitting them (no intermediate arrays) and reads the header's numbers digit by digit (no
 * substring per field); the only strings made per job are its id, payload and token.
 */
export function decodeClaimed(dueList: string, records: string, firstToken: number, tokens?: readonly string[]): StoredJob[] {
  const out: StoredJob[] = [];
  if (dueList === '') return out;
  const dueEnd = dueList.length;
  const recordsEnd = records.length;
  let d = 0; // start of the next "<id>\t<dueAt>" in dueList
  let r = 0; // start of the next record in records
  for (let k = 0; d < dueEnd; k++) {
    if (r > recordsEnd) throw new Error('A claim reply is malformed');
    const idEnd = dueList.indexOf('\t', d);
    if (idEnd < 0) throw new Error('A claim reply is malformed');
    let scoreEnd = dueList.indexOf('\t', idEnd + 1);
    if (scoreEnd < 0) scoreEnd = dueEnd;
    const id = dueList.slice(d, idEnd);
    let recordEnd = records.indexOf('\t', r);
    if (recordEnd < 0) recordEnd = recordsEnd;
    // "attempts,token,dueAt,maxAttempts,backoff[,tickAt]\n": the lease's token and due time replace the record's.
    const headerEnd = records.indexOf('\n', r);
    const c1 = records.indexOf(',', r);
    const c3 = c1 < 0 ? -1 : records.indexOf(',', records.indexOf(',', c1 + 1) + 1);
    const c4 = c3 < 0 ? -1 : records.indexOf(',', c3 + 1);
    if (headerEnd < 0 || headerEnd > recordEnd || c1 < 0 || c4 < 0 || c4 > headerEnd) throw new Error(`Job ${id} has a malformed record`);
    // A schedule's tick has a 6th field, its tick time; a traced job a last one, its traceparent
    // (lua/includes/records.lua). Most jobs have neither, and pay one indexOf for them.
    let c5 = records.indexOf(',', c4 + 1);
    if (c5 < 0 || c5 > headerEnd) c5 = headerEnd;
    let tickAt: number | undefined;
    let traceparent: string | undefined;
    if (c5 < headerEnd) {
      if (records.charCodeAt(c5 + 3) === DASH) {
        traceparent = records.slice(c5 + 1, headerEnd);
      } else {
        let c6 = records.indexOf(',', c5 + 1);
        if (c6 < 0 || c6 > headerEnd) c6 = headerEnd;
        tickAt = Number(records.slice(c5 + 1, c6));
        if (c6 < headerEnd) traceparent = records.slice(c6 + 1, headerEnd);
      }
    }
    // Plain digits, always, as claim.lua writes them; anything else is read the slow way.
    let attempts = digitsAt(records, r, c1);
    if (Number.isNaN(attempts)) attempts = Number(records.slice(r, c1));
    let dueAt = digitsAt(dueList, idEnd + 1, scoreEnd);
    if (Number.isNaN(dueAt)) dueAt = Number(dueList.slice(idEnd + 1, scoreEnd));
    // One character tells a grouped job (most are not).
    let group: string | undefined;
    let payloadStart = headerEnd + 1;
    if (records.charCodeAt(payloadStart) === GROUP_MARK) ({ group, payloadStart } = groupLine(records, payloadStart));
    out.push({
      id,
      attempts: attempts + 1,
      token: tokens ? (tokens[k] as string) : String(firstToken + k),
      dueAt,
      maxAttempts: c4 === c3 + 1 ? undefined : Number(records.slice(c3 + 1, c4)),
      backoff: c4 + 1 === c5 ? undefined : decodeBackoff(records.slice(c4 + 1, c5)),
      tickAt,
      traceparent,
      group,
      payloadJson: records.slice(payloadStart, recordEnd),
    });
    d = scoreEnd + 1;
    r = recordEnd + 1;
  }
  if (r <= recordsEnd || (tokens && tokens.length !== out.length)) throw new Error('A claim reply is malformed');
  return out;
}

/** The non-negative integer written in `text` from `start` to `end` (exclusive); NaN unless all digits. */
function digitsAt(text: string, start: number, end: number): number {
  if (end <= start) return Number.NaN;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

export function decodeRecord(id: string, record: string): StoredJob {
  const match = HEADER.exec(record);
  if (!match) throw new Error(`Job ${id} has a malformed record`);
  const [header, attempts, token, dueAt, maxAttempts, backoff, tickAt, traceparent] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string | undefined,
    string | undefined,
  ];
  const { group, payloadStart } = groupLine(record, header.length);
  return {
    id,
    attempts: Number(attempts),
    token,
    dueAt: dueAt === '' ? undefined : Number(dueAt),
    maxAttempts: maxAttempts === '' ? undefined : Number(maxAttempts),
    backoff: decodeBackoff(backoff),
    tickAt: tickAt === undefined ? undefined : Number(tickAt),
    traceparent,
    group,
    payloadJson: record.slice(payloadStart),
  };
}

/**
 * A kept completed job as `results` holds it (lua/includes/retention.lua, "Retention"): "<result JSON>\n<record>",
 * the record counting the delivery that completed it; `resultJson` '' when no result was kept.
 */
export function decodeKept(id: string, value: string): { job: StoredJob; resultJson: string } {
  const nl = value.indexOf('\n');
  if (nl < 0) throw new Error(`Job ${id} has a malformed kept record`);
  return { job: decodeRecord(id, value.slice(nl + 1)), resultJson: value.slice(0, nl) };
}
