// Named tokens with scopes and queue patterns, over HTTP: every route of the route table with a
// token of each scope (and one of every scope for another queue pattern). An allowed request is
// never 401/403; a refused one is 403 FORBIDDEN_SCOPE naming the scope it lacks and writes nothing
// (the whole Redis dataset is the same before and after). Admin actions are logged with the token's
// name, never the token. The tokens file is re-read on SIGHUP by a real `sandglass serve`.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseServeConfig } from '../../src/server/config.js';
import { createLogger } from '../../src/server/logger.js';
import { buildOpenApiDocument, ROUTES, routeErrors, type OperationId, type RouteSpec } from '../../src/server/openapi.js';
import { queuePattern, TokenSet, tokenDigest, type Scope, type TokenEntry } from '../../src/server/tokens.js';
import { client, useApp, type Client } from '../helpers/http.js';
import { useRedis, waitFor } from '../helpers/redis.js';
import { sandglass, startServe, type Serve } from '../helpers/sandglass-process.js';

/** The scope each route needs, written out again here: the table in openapi.ts must agree. */
const EXPECTED_SCOPES: Record<OperationId, Scope | 'any' | 'public'> = {
  addJob: 'produce',
  addJobs: 'produce',
  cancelJob: 'produce',
  rescheduleJob: 'produce',
  getJob: 'any',
  claimJobs: 'consume',
  ackJob: 'consume',
  failJob: 'consume',
  extendLease: 'consume',
  listQueues: 'read',
  getQueue: 'read',
  listJobs: 'read',
  getTimeline: 'read',
  getActivity: 'read',
  getLimits: 'read',
  getRetention: 'read',
  getDefaultGroupLimits: 'read',
  getGroupLimits: 'read',
  listGroups: 'read',
  listSchedules: 'read',
  getSchedule: 'read',
  metrics: 'read',
  retryDead: 'admin',
  purgeDead: 'admin',
  pauseQueue: 'admin',
  resumeQueue: 'admin',
  setLimits: 'admin',
  setRetention: 'admin',
  setDefaultGroupLimits: 'admin',
  setGroupLimits: 'admin',
  clearGroupLimits: 'admin',
  pauseGroup: 'admin',
  resumeGroup: 'admin',
  upsertSchedule: 'admin',
  pauseSchedule: 'admin',
  resumeSchedule: 'admin',
  deleteSchedule: 'admin',
  getInfo: 'any',
  openapi: 'any',
  healthz: 'public',
  readyz: 'public',
  dashboardIndex: 'public',
  dashboardFile: 'public',
};

const QUEUE = 'orders-eu';
const OTHER_QUEUE = 'billing-1';
const Q = `/v1/queues/${QUEUE}`;

/** A request of each operation on QUEUE, that would change something when it writes. */
const SAMPLES: Record<OperationId, { path: string; body?: unknown }> = {
  addJob: { path: `${Q}/jobs`, body: { payload: { n: 1 }, delay: 3_600_000 } },
  addJobs: { path: `${Q}/jobs:bulk`, body: { jobs: [{ payload: { n: 2 }, delay: 3_600_000 }] } },
  getJob: { path: `${Q}/jobs/j1` },
  cancelJob: { path: `${Q}/jobs/j1` },
  rescheduleJob: { path: `${Q}/jobs/j1/reschedule`, body: { delay: 7_200_000 } },
  upsertSchedule: { path: `${Q}/schedules/nightly`, body: { every: '2h' } },
  listSchedules: { path: `${Q}/schedules` },
  getSchedule: { path: `${Q}/schedules/nightly` },
  pauseSchedule: { path: `${Q}/schedules/nightly/pause`, body: {} },
  resumeSchedule: { path: `${Q}/schedules/nightly/resume`, body: {} },
  deleteSchedule: { path: `${Q}/schedules/nightly` },
  claimJobs: { path: `${Q}/claim`, body: { max: 1 } },
  ackJob: { path: `${Q}/jobs/j1/ack`, body: { token: 'not-the-lease' } },
  failJob: { path: `${Q}/jobs/j1/fail`, body: { token: 'not-the-lease' } },
  extendLease: { path: `${Q}/jobs/j1/extend`, body: { token: 'not-the-lease' } },
  listQueues: { path: '/v1/queues' },
  getQueue: { path: Q },
  listJobs: { path: `${Q}/jobs?state=delayed` },
  getTimeline: { path: `${Q}/timeline` },
  getActivity: { path: `${Q}/activity` },
  retryDead: { path: `${Q}/dead/retry`, body: {} },
  purgeDead: { path: `${Q}/dead` },
  pauseQueue: { path: `${Q}/pause`, body: {} },
  resumeQueue: { path: `${Q}/resume`, body: {} },
  getLimits: { path: `${Q}/limits` },
  setLimits: { path: `${Q}/limits`, body: { concurrency: 5 } },
  getRetention: { path: `${Q}/retention` },
  setRetention: { path: `${Q}/retention`, body: { completed: { count: 10 } } },
  getDefaultGroupLimits: { path: `${Q}/group-limits` },
  setDefaultGroupLimits: { path: `${Q}/group-limits`, body: { concurrency: 2 } },
  getGroupLimits: { path: `${Q}/groups/g1/limits` },
  setGroupLimits: { path: `${Q}/groups/g1/limits`, body: { concurrency: 1 } },
  clearGroupLimits: { path: `${Q}/groups/g1/limits` },
  pauseGroup: { path: `${Q}/groups/g1/pause`, body: {} },
  resumeGroup: { path: `${Q}/groups/g1/resume`, body: {} },
  listGroups: { path: `${Q}/groups` },
  getInfo: { path: '/v1/info' },
  metrics: { path: '/metrics' },
  healthz: { path: '/healthz' },
  readyz: { path: '/readyz' },
  openapi: { path: '/openapi.json' },
  dashboardIndex: { path: '/' },
  dashboardFile: { path: '/app.js' },
};

