// Flow control over HTTP (issue 10): a queue's limits and retention under /v1/queues/{queue}/limits
// and /retention, deadlines on added jobs, and the new job, stats and counters fields. Bad bodies
// are refused by the schema (JSON types, unknown fields) or by the library's validators (ranges,
// durations) as a 400 VALIDATION naming the field, and write nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { buildOpenApiDocument } from '../../src/server/openapi.js';
import { components } from '../../src/server/schemas.js';
import { client, useApp, type Answer } from '../helpers/http.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);
const TOKEN = 'flow-token-0123456789abcdef0123';
const secured = useApp(redis, { token: TOKEN });

const limitsPath = (queue: string) => `/v1/queues/${queue}/limits`;
const retentionPath = (queue: string) => `/v1/queues/${queue}/retention`;

/** Redis's digest of the whole data set: equal before and after means nothing was written. */
const digest = async () => String(await redis.raw.call('DEBUG', 'DIGEST'));

type Schema = { required?: string[]; properties?: Record<string, unknown> };

/** The answer has every field the schema requires, and none it does not document. */
function assertDocumented(name: string, value: Record<string, unknown>): void {
  const schema = components[name] as Schema;
  for (const field of schema.required ?? []) assert.ok(field in value, `${name}.${field} is answered`);
  for (const field of Object.keys(value)) assert.ok(field in (schema.properties ?? {}), `${name}.${field} is documented`);
}

function assertError(answer: Answer, status: number, code: string, message?: RegExp): void {
  assert.deepEqual([answer.status, answer.body?.error?.code], [status, code], answer.text.slice(0, 300));
  if (message) assert.match(answer.body.error.message, message);
}

/** Each PUT is a 400 VALIDATION whose short message matches. */
async function assertRefused(cases: [what: string, path: string, body: unknown, message: RegExp][]): Promise<void> {
  for (const [what, path, body, message] of cases) {
    const answer = await api.call('PUT', path, body);
    assert.deepEqual([what, answer.status, answer.body?.error?.code], [what, 400, 'VALIDATION'], `${what}: ${answer.text.slice(0, 300)}`);
    assert.match(answer.body.error.message, message, what);
    assert.ok(answer.body.error.message.length < 1_000, `${what}: a short message`);
  }
}

async function put(path: string, body: unknown): Promise<Record<string, unknown>> {
  const answer = await api.call('PUT', path, body);
  assert.equal(answer.status, 200, answer.text);
  return answer.body;
}

function queue(name: string): Queue<unknown> {
  return redis.track(new Queue<unknown>(name, { connection: redis.url }));
}

