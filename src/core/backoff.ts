import type { BackoffFunction, BackoffOption } from './types.js';
import { MAX_DELAY_MS } from './validate.js';

/** The backoff used when neither the job nor the worker names one. */
export const DEFAULT_BACKOFF: BackoffOption = { type: 'exponential', delayMs: 1_000, maxDelayMs: 3_600_000, jitter: 0.25 };

/**
 * The delay before the next attempt after `attempt` (1-based) failed.
 * Exponential: `delayMs * 2^(attempt-1)` capped at `maxDelayMs` (one day when a backoff leaves it out;
 * DEFAULT_BACKOFF's is one hour), then reduced by a random share of up to `jitter` (default 0.25) so
 * that a burst of failures does not retry as a burst.
 */
export function backoffDelayMs(backoff: BackoffOption | BackoffFunction, attempt: number, error: unknown, random = Math.random): number {
  if (typeof backoff === 'function') {
    const ms = backoff(attempt, error);
    // A function's answer is not validated up front: an absurd one is bounded, never thrown.
    return Number.isFinite(ms) && ms > 0 ? Math.ceil(Math.min(ms, MAX_DELAY_MS)) : 0;
  }
  if (backoff.type === 'fixed') return backoff.delayMs;
  const cap = backoff.maxDelayMs ?? 86_400_000;
  const full = Math.min(cap, backoff.delayMs * 2 ** Math.min(attempt - 1, 52));
  const jitter = backoff.jitter ?? 0.25;
  return Math.round(full * (1 - jitter * random()));
}

/**
 * The one retry-or-dead rule of a failed attempt (Worker and PullConsumer): -1 (dead-letter it) when
 * `dead` is asked for or `attempt` was the last of `maxAttempts`; otherwise the delay before the next
 * attempt, `retryDelayMs` if given, else the backoff's.
 */
export function retryDelayAfter(
  attempt: number,
  maxAttempts: number,
  backoff: BackoffOption | BackoffFunction,
  error: unknown,
  options: { dead?: boolean; retryDelayMs?: number } = {},
): number {
  if (options.dead === true || attempt >= maxAttempts) return -1;
  return options.retryDelayMs ?? backoffDelayMs(backoff, attempt, error);
}

/**
 * Per-job backoffs travel in the job record as a short code: `f1000`, or `e1000` with optional
 * `m<maxDelayMs>` and `j<jitter>` (e.g. `e1000m60000j0.5`). Only JavaScript reads it.
 */
export function encodeBackoff(backoff: BackoffOption | undefined): string {
  if (!backoff) return '';
  if (backoff.type === 'fixed') return `f${backoff.delayMs}`;
  const max = backoff.maxDelayMs === undefined ? '' : `m${backoff.maxDelayMs}`;
  const jitter = backoff.jitter === undefined ? '' : `j${backoff.jitter}`;
  return `e${backoff.delayMs}${max}${jitter}`;
}

export function decodeBackoff(code: string): BackoffOption | undefined {
  if (code === '') return undefined;
  const match = /^([fe])(\d+)(?:m(\d+))?(?:j([\d.]+))?$/.exec(code);
  if (!match) return undefined; // unknown code (a newer version wrote it): fall back to the worker's
  const delayMs = Number(match[2]);
  if (match[1] === 'f') return { type: 'fixed', delayMs };
  const backoff: BackoffOption = { type: 'exponential', delayMs };
  if (match[3] !== undefined) backoff.maxDelayMs = Number(match[3]);
  if (match[4] !== undefined) backoff.jitter = Number(match[4]);
  return backoff;
}
