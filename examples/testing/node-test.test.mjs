// node:test, ESM: `node --test examples/testing/node-test.test.mjs`
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestEnvironment } from 'sandglass/testing';
import { orderTimeouts } from './order-timeouts.mjs';

test('an unpaid order closes 30 minutes after it was placed, a paid one stays open', async t => {
  const env = await createTestEnvironment();
  const closed = [];
  const app = orderTimeouts({ connection: env.connection, orders: { isPaid: id => id === 7, close: id => closed.push(id) } });
  t.after(async () => {
    await app.close();
    await env.close();
  });

  await app.scheduleTimeout(42);
  await app.scheduleTimeout(7);
  await env.clock.advance('29m');
  await env.drain();
  assert.deepEqual(closed, []);

  await env.clock.advance('1m');
  await env.drain();
  assert.deepEqual(closed, [42]);
});
