// Vitest: `npx vitest run --root examples/testing`
import { afterEach, expect, test, vi } from 'vitest';
import { createTestEnvironment, type TestEnvironment } from 'sandglass/testing';
import { orderTimeouts } from './order-timeouts.mjs';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function environment(): Promise<TestEnvironment> {
  const env = await createTestEnvironment();
  cleanup.push(() => env.close());
  return env;
}

test('an unpaid order closes 30 minutes after it was placed', async () => {
  const env = await environment();
  const close = vi.fn();
  const app = orderTimeouts({ connection: env.connection, orders: { isPaid: () => false, close } });
  cleanup.push(() => app.close());

  await app.scheduleTimeout(42);
  await env.clock.advance('29m');
  await env.drain();
  expect(close).not.toHaveBeenCalled();

  await env.clock.advance('1m');
  await env.drain();
  expect(close).toHaveBeenCalledWith(42);
});

test('a failing handler retries on the backoff, on the virtual clock', async () => {
  const env = await environment();
  const queue = env.queue<{ refund: number }>('refund-check');
  const handler = vi.fn().mockRejectedValueOnce(new Error('pending')).mockResolvedValueOnce(undefined);
  env.worker('refund-check', handler, {
    backoff: { type: 'fixed', delayMs: 5 * 60_000 },
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  });

  await queue.add({ refund: 7 });
  await env.drain();
  expect(handler).toHaveBeenCalledTimes(1);
  await env.clock.advance('5m');
  await env.drain();
  expect(handler).toHaveBeenCalledTimes(2);
});
