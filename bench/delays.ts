/**
 * Due-time mixes for the memory figures. The spread mix is what a delay queue holds in practice
 * (order timeouts in minutes, 5-day reviews, 15-day reminders): delays log-uniform between a minute
 * and 30 days, drawn from a seeded generator so that both libraries store the very same delays.
 */

export const SPREAD_MIN_MS = 60_000;
export const SPREAD_MAX_MS = 30 * 86_400_000;
/** Fixed, so that every run (and both libraries) get the same delays. */
export const SPREAD_SEED = 8;

/** mulberry32: a small, fast, well-mixed 32-bit generator; returns floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** `count` whole-millisecond delays, log-uniform in [minMs, maxMs]. */
export function logUniformDelays(count: number, minMs = SPREAD_MIN_MS, maxMs = SPREAD_MAX_MS, seed = SPREAD_SEED): number[] {
  const random = seededRandom(seed);
  const low = Math.log(minMs);
  const span = Math.log(maxMs) - low;
  return Array.from({ length: count }, () => Math.round(Math.exp(low + random() * span)));
}
