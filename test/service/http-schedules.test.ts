// Recurring schedules over HTTP (issue 9): upsert, list, get, pause, resume and delete under
// /v1/queues/{queue}/schedules, against the service on a private Redis. Bad specs are the library's
// ValidationError as a 400 with its message, and write nothing; wrong JSON types are refused by the
// schema; keys with ':' '/' '@' travel URL-encoded in the path.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildOpenApiDocument, ROUTES } from '../../src/server/openapi.js';
import { components } from '../../src/server/schemas.js';
import { client, useApp, type Answer } from '../helpers/http.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);
const TOKEN = 'schedules-token-0123456789abcdef';
const secured = useApp(redis, { token: TOKEN });

const schedulesPath = (queue: string) => `/v1/queues/${queue}/schedules`;
const schedulePath = (queue: string, key: string) => `${schedulesPath(queue)}/${encodeURIComponent(key)}`;

/** Redis's digest of the whole data set: equal before and after means nothing was written. */
const digest = async () => String(await redis.raw.call('DEBUG', 'DIGEST'));

type Schema = { required?: string[]; properties?: Record<string, unknown> };

/** The answer has every field the ScheduleInfo schema requires, and none it does not document. */
function assertScheduleInfo(info: Record<string, unknown>): void {
  const schema = components.ScheduleInfo as Schema;
  for (const field of schema.required ?? []) assert.ok(field in info, `ScheduleInfo.${field} is answered`);
  for (const field of Object.keys(info)) assert.ok(field in (schema.properties ?? {}), `ScheduleInfo.${field} is documented`);
}

async function upsert(
  queue: string,
  key: string,
  spec: Record<string, unknown>,
): Promise<Record<string, unknown> & { nextAt: number | null; upcoming: number[] }> {
  const answer = await api.call('PUT', schedulePath(queue, key), spec);
  assert.equal(answer.status, 200, answer.text);
  assertScheduleInfo(answer.body);
  return answer.body;
}

/** Jobs waiting in the queue (delayed or ready), by id. */
async function waitingIds(queue: string): Promise<string[]> {
  const ids: string[] = [];
  for (const state of ['delayed', 'ready']) {
    const page = await api.call('GET', `/v1/queues/${queue}/jobs?state=${state}`);
    assert.equal(page.status, 200, page.text);
    ids.push(...page.body.jobs.map((job: { id: string }) => job.id));
  }
  return ids.sort();
}

function assertError(answer: Answer, status: number, code: string, message?: RegExp): void {
  assert.deepEqual([answer.status, answer.body?.error?.code], [status, code], answer.text.slice(0, 300));
  if (message) assert.match(answer.body.error.message, message);
}

