import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelayMs, decodeBackoff, encodeBackoff } from '../../src/core/backoff.js';

describe('backoff', () => {
  it('fixed waits the same every time', () => {
    for (const attempt of [1, 2, 10]) assert.equal(backoffDelayMs({ type: 'fixed', delayMs: 250 }, attempt, new Error('x')), 250);
  });

  it('exponential doubles per attempt, is capped, and jitter only shortens it', () => {
    const exp = { type: 'exponential', delayMs: 100, maxDelayMs: 1_000, jitter: 0 } as const;
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map(attempt => backoffDelayMs(exp, attempt, null)),
      [100, 200, 400, 800, 1_000, 1_000],
    );
    const jittered = { type: 'exponential', delayMs: 1_000, jitter: 0.5 } as const;
    assert.equal(
      backoffDelayMs(jittered, 1, null, () => 0),
      1_000,
    );
    assert.equal(
      backoffDelayMs(jittered, 1, null, () => 0.999999),
      500,
    );
    const spread = new Set(Array.from({ length: 50 }, () => backoffDelayMs(jittered, 3, null)));
    assert.ok(spread.size > 10, 'jitter spreads retries');
    assert.ok([...spread].every(ms => ms >= 2_000 && ms <= 4_000));
  });

  it('a function decides with the attempt and the error; nonsense becomes 0', () => {
    const seen: unknown[] = [];
    const fn = (attempt: number, error: unknown) => (seen.push(error), attempt * 7);
    const error = new Error('boom');
    assert.equal(backoffDelayMs(fn, 3, error), 21);
    assert.equal(seen[0], error);
    assert.equal(
      backoffDelayMs(() => Number.NaN, 1, null),
      0,
    );
    assert.equal(
      backoffDelayMs(() => -5, 1, null),
      0,
    );
  });

  it('per-job backoffs survive the record encoding', () => {
    for (const backoff of [
      { type: 'fixed', delayMs: 10 },
      { type: 'exponential', delayMs: 2_000 },
      { type: 'exponential', delayMs: 5, maxDelayMs: 60_000, jitter: 0.5 },
      { type: 'exponential', delayMs: 5, jitter: 0 },
    ] as const) {
      assert.deepEqual(decodeBackoff(encodeBackoff(backoff)), backoff);
    }
    assert.equal(decodeBackoff(encodeBackoff(undefined)), undefined);
  });
});
