// `sandglass serve` as a whole: configuration from flags and environment, the loopback-only rule,
// start with a Redis URL, and the zero-config start that manages its own redis-server with AOF.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError, isLoopback, parseServeConfig, resolveServeConfig, SERVE_OPTIONS, serveHelp } from '../../src/server/config.js';
import { createLogger } from '../../src/server/logger.js';
import { startServer } from '../../src/server/start.js';
import { sleep, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const TOKEN = 'a'.repeat(32);

describe('serve configuration', () => {
  it('has defaults for everything: loopback, port 8080, a private Redis in ./.sandglass-data', () => {
    const config = resolveServeConfig({}, {});
    assert.deepEqual(config, {
      redis: undefined,
      partitions: undefined,
      port: 8080,
      host: '127.0.0.1',
      token: undefined,
      tokens: undefined,
      tokenSources: { token: undefined, tokenFile: undefined, tokensFile: undefined },
      prefix: 'sg',
      dataDir: resolve('.sandglass-data'),
      bodyLimit: 1_048_576,
      webhooks: [],
      logLevel: 'info',
      logFormat: undefined,
      onParentExit: 'stop',
      warnings: [],
    });
  });

  it('reads the environment, and a flag wins over its variable', () => {
    const env = {
      REDIS_URL: 'redis://db:6379',
      PORT: '7000',
      SANDGLASS_PREFIX: 'app',
      SANDGLASS_BODY_LIMIT: '2mb',
      LOG_LEVEL: 'warn',
      SANDGLASS_DATA_DIR: '/tmp/sg',
    };
    const config = parseServeConfig(['--port', '9000', '--prefix', 'other', '--body-limit', '512kb'], env);
    assert.deepEqual(
      [config.redis?.url, config.port, config.prefix, config.bodyLimit, config.logLevel, config.dataDir],
      ['redis://db:6379', 9000, 'other', 512 * 1024, 'warn', '/tmp/sg'],
    );
  });

  it('refuses to listen beyond loopback without a token, and allows it with one', () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.10']) {
      assert.throws(
        () => resolveServeConfig({ host }, {}),
        (error: Error) => error instanceof ConfigError && /Refusing to listen on .* without a token/.test(error.message),
      );
    }
    assert.equal(resolveServeConfig({ host: '0.0.0.0' }, { SANDGLASS_TOKEN: TOKEN }).host, '0.0.0.0');
    assert.ok(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].every(isLoopback));
    assert.ok(!['0.0.0.0', '10.0.0.1', 'example.com'].some(isLoopback));
  });

  it('reads the token from the environment or a file, and warns about a short one', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sandglass-token-')), 'token');
    writeFileSync(file, `${TOKEN}\n`);
    assert.equal(parseServeConfig(['--token-file', file], {}).token, TOKEN);
    assert.throws(() => parseServeConfig(['--token-file', file], { SANDGLASS_TOKEN: TOKEN }), /not both/);
    assert.match(resolveServeConfig({}, { SANDGLASS_TOKEN: 'short' }).warnings[0] ?? '', /fewer than 16 characters/);
    assert.throws(() => resolveServeConfig({}, { SANDGLASS_TOKEN: 'has a space' }), ConfigError);
    assert.throws(() => parseServeConfig(['--token', TOKEN], {}), /Unknown option '--token'/, 'no flag for secrets: ps would show it');
  });

  it('parses webhook bindings and never quotes their secrets in errors', () => {
    const binding = { queue: 'orders', url: 'https://hooks.example/orders', secret: 'S3cr3t-S3cr3t-S3cr3t' };
    assert.deepEqual(resolveServeConfig({}, { SANDGLASS_WEBHOOKS: JSON.stringify([binding]) }).webhooks, [binding]);
    for (const bad of [
      '{not json',
      JSON.stringify({ ...binding }),
      JSON.stringify([{ ...binding, url: 'ftp://x' }]),
      JSON.stringify([{ ...binding, secret: 'S3cr3t' }]),
    ]) {
      assert.throws(
        () => resolveServeConfig({}, { SANDGLASS_WEBHOOKS: bad }),
        (error: Error) => error instanceof ConfigError && !error.message.includes('S3cr3t'),
        bad,
      );
    }
  });

  it('refuses bad values with messages that name the setting', () => {
    assert.throws(() => resolveServeConfig({ port: '80000' }, {}), /PORT/);
    assert.throws(() => resolveServeConfig({}, { SANDGLASS_BODY_LIMIT: 'lots' }), /SANDGLASS_BODY_LIMIT/);
    assert.throws(() => resolveServeConfig({}, { SANDGLASS_PREFIX: 'a:b' }), /SANDGLASS_PREFIX/);
    assert.throws(() => resolveServeConfig({}, { LOG_LEVEL: 'loud' }), /LOG_LEVEL/);
    assert.throws(() => parseServeConfig(['--colour', 'red'], {}), ConfigError);
  });

  it('help lists every flag and variable', () => {
    const help = serveHelp();
    for (const option of SERVE_OPTIONS) {
      assert.ok(help.includes(option.env), option.env);
      if (option.flag) assert.ok(help.includes(option.flag), option.flag);
    }
  });
});

