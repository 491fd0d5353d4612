/**
 * Every error the HTTP API answers is `{ error: { code, message } }` with one of the stable codes
 * below. Library errors, fastify's own errors and the routes' refusals are mapped to a status and
 * a code in ONE place, {@link toHttpError}; nothing else decides a status for an error.
 */
import { DEFAULT_MAX_PAYLOAD_BYTES, SandglassError, type SandglassErrorCode } from '../index.js';

/** The stable error codes, their status and when they are answered (docs/http-api.md lists them too). */
export const ERROR_CODES = {
  VALIDATION: {
    status: 400,
    when: 'a parameter, query or body field is missing, of the wrong type or out of range, or a body holds a number JSON would change (an integer beyond ±(2^53 - 1), a number beyond the double range)',
  },
  INVALID_JSON: { status: 400, when: 'the body is not valid JSON' },
  JSON_TOO_DEEP: { status: 400, when: 'the body nests objects or arrays deeper than 64 levels' },
  FORBIDDEN_KEY: { status: 400, when: 'the body has a `__proto__` key, or a `constructor` key holding `prototype`' },
  BAD_REQUEST: {
    status: 400,
    when: 'the request is malformed otherwise (bad URL encoding, bad Content-Length, a malformed request line or header, a body cut short by the end of the connection)',
  },
  UNAUTHORIZED: { status: 401, when: 'a token is configured and the request has no `Authorization: Bearer <token>` with it' },
  FORBIDDEN_HOST: { status: 403, when: 'no token is configured and the Host header is not a loopback name (DNS rebinding)' },
  FORBIDDEN_SCOPE: {
    status: 403,
    when: "the token lacks the scope the route needs, or the route's queue matches none of its queue patterns; the message names the scope; nothing was written",
  },
  CROSS_ORIGIN: { status: 403, when: 'a POST/PUT/DELETE carries an Origin header of another origin' },
  REQUEST_TIMEOUT: {
    status: 408,
    when: 'the request was not received completely in time (a body shorter than its Content-Length); the connection is closed',
  },
  NOT_FOUND: {
    status: 404,
    when: 'no job with this id in this queue; no schedule with this key; or pause/resume of a queue that does not exist',
  },
  ROUTE_NOT_FOUND: { status: 404, when: 'no route for this method and path' },
  DASHBOARD_NOT_FOUND: { status: 404, when: 'the dashboard file (or the whole dashboard folder) does not exist' },
  JOB_RUNNING: { status: 409, when: 'cancel or reschedule of a job that a consumer holds (it is not interrupted)' },
  CONFLICT: { status: 409, when: "`ifExists: 'replace'` of a running job or of a schedule's pending tick, or a partition count mismatch" },
  STALE_TOKEN: { status: 409, when: 'ack, fail or extend with a token that no longer holds the lease' },
  BODY_TOO_LARGE: { status: 413, when: 'the request body is over the body limit (checked before parsing)' },
  PAYLOAD_TOO_LARGE: { status: 413, when: `a job's payload is over the queue's maxPayloadBytes (${DEFAULT_MAX_PAYLOAD_BYTES / 1024} KiB)` },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, when: 'a body that is not `Content-Type: application/json`' },
  HEADERS_TOO_LARGE: { status: 431, when: "the request's headers are over 16 KiB (Node's limit); the connection is closed" },
  INTERNAL: { status: 500, when: 'an unexpected error (a bug); the log has the details' },
  REDIS_UNAVAILABLE: { status: 503, when: 'Redis cannot be reached, is loading or busy; retry later' },
  SHUTTING_DOWN: { status: 503, when: 'the service is closing' },
  NOT_READY: { status: 503, when: '/readyz: Redis did not answer in time' },
  INCOMPATIBLE_STORAGE: {
    status: 503,
    when: 'the queue is stored in a format newer than this service knows (a newer sandglass wrote it); nothing was written; upgrade the service',
  },
  REDIS_FULL: { status: 507, when: 'Redis reached maxmemory; nothing was written' },
} as const satisfies Record<string, { status: number; when: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * An error with its HTTP status and stable API code, ready to be answered. A {@link SandglassError}
 * of code `ERR_HTTP`; the API code the client sees is `apiCode`.
 */
export class HttpError extends SandglassError {
  readonly statusCode: number;
  /** The code answered in `{ error: { code } }`. */
  readonly apiCode: ErrorCode;

  constructor(apiCode: ErrorCode, message: string) {
    super('ERR_HTTP', message);
    this.apiCode = apiCode;
    this.statusCode = ERROR_CODES[apiCode].status;
  }

  toJSON(): { error: { code: ErrorCode; message: string } } {
    return { error: { code: this.apiCode, message: this.message } };
  }
}

/**
 * What each library error becomes, exhaustive over {@link SandglassErrorCode}: a new code does not
 * compile until it is mapped here. `undefined`: never the client's business (500 INTERNAL, logged).
 */
const LIBRARY_CODES: Record<Exclude<SandglassErrorCode, 'ERR_HTTP'>, ((error: SandglassError) => HttpError) | undefined> = {
  ERR_VALIDATION: error => new HttpError('VALIDATION', error.message),
  ERR_PAYLOAD_TOO_LARGE: error => new HttpError('PAYLOAD_TOO_LARGE', error.message),
  ERR_CONFLICT: error => new HttpError('CONFLICT', error.message),
  ERR_NOT_FOUND: error => new HttpError('NOT_FOUND', error.message),
  ERR_CONNECTION: error => new HttpError('REDIS_UNAVAILABLE', `Redis is unavailable: ${error.message}`),
  ERR_REDIS_OOM: () => new HttpError('REDIS_FULL', 'Redis is out of memory (maxmemory reached); nothing was written'),
  ERR_CLOSED: () => new HttpError('SHUTTING_DOWN', 'The service is shutting down'),
  ERR_INCOMPATIBLE_STORAGE: error => new HttpError('INCOMPATIBLE_STORAGE', error.message),
  // A write that fewer replicas confirmed, a Redis error sandglass does not expect, a lease or a
  // webhook, a setting or a missing redis-server binary: none of them is caused by a request, so none is explained to its sender.
  ERR_NOT_REPLICATED: undefined,
  ERR_REDIS: undefined,
  ERR_LEASE_LOST: undefined,
  ERR_UNRECOVERABLE: undefined,
  ERR_CONFIG: undefined,
  ERR_WEBHOOK: undefined,
  ERR_UNAVAILABLE: undefined,
  ERR_REDIS_SERVER_NOT_FOUND: undefined,
  ERR_VIRTUAL_CLOCK: undefined, // the test kit's, never in a service
};

/** Fastify's error codes for bad requests, and what each becomes. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_BAD_URL: 'BAD_REQUEST',
  FST_ERR_MAX_PARAM_LENGTH: 'BAD_REQUEST',
  FST_ERR_VALIDATION: 'VALIDATION',
};

/**
 * The one mapping from anything thrown while serving a request to what the client is told.
 * Unknown errors become 500 INTERNAL with a generic message (details go to the log, not the client);
 * any error fastify marks as the client's fault stays a 4xx.
 */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof SandglassError && error.code !== 'ERR_HTTP') {
    return LIBRARY_CODES[error.code]?.(error) ?? new HttpError('INTERNAL', 'Internal error; the service log has the details');
  }
  const fastify = error as { code?: unknown; statusCode?: unknown; message?: unknown; validation?: unknown; validationContext?: unknown };
  const mapped = typeof fastify?.code === 'string' ? FASTIFY_CODES[fastify.code] : undefined;
  if (fastify?.validation !== undefined || mapped === 'VALIDATION') return new HttpError('VALIDATION', String(fastify.message));
  if (mapped === 'BODY_TOO_LARGE')
    return new HttpError(mapped, 'The request body is over the body limit of the service (SANDGLASS_BODY_LIMIT)');
  if (mapped === 'UNSUPPORTED_MEDIA_TYPE') return new HttpError(mapped, 'Send the body as JSON, with `Content-Type: application/json`');
  if (mapped) return new HttpError(mapped, String(fastify.message));
  const status = typeof fastify?.statusCode === 'number' ? fastify.statusCode : 500;
  if (status >= 400 && status < 500) return new HttpError('BAD_REQUEST', String(fastify.message));
  return new HttpError('INTERNAL', 'Internal error; the service log has the details');
}
