// Redis goes away under the service (SIGKILL of its redis-server): /readyz says so within a second,
// API calls answer 503 REDIS_UNAVAILABLE, /healthz and /metrics still answer, and all recovers when
// Redis is back. And Redis at maxmemory: adds answer 507 REDIS_FULL, reads and cancels still work.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startLocalRedis } from '../../src/deploy/local-redis.js';
import { buildApp } from '../../src/server/app.js';
import { client, useApp } from '../helpers/http.js';
import { useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);

describe('HTTP with Redis gone', () => {
  it('readyz 503 NOT_READY, API 503 REDIS_UNAVAILABLE, healthz 200; ready again after a restart', async () => {
    assert.equal((await api.call('POST', '/v1/queues/down/jobs', { payload: 1 })).status, 201);
    assert.equal((await api.call('GET', '/readyz')).status, 200);
    await redis.server.kill('SIGKILL');

    const started = Date.now();
    const ready = await api.call('GET', '/readyz');
    assert.deepEqual([ready.status, ready.body.error.code], [503, 'NOT_READY']);
    // Its probe gives up after READY_TIMEOUT_MS (1 s); the rest is a loaded machine's scheduling
    // (1.6 s measured with two test suites at once). Far below the 3 s call timeout it must not wait for.
    assert.ok(Date.now() - started < 2_500, `readyz answered in ${Date.now() - started} ms`);
    assert.equal((await api.call('GET', '/healthz')).status, 200);

    const [add, metrics] = await Promise.all([api.call('POST', '/v1/queues/down/jobs', { payload: 2 }), api.call('GET', '/metrics')]);
    assert.deepEqual([add.status, add.body.error.code], [503, 'REDIS_UNAVAILABLE']);
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /sandglass_redis_up 0/);

    await redis.server.restart();
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 10_000, 'readyz 200 after the restart');
    assert.equal((await api.call('POST', '/v1/queues/down/jobs', { payload: 3 })).status, 201);
  });
});

describe('HTTP with Redis full', () => {
  it('an add at maxmemory is 507 REDIS_FULL and writes nothing; reads and cancels still work', async () => {
    const full = await startLocalRedis({ appendOnly: false, args: ['--maxmemory', '4mb', '--maxmemory-policy', 'noeviction'] });
    const app = await buildApp({ connection: full.url });
    try {
      const api = client(await app.listen({ port: 0, host: '127.0.0.1' }));
      assert.equal((await api.call('POST', '/v1/queues/full/jobs', { payload: 'first', id: 'first', delay: '1h' })).status, 201);
      const payload = 'x'.repeat(200_000);
      let answer = await api.call('POST', '/v1/queues/full/jobs', { payload, delay: '1h' });
      for (let i = 0; i < 100 && answer.status === 201; i++)
        answer = await api.call('POST', '/v1/queues/full/jobs', { payload, delay: '1h' });
      assert.deepEqual([answer.status, answer.body.error.code], [507, 'REDIS_FULL']);
      const before = (await api.call('GET', '/v1/queues/full')).body.stats.delayed;
      assert.equal((await api.call('POST', '/v1/queues/full/jobs', { payload, delay: '1h' })).status, 507);
      assert.equal((await api.call('GET', '/v1/queues/full')).body.stats.delayed, before, 'nothing was written');
      assert.equal((await api.call('DELETE', '/v1/queues/full/jobs/first')).status, 200, 'cancel frees memory even when full');
    } finally {
      await app.close();
      await full.stop();
    }
  });
});