describe('HTTP limits and retention', () => {
  it('PUT limits stores them (durations as ms or text, answered in ms); a limit left out is kept, null clears it', async () => {
    const name = uniqueQueue('flow');
    const set = await put(limitsPath(name), { rate: { max: 100, per: '1s' }, concurrency: 5, expireAfter: '1h' });
    assert.deepEqual(set, { rate: { max: 100, per: 1_000 }, concurrency: 5, expireAfter: 3_600_000 });
    assertDocumented('QueueLimits', set);
    assert.deepEqual((await api.call('GET', limitsPath(name))).body, set);
    assert.deepEqual(await queue(name).getLimits(), set, 'the library reads what HTTP wrote');

    assert.deepEqual(await put(limitsPath(name), { concurrency: 2 }), {
      rate: { max: 100, per: 1_000 },
      concurrency: 2,
      expireAfter: 3_600_000,
    });
    assert.deepEqual(await put(limitsPath(name), { rate: null, expireAfter: 90_000 }), { concurrency: 2, expireAfter: 90_000 });
    assert.deepEqual(await put(limitsPath(name), {}), { concurrency: 2, expireAfter: 90_000 }, 'an empty body changes nothing');
    assert.deepEqual(await put(limitsPath(name), { concurrency: null, expireAfter: null }), {});
    assert.deepEqual((await api.call('GET', limitsPath(name))).body, {});
  });

  it('PUT retention stores it (age as ms or text); completed: null keeps none again', async () => {
    const name = uniqueQueue('flow');
    const initial = (await api.call('GET', retentionPath(name))).body;
    assert.equal(initial.completed, undefined, 'default: keep nothing');
    assert.equal(initial.maxResultBytes, 65_536);
    const set = await put(retentionPath(name), { completed: { count: 1_000, age: '1d' }, maxResultBytes: 4_096 });
    assert.deepEqual(set, { completed: { count: 1_000, age: 86_400_000 }, maxResultBytes: 4_096 });
    assertDocumented('Retention', set);
    assert.deepEqual((await api.call('GET', retentionPath(name))).body, set);
    assert.deepEqual(await queue(name).getRetention(), set, 'the library reads what HTTP wrote');
    assert.deepEqual(await put(retentionPath(name), { completed: { count: 10 } }), { completed: { count: 10 }, maxResultBytes: 4_096 });
    assert.deepEqual(await put(retentionPath(name), { completed: null }), { maxResultBytes: 4_096 });
  });

  it('nonsense limits are 400 VALIDATION naming the field, and write nothing', async () => {
    const name = uniqueQueue('flow');
    await put(limitsPath(name), { concurrency: 3 });
    const cases: [what: string, path: string, body: unknown, message: RegExp][] = [
      // JSON types and unknown fields: the schema.
      ['concurrency as a string', limitsPath(name), { concurrency: '5' }, /body\.concurrency must be an integer/],
      ['rate as a string', limitsPath(name), { rate: '100/1s' }, /body\.rate must be an object or null/],
      ['rate.max as a string', limitsPath(name), { rate: { max: 'lots', per: '1s' } }, /body\.rate\.max must be an integer/],
      ['an unknown field', limitsPath(name), { concurrency: 3, burst: 10 }, /body has an unknown field `burst`/],
      ['an unknown field of rate', limitsPath(name), { rate: { max: 10, per: '1s', burst: 5 } }, /body\.rate has an unknown field `burst`/],
      ['expireAfter as a boolean', limitsPath(name), { expireAfter: true }, /body\.expireAfter/],
      ['a body that is an array', limitsPath(name), [{ concurrency: 1 }], /body must be an object/],
      // Ranges and durations: the library's validators.
      ['concurrency 0', limitsPath(name), { concurrency: 0 }, /concurrency/],
      ['negative concurrency', limitsPath(name), { concurrency: -3 }, /concurrency/],
      ['absurd concurrency', limitsPath(name), { concurrency: 1e15 }, /concurrency/],
      ['rate.max 0', limitsPath(name), { rate: { max: 0, per: '1s' } }, /max/],
      ['absurd rate.max', limitsPath(name), { rate: { max: 1e15, per: '1s' } }, /max/],
      ['rate without per', limitsPath(name), { rate: { max: 10 } }, /per/],
      ['rate.per that is not a duration', limitsPath(name), { rate: { max: 10, per: 'a while' } }, /per/],
      ['rate.per 0', limitsPath(name), { rate: { max: 10, per: 0 } }, /per/],
      ['negative expireAfter', limitsPath(name), { expireAfter: -1 }, /expireAfter/],
      ['expireAfter that is not a duration', limitsPath(name), { expireAfter: 'later' }, /expireAfter/],
      ['absurd expireAfter', limitsPath(name), { expireAfter: 1e18 }, /expireAfter/],
    ];
    const before = await digest();
    await assertRefused(cases);
    assertError(await api.call('PUT', limitsPath(name), '{"concurrency": '), 400, 'INVALID_JSON');
    assertError(
      await api.call('PUT', limitsPath(name), 'concurrency=3', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    assertError(await api.call('PUT', '/v1/queues/bad%20name/limits', { concurrency: 3 }), 400, 'VALIDATION', /params\.queue/);
    assertError(await api.call('POST', limitsPath(name), { concurrency: 3 }), 404, 'ROUTE_NOT_FOUND');
    assert.equal(await digest(), before, 'nothing was written to Redis');
    assert.deepEqual((await api.call('GET', limitsPath(name))).body, { concurrency: 3 });
  });

  it('nonsense retention is 400 VALIDATION naming the field, and writes nothing', async () => {
    const name = uniqueQueue('flow');
    await put(retentionPath(name), { completed: { count: 5 } });
    const path = retentionPath(name);
    const before = await digest();
    await assertRefused([
      ['count as a string', path, { completed: { count: '10' } }, /body\.completed\.count must be an integer/],
      ['an unknown field of completed', path, { completed: { count: 10, failed: 5 } }, /body\.completed has an unknown field `failed`/],
      ['an unknown retention field', path, { failed: { count: 10 } }, /body has an unknown field `failed`/],
      ['completed as a number', path, { completed: 10 }, /body\.completed must be an object or null/],
      ['count 0', path, { completed: { count: 0 } }, /count/],
      ['negative count', path, { completed: { count: -1 } }, /count/],
      ['absurd count', path, { completed: { count: 1e15 } }, /count/],
      ['age that is not a duration', path, { completed: { age: 'forever' } }, /age/],
      ['negative age', path, { completed: { age: -1 } }, /age/],
      ['negative maxResultBytes', path, { maxResultBytes: -1 }, /maxResultBytes/],
      ['absurd maxResultBytes', path, { maxResultBytes: 1e15 }, /maxResultBytes/],
    ]);
    assert.equal(await digest(), before, 'nothing was written to Redis');
    assert.deepEqual((await api.call('GET', path)).body.completed, { count: 5 });
  });

  it('a queue never used answers no limits and the default retention, as its stats answer zeros', async () => {
    const name = uniqueQueue('flow-unknown');
    const before = await digest();
    assert.deepEqual((await api.call('GET', limitsPath(name))).body, {});
    assert.deepEqual((await api.call('GET', retentionPath(name))).body, { maxResultBytes: 65_536 });
    assert.equal((await api.call('GET', `/v1/queues/${name}`)).status, 200);
    assert.equal(await digest(), before, 'reading does not create the queue');
  });

  it('with a token the limits and retention routes need it; a cross-origin change is refused', async () => {
    await secured.start();
    const name = uniqueQueue('flow');
    const anonymous = client(secured.url);
    const wrong = client(secured.url, 'not-the-token-at-all-0000');
    const routes: [method: string, path: string, body?: unknown][] = [
      ['PUT', limitsPath(name), { concurrency: 2 }],
      ['GET', limitsPath(name)],
      ['PUT', retentionPath(name), { completed: { count: 5 } }],
      ['GET', retentionPath(name)],
    ];
    const before = await digest();
    for (const [method, path, body] of routes) {
      assertError(await anonymous.call(method, path, body), 401, 'UNAUTHORIZED', /Authorization: Bearer/);
      assertError(await wrong.call(method, path, body), 401, 'UNAUTHORIZED', /not valid/);
    }
    for (const [method, path, body] of routes.filter(([method]) => method === 'PUT')) {
      assertError(await secured.call(method, path, body, { origin: 'https://evil.example' }), 403, 'CROSS_ORIGIN');
    }
    assert.equal(await digest(), before, 'nothing was written without the token');
    assert.deepEqual((await secured.call('PUT', limitsPath(name), { concurrency: 2 })).body, { concurrency: 2 });
    assert.deepEqual((await secured.call('GET', limitsPath(name))).body, { concurrency: 2 });
  });
});

describe('HTTP jobs with deadlines and kept results', () => {
  it('adding a job takes expireAfter and onExpire; the job answers expiresAt; bad values are 400s', async () => {
    const name = uniqueQueue('flow');
    const added = await api.call('POST', `/v1/queues/${name}/jobs`, {
      payload: 1,
      id: 'deadline',
      delay: '1h',
      expireAfter: '30m',
      onExpire: 'drop',
    });
    assert.equal(added.status, 201, added.text);
    const job = (await api.call('GET', `/v1/queues/${name}/jobs/deadline`)).body;
    assertDocumented('JobInfo', job);
    assert.equal(job.expiresAt, job.dueAt + 1_800_000);
    const bulk = await api.call('POST', `/v1/queues/${name}/jobs:bulk`, {
      jobs: [
        { payload: 2, id: 'b1', delay: 60_000, expireAfter: 5_000 },
        { payload: 3, id: 'b2', delay: 60_000 },
      ],
    });
    assert.equal(bulk.status, 201, bulk.text);
    const [b1, b2] = [
      (await api.call('GET', `/v1/queues/${name}/jobs/b1`)).body,
      (await api.call('GET', `/v1/queues/${name}/jobs/b2`)).body,
    ];
    assert.equal(b1.expiresAt, b1.dueAt + 5_000);
    assert.equal(b2.expiresAt, undefined, 'no deadline without expireAfter (and no queue default)');

    const cases: [what: string, body: unknown, message: RegExp][] = [
      ['expireAfter that is not a duration', { payload: 1, expireAfter: 'eventually' }, /expireAfter/],
      ['negative expireAfter', { payload: 1, expireAfter: -5 }, /expireAfter/],
      ['expireAfter as a boolean', { payload: 1, expireAfter: true }, /body\.expireAfter/],
      ['onExpire that is not a mode', { payload: 1, expireAfter: 1_000, onExpire: 'retry' }, /body\.onExpire/],
    ];
    for (const [what, body, message] of cases) {
      const answer = await api.call('POST', `/v1/queues/${name}/jobs`, body);
      assert.deepEqual([what, answer.status, answer.body?.error?.code], [what, 400, 'VALIDATION'], `${what}: ${answer.text.slice(0, 300)}`);
      assert.match(answer.body.error.message, message, what);
    }
    assertError(
      await api.call('POST', `/v1/queues/${name}/jobs:bulk`, { jobs: [{ payload: 1, expireAfter: 'x' }] }),
      400,
      'VALIDATION',
      /expireAfter/,
    );
  });

  it('a job not started by its deadline is dead with reason expired, counted in counters.expired', async () => {
    const name = uniqueQueue('flow');
    await api.call('POST', `/v1/queues/${name}/jobs`, { payload: 1, id: 'late', expireAfter: 100 });
    await new Promise(resolve => setTimeout(resolve, 300));
    const claimed = await api.call('POST', `/v1/queues/${name}/claim`, { max: 5 });
    assert.deepEqual(claimed.body.jobs, [], 'an expired job is not handed out');
    const job = (await api.call('GET', `/v1/queues/${name}/jobs/late`)).body;
    assert.deepEqual([job.state, job.reason], ['dead', 'expired']);
    assertDocumented('JobInfo', job);
    const dead = (await api.call('GET', `/v1/queues/${name}/jobs?state=dead`)).body.jobs;
    assert.deepEqual(
      dead.map((entry: { id: string; reason: string }) => [entry.id, entry.reason]),
      [['late', 'expired']],
    );
    const info = (await api.call('GET', `/v1/queues/${name}`)).body;
    assert.equal(info.counters.expired, 1);
    assertDocumented('QueueCounters', info.counters);
  });

  it('with retention, a completed job answers state completed with finishedAt and result, and is listed by state', async () => {
    const name = uniqueQueue('flow');
    await put(retentionPath(name), { completed: { count: 10 } });
    await api.call('POST', `/v1/queues/${name}/jobs`, { payload: { n: 1 }, id: 'kept' });
    const worker = redis.track(
      new Worker<unknown>(name, async () => ({ sent: true, note: '<img src=x onerror=alert(1)>' }), { connection: redis.url }),
    );
    await waitFor(
      async () => (await api.call('GET', `/v1/queues/${name}/jobs/kept`)).body.state === 'completed',
      10_000,
      'the job to complete',
    );
    await worker.close();
    const job = (await api.call('GET', `/v1/queues/${name}/jobs/kept`)).body;
    assertDocumented('JobInfo', job);
    assert.deepEqual(job.result, { sent: true, note: '<img src=x onerror=alert(1)>' });
    assert.ok(job.finishedAt >= job.dueAt);
    const page = (await api.call('GET', `/v1/queues/${name}/jobs?state=completed`)).body;
    assert.deepEqual(
      page.jobs.map((entry: { id: string }) => entry.id),
      ['kept'],
    );
    const stats = (await api.call('GET', `/v1/queues/${name}`)).body.stats;
    assertDocumented('QueueStats', stats);
    assert.equal(stats.completed, 1);
    assert.equal(stats.limited, 0);
  });

  it('a pull consumer acks with a result: kept with the completed job, a marker when over maxResultBytes', async () => {
    const name = uniqueQueue('flow');
    await put(retentionPath(name), { completed: { count: 10 }, maxResultBytes: 100 });
    await api.call('POST', `/v1/queues/${name}/jobs:bulk`, {
      jobs: [
        { payload: 1, id: 'small' },
        { payload: 2, id: 'big' },
        { payload: 3, id: 'none' },
      ],
    });
    const claimed = (await api.call('POST', `/v1/queues/${name}/claim`, { max: 3, waitMs: 5_000 })).body.jobs as {
      id: string;
      token: string;
    }[];
    assert.equal(claimed.length, 3);
    const results: Record<string, unknown> = { small: { sent: true, note: '<img src=x onerror=alert(1)>' }, big: 'x'.repeat(500) };
    for (const job of claimed) {
      const body = job.id in results ? { token: job.token, result: results[job.id] } : { token: job.token };
      const acked = await api.call('POST', `/v1/queues/${name}/jobs/${job.id}/ack`, body);
      assert.deepEqual(acked.body, { result: 'acked' }, acked.text);
    }
    const get = async (id: string) => (await api.call('GET', `/v1/queues/${name}/jobs/${id}`)).body;
    assert.deepEqual((await get('small')).result, results.small);
    assert.deepEqual((await get('big')).result, { resultTooLarge: true, bytes: 502 });
    const none = await get('none');
    assert.equal(none.state, 'completed');
    assert.equal(none.result, undefined);
  });

  it('stats answer limited: due jobs held back by the concurrency limit', async () => {
    const name = uniqueQueue('flow');
    await put(limitsPath(name), { concurrency: 1 });
    await api.call('POST', `/v1/queues/${name}/jobs:bulk`, { jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] });
    const claimed = await api.call('POST', `/v1/queues/${name}/claim`, { max: 3, waitMs: 5_000 });
    assert.equal(claimed.body.jobs.length, 1, 'concurrency 1: one job handed out');
    for (const field of Object.keys(claimed.body.jobs[0]))
      assert.ok(field in ((components.PulledJob as Schema).properties ?? {}), `PulledJob.${field} is documented`);
    // A job that waited on the limit (heldByLimit) has its lateness reported apart from sandglass's own.
    const held = claimed.body.jobs[0].heldByLimit === true;
    const metrics = (await api.call('GET', '/metrics')).text;
    const count = (metric: string) => new RegExp(`^${metric}_count\\{queue="${name}",source="pull"\\} 1$`, 'm').test(metrics);
    assert.deepEqual(
      [count('sandglass_limited_lateness_seconds'), count('sandglass_lateness_seconds')],
      [held, !held],
      `heldByLimit ${held}`,
    );
    const stats = (await api.call('GET', `/v1/queues/${name}`)).body.stats;
    assert.deepEqual([stats.active, stats.ready, stats.limited], [1, 2, 2]);
    const listed = (await api.call('GET', '/v1/queues')).body.queues.find((entry: { name: string }) => entry.name === name);
    assert.equal(listed.stats.limited, 2);
  });

  it('the OpenAPI document has the four flow operations under admin, and the new fields', () => {
    const doc = buildOpenApiDocument() as {
      paths: Record<
        string,
        Record<string, { operationId: string; tags: string[]; requestBody?: unknown; responses: Record<string, unknown> }>
      >;
      components: { schemas: Record<string, Schema> };
    };
    const expected: [operationId: string, method: string, path: string][] = [
      ['getLimits', 'get', '/v1/queues/{queue}/limits'],
      ['setLimits', 'put', '/v1/queues/{queue}/limits'],
      ['getRetention', 'get', '/v1/queues/{queue}/retention'],
      ['setRetention', 'put', '/v1/queues/{queue}/retention'],
    ];
    for (const [operationId, method, path] of expected) {
      const operation = doc.paths[path]?.[method];
      assert.ok(operation, `${method} ${path} is documented`);
      assert.equal(operation.operationId, operationId);
      assert.deepEqual(operation.tags, ['admin']);
      assert.ok(operation.responses['200'] && operation.responses['401'], `${operationId} documents 200 and 401`);
      if (method === 'put') assert.ok(operation.requestBody && operation.responses['400'], `${operationId} documents its body and 400`);
    }
    const { schemas } = doc.components;
    for (const field of ['reason', 'expiresAt', 'finishedAt', 'result'])
      assert.ok(field in (schemas.JobInfo?.properties ?? {}), `JobInfo.${field}`);
    for (const field of ['limited', 'completed']) assert.ok(schemas.QueueStats?.required?.includes(field), `QueueStats.${field}`);
    assert.ok(schemas.QueueCounters?.required?.includes('expired'));
  });
});
