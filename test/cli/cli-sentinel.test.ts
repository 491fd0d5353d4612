// The CLI and `sandglass serve` through Redis Sentinel (a primary, a replica and three sentinels,
// private redis-servers): --sentinels with --sentinel-name, and the same through the environment.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { startLocalSentinels, MASTER_NAME, type LocalSentinelSetup } from '../helpers/sentinel.js';
import { uniqueQueue } from '../helpers/redis.js';
import { request, sandglass, sandglassJson, startServe } from '../helpers/sandglass-process.js';

let setup: LocalSentinelSetup;
/** `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: what a user gives to --sentinels. */
let sentinels: string;

before(async () => {
  setup = await startLocalSentinels({ replicas: 1 });
  sentinels = setup.sentinelAddresses.map(address => `${address.host}:${address.port}`).join(',');
});

after(async () => {
  await setup?.stop();
});

describe('the CLI and serve through Redis Sentinel', { timeout: 300_000 }, () => {
  it('adds, shows stats and lists through --sentinels and --sentinel-name, and through the environment', async () => {
    const name = uniqueQueue('sentinel');
    const flags = ['--sentinels', sentinels, '--sentinel-name', MASTER_NAME];
    const added = await sandglass([...flags, 'add', name, '{"n":1}', '--delay', '1h', '--id', 'j1', '--partitions', '3']);
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stderr,
      new RegExp(
        `^sandglass: Redis sentinel primary '${MASTER_NAME}' via 127\\.0\\.0\\.1:\\d+,127\\.0\\.0\\.1:\\d+,127\\.0\\.0\\.1:\\d+ \\(--sentinels\\)$`,
        'm',
      ),
    );

    // The queue is on the primary the sentinels name, with 3 partitions.
    const primary = new Redis(setup.primary.port, '127.0.0.1');
    try {
      assert.equal(Number(await primary.hget(`sg:{${name}:0}:meta`, 'partitions')), 3);
    } finally {
      primary.disconnect();
    }

    const env = { REDIS_SENTINELS: sentinels, REDIS_SENTINEL_NAME: MASTER_NAME };
    const stats = await sandglassJson(['stats', name], env);
    assert.equal(stats.code, 0, stats.stderr);
    assert.deepEqual(stats.body.stats, { delayed: 1, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    const page = await sandglassJson(['ls', name], env);
    assert.deepEqual([page.code, (page.body.jobs as { id: string }[]).map(job => job.id)], [0, ['j1']]);
    const all = await sandglass(['stats'], env);
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, new RegExp(`^${name} +1 +0`, 'm'));
    assert.match(all.stderr, /\(REDIS_SENTINELS\)/);
  });

  it('serve answers the API through the sentinels', async () => {
    const name = uniqueQueue('sentinel-api');
    const serve = await startServe(['--sentinels', sentinels], { REDIS_SENTINEL_NAME: MASTER_NAME });
    try {
      assert.match(serve.output(), /"redisMode":"sentinel"/);
      const added = await request(`${serve.url}/v1/queues/${name}/jobs`, { method: 'POST', body: { payload: 'x', id: 'a', delay: '1h' } });
      assert.equal(added.status, 201, JSON.stringify(added.body));
      const stats = await request(`${serve.url}/v1/queues/${name}`);
      assert.equal(stats.body.stats.delayed, 1);
      const list = await request(`${serve.url}/v1/queues/${name}/jobs?state=delayed`);
      assert.deepEqual(
        (list.body.jobs as { id: string }[]).map(job => job.id),
        ['a'],
      );
      const queues = await request(`${serve.url}/v1/queues`);
      assert.ok((queues.body.queues as { name: string }[]).some(queue => queue.name === name));
      const info = await request(`${serve.url}/v1/info`);
      assert.deepEqual([info.body.redis.mode, info.body.redis.name], ['sentinel', MASTER_NAME]);
      assert.equal((await request(`${serve.url}/readyz`)).status, 200);
    } finally {
      assert.equal(await serve.stop(), 0, serve.output());
    }
  });
});