describe('startServer', () => {
  it('serves on the given Redis, warns that it is open on loopback only, and closes', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const server = await startServer(resolveServeConfig({ port: '0', redis: redis.url }, {}), {
      logger: createLogger({ destination: sink }),
    });
    try {
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(server.managedRedis, undefined);
      const added = await fetch(`${server.url}/v1/queues/served/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"payload":1}',
      });
      assert.equal(added.status, 201);
      const log = lines.join('');
      assert.match(log, /No SANDGLASS_TOKEN: the API is open without authentication, so it listens on 127\.0\.0\.1 \(loopback\) only/);
      assert.match(log, /sandglass serve listening on http:\/\/127\.0\.0\.1/);
    } finally {
      await server.close();
    }
    await assert.rejects(fetch(`${server.url}/healthz`), 'no longer listening');
  });

  it('close ends pending long polls at once (they answer an empty list) and then refuses connections', async () => {
    const server = await startServer(resolveServeConfig({ port: '0', redis: redis.url }, {}), {
      logger: createLogger({ level: 'silent' }),
    });
    const started = Date.now();
    const pending = fetch(`${server.url}/v1/queues/polled/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"waitMs":30000}',
    });
    await sleep(200);
    await server.close();
    const answer = await pending;
    assert.deepEqual([answer.status, await answer.json()], [200, { jobs: [] }]);
    assert.ok(Date.now() - started < 2_000, `closed in ${Date.now() - started} ms`);
  });

  it('delivers bound queues to their webhooks, and counts the deliveries in /activity and /metrics', async () => {
    const received: { id: string; dueAt: number; at: number }[] = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', chunk => (body += chunk));
      request.on('end', () => {
        received.push({ ...(JSON.parse(body) as { id: string; dueAt: number }), at: Date.now() });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>(listening => receiver.listen(0, '127.0.0.1', listening));
    const binding = {
      queue: 'hooked',
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      secret: 'webhook-secret-0123456789',
    };
    const config = resolveServeConfig({ port: '0', redis: redis.url }, { SANDGLASS_WEBHOOKS: JSON.stringify([binding]) });
    const server = await startServer(config, { logger: createLogger({ level: 'silent' }) });
    try {
      const added = await fetch(`${server.url}/v1/queues/hooked/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"payload":{"n":1},"delay":200}',
      });
      const { id } = (await added.json()) as { id: string };
      await waitFor(() => received.length === 1, 5_000, 'the webhook delivery');
      assert.equal(received[0]?.id, id);
      assert.ok(received[0]!.at >= received[0]!.dueAt, 'not early');
      await waitFor(
        async () =>
          ((await (await fetch(`${server.url}/v1/queues/hooked`)).json()) as { counters: { completed: number } }).counters.completed === 1,
        5_000,
        'the ack',
      );
      const activity = (await (await fetch(`${server.url}/v1/queues/hooked/activity`)).json()) as { points: { delivered: number }[] };
      assert.equal(
        activity.points.reduce((sum, point) => sum + point.delivered, 0),
        1,
      );
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      assert.match(metrics, /sandglass_lateness_seconds_count\{queue="hooked",source="webhook"\} 1/);
    } finally {
      await server.close();
      receiver.close();
    }
  });

  it('zero-config: starts a private redis-server with AOF in the data folder, keeps jobs across restarts, stops it on SIGTERM', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'sandglass-serve-')), 'data');
    const first = await serveChild(dataDir);
    assert.ok(first.redisPid > 0);
    assert.match(
      first.stdout(),
      new RegExp(`started a private redis-server \\(AOF on\\) with its data in ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    assert.equal((await fetch(`${first.url}/readyz`)).status, 200);
    const added = await fetch(`${first.url}/v1/queues/zero/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"payload":"kept","id":"j1","delay":"1h"}',
    });
    assert.equal(added.status, 201);
    assert.equal(await first.stop('SIGTERM'), 0, 'a clean exit');
    assert.ok(!isAlive(first.redisPid), 'the private redis-server is gone');
    assert.ok(
      readdirSync(dataDir).some(name => name.startsWith('appendonly')),
      `AOF in ${readdirSync(dataDir).join(', ')}`,
    );

    const second = await serveChild(dataDir);
    const job = await fetch(`${second.url}/v1/queues/zero/jobs/j1`);
    assert.deepEqual([job.status, ((await job.json()) as { payload: string }).payload], [200, 'kept']);
    assert.equal(await second.stop('SIGINT'), 0);
    assert.ok(!isAlive(second.redisPid));
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const FIXTURE = fileURLToPath(new URL('../fixtures/http-serve.ts', import.meta.url));

/** Runs the serve fixture with no REDIS_URL; resolves once it listens. */
async function serveChild(dataDir: string) {
  const env = { ...process.env, REDIS_URL: '', SANDGLASS_TOKEN: '', LOG_LEVEL: 'info' };
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, '--port', '0', '--data-dir', dataDir], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', chunk => (stdout += String(chunk)));
  const exited = new Promise<number | null>(resolveExit => child.once('exit', code => resolveExit(code)));
  const ready = await new Promise<{ url: string; redisPid: number }>((resolveReady, reject) => {
    child.stderr.on('data', chunk => {
      stderr += String(chunk);
      const match = /READY (.*)\n/.exec(stderr);
      if (match) resolveReady(JSON.parse(match[1] as string));
    });
    void exited.then(code => reject(new Error(`serve exited with ${code} before it was ready: ${stderr} ${stdout}`)));
  });
  assert.ok(existsSync(dataDir), 'the data folder was created');
  return {
    ...ready,
    stdout: () => stdout,
    async stop(signal: NodeJS.Signals) {
      child.kill(signal);
      return exited;
    },
  };
}
