// GET /v1/info and describeRedis: which Redis (mode, addresses, TLS, database) and prefix the
// service shows, never a password or user name, for single servers, Cluster and Sentinel clients.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { describeConnection, describeRedis } from '../../src/deploy/redis-description.js';
import { startApp } from '../helpers/http.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const TOKEN = 'info-test-token-0123456789abcdef';
const USER = 'dashboard-viewer';
const PASSWORD = 'pw-Secret-4242';
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Neither the password nor the user name appears anywhere in `text`. */
function assertNoCredentials(text: string): void {
  assert.ok(!text.includes(PASSWORD), `the password leaked: ${text}`);
  assert.ok(!text.includes(USER), `the user name leaked: ${text}`);
}

describe('GET /v1/info', () => {
  it('answers the Redis, the prefix and the version; 401 without the token when the service has one', async () => {
    const port = redis.server.port;
    const api = await startApp(redis, { token: TOKEN, prefix: 'shop' });
    const refused = await fetch(`${api.url}/v1/info`);
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');

    const answer = await api.call('GET', '/v1/info');
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body, {
      version: VERSION,
      prefix: 'shop',
      redis: { mode: 'single', nodes: [`127.0.0.1:${port}`], tls: false, db: 0 },
      access: { name: 'admin', scopes: ['produce', 'consume', 'read', 'admin'], queues: ['*'] },
    });
    assert.equal(answer.headers.get('cache-control'), 'no-store');
  });

  it('never shows the password or user name of a URL with credentials (the service works with them)', async () => {
    // A real ACL user, so that the service really uses the credentials of the URL.
    await redis.raw.call('ACL', 'SETUSER', USER, 'on', `>${PASSWORD}`, '~*', '&*', '+@all');
    const url = `redis://${USER}:${PASSWORD}@127.0.0.1:${redis.server.port}/0`;
    const api = await startApp(redis, { connection: url });
    assert.equal((await api.call('GET', '/v1/queues')).status, 200, 'the service reads Redis as that user');
    const answer = await api.call('GET', '/v1/info');
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body.redis, { mode: 'single', nodes: [`127.0.0.1:${redis.server.port}`], tls: false, db: 0 });
    assertNoCredentials(answer.text);
  });

  it('answers while Redis is down: it reads the connection options only', async () => {
    const api = await startApp(redis, {
      connection: `rediss://:${PASSWORD}@127.0.0.1:1/4`,
      redisDown: () => 'the private redis-server died',
    });
    const answer = await api.call('GET', '/v1/info');
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.redis, { mode: 'single', nodes: ['127.0.0.1:1'], tls: true, db: 4 });
    assertNoCredentials(answer.text);
  });
});

describe('describeRedis', () => {
  it('describes a single server by address, TLS and database, from a client, options or a URL', () => {
    const client = new Redis({ host: '10.0.0.5', port: 6380, db: 2, username: USER, password: PASSWORD, tls: {}, lazyConnect: true });
    try {
      const described = describeRedis(client);
      assert.deepEqual(described, { mode: 'single', nodes: ['10.0.0.5:6380'], tls: true, db: 2 });
      assertNoCredentials(JSON.stringify(described));
    } finally {
      client.disconnect();
    }
    const fromUrl = new Redis(`redis://${USER}:${PASSWORD}@[::1]:6390/3`, { lazyConnect: true });
    try {
      assert.deepEqual(describeRedis(fromUrl), { mode: 'single', nodes: ['[::1]:6390'], tls: false, db: 3 });
    } finally {
      fromUrl.disconnect();
    }
    assert.deepEqual(describeConnection(`rediss://${USER}:${PASSWORD}@cache.example.com:6380/1`), {
      mode: 'single',
      nodes: ['cache.example.com:6380'],
      tls: true,
      db: 1,
    });
    assert.deepEqual(describeConnection('redis://localhost'), { mode: 'single', nodes: ['localhost:6379'], tls: false, db: 0 });
    assert.deepEqual(describeConnection('/run/redis/redis.sock'), { mode: 'single', nodes: ['/run/redis/redis.sock'], tls: false, db: 0 });
    assert.deepEqual(describeConnection({ port: 7000, password: PASSWORD }), {
      mode: 'single',
      nodes: ['localhost:7000'],
      tls: false,
      db: 0,
    });
    assert.deepEqual(describeConnection('not a url'), { mode: 'single', nodes: ['(an invalid URL)'], tls: false });
  });

  it('describes a Cluster by its startup nodes, whatever form they were given in (no server needed)', () => {
    const cluster = new Cluster([{ host: '10.0.0.1', port: 7000 }, `redis://${USER}:${PASSWORD}@10.0.0.2:7001`, '10.0.0.3:7002', 7003], {
      lazyConnect: true,
      redisOptions: { username: USER, password: PASSWORD },
    });
    try {
      assert.equal(cluster.status, 'wait', 'never connected');
      const described = describeRedis(cluster);
      assert.deepEqual(described, {
        mode: 'cluster',
        nodes: ['10.0.0.1:7000', '10.0.0.2:7001', '10.0.0.3:7002', '127.0.0.1:7003'],
        tls: false,
      });
      assertNoCredentials(JSON.stringify(described));
      assert.deepEqual(describeConnection(cluster), described);
    } finally {
      cluster.disconnect();
    }
    const tls = new Cluster([{ host: 'redis.example.com', port: 6379 }], { lazyConnect: true, redisOptions: { tls: {} } });
    try {
      assert.deepEqual(describeRedis(tls), { mode: 'cluster', nodes: ['redis.example.com:6379'], tls: true });
    } finally {
      tls.disconnect();
    }
  });

  it('describes a Sentinel client by its sentinels and master name (no server needed)', () => {
    const client = new Redis({
      sentinels: [
        { host: '10.0.1.1', port: 26379 },
        { host: '10.0.1.2', port: 26380 },
      ],
      name: 'orders-master',
      db: 1,
      password: PASSWORD,
      sentinelPassword: PASSWORD,
      username: USER,
      lazyConnect: true,
    });
    try {
      const described = describeRedis(client);
      assert.deepEqual(described, {
        mode: 'sentinel',
        nodes: ['10.0.1.1:26379', '10.0.1.2:26380'],
        tls: false,
        db: 1,
        name: 'orders-master',
      });
      assertNoCredentials(JSON.stringify(described));
    } finally {
      client.disconnect();
    }
  });
});