describe('HTTP schedules', () => {
  it('PUT creates a schedule and answers its ScheduleInfo; the same PUT again is the same schedule and the same pending tick', async () => {
    const queue = uniqueQueue('sched');
    const spec = { every: '1h', payload: { refundId: 42 }, tz: 'europe/berlin', maxAttempts: 3 };
    const first = await upsert(queue, 'refund-poll:42', spec);
    assert.equal(first.key, 'refund-poll:42');
    assert.equal(first.every, 3_600_000, "'1h' in ms");
    assert.equal(first.cron, undefined);
    assert.equal(first.tz, 'Europe/Berlin', 'the canonical zone name');
    assert.deepEqual(first.payload, { refundId: 42 });
    assert.equal(first.paused, false);
    assert.equal(first.maxAttempts, 3);
    assert.equal(typeof first.nextAt, 'number');
    assert.equal(first.upcoming.length, 5);
    assert.equal(first.upcoming[0], first.nextAt);
    assert.ok(
      first.upcoming.every((at, i) => i === 0 || at - first.upcoming[i - 1]! === 3_600_000),
      'one hour apart',
    );
    const ticks = await waitingIds(queue);
    assert.ok(ticks.length <= 1 && ticks.every(id => id.startsWith('refund-poll:42@')), `one pending tick at most: ${ticks.join(', ')}`);

    const again = await upsert(queue, 'refund-poll:42', spec);
    assert.deepEqual(
      [again.nextAt, again.runs, again.upcoming],
      [first.nextAt, first.runs, first.upcoming],
      'an unchanged definition changes nothing',
    );
    assert.deepEqual(await waitingIds(queue), ticks, 'no second tick job');
  });

  it('PUT with a changed definition replaces it (cron instead of every), with its own next ticks', async () => {
    const queue = uniqueQueue('sched');
    // A first tick still to come (a due one would be left to run: README, "Schedules").
    await upsert(queue, 'report', { every: '5m', startAt: Date.now() + 60_000 });
    const changed = await upsert(queue, 'report', { cron: '0 9 * * *', tz: 'Europe/Berlin', payload: 'daily' });
    assert.deepEqual([changed.cron, changed.every, changed.tz, changed.payload], ['0 9 * * *', undefined, 'Europe/Berlin', 'daily']);
    for (const at of changed.upcoming) {
      const wall = new Intl.DateTimeFormat('en-GB', {
        timeZone: 'Europe/Berlin',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }).format(at);
      assert.equal(wall, '09:00', `${new Date(at).toISOString()} is 09:00 in Berlin`);
    }
    assert.deepEqual((await waitingIds(queue)).length, 1, 'the pending tick was replaced, not doubled');
  });

  it('startAt and endAt are taken as epoch ms or RFC 3339, and answered as epoch ms', async () => {
    const queue = uniqueQueue('sched');
    const startAt = Date.now() + 86_400_000;
    const endAt = startAt + 7 * 86_400_000;
    const info = await upsert(queue, 'bounded', {
      every: '1d',
      startAt: new Date(startAt).toISOString(),
      endAt,
      limit: 3,
      overlap: 'skip',
      catchUp: 'none',
    });
    assert.deepEqual([info.startAt, info.endAt, info.limit, info.overlap, info.catchUp], [startAt, endAt, 3, 'skip', 'none']);
    assert.ok((info.nextAt as number) >= startAt, 'no tick before startAt');
    assert.ok(info.upcoming.length <= 3, 'no more ticks than the limit');
  });

  it('GET answers one schedule by its URL-encoded key, and the list sorted by key', async () => {
    const queue = uniqueQueue('sched');
    const keys = ['refund-poll:42', 'a/b', 'user@example.com', 'with space & 100%', 'ünïcødé', 'a/../b'];
    for (const key of keys) await upsert(queue, key, { every: '10m', payload: key });
    for (const key of keys) {
      const one = await api.call('GET', schedulePath(queue, key));
      assert.equal(one.status, 200, `${key}: ${one.text}`);
      assert.deepEqual([one.body.key, one.body.payload], [key, key], `${key} decoded exactly`);
      assertScheduleInfo(one.body);
    }
    assert.equal((await api.call('GET', `${schedulesPath(queue)}/refund-poll%3A42`)).body.key, 'refund-poll:42');
    assert.equal((await api.call('GET', `${schedulesPath(queue)}/refund-poll:42`)).body.key, 'refund-poll:42', 'a plain colon works too');
    assert.equal((await api.call('GET', `${schedulesPath(queue)}/a%2Fb`)).body.key, 'a/b');
    assert.equal((await api.call('GET', `${schedulesPath(queue)}/a/b`)).status, 404, 'an unencoded slash is another path');
    const list = await api.call('GET', schedulesPath(queue));
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.schedules.map((info: { key: string }) => info.key),
      [...keys].sort(),
    );
    list.body.schedules.forEach(assertScheduleInfo);
    assert.deepEqual((await api.call('GET', schedulesPath(uniqueQueue('empty')))).body, { schedules: [] }, 'a queue without schedules');
  });

  it('pause stops the ticks (nextAt null), resume goes on at a future tick; both answer the ScheduleInfo', async () => {
    const queue = uniqueQueue('sched');
    await upsert(queue, 'poll', { every: '1m', startAt: Date.now() + 60_000 });
    const paused = await api.call('POST', `${schedulePath(queue, 'poll')}/pause`);
    assert.equal(paused.status, 200, paused.text);
    assertScheduleInfo(paused.body);
    assert.deepEqual([paused.body.paused, paused.body.nextAt, paused.body.upcoming], [true, null, []]);
    assert.deepEqual(await waitingIds(queue), [], 'the pending tick was removed');
    assert.equal((await api.call('GET', schedulePath(queue, 'poll'))).body.paused, true);
    assert.equal(
      (await api.call('POST', `${schedulePath(queue, 'poll')}/pause`, {})).status,
      200,
      'pausing twice is fine; `{}` is the same as no body',
    );
    const resumed = await api.call('POST', `${schedulePath(queue, 'poll')}/resume`, {});
    assert.equal(resumed.status, 200, resumed.text);
    assert.equal(resumed.body.paused, false);
    assert.ok(typeof resumed.body.nextAt === 'number' && resumed.body.nextAt >= Date.now() - 1_000, 'a future tick, no catch-up');
    assertError(await api.call('POST', `${schedulePath(queue, 'poll')}/pause`, { now: true }), 400, 'VALIDATION', /unknown field `now`/);
  });

  it('DELETE removes the schedule and its pending tick; unknown keys are 404 NOT_FOUND on every route', async () => {
    const queue = uniqueQueue('sched');
    await upsert(queue, 'gone:1', { every: '1h', startAt: Date.now() + 60_000 });
    const removed = await api.call('DELETE', schedulePath(queue, 'gone:1'));
    assert.deepEqual([removed.status, removed.body], [200, { result: 'removed' }]);
    assert.deepEqual(await waitingIds(queue), [], 'no tick left behind');
    assert.deepEqual((await api.call('GET', schedulesPath(queue))).body, { schedules: [] });
    for (const [method, suffix] of [
      ['GET', ''],
      ['DELETE', ''],
      ['POST', '/pause'],
      ['POST', '/resume'],
    ] as const) {
      const answer = await api.call(method, `${schedulePath(queue, 'gone:1')}${suffix}`);
      assertError(answer, 404, 'NOT_FOUND', /gone:1/);
    }
    assertError(await api.call('GET', schedulePath(uniqueQueue('never'), 'x')), 404, 'NOT_FOUND');
  });

  it('a bad spec is a 400 VALIDATION with the library message, and writes nothing', async () => {
    const queue = uniqueQueue('sched');
    await upsert(queue, 'existing', { every: '1h' });
    const cases: [name: string, key: string, body: unknown, message: RegExp][] = [
      ['unknown tz', 'k', { cron: '0 9 * * *', tz: 'Mars/Olympus_Mons' }, /Unknown time zone `tz` 'Mars\/Olympus_Mons'/],
      ['tz as an offset', 'k', { cron: '0 9 * * *', tz: '+01:00' }, /IANA time zone name/],
      ['bad cron', 'k', { cron: '61 * * * *' }, /Invalid `cron` '61 \* \* \* \*'/],
      ['cron of 4 fields', 'k', { cron: '* * * *' }, /5 fields/],
      ['cron that never fires', 'k', { cron: '0 0 30 2 *' }, /never fires/],
      ['cron and every', 'k', { cron: '* * * * *', every: '5m' }, /either `cron` or `every`/],
      ['neither cron nor every', 'k', {}, /needs `cron`.*or `every`/],
      ['every 500ms', 'k', { every: '500ms' }, /`every` to be at least 1 s/],
      ['every 999 ms', 'k', { every: 999 }, /`every` to be at least 1 s/],
      ['every that is not a duration', 'k', { every: 'often' }, /^`every`: Expected a duration like '30m'.*'often'/],
      ['unknown option', 'k', { every: '5m', jitter: 0.1 }, /unknown field `jitter`/],
      ['key of 181 characters', 'k'.repeat(181), { every: '5m' }, /schedule key of 1-180 characters/],
      ['key with a control character', 'a\u0001b', { every: '5m' }, /schedule key/],
      ['endAt before startAt', 'k', { every: '5m', startAt: Date.now() + 60_000, endAt: Date.now() }, /`endAt`.*later than `startAt`/],
      ['startAt that is not a date', 'k', { every: '5m', startAt: 'next tuesday' }, /startAt/],
      ['limit of 0', 'k', { every: '5m', limit: 0 }, /`limit`/],
      ['overlap that is not a mode', 'k', { every: '5m', overlap: 'queue' }, /overlap/],
      ['catchUp that is not a mode', 'k', { every: '5m', catchUp: 'some' }, /catchUp/],
      ['maxAttempts of 0', 'k', { every: '5m', maxAttempts: 0 }, /maxAttempts/],
      ['unknown backoff type', 'k', { every: '5m', backoff: { type: 'linear', delayMs: 5 } }, /backoff/],
      // A changed definition that is bad leaves the existing schedule as it was.
      ['bad change of an existing schedule', 'existing', { every: '1h', tz: 'Nowhere/Land' }, /Unknown time zone/],
    ];
    const before = await digest();
    for (const [name, key, body, message] of cases) {
      const answer = await api.call('PUT', schedulePath(queue, key), body);
      assert.deepEqual([name, answer.status, answer.body?.error?.code], [name, 400, 'VALIDATION'], `${name}: ${answer.text.slice(0, 300)}`);
      assert.match(answer.body.error.message, message, name);
      assert.ok(answer.body.error.message.length < 1_000, `${name}: a short message`);
    }
    assert.equal(await digest(), before, 'nothing was written to Redis');
    assert.equal((await api.call('GET', schedulePath(queue, 'existing'))).body.every, 3_600_000);
    assertError(await api.call('GET', schedulePath(queue, 'k')), 404, 'NOT_FOUND');
    // A key the library refuses is refused on every route, not looked up: 400, not 404.
    for (const key of ['k'.repeat(181), '']) {
      for (const [method, suffix] of [
        ['GET', ''],
        ['DELETE', ''],
        ['POST', '/pause'],
        ['POST', '/resume'],
      ] as const) {
        assertError(await api.call(method, `${schedulePath(queue, key)}${suffix}`), 400, 'VALIDATION', /schedule key of 1-180 characters/);
      }
    }
    assert.equal(await digest(), before, 'still nothing written');
  });

  it('wrong JSON types and malformed bodies are typed 400s that name the field, and write nothing', async () => {
    const queue = uniqueQueue('sched');
    const path = schedulePath(queue, 'typed');
    const cases: [name: string, body: unknown, code: string, message?: RegExp][] = [
      ['cron as a number', { cron: 5 }, 'VALIDATION', /body\.cron must be a string/],
      ['every as a boolean', { every: true }, 'VALIDATION', /body\.every must be an integer or a string, got true/],
      ['every as an object', { every: { ms: 5000 } }, 'VALIDATION', /body\.every/],
      ['tz as a number', { every: '5m', tz: 1 }, 'VALIDATION', /body\.tz must be a string/],
      ['limit as a string', { every: '5m', limit: '3' }, 'VALIDATION', /body\.limit must be an integer/],
      ['limit as a fraction', { every: '5m', limit: 2.5 }, 'VALIDATION', /body\.limit must be an integer/],
      ['maxAttempts as a string', { every: '5m', maxAttempts: '3' }, 'VALIDATION', /body\.maxAttempts must be an integer/],
      ['startAt as a boolean', { every: '5m', startAt: true }, 'VALIDATION', /body\.startAt/],
      ['endAt as an array', { every: '5m', endAt: [1] }, 'VALIDATION', /body\.endAt/],
      ['overlap as a number', { every: '5m', overlap: 1 }, 'VALIDATION', /body\.overlap/],
      ['backoff as a string', { every: '5m', backoff: 'exponential' }, 'VALIDATION', /body\.backoff/],
      ['a body that is an array', '[{"every":"5m"}]', 'VALIDATION', /body must be an object/],
      ['a body that is a string', '"every 5m"', 'VALIDATION', /body must be an object/],
      ['a body that is null', 'null', 'VALIDATION'],
      ['no body', '', 'VALIDATION'],
      ['invalid JSON', '{"every": ', 'INVALID_JSON'],
      ['a __proto__ key', '{"every":"5m","payload":{"__proto__":{"x":1}}}', 'FORBIDDEN_KEY'],
      [
        'a payload number beyond the double range',
        '{"every":"5m","payload":{"n":1e400}}',
        'VALIDATION',
        /body\.payload\.n is a number out of range/,
      ],
    ];
    const before = await digest();
    for (const [name, body, code, message] of cases) {
      const answer = await api.call('PUT', path, body);
      assert.deepEqual([name, answer.status, answer.body?.error?.code], [name, 400, code], `${name}: ${answer.text.slice(0, 300)}`);
      if (message) assert.match(answer.body.error.message, message, name);
    }
    const form = await api.call('PUT', path, 'every=5m', { 'content-type': 'application/x-www-form-urlencoded' });
    assertError(form, 415, 'UNSUPPORTED_MEDIA_TYPE');
    const big = await api.call('PUT', path, { every: '5m', payload: 'x'.repeat(300_000) });
    assertError(big, 413, 'PAYLOAD_TOO_LARGE');
    assertError(await api.call('PUT', `/v1/queues/bad%20name/schedules/k`, { every: '5m' }), 400, 'VALIDATION', /params\.queue/);
    assertError(await api.call('GET', `${schedulesPath(queue)}/%E0%A4%A`), 400, 'BAD_REQUEST');
    assertError(await api.call('PATCH', path, { every: '5m' }), 404, 'ROUTE_NOT_FOUND');
    assertError(await api.call('GET', `${path}/pause`), 404, 'ROUTE_NOT_FOUND', /No route GET/);
    assert.equal(await digest(), before, 'nothing was written to Redis');
  });

  it('with a token every schedule route needs it; without one a cross-origin change is refused', async () => {
    await secured.start();
    const queue = uniqueQueue('sched');
    const anonymous = client(secured.url);
    const wrong = client(secured.url, 'not-the-token-at-all-0000');
    const routes: [method: string, path: string, body?: unknown][] = [
      ['PUT', schedulePath(queue, 'k'), { every: '5m' }],
      ['GET', schedulesPath(queue)],
      ['GET', schedulePath(queue, 'k')],
      ['POST', `${schedulePath(queue, 'k')}/pause`],
      ['POST', `${schedulePath(queue, 'k')}/resume`],
      ['DELETE', schedulePath(queue, 'k')],
    ];
    const before = await digest();
    for (const [method, path, body] of routes) {
      assertError(await anonymous.call(method, path, body), 401, 'UNAUTHORIZED', /Authorization: Bearer/);
      assertError(await wrong.call(method, path, body), 401, 'UNAUTHORIZED', /not valid/);
    }
    assert.equal(await digest(), before, 'nothing was written without the token');
    assert.equal((await secured.call('PUT', schedulePath(queue, 'k'), { every: '5m' })).status, 200);
    for (const [method, path, body] of routes.filter(([method]) => method !== 'GET')) {
      assertError(await secured.call(method, path, body, { origin: 'https://evil.example' }), 403, 'CROSS_ORIGIN');
    }
    assert.equal((await secured.call('GET', schedulePath(queue, 'k'))).body.paused, false, 'the cross-origin pause was refused');
    assert.deepEqual((await secured.call('DELETE', schedulePath(queue, 'k'))).body, { result: 'removed' });
  });

  it('a tick arrives as an ordinary job: claimed over HTTP with its schedule key and tick time', async () => {
    const queue = uniqueQueue('sched');
    const info = await upsert(queue, 'tick:1', { every: '1s', payload: { n: 1 } });
    const nextAt = info.nextAt as number;
    const claimed = await api.call('POST', `/v1/queues/${queue}/claim`, { waitMs: 5_000 });
    assert.equal(claimed.status, 200, claimed.text);
    const [job] = claimed.body.jobs;
    assert.ok(job, 'a tick fell due within 5 s');
    assert.match(job.id, /^tick:1@\d+/);
    assert.deepEqual(job.payload, { n: 1 });
    assert.equal(job.schedule?.key, 'tick:1');
    assert.ok(job.schedule.tickAt >= nextAt - 1_000, 'the tick time is on the grid');
    const pulled = components.PulledJob as Schema;
    for (const field of Object.keys(job)) assert.ok(field in (pulled.properties ?? {}), `PulledJob.${field} is documented`);
    assert.deepEqual((await api.call('DELETE', schedulePath(queue, 'tick:1'))).body, { result: 'removed' });
  });

  it('the OpenAPI document has the six schedule operations, under the schedules tag, with their schemas', () => {
    const doc = buildOpenApiDocument() as {
      paths: Record<
        string,
        Record<
          string,
          {
            operationId: string;
            tags: string[];
            parameters?: { name: string }[];
            requestBody?: unknown;
            responses: Record<string, unknown>;
          }
        >
      >;
    };
    const expected: [operationId: string, method: string, path: string][] = [
      ['upsertSchedule', 'put', '/v1/queues/{queue}/schedules/{key}'],
      ['listSchedules', 'get', '/v1/queues/{queue}/schedules'],
      ['getSchedule', 'get', '/v1/queues/{queue}/schedules/{key}'],
      ['pauseSchedule', 'post', '/v1/queues/{queue}/schedules/{key}/pause'],
      ['resumeSchedule', 'post', '/v1/queues/{queue}/schedules/{key}/resume'],
      ['deleteSchedule', 'delete', '/v1/queues/{queue}/schedules/{key}'],
    ];
    for (const [operationId, method, path] of expected) {
      const operation = doc.paths[path]?.[method];
      assert.ok(operation, `${method} ${path} is documented`);
      assert.equal(operation.operationId, operationId);
      assert.deepEqual(operation.tags, ['schedules']);
      assert.ok(operation.responses['200'], `${operationId} documents its answer`);
      assert.ok(operation.responses['401'] && operation.responses['400'], `${operationId} documents 400 and 401`);
      if (path.endsWith('{key}') || path.includes('{key}/')) {
        assert.deepEqual(
          operation.parameters?.map(p => p.name),
          ['queue', 'key'],
        );
        if (operationId !== 'upsertSchedule') assert.ok(operation.responses['404'], `${operationId} documents 404`);
      }
    }
    assert.ok(doc.paths['/v1/queues/{queue}/schedules/{key}']?.put?.requestBody, 'the upsert documents its body');
    assert.equal(ROUTES.filter(route => route.tag === 'schedules').length, 6);
    const body = ROUTES.find(route => route.operationId === 'upsertSchedule')?.body as Schema;
    assert.deepEqual(
      Object.keys(body.properties ?? {}).sort(),
      ['backoff', 'catchUp', 'cron', 'endAt', 'every', 'group', 'limit', 'maxAttempts', 'overlap', 'payload', 'startAt', 'tz'],
      'every ScheduleSpec option',
    );
  });
});