interface TestToken extends TokenEntry {
  secret: string;
}

function makeToken(name: string, scopes: Scope[], queues: string[]): TestToken {
  const secret = `secret-${name}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  return { name, sha256: tokenDigest(secret), scopes, queues, secret };
}

const TOKENS = [
  makeToken('orders-producer', ['produce'], ['orders-*']),
  makeToken('orders-consumer', ['consume'], ['orders-*']),
  makeToken('orders-reader', ['read'], ['orders-*']),
  makeToken('orders-admin', ['admin'], ['orders-*']),
  makeToken('eu-worker', ['consume', 'produce'], ['orders-eu']),
  makeToken('billing-all', ['produce', 'consume', 'read', 'admin'], ['billing-*', 'orders-us']),
];

/** Whether `token` may call `spec` on QUEUE, by the rules of docs/http-api.md (independent of src/server/tokens.ts). */
function expectedAllowed(token: TestToken, spec: RouteSpec): boolean {
  const scope = EXPECTED_SCOPES[spec.operationId];
  if (scope === 'public') return true;
  const hasScope = scope === 'any' || token.scopes.includes('admin') || token.scopes.includes(scope);
  const onQueue = !spec.path.includes('{queue}') || token.queues.some(pattern => pattern === QUEUE || pattern === 'orders-*');
  return hasScope && onQueue;
}

const redis = useRedis();
const logLines: string[] = [];
const logger = createLogger({ level: 'info', format: 'json', destination: { write: (line: string) => void logLines.push(line) } });
const api = useApp(redis, { tokens: new TokenSet(TOKENS), logger });
const clients = new Map<string, Client>();
const as = (name: string): Client => clients.get(name) as Client;

/** Every key and its DUMP: equal before and after a request that must write nothing. */
async function dataset(): Promise<string> {
  const keys = (await redis.raw.keys('*')).sort();
  const dumps = await Promise.all(keys.map(async key => `${key}=${(await redis.raw.dumpBuffer(key))?.toString('hex') ?? ''}`));
  return dumps.join('\n');
}

/** The state the refused writes would change: a waiting job, a schedule, a dead letter, a job of another queue. */
async function prepare(): Promise<void> {
  const admin = as('orders-admin');
  const add = await admin.call('POST', `${Q}/jobs`, { id: 'j1', payload: { n: 0 }, delay: 3_600_000 });
  assert.equal(add.status, 201, add.text);
  await admin.call('PUT', `${Q}/schedules/nightly`, { every: '1h' });
  const stats = await admin.call('GET', Q);
  if (stats.body.stats.dead === 0) {
    await admin.call('POST', `${Q}/jobs`, { payload: 'to die', maxAttempts: 1 });
    const claimed = await admin.call('POST', `${Q}/claim`, { max: 100 });
    for (const job of claimed.body.jobs) await admin.call('POST', `${Q}/jobs/${job.id}/fail`, { token: job.token, dead: true });
  }
}

describe('HTTP scopes', () => {
  before(async () => {
    const started = await api.start();
    for (const token of TOKENS) clients.set(token.name, client(started.url, token.secret));
    await as('billing-all').call('POST', `/v1/queues/${OTHER_QUEUE}/jobs`, { payload: 'billing', delay: 3_600_000 });
  });

  it('every route of the table has the scope of docs/http-api.md (public ones none)', () => {
    for (const spec of ROUTES) {
      const expected = EXPECTED_SCOPES[spec.operationId];
      assert.ok(expected !== undefined, `${spec.operationId}: add it to EXPECTED_SCOPES and SAMPLES`);
      if (expected === 'public') assert.ok(spec.public === true && spec.scope === undefined, spec.operationId);
      else assert.equal(spec.scope, expected, spec.operationId);
    }
  });

  it("the OpenAPI document shows each route's scope and lists 403 FORBIDDEN_SCOPE wherever it can be answered", () => {
    const paths = buildOpenApiDocument().paths as Record<string, Record<string, Record<string, unknown>>>;
    for (const spec of ROUTES) {
      const operation = paths[spec.path]?.[spec.method.toLowerCase()] as Record<string, unknown>;
      const scope = EXPECTED_SCOPES[spec.operationId];
      const canRefuse = scope !== 'public' && (scope !== 'any' || spec.path.includes('{queue}'));
      assert.equal(operation['x-sandglass-scope'], scope === 'public' ? undefined : scope, spec.operationId);
      assert.equal(routeErrors(spec).includes('FORBIDDEN_SCOPE'), canRefuse, spec.operationId);
      const forbidden = (operation.responses as Record<string, { description: string }>)['403']?.description ?? '';
      assert.equal(forbidden.includes('FORBIDDEN_SCOPE'), canRefuse, `${spec.operationId}: ${forbidden}`);
    }
  });

  it('every route with a token of each scope: allowed ones pass, the others are 403 FORBIDDEN_SCOPE and write nothing', async () => {
    for (const spec of ROUTES) {
      const sample = SAMPLES[spec.operationId];
      const scope = EXPECTED_SCOPES[spec.operationId];
      const refused = TOKENS.filter(token => !expectedAllowed(token, spec));
      const allowed = TOKENS.filter(token => expectedAllowed(token, spec));
      await prepare();
      for (const token of refused) {
        const before = await dataset();
        const answer = await as(token.name).call(spec.method, sample.path, sample.body);
        const what = `${spec.operationId} by ${token.name}`;
        assert.equal(answer.status, 403, `${what}: ${answer.text}`);
        assert.equal(answer.body.error.code, 'FORBIDDEN_SCOPE', what);
        const message: string = answer.body.error.message;
        assert.ok(message.includes(`"${token.name}"`), `${what} names the token: ${message}`);
        const needs = scope === 'any' ? 'it has no scope for queue' : `it needs the ${scope} scope`;
        assert.ok(message.includes(needs), `${what} names the scope: ${message}`);
        if (spec.path.includes('{queue}')) assert.ok(message.includes(`queue "${QUEUE}"`), `${what} names the queue: ${message}`);
        assert.ok(!message.includes(token.secret), `${what}: never the token`);
        assert.equal(await dataset(), before, `${what} wrote nothing`);
      }
      for (const token of allowed) {
        const answer = await as(token.name).call(spec.method, sample.path, sample.body);
        assert.ok(answer.status !== 401 && answer.status !== 403, `${spec.operationId} by ${token.name}: ${answer.status} ${answer.text}`);
        assert.ok(answer.status < 500, `${spec.operationId} by ${token.name}: ${answer.status} ${answer.text}`);
      }
    }
  });

  it('without a token every route but the public ones is 401; a wrong token too', async () => {
    const anonymous = client(api.url);
    const wrong = client(api.url, 'secret-nobody-has-this-one');
    for (const spec of ROUTES) {
      const sample = SAMPLES[spec.operationId];
      for (const caller of [anonymous, wrong]) {
        const answer = await caller.call(spec.method, sample.path, sample.body);
        if (spec.public) assert.notEqual(answer.status, 401, spec.operationId);
        else assert.equal(answer.status, 401, `${spec.operationId}: ${answer.text}`);
      }
    }
  });

  it('GET /v1/queues and /metrics show only the queues of the token; /v1/info says what the token may do', async () => {
    const names = async (name: string) => ((await as(name).call('GET', '/v1/queues')).body.queues as { name: string }[]).map(q => q.name);
    assert.deepEqual(await names('orders-reader'), [QUEUE]);
    assert.deepEqual(await names('billing-all'), [OTHER_QUEUE]);

    const metrics = (await as('orders-reader').call('GET', '/metrics')).text;
    assert.match(metrics, new RegExp(`queue="${QUEUE}"`));
    assert.doesNotMatch(metrics, new RegExp(`queue="${OTHER_QUEUE}"`));
    assert.match(metrics, /^# TYPE sandglass_http_requests_total counter$/m, 'service-wide series stay');
    assert.match((await as('billing-all').call('GET', '/metrics')).text, new RegExp(`queue="${OTHER_QUEUE}"`));

    const info = async (name: string) => (await as(name).call('GET', '/v1/info')).body.access;
    assert.deepEqual(await info('orders-reader'), { name: 'orders-reader', scopes: ['read'], queues: ['orders-*'] });
    assert.deepEqual(await info('orders-admin'), {
      name: 'orders-admin',
      scopes: ['produce', 'consume', 'read', 'admin'],
      queues: ['orders-*'],
    });
  });

  it('a producer may add to a queue of its pattern and look its job up, not another queue', async () => {
    const producer = as('orders-producer');
    const added = await producer.call('POST', '/v1/queues/orders-us/jobs', { id: 'p1', payload: 1, delay: 60_000 });
    assert.equal(added.status, 201, added.text);
    assert.equal((await producer.call('GET', '/v1/queues/orders-us/jobs/p1')).status, 200);
    const refused = await producer.call('POST', `/v1/queues/${OTHER_QUEUE}/jobs`, { payload: 1 });
    assert.equal(refused.status, 403);
    assert.equal(
      refused.body.error.message,
      `The token "orders-producer" may not call addJob: it needs the produce scope for queue "${OTHER_QUEUE}" (it has produce on orders-*)`,
    );
  });

  it('the scope is checked before the body is read: a refused request with a broken body is still 403', async () => {
    const answer = await as('orders-reader').call('PUT', `${Q}/limits`, '{ not json');
    assert.equal(answer.status, 403, answer.text);
    assert.equal(answer.body.error.code, 'FORBIDDEN_SCOPE');
    assert.equal((await as('orders-admin').call('PUT', `${Q}/limits`, '{ not json')).body.error.code, 'INVALID_JSON');
  });

  it('every admin action is logged with the name of its token, never the token', async () => {
    logLines.length = 0;
    await as('orders-admin').call('POST', `${Q}/pause`, { create: true });
    await as('orders-admin').call('POST', `${Q}/resume`, {});
    await as('orders-reader').call('POST', `${Q}/pause`, {});
    await as('orders-producer').call('POST', `${Q}/jobs`, { payload: 'not an admin action' });
    await waitFor(() => logLines.filter(line => line.includes('"admin action"')).length >= 3, 5_000, 'the audit lines');
    const audit = logLines.map(line => JSON.parse(line)).filter(entry => entry.msg === 'admin action');
    assert.deepEqual(
      audit.map(({ tokenName, action, queue, status }) => ({ tokenName, action, queue, status })),
      [
        { tokenName: 'orders-admin', action: 'pauseQueue', queue: QUEUE, status: 200 },
        { tokenName: 'orders-admin', action: 'resumeQueue', queue: QUEUE, status: 200 },
        { tokenName: 'orders-reader', action: 'pauseQueue', queue: QUEUE, status: 403 },
      ],
      'a refused attempt is in the audit log too (403: nothing done); an add is not an admin action',
    );
    assert.ok(
      logLines.some(line => line.includes('refused') && line.includes('orders-reader')),
      'the refusal is logged',
    );
    for (const token of TOKENS) assert.ok(!logLines.some(line => line.includes(token.secret)), `no line holds ${token.name}'s token`);
  });

  it('the audit log of a whole run of admin routes names every action', async () => {
    logLines.length = 0;
    const admin = ROUTES.filter(spec => spec.scope === 'admin');
    for (const spec of admin) {
      const sample = SAMPLES[spec.operationId];
      await as('orders-admin').call(spec.method, sample.path, sample.body);
    }
    await waitFor(() => logLines.filter(line => line.includes('"admin action"')).length >= admin.length, 5_000, 'the audit lines');
    const actions = logLines
      .map(line => JSON.parse(line))
      .filter(entry => entry.msg === 'admin action' && entry.tokenName === 'orders-admin')
      .map(entry => entry.action);
    assert.deepEqual(
      actions,
      admin.map(spec => spec.operationId),
    );
  });
});

