import type { BackoffFunction, BackoffOption } from './types.js';

/** The backoff used when neither the job nor the worker names one. */
export const DEFAULT_BACKOFF: BackoffOption = { type: 'exponential', delayMs: 1_000, maxDelayMs: 3_600_000, jitter: 0.25 };

/**
 * The delay before the next attempt after `attempt` (1-based) failed.
 * Exponential: `delayMs * 2^(attempt-1)` capped at `maxDelayMs` (default one day), then reduced by a
 * random share of up to `jitter` (default 0.25) so that a burst of failures does not retry as a burst.
 */
export function backoffDelayMs(backoff: BackoffOption | BackoffFunction, attempt: number, error: unknown, random = Math.random): number {
  if (typeof backoff === 'function') {
    const ms = backoff(attempt, error);
    return Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : 0;
  }
  if (backoff.type === 'fixed') return backoff.delayMs;
  const cap = backoff.maxDelayMs ?? 86_400_000;
  const full = Math.min(cap, backoff.delayMs * 2 ** Math.min(attempt - 1, 52));
  const jitter = backoff.jitter ?? 0.25;
  return Math.round(full * (1 - jitter * random()));
}

/** Per-job backoffs travel in the job record as a short code: `f1000` or `e1000`. */
export function encodeBackoff(backoff: BackoffOption | undefined): string {
  if (!backoff) return '';
  if (backoff.type === 'fixed') return `f${backoff.delayMs}`;
  return `e${backoff.delayMs}`;
}

export function decodeBackoff(code: string): BackoffOption | undefined {
  if (code === '') return undefined;
  const delayMs = Number(code.slice(1));
  return code[0] === 'f' ? { type: 'fixed', delayMs } : { type: 'exponential', delayMs };
}
