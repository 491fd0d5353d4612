// The CLI and `sandglass serve` on a Redis with TLS (a certificate made by openssl at test time) and
// ACL users, and the Redis settings the CLI refuses as usage errors (exit 2) with the fix named.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { freePort, startLocalRedis, type LocalRedis } from '../../src/deploy/local-redis.js';
import { uniqueQueue } from '../helpers/redis.js';
import { request, sandglass, sandglassJson, startServe } from '../helpers/sandglass-process.js';

const PASSWORD = 's3cret-app-password';
let dir: string;
let server: LocalRedis;
/** The TLS port, when this machine's redis-server and openssl support TLS. */
let tlsPort: number | undefined;
let plainUrl: string;
const file = (name: string) => join(dir, name);

/** A CA, a server certificate for 127.0.0.1 signed by it, and a client certificate. */
function makeCertificates(): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=sandglass test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
  );
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const [name, ext] of [
    ['server', ['-extfile', 'server.ext']],
    ['client', []],
  ] as const) {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=sandglass ${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      ...ext,
      '-out',
      `${name}.crt`,
    );
  }
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sandglass-tls-'));
  try {
    makeCertificates();
    const port = await freePort();
    server = await startLocalRedis({
      appendOnly: false,
      args: [
        '--tls-port',
        String(port),
        '--tls-cert-file',
        file('server.crt'),
        '--tls-key-file',
        file('server.key'),
        '--tls-ca-cert-file',
        file('ca.crt'),
        '--tls-auth-clients',
        'optional',
      ],
    });
    tlsPort = port;
  } catch (error) {
    // No openssl, or a redis-server built without TLS: the ACL and bad-input tests still run.
    console.log(`TLS tests skipped: ${(error as Error).message.split('\n')[0]}`);
    server = await startLocalRedis({ appendOnly: false });
  }
  plainUrl = server.url;
  const admin = new Redis(server.port, '127.0.0.1');
  try {
    await admin.call('ACL', 'SETUSER', 'app', 'on', `>${PASSWORD}`, '~*', '&*', '+@all');
  } finally {
    admin.disconnect();
  }
});

after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the CLI on a Redis with TLS', { timeout: 300_000 }, () => {
  it('rediss:// with --tls-ca works, with an ACL user, and with a client certificate from the environment', async t => {
    if (tlsPort === undefined) return t.skip('no TLS on this machine');
    const name = uniqueQueue('tls');
    const url = `rediss://app:${PASSWORD}@127.0.0.1:${tlsPort}`;
    const added = await sandglass(['--redis', url, '--tls-ca', file('ca.crt'), 'add', name, '{"secure":true}']);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stderr, new RegExp(`sandglass: Redis rediss://app:\\*\\*\\*@127\\.0\\.0\\.1:${tlsPort} \\(--redis\\)`));
    assert.ok(!added.stderr.includes(PASSWORD), 'the password is not printed');

    const env = {
      REDIS_URL: `rediss://127.0.0.1:${tlsPort}`,
      REDIS_TLS_CA: file('ca.crt'),
      REDIS_TLS_CERT: file('client.crt'),
      REDIS_TLS_KEY: file('client.key'),
    };
    const stats = await sandglassJson(['stats', name], env);
    assert.equal(stats.code, 0, stats.stderr);
    assert.equal(stats.body.stats.ready, 1);
  });

  it('without the CA the user gets a clear error that names --tls-ca, not a hang', async t => {
    if (tlsPort === undefined) return t.skip('no TLS on this machine');
    const run = await sandglass(['--redis', `rediss://127.0.0.1:${tlsPort}`, 'stats']);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /Cannot reach Redis at rediss:\/\/127\.0\.0\.1:\d+: .*certificate.*--tls-ca/);
    assert.ok(run.ms < 20_000, `answered after ${run.ms} ms`);
  });

  it('serve runs on rediss:// with --tls-ca and an ACL user, and never logs the password', async t => {
    if (tlsPort === undefined) return t.skip('no TLS on this machine');
    const name = uniqueQueue('tls-serve');
    const serve = await startServe(['--tls-ca', file('ca.crt')], { REDIS_URL: `rediss://app:${PASSWORD}@127.0.0.1:${tlsPort}` });
    try {
      const added = await request(`${serve.url}/v1/queues/${name}/jobs`, { method: 'POST', body: { payload: 1 } });
      assert.equal(added.status, 201, JSON.stringify(added.body));
      assert.equal((await request(`${serve.url}/readyz`)).status, 200);
      assert.match(serve.output(), /"redis":"rediss:\/\/app:\*\*\*@127\.0\.0\.1:\d+","redisMode":"single"/);
    } finally {
      assert.equal(await serve.stop(), 0, serve.output());
      assert.ok(!serve.output().includes(PASSWORD), 'the password is not logged');
    }
  });
});