describe('HTTP scopes: the tokens file of sandglass serve, re-read on SIGHUP', () => {
  const redisServer = useRedis();
  const folder = mkdtempSync(join(tmpdir(), 'sandglass-tokens-'));
  const file = join(folder, 'tokens.json');
  const adminFile = join(folder, 'admin-token');
  const oldAdmin = makeToken('admin', ['admin'], ['*']);
  const newAdmin = makeToken('admin', ['admin'], ['*']);
  const oldToken = makeToken('reader', ['read'], ['*']);
  const newToken = makeToken('reader-2', ['read'], ['*']);
  const write = (tokens: readonly TokenEntry[] | string) =>
    writeFileSync(
      file,
      typeof tokens === 'string'
        ? tokens
        : JSON.stringify(tokens.map(({ name, sha256, scopes, queues }) => ({ name, sha256, scopes, queues }))),
    );
  let serve: Serve | undefined;

  before(async () => {
    write([oldToken]);
    writeFileSync(adminFile, `${oldAdmin.secret}\n`);
    serve = await startServe(['--redis', redisServer.url], { SANDGLASS_TOKENS: file, SANDGLASS_TOKEN_FILE: adminFile });
  });
  after(async () => {
    await serve?.stop();
  });

  const status = async (token: TestToken) => (await client((serve as Serve).url, token.secret).call('GET', '/v1/queues')).status;

  it('a new file replaces the tokens without a restart; a bad one keeps them and says why', async () => {
    const running = serve as Serve;
    assert.equal(await status(oldToken), 200);
    assert.equal(await status(oldAdmin), 200);
    assert.equal(await status(newToken), 401);

    write([newToken]);
    writeFileSync(adminFile, `${newAdmin.secret}\n`);
    running.child.kill('SIGHUP');
    await waitFor(() => running.output().includes('tokens reloaded (2 tokens)'), 10_000, 'the reload');
    assert.equal(await status(oldToken), 401, 'the old token is refused');
    assert.equal(await status(newToken), 200, 'the new one is accepted');
    assert.equal(await status(oldAdmin), 401, 'the --token-file is read again too');
    assert.equal(await status(newAdmin), 200);

    write('[{ "name": "broken", "sha256": "abc", "scopes": ["read"] }]');
    running.child.kill('SIGHUP');
    await waitFor(() => running.output().includes('tokens not reloaded'), 10_000, 'the refused reload');
    assert.match(running.output(), /sha256: expected the 64 hex digits/);
    assert.equal(await status(newToken), 200, 'the tokens in use are kept');
    assert.ok(running.child.exitCode === null, 'still running');
    for (const token of [oldToken, newToken, oldAdmin, newAdmin])
      assert.ok(!running.output().includes(token.secret), 'no token in the log');
  });
});

