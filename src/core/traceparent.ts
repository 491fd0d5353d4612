/**
 * The W3C Trace Context `traceparent` field (https://www.w3.org/TR/trace-context/#traceparent-header),
 * read and written by sandglass itself: a job carries its producer's trace context in this form
 * (lua/includes/records.lua, the record header), so no global propagator has to be registered. The one home of
 * the rule: the Queue's `traceparent` option, the HTTP service's header and the job records all go
 * through `parseTraceparent`.
 */

/** The trace context a `traceparent` names. */
export interface TraceparentFields {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** 16 lowercase hex digits, not all zero: the parent span. */
  readonly spanId: string;
  /** The trace flags byte (bit 0: sampled). */
  readonly traceFlags: number;
}

/** "00-<trace id>-<span id>-<flags>": 55 characters. */
export const TRACEPARENT_LENGTH = 55;

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
// A later version: the same first four fields, then '-' and more (parsed as version 00, as the
// specification asks of a reader that does not know the version).
const LATER_VERSION = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-|$)/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The fields of a `traceparent`, or undefined when it is malformed (wrong length or case, version
 * `ff`, an all-zero trace or span id). A later version's value is read by its first four fields.
 */
export function parseTraceparent(value: unknown): TraceparentFields | undefined {
  if (typeof value !== 'string' || value.length < TRACEPARENT_LENGTH) return undefined;
  let traceId: string | undefined;
  let spanId: string | undefined;
  let flags: string | undefined;
  const v00 = VERSION_00.exec(value);
  if (v00) {
    [, traceId, spanId, flags] = v00;
  } else {
    const later = LATER_VERSION.exec(value);
    // Version 00 has exactly 55 characters; 'ff' is not a version.
    if (!later || later[1] === '00' || later[1] === 'ff') return undefined;
    [, , traceId, spanId, flags] = later;
  }
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId: traceId as string, spanId: spanId as string, traceFlags: Number.parseInt(flags as string, 16) };
}

/** The version-00 `traceparent` of a trace context. */
export function formatTraceparent(fields: TraceparentFields): string {
  const flags = fields.traceFlags & 0xff;
  return `00-${fields.traceId}-${fields.spanId}-${flags < 16 ? '0' : ''}${flags.toString(16)}`;
}

/** A valid `traceparent` as sandglass stores it (version 00), or undefined when it is malformed. */
export function normalizeTraceparent(value: unknown): string | undefined {
  const fields = parseTraceparent(value);
  if (!fields) return undefined;
  return (value as string).length === TRACEPARENT_LENGTH && (value as string).startsWith('00-')
    ? (value as string)
    : formatTraceparent(fields);
}
