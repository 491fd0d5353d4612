/**
 * Signing of webhook requests, and its check for receivers written in Node.
 *
 * The signed text is `<timestamp>.<raw body>`: the timestamp (unix seconds at send time) is inside
 * the HMAC, so a captured request cannot be replayed later with a fresh timestamp. This module
 * depends on `node:crypto` only, so that a receiver can use it (or copy it) without Redis.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Scheme of today's signatures. A future scheme gets a new prefix, so receivers can tell them apart. */
export const SIGNATURE_SCHEME = 'v1';
/** Shortest secret accepted, in characters: a short HMAC key can be guessed offline from one request. */
export const MIN_SECRET_LENGTH = 16;
/** How far a request's timestamp may be from the receiver's clock, either way: 5 minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const SIGNATURE = /^v1=([0-9a-fA-F]{64})$/;
const TIMESTAMP = /^[0-9]{1,15}$/;

/** Options of {@link verifySignature}. */
export interface VerifyOptions {
  /** Largest accepted distance between the request's timestamp and now, in seconds. @default 300 */
  toleranceSeconds?: number;
  /** The receiver's now, epoch ms (for tests). @default Date.now() */
  nowMs?: number;
}

/**
 * The `Sandglass-Signature` header value of a request: `v1=` and the hex HMAC-SHA256, keyed with
 * `secret`, of `<timestamp>.<body>`.
 *
 * @param timestamp unix seconds, as sent in `Sandglass-Timestamp`
 * @param body the exact bytes of the request body
 * @example
 * signPayload('a-secret-of-16-chars+', 1767225600, '{"id":"order:42"}') // 'v1=5f0c...'
 */
export function signPayload(secret: string, timestamp: number, body: string): string {
  assertSecret(secret);
  if (!Number.isSafeInteger(timestamp) || timestamp < 0)
    throw new TypeError(`Expected \`timestamp\` to be unix seconds (an integer >= 0), got ${String(timestamp)}`);
  return `${SIGNATURE_SCHEME}=${hmacHex(secret, String(timestamp), body)}`;
}

/**
 * Checks a webhook request: true when `signature` (the `Sandglass-Signature` header) is the HMAC of
 * `<timestamp>.<body>` under `secret` and `timestamp` (the `Sandglass-Timestamp` header) is within
 * `toleranceSeconds` of now. The comparison runs in constant time. Pass the raw body as received,
 * before any JSON parsing: a re-serialized body does not match.
 *
 * Throws a TypeError when `secret` is shorter than 16 characters: an unset secret must not turn
 * into an empty HMAC key that anyone can sign with.
 *
 * @example
 * const ok = verifySignature(process.env.WEBHOOK_SECRET!, req.headers['sandglass-timestamp'],
 *   rawBody, req.headers['sandglass-signature']);
 * if (!ok) return res.writeHead(401).end();
 */
export function verifySignature(
  secret: string,
  timestamp: string | number | null | undefined,
  body: string | Uint8Array,
  signature: string | null | undefined,
  options: VerifyOptions = {},
): boolean {
  assertSecret(secret);
  const text = typeof timestamp === 'number' ? String(timestamp) : timestamp;
  if (typeof text !== 'string' || !TIMESTAMP.test(text)) return false;
  const nowSeconds = (options.nowMs ?? Date.now()) / 1000;
  if (Math.abs(nowSeconds - Number(text)) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const given = typeof signature === 'string' ? SIGNATURE.exec(signature.trim()) : null;
  if (!given) return false;
  // Both sides are 32 bytes here, as timingSafeEqual requires.
  return timingSafeEqual(Buffer.from(given[1] as string, 'hex'), Buffer.from(hmacHex(secret, text, body), 'hex'));
}

function hmacHex(secret: string, timestamp: string, body: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

function assertSecret(secret: unknown): asserts secret is string {
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    const got = typeof secret === 'string' ? `${secret.length} characters` : typeof secret;
    throw new TypeError(`Expected the webhook secret to be a string of at least ${MIN_SECRET_LENGTH} characters, got ${got}`);
  }
}