describe('HTTP scopes: the tokens file, checked strictly at start', () => {
  const folder = mkdtempSync(join(tmpdir(), 'sandglass-tokens-config-'));
  let count = 0;
  const fileOf = (content: unknown) => {
    const file = join(folder, `tokens-${(count += 1)}.json`);
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };
  const good = { name: 'orders-service', sha256: tokenDigest('orders-token-0123456789'), scopes: ['produce'], queues: ['orders-*'] };
  const refused = (content: unknown, pattern: RegExp, env: Record<string, string> = {}) =>
    assert.throws(
      () => parseServeConfig(['--tokens-file', fileOf(content)], env),
      (error: Error) => error instanceof ConfigError && pattern.test(error.message),
      String(pattern),
    );

  it('reads SANDGLASS_TOKENS or --tokens-file; SANDGLASS_TOKEN beside it is the token named admin', () => {
    const file = fileOf([good, { name: 'reader', sha256: tokenDigest('reader-token-0123456789'), scopes: ['read'] }]);
    const config = parseServeConfig(['--host', '0.0.0.0'], { SANDGLASS_TOKENS: file, SANDGLASS_TOKEN: 'the-admin-token-0123456789' });
    assert.deepEqual(
      config.tokens?.map(({ name, scopes, queues }) => ({ name, scopes, queues })),
      [
        { name: 'admin', scopes: ['admin'], queues: ['*'] },
        { name: 'orders-service', scopes: ['produce'], queues: ['orders-*'] },
        { name: 'reader', scopes: ['read'], queues: ['*'] },
      ],
    );
    assert.equal(parseServeConfig(['--tokens-file', file, '--host', '0.0.0.0'], {}).tokens?.length, 2, 'the file alone allows any host');
    assert.equal(parseServeConfig([], {}).tokens, undefined, 'neither: no auth');
  });

  it('refuses a bad file with a message that says which entry and why', () => {
    refused('{ not json', /is not valid JSON/);
    refused({ tokens: [] }, /expected a JSON array/);
    refused([{ ...good, sha256: 'abc' }], /\[0\] \("orders-service"\)\.sha256: expected the 64 hex digits.*got 3 characters/);
    refused([{ ...good, sha256: 'z'.repeat(64) }], /sha256: expected the 64 hex digits/);
    refused([{ ...good, scopes: ['write'] }], /scopes: unknown scope 'write' \(expected produce, consume, read, admin\)/);
    refused([{ ...good, scopes: [] }], /scopes: expected a non-empty array/);
    refused([{ ...good, queues: [] }], /queues: expected a non-empty array/);
    refused([{ ...good, queues: ['orders/eu'] }], /queues: expected queue names or patterns/);
    refused([{ ...good, secret: 'x' }], /unknown key 'secret'/);
    refused([{ ...good, name: 'has space' }], /\[0\]\.name: expected 1-100 characters/);
    refused([good, { ...good, sha256: tokenDigest('another-token-0123456789') }], /the name "orders-service" is used twice/);
    refused([good, { ...good, name: 'copy' }], /"copy" has the same sha256 as another entry/);
    refused([{ ...good, name: 'admin' }], /the name "admin" is SANDGLASS_TOKEN's/, { SANDGLASS_TOKEN: 'the-admin-token-0123456789' });
    refused([{ ...good, sha256: tokenDigest('orders-token-0123456789') }], /has the sha256 of SANDGLASS_TOKEN/, {
      SANDGLASS_TOKEN: 'orders-token-0123456789',
    });
    assert.throws(() => parseServeConfig(['--tokens-file', join(folder, 'missing.json')], {}), /Cannot read SANDGLASS_TOKENS.*ENOENT/);
  });

  it('queue patterns: * is any run of characters, the rest is literal', () => {
    const matches = (pattern: string, queue: string) => queuePattern(pattern).test(queue);
    assert.ok(matches('orders-*', 'orders-eu') && matches('orders-*', 'orders-'));
    assert.ok(!matches('orders-*', 'my-orders-eu') && !matches('orders-*', 'orders'));
    assert.ok(matches('*-eu', 'orders-eu') && matches('a*b*c', 'a-b-c') && matches('*', 'anything'));
    assert.ok(!matches('a.b', 'axb'), 'a dot is a dot');
    assert.ok(matches('orders-eu', 'orders-eu') && !matches('orders-eu', 'orders-eu2'), 'a name without * is the queue itself');
  });

  it('sandglass token hash prints the sha256 of the token on stdin, or the whole entry', async () => {
    const run = await sandglass(['token', 'hash'], {}, 'orders-token-0123456789\n');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `${tokenDigest('orders-token-0123456789')}\n`);
    const entry = await sandglass(
      ['token', 'hash', '--name', 'orders-service', '--scopes', 'produce', '--queues', 'orders-*'],
      {},
      'orders-token-0123456789',
    );
    assert.deepEqual(JSON.parse(entry.stdout), good);
    assert.notEqual((await sandglass(['token', 'hash'], {}, '')).code, 0, 'no token, no hash');
    // The entry it prints is checked as the tokens file is: an entry serve would refuse is refused here.
    for (const [flags, said] of [
      [['--name', 'ops', '--scopes', 'produce,purge'], "unknown scope 'purge'"],
      [['--name', 'ops', '--scopes', 'read', '--queues', 'orders/*'], "got 'orders/*'"],
      [['--name', 'bad name', '--scopes', 'read'], 'entry.name: expected 1-100 characters'],
    ] as const) {
      const refused = await sandglass(['token', 'hash', ...flags], {}, 'orders-token-0123456789');
      assert.notEqual(refused.code, 0, flags.join(' '));
      assert.equal(refused.stdout, '', 'no entry printed');
      assert.match(refused.stderr, new RegExp(said.replace(/[.*+?()[\]]/g, '\\$&')), refused.stderr);
    }
  });
});