describe('the CLI with an ACL user', { timeout: 300_000 }, () => {
  it('takes the user and password from the URL or from REDIS_USERNAME / REDIS_PASSWORD; a wrong password is a clear error', async () => {
    const name = uniqueQueue('acl');
    const url = new URL(plainUrl);
    url.username = 'app';
    url.password = PASSWORD;
    const added = await sandglass(['--redis', url.toString(), 'add', name, '1']);
    assert.equal(added.code, 0, added.stderr);
    const fromEnv = await sandglassJson(['stats', name], { REDIS_URL: plainUrl, REDIS_USERNAME: 'app', REDIS_PASSWORD: PASSWORD });
    assert.deepEqual([fromEnv.code, fromEnv.body.stats.ready], [0, 1]);

    url.password = 'not-the-password';
    const wrong = await sandglass(['--redis', url.toString(), 'stats']);
    assert.equal(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stderr, /Redis at redis:\/\/app:\*\*\*@127\.0\.0\.1:\d+ refused the credentials: WRONGPASS/);
    assert.ok(!wrong.stderr.includes('not-the-password'));
  });
});

describe('Redis settings the CLI refuses', { timeout: 300_000 }, () => {
  it('answers exit 2 with a message that names the fix', async () => {
    const unreadable = file('unreadable.pem');
    writeFileSync(unreadable, 'secret');
    chmodSync(unreadable, 0o000);
    const cases: [string[], RegExp][] = [
      [
        ['--cluster', 'nonsense'],
        /Expected --cluster to be a comma-separated list of host:port, e\.g\. 10\.0\.0\.1:6379,10\.0\.0\.2:6379.*got 'nonsense'/,
      ],
      [['--cluster', '127.0.0.1:70000'], /Expected --cluster to be a comma-separated list of host:port/],
      [['--partitions', '0'], /Expected --partitions to be an integer from 1 to 1024, got 0/],
      [['--partitions', 'abc'], /Expected --partitions to be an integer from 1 to 1024, got 'abc'/],
      [['--sentinels', 'a:1'], /--sentinels needs the primary's name: add --sentinel-name <name> \(or REDIS_SENTINEL_NAME\)/],
      [['--tls-ca', join(dir, 'missing.pem')], /Cannot read --tls-ca '.*missing\.pem': ENOENT/],
      [['--redis', 'redis://127.0.0.1:1', '--tls-ca', file('server.ext')], /--tls-ca '.*server\.ext' is not a PEM file/],
      [['--cluster', 'a:1', '--sentinels', 'b:2'], /--cluster and --sentinels name different Redis setups: give one of them/],
      [['--redis', 'redis://127.0.0.1:1', '--sentinel-name', 'mymaster'], /--sentinel-name is for Sentinel: give the sentinels too/],
      [['--cluster', 'redis://a:one@h:1,redis://a:two@h:2'], /give different passwords: give it once, on one entry/],
      [['--redis', 'redis://127.0.0.1:1', '--tls-cert', file('client.crt')], /--tls-cert is given without --tls-key/],
    ];
    // root reads any file: the unreadable case only where permissions hold.
    if (process.getuid?.() !== 0)
      cases.push([['--redis', 'rediss://127.0.0.1:1', '--tls-ca', unreadable], /Cannot read --tls-ca '.*unreadable\.pem': EACCES/]);
    // Four CLI processes at a time: each refuses at once, most of its time is Node's start.
    const runs: Awaited<ReturnType<typeof sandglass>>[] = [];
    for (let start = 0; start < cases.length; start += 4) {
      runs.push(...(await Promise.all(cases.slice(start, start + 4).map(([args]) => sandglass([...args, 'stats'])))));
    }
    for (const [index, [args, message]] of cases.entries()) {
      const run = runs[index] as Awaited<ReturnType<typeof sandglass>>;
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message, args.join(' '));
      assert.ok(!run.stderr.includes('one@') && !run.stderr.includes(':two'), 'no credentials printed');
    }
    const [asJson, fromEnv, both, flagWins] = await Promise.all([
      sandglassJson(['--cluster', 'nonsense', 'ls', 'q']),
      sandglass(['stats'], { REDIS_CLUSTER_NODES: 'nonsense' }),
      sandglass(['stats'], { REDIS_URL: plainUrl, REDIS_SENTINELS: 'a:1' }),
      // A flag wins over another mode's variable.
      sandglass(['--redis', plainUrl, 'stats'], { REDIS_CLUSTER_NODES: 'nonsense' }),
    ]);
    assert.deepEqual([asJson.code, asJson.body.error.code], [2, 'ERR_USAGE']);
    assert.match(fromEnv.stderr, /Expected REDIS_CLUSTER_NODES to be a comma-separated list/);
    assert.equal(fromEnv.code, 2);
    assert.deepEqual([both.code, /REDIS_URL and REDIS_SENTINELS name different Redis setups/.test(both.stderr)], [2, true]);
    assert.equal(flagWins.code, 0, flagWins.stderr);
  });

  it('serve refuses them too (exit 2), before starting anything', async () => {
    for (const [args, message] of [
      [['--partitions', '0'], /Expected --partitions to be an integer from 1 to 1024/],
      [['--sentinels', 'a:1'], /--sentinel-name/],
    ] as const) {
      const run = await sandglass([...args, 'serve', '--port', '0']);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
    }
  });
});
