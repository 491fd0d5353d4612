// Admin and operations routes: queues and counts, jobs by state, timeline, dead letters, pause,
// activity, metrics, the OpenAPI document, the dashboard's files and the security headers.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isQueueName, QUEUE_NAME_RULE } from '../../src/index.js';
import { resolveServeConfig } from '../../src/server/config.js';
import { DEFAULT_DASHBOARD_DIR, readDashboardFile } from '../../src/server/dashboard-files.js';
import { ERROR_CODES } from '../../src/server/errors.js';
import { buildOpenApiDocument, ROUTES } from '../../src/server/openapi.js';
import { queueName as queueNameSchema } from '../../src/server/schemas.js';
import { SECURITY_HEADERS } from '../../src/server/security.js';
import { parseWebhookBindings, WebhookDelivery } from '../../src/server/webhooks.js';
import { rawRequest, useApp } from '../helpers/http.js';
import { sleep, uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const dashboardDir = mkdtempSync(join(tmpdir(), 'sandglass-dashboard-'));
writeFileSync(join(dashboardDir, 'index.html'), '<!doctype html><title>sandglass</title><script type="module" src="app.js"></script>');
writeFileSync(join(dashboardDir, 'app.js'), 'console.log("dashboard")');
writeFileSync(join(dashboardDir, 'style.css'), 'body { margin: 0 }');
let webhooks: WebhookDelivery | undefined;
const api = useApp(redis, {
  dashboardDir,
  get webhooks() {
    // A delivery without bindings: the test emits its events to check that they are counted.
    webhooks ??= new WebhookDelivery({ connection: redis.url, bindings: [] });
    return webhooks;
  },
});
const OPENAPI_FILE = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

/** Whether the service's settings take `prefix`. */
function tryConfig(prefix: string): boolean {
  try {
    resolveServeConfig({ prefix, redis: 'redis://127.0.0.1:1' }, {});
    return true;
  } catch {
    return false;
  }
}

/** Whether a webhook binding of `queue` is accepted. */
function tryBinding(queue: string): boolean {
  try {
    parseWebhookBindings(JSON.stringify([{ queue, url: 'https://hooks.example.com/x', secret: 's'.repeat(32) }]));
    return true;
  } catch {
    return false;
  }
}

async function addJobs(queue: string, jobs: Record<string, unknown>[]) {
  const answer = await api.call('POST', `/v1/queues/${queue}/jobs:bulk`, { jobs });
  assert.equal(answer.status, 201, answer.text);
  return answer.body.ids as string[];
}

describe('HTTP admin', () => {
  it('lists queues with their counts, and one queue with its totals', async () => {
    const queue = uniqueQueue('admin');
    await addJobs(queue, [{ payload: 1 }, { payload: 2, delay: '1h' }, { payload: 3, delay: '1h' }]);
    const list = await api.call('GET', '/v1/queues');
    const entry = list.body.queues.find((q: { name: string }) => q.name === queue);
    assert.deepEqual(entry, { name: queue, stats: { delayed: 2, ready: 1, active: 0, dead: 0, paused: false, limited: 0, completed: 0 } });
    const one = await api.call('GET', `/v1/queues/${queue}`);
    assert.equal(one.body.counters.added, 3);
    assert.deepEqual(Object.keys(one.body.counters).sort(), [
      'added',
      'claimed',
      'completed',
      'dead',
      'expired',
      'reaped',
      'retried',
      'stale',
      'ticks',
      'ticksSkipped',
    ]);
  });

  it('lists jobs by state, paged', async () => {
    const queue = uniqueQueue('admin');
    await addJobs(queue, [
      { payload: 'r', id: 'r1' },
      { payload: 'd', id: 'd1', delay: '2h' },
      { payload: 'd', id: 'd2', delay: '1h' },
    ]);
    const delayed = await api.call('GET', `/v1/queues/${queue}/jobs?state=delayed`);
    assert.deepEqual(
      delayed.body.jobs.map((job: { id: string }) => job.id),
      ['d2', 'd1'],
      'soonest due first',
    );
    assert.equal(delayed.body.nextCursor, null, 'one page holds them all');
    const first = await api.call('GET', `/v1/queues/${queue}/jobs?state=delayed&limit=1`);
    assert.deepEqual(
      first.body.jobs.map((job: { id: string }) => job.id),
      ['d2'],
    );
    const page = await api.call('GET', `/v1/queues/${queue}/jobs?state=delayed&limit=1&cursor=${first.body.nextCursor}`);
    assert.deepEqual([page.body.jobs.map((job: { id: string }) => job.id), page.body.nextCursor], [['d1'], null]);
    assert.deepEqual(
      (await api.call('GET', `/v1/queues/${queue}/jobs?state=ready`)).body.jobs.map((job: { id: string }) => job.id),
      ['r1'],
    );
    await api.call('POST', `/v1/queues/${queue}/claim`, { leaseMs: 60_000 });
    const active = (await api.call('GET', `/v1/queues/${queue}/jobs?state=active`)).body.jobs;
    assert.equal(active[0].id, 'r1');
    assert.ok(active[0].leaseUntilAt > Date.now() + 50_000);
  });

  it('answers the due timeline with default and given bounds', async () => {
    const queue = uniqueQueue('admin');
    await addJobs(queue, [{ payload: 0 }, { payload: 1, delay: '30s' }, { payload: 2, delay: '30m' }, { payload: 3, delay: '2d' }]);
    const timeline = (await api.call('GET', `/v1/queues/${queue}/timeline`)).body;
    assert.equal(timeline.ready, 1);
    assert.deepEqual(timeline.buckets, [
      { untilMs: 60_000, count: 1 },
      { untilMs: 3_600_000, count: 1 },
      { untilMs: 86_400_000, count: 0 },
    ]);
    assert.equal(timeline.later, 1);
    const custom = (await api.call('GET', `/v1/queues/${queue}/timeline?bounds=120000`)).body;
    assert.deepEqual([custom.buckets, custom.later], [[{ untilMs: 120_000, count: 1 }], 2]);
  });

  it('retries dead letters by id and all at once, and purges them', async () => {
    const queue = uniqueQueue('admin');
    await addJobs(
      queue,
      ['x1', 'x2', 'x3'].map(id => ({ payload: id, id, maxAttempts: 1 })),
    );
    const claimed = (await api.call('POST', `/v1/queues/${queue}/claim`, { max: 3 })).body.jobs as { id: string; token: string }[];
    for (const job of claimed)
      await api.call('POST', `/v1/queues/${queue}/jobs/${job.id}/fail`, { token: job.token, error: `boom ${job.id}` });
    const dead = (await api.call('GET', `/v1/queues/${queue}/jobs?state=dead`)).body.jobs;
    assert.equal(dead.length, 3);
    assert.match(dead[0].lastError, /^boom x/);
    assert.deepEqual((await api.call('POST', `/v1/queues/${queue}/dead/retry`, { ids: ['x1'] })).body, { moved: 1 });
    assert.equal((await api.call('GET', `/v1/queues/${queue}/jobs/x1`)).body.state, 'ready');
    assert.deepEqual((await api.call('POST', `/v1/queues/${queue}/dead/retry`)).body, { moved: 2 }, 'no body: all of them');
    const again = (await api.call('POST', `/v1/queues/${queue}/claim`, { max: 3 })).body.jobs as { id: string; token: string }[];
    for (const job of again) await api.call('POST', `/v1/queues/${queue}/jobs/${job.id}/fail`, { token: job.token, dead: true });
    assert.deepEqual((await api.call('DELETE', `/v1/queues/${queue}/dead`)).body, { deleted: 3 });
    assert.equal((await api.call('GET', `/v1/queues/${queue}`)).body.stats.dead, 0);
  });

  it('pause keeps consumers from claiming; resume lets them', async () => {
    const queue = uniqueQueue('admin');
    await addJobs(queue, [{ payload: 1 }]);
    assert.deepEqual((await api.call('POST', `/v1/queues/${queue}/pause`)).body, { paused: true });
    assert.equal((await api.call('GET', `/v1/queues/${queue}`)).body.stats.paused, true);
    assert.deepEqual((await api.call('POST', `/v1/queues/${queue}/claim`, {})).body.jobs, []);
    assert.deepEqual((await api.call('POST', `/v1/queues/${queue}/resume`, {})).body, { paused: false });
    assert.equal((await api.call('POST', `/v1/queues/${queue}/claim`, {})).body.jobs.length, 1);
  });

  it('pause of a queue that does not exist is 404 NOT_FOUND and writes nothing; `create: true` creates it paused and listed', async () => {
    const queue = uniqueQueue('typo');
    const refused = await api.call('POST', `/v1/queues/${queue}/pause`, {});
    assert.equal(refused.status, 404, refused.text);
    assert.equal(refused.body.error.code, 'NOT_FOUND');
    assert.match(refused.body.error.message, /does not exist.*create: true/);
    assert.equal((await api.call('POST', `/v1/queues/${queue}/resume`)).status, 404);
    assert.equal((await api.call('GET', `/v1/queues/${queue}`)).body.stats.paused, false, 'no paused phantom');
    assert.ok(!(await api.call('GET', '/v1/queues')).body.queues.some((q: { name: string }) => q.name === queue));
    assert.equal((await api.call('POST', `/v1/queues/${queue}/pause`, { create: 'true' })).status, 400, 'create is a JSON boolean');
    assert.deepEqual((await api.call('POST', `/v1/queues/${queue}/pause`, { create: true })).body, { paused: true });
    const listed = (await api.call('GET', '/v1/queues')).body.queues.find((q: { name: string }) => q.name === queue);
    assert.deepEqual(listed?.stats, { delayed: 0, ready: 0, active: 0, dead: 0, paused: true, limited: 0, completed: 0 });
  });

  it('activity counts claims, failures and webhook deliveries per second, with lateness', async () => {
    const queue = uniqueQueue('admin');
    await addJobs(queue, [{ payload: 1 }, { payload: 2 }]);
    const [job] = (await api.call('POST', `/v1/queues/${queue}/claim`, { max: 2 })).body.jobs as { id: string; token: string }[];
    await api.call('POST', `/v1/queues/${queue}/jobs/${job!.id}/fail`, { token: job!.token });
    webhooks!.emit('delivered', queue, { id: 'w1' } as never, 7, 0);
    webhooks!.emit('failed', queue, { id: 'w2' } as never, new Error('500'), Date.now() + 1_000);
    const activity = (await api.call('GET', `/v1/queues/${queue}/activity`)).body;
    assert.equal(activity.windowMs, 300_000);
    assert.equal(activity.points.length, 300);
    const sum = (field: string) => activity.points.reduce((total: number, point: Record<string, number>) => total + point[field]!, 0);
    assert.deepEqual([sum('delivered'), sum('failed')], [3, 2]);
    const busy = activity.points.filter((point: { delivered: number }) => point.delivered > 0);
    assert.ok(busy.every((point: { latenessP99Ms: number }) => typeof point.latenessP99Ms === 'number' && point.latenessP99Ms >= 0));
    assert.ok(activity.points.at(-1).at <= Date.now() && activity.points.at(-1).at > Date.now() - 2_000);
  });
});

describe('HTTP operations', () => {
  it('/metrics has the counters, depths, lateness histogram and Redis status', async () => {
    const queue = uniqueQueue('metrics');
    await addJobs(queue, [{ payload: 1 }, { payload: 2, delay: '1h' }]);
    await api.call('POST', `/v1/queues/${queue}/claim`, {});
    webhooks!.emit('delivered', queue, { id: 'w' } as never, 12, 0);
    const answer = await api.call('GET', '/metrics');
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^text\/plain/);
    const text = answer.text;
    for (const name of ['added', 'delivered', 'completed', 'failed', 'dead', 'reaped', 'stale']) {
      assert.match(text, new RegExp(`# TYPE sandglass_jobs_${name}_total counter`), name);
    }
    assert.match(text, new RegExp(`sandglass_jobs_added_total\\{queue="${queue}"\\} 2`));
    assert.match(text, new RegExp(`sandglass_jobs_delivered_total\\{queue="${queue}"\\} 1`));
    assert.match(text, new RegExp(`sandglass_queue_jobs\\{queue="${queue}",state="delayed"\\} 1`));
    assert.match(text, new RegExp(`sandglass_queue_jobs\\{queue="${queue}",state="active"\\} 1`));
    assert.match(text, new RegExp(`sandglass_queue_paused\\{queue="${queue}"\\} 0`));
    assert.match(text, new RegExp(`sandglass_lateness_seconds_count\\{queue="${queue}",source="pull"\\} 1`));
    assert.match(text, new RegExp(`sandglass_lateness_seconds_count\\{queue="${queue}",source="webhook"\\} 1`));
    assert.match(text, /sandglass_redis_up 1/);
    assert.match(text, /sandglass_http_requests_total\{method="POST",route="\/v1\/queues\/:queue\/claim",status="200"\}/);
  });

  it('the queue-name rule has one home: the API schema, the service settings, webhooks and the dashboard form use the library rule', async () => {
    const samples = ['a', 'order-timeout', 'v1.emails_2', 'x'.repeat(100), 'x'.repeat(101), '-lead', '.dot', 'a:b', 'a{b}', 'a b'];
    const html = (await readDashboardFile(DEFAULT_DASHBOARD_DIR, 'index.html')).body.toString('utf8');
    assert.ok(!html.includes('{{'), 'every placeholder of index.html is filled in');
    const formPattern = /id="add-queue"[^>]* pattern="([^"]*)"/.exec(html)?.[1]?.replaceAll('&quot;', '"').replaceAll('&amp;', '&');
    assert.equal(formPattern, QUEUE_NAME_RULE.pattern);
    assert.equal(queueNameSchema.pattern, QUEUE_NAME_RULE.pattern);
    // A browser compiles `pattern` as ^(?:...)$ with the v flag.
    const browser = new RegExp(`^(?:${formPattern})$`, 'v');
    for (const name of samples) {
      const valid = isQueueName(name);
      assert.equal(browser.test(name), valid, `dashboard form: '${name}'`);
      const answer = await api.call('GET', `/v1/queues/${encodeURIComponent(name)}`);
      assert.equal(answer.status === 200, valid, `API: '${name}' answered ${answer.status}`);
      assert.equal(tryConfig(name), valid, `--prefix '${name}'`);
      assert.equal(tryBinding(name), valid, `webhook binding of '${name}'`);
    }
  });

  it('/healthz and /readyz answer 200', async () => {
    assert.deepEqual((await api.call('GET', '/healthz')).body, { status: 'ok' });
    assert.deepEqual((await api.call('GET', '/readyz')).body, { status: 'ready' });
  });

  it('/openapi.json is the checked-in docs/openapi.json (UPDATE_OPENAPI=1 rewrites the file)', async () => {
    const served = await api.call('GET', '/openapi.json');
    assert.equal(served.status, 200);
    if (process.env.UPDATE_OPENAPI === '1') writeFileSync(OPENAPI_FILE, served.text);
    assert.equal(
      served.text,
      readFileSync(OPENAPI_FILE, 'utf8'),
      'docs/openapi.json is stale: run UPDATE_OPENAPI=1 node --import tsx --test test/service/http-admin.test.ts',
    );
    const doc = served.body;
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(doc.components.schemas.Error.properties.error.properties.code.enum, Object.keys(ERROR_CODES));
    assert.deepEqual(doc, buildOpenApiDocument());
  });

  it('every documented operation is routed, and every error code is in docs/http-api.md', async () => {
    for (const spec of ROUTES) {
      const path = spec.path.replace('{queue}', 'routed').replace('{id}', 'some-id').replace('{file}', 'style.css');
      const answer = await api.call(spec.method, path, spec.body ? {} : undefined);
      assert.notEqual(answer.body?.error?.code, 'ROUTE_NOT_FOUND', `${spec.method} ${spec.path}`);
      assert.ok(answer.status < 500, `${spec.method} ${spec.path}: ${answer.status} ${answer.text.slice(0, 200)}`);
    }
    const doc = readFileSync(fileURLToPath(new URL('../../docs/http-api.md', import.meta.url)), 'utf8');
    for (const code of Object.keys(ERROR_CODES)) assert.match(doc, new RegExp(`\`${code}\``), `${code} is documented`);
  });

  it('serves the dashboard files with a strict CSP; a missing file is 404 JSON', async () => {
    const index = await api.call('GET', '/');
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(index.text, /<title>sandglass<\/title>/);
    assert.match((await api.call('GET', '/app.js')).headers.get('content-type') ?? '', /^text\/javascript/);
    assert.match((await api.call('GET', '/style.css')).headers.get('content-type') ?? '', /^text\/css/);
    for (const path of ['/missing.js', '/.env', '/index.html.bak', '/..%2Fpackage.json', '/%2e%2e/package.json']) {
      const answer = await api.call('GET', path);
      assert.equal(answer.status, 404, path);
      assert.ok(['DASHBOARD_NOT_FOUND', 'ROUTE_NOT_FOUND'].includes(answer.body.error.code), path);
    }
    assert.ok(DEFAULT_DASHBOARD_DIR.endsWith('/dashboard/'), "the default is the repository's dashboard/ folder");
  });

  it('every answer carries the security headers: success, errors, 404, bad URLs, static files', async () => {
    await api.start();
    const answers = [
      await api.call('GET', '/v1/queues'),
      await api.call('GET', '/'),
      await api.call('GET', '/nothing/here'),
      await api.call('POST', '/v1/queues/x/jobs', { nope: 1 }),
      await api.call('GET', '/v1/queues/x/jobs/%E0%A4%A'),
    ];
    for (const answer of answers) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        assert.equal(answer.headers.get(name), value, `${name} on a ${answer.status}`);
    }
    assert.equal(answers[0]!.headers.get('cache-control'), 'no-store');
    const raw = await rawRequest(api.url, { method: 'GET', path: '/healthz', headers: { host: 'attacker.example' } });
    assert.equal(raw.headers['content-security-policy'], SECURITY_HEADERS['content-security-policy']);
  });
});

describe('HTTP dashboard folder missing', () => {
  const bare = useApp(redis, { dashboardDir: join(tmpdir(), 'sandglass-no-such-dashboard') });

  it('/ answers 404 DASHBOARD_NOT_FOUND with a clear message while the API works', async () => {
    const answer = await bare.call('GET', '/');
    assert.deepEqual([answer.status, answer.body.error.code], [404, 'DASHBOARD_NOT_FOUND']);
    assert.match(answer.body.error.message, /dashboard is not installed/);
    assert.equal((await bare.call('GET', '/v1/queues')).status, 200);
    await sleep(1);
  });
});
