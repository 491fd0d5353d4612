// node:test, CommonJS: `node --test examples/testing/node-test.test.cjs` (require() of sandglass, an
// ES module, needs Node 20.19 or later).
const assert = require('node:assert/strict');
const { test } = require('node:test');
const { createTestEnvironment } = require('sandglass/testing');
const { orderTimeouts } = require('./order-timeouts.mjs');

test('a reminder 3 days before the membership ends, on a clock set to the day', async t => {
  const env = await createTestEnvironment({ now: '2027-01-01T00:00:00Z' });
  const queue = env.queue('membership-reminder');
  const sent = [];
  env.worker('membership-reminder', job =>
    sent.push({ member: job.payload.member, at: new Date(env.clock.now()).toISOString().slice(0, 10) }),
  );
  t.after(() => env.close());

  const endsAt = Date.parse('2027-02-01T00:00:00Z');
  await queue.add({ member: 'ada' }, { at: endsAt - 3 * 86_400_000 });
  await env.clock.set('2027-01-28T23:59:00Z');
  await env.drain();
  assert.deepEqual(sent, []);

  await env.clock.set('2027-01-29T00:00:00Z');
  await env.drain();
  assert.deepEqual(sent, [{ member: 'ada', at: '2027-01-29' }]);
});

test('the order timeouts work from CommonJS too', async t => {
  const env = await createTestEnvironment();
  const closed = [];
  const app = orderTimeouts({ connection: env.connection, orders: { isPaid: () => false, close: id => closed.push(id) } });
  t.after(async () => {
    await app.close();
    await env.close();
  });
  await app.scheduleTimeout(1);
  await env.clock.advance('30m');
  await env.drain();
  assert.deepEqual(closed, [1]);
});
