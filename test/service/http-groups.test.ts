// Groups over HTTP (issue 20): `group` on added jobs and in every job answer, the default limits of a
// queue's groups (/group-limits), a group's own limits, pause and resume, and the page of groups.
// Bad input is refused by the schema (JSON types, lengths, unknown fields) or by the library's rules
// (the group name, ranges, durations) as a 400 VALIDATION naming the field, and writes nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue } from '../../src/index.js';
import { buildOpenApiDocument } from '../../src/server/openapi.js';
import { components } from '../../src/server/schemas.js';
import { client, useApp, type Answer } from '../helpers/http.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);
const TOKEN = 'groups-token-0123456789abcdef012';
const secured = useApp(redis, { token: TOKEN });

const jobsPath = (queue: string) => `/v1/queues/${queue}/jobs`;
const defaultsPath = (queue: string) => `/v1/queues/${queue}/group-limits`;
const groupPath = (queue: string, group: string) => `/v1/queues/${queue}/groups/${encodeURIComponent(group)}`;
const groupsPath = (queue: string) => `/v1/queues/${queue}/groups`;

/** A group name with what a path must carry percent-encoded: a space, '/', '+', '%' and non-ASCII. */
const AWKWARD = 'shop 42/eu+x%y-café-✓';

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

/** Each request is a 400 VALIDATION whose short message matches. */
async function assertRefused(cases: [what: string, method: string, path: string, body: unknown, message: RegExp][]): Promise<void> {
  for (const [what, method, path, body, message] of cases) {
    const answer = await api.call(method, path, body);
    assert.deepEqual([what, answer.status, answer.body?.error?.code], [what, 400, 'VALIDATION'], `${what}: ${answer.text.slice(0, 300)}`);
    assert.match(answer.body.error.message, message, what);
    assert.ok(answer.body.error.message.length < 1_000, `${what}: a short message`);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, path: string, body?: unknown): Promise<Record<string, any>> {
  const answer = await api.call(method, path, body);
  assert.ok(answer.status === 200 || answer.status === 201, `${method} ${path}: ${answer.text}`);
  return answer.body;
}

function queue(name: string): Queue<unknown> {
  return redis.track(new Queue<unknown>(name, { connection: redis.url }));
}

interface ListedGroup {
  group: string;
  waiting: number;
  ready: number;
  active: number;
  limited: boolean;
  paused: boolean;
}

/** Claims until a claim answers nothing (every job here is due already), and gives the ids claimed. */
async function claimAll(name: string): Promise<string[]> {
  const ids: string[] = [];
  for (let round = 0; round < 20; round += 1) {
    const jobs = (await call('POST', `/v1/queues/${name}/claim`, { max: 10 })).jobs as { id: string }[];
    if (jobs.length === 0) return ids.sort();
    ids.push(...jobs.map(job => job.id));
  }
  throw new Error(`claims of ${name} did not run dry`);
}

async function groups(name: string): Promise<ListedGroup[]> {
  const page = await call('GET', `${groupsPath(name)}?limit=1000`);
  page.groups.forEach((info: Record<string, unknown>) => assertDocumented('GroupInfo', info));
  return page.groups;
}

describe('HTTP jobs in groups', () => {
  it('add and bulk add take a group; get, list and claim answer it; a job without one has none', async () => {
    const name = uniqueQueue('groups');
    await call('POST', jobsPath(name), { payload: 1, id: 'one', group: 'shop-42', delay: '1h' });
    await call('POST', `${jobsPath(name)}:bulk`, {
      jobs: [
        { payload: 2, id: 'two', group: AWKWARD, delay: '1h' },
        { payload: 3, id: 'three', delay: '1h' },
      ],
    });
    const one = await call('GET', `${jobsPath(name)}/one`);
    assertDocumented('JobInfo', one);
    assert.equal(one.group, 'shop-42');
    assert.equal((await call('GET', `${jobsPath(name)}/two`)).group, AWKWARD);
    assert.equal('group' in (await call('GET', `${jobsPath(name)}/three`)), false, 'no group: the field is absent');
    assert.equal((await queue(name).get('one'))?.group, 'shop-42', 'the library reads what HTTP wrote');

    const listed = (await call('GET', `${jobsPath(name)}?state=delayed`)).jobs as { id: string; group?: string }[];
    assert.deepEqual(Object.fromEntries(listed.map(job => [job.id, job.group ?? null])), { one: 'shop-42', two: AWKWARD, three: null });

    await call('POST', jobsPath(name), { payload: 4, id: 'now', group: 'shop-7' });
    const claimed = (await call('POST', `/v1/queues/${name}/claim`, { max: 5, waitMs: 5_000 })).jobs as Record<string, unknown>[];
    assert.deepEqual(
      claimed.map(job => [job.id, job.group]),
      [['now', 'shop-7']],
    );
    for (const field of Object.keys(claimed[0] as object))
      assert.ok(field in ((components.PulledJob as Schema).properties ?? {}), `PulledJob.${field} is documented`);
  });

  it('a schedule takes a group: it answers it, and its ticks are jobs of that group; a bad one is a 400', async () => {
    const name = uniqueQueue('groups');
    const path = `/v1/queues/${name}/schedules/${encodeURIComponent('tick:1')}`;
    const info = await call('PUT', path, { every: '1s', group: AWKWARD });
    assert.equal(info.group, AWKWARD);
    assertDocumented('ScheduleInfo', info);
    assert.equal((await call('GET', path)).group, AWKWARD);
    const claimed = (await call('POST', `/v1/queues/${name}/claim`, { waitMs: 5_000 })).jobs as {
      group?: string;
      schedule?: { key: string };
    }[];
    assert.equal(claimed.length, 1, 'a tick fell due within 5 s');
    assert.deepEqual([claimed[0]?.schedule?.key, claimed[0]?.group], ['tick:1', AWKWARD]);
    await call('DELETE', path);
    const before = await digest();
    await assertRefused([
      [
        'a schedule group too long',
        'PUT',
        path,
        { every: '1h', group: 'g'.repeat(101) },
        /body\.group: Expected a group name of 1-100 characters without control characters, got 'g{60}\.\.\.' \(101 characters\)/,
      ],
      ['a schedule group as a number', 'PUT', path, { every: '1h', group: 7 }, /body\.group: Expected a group name of .*, got 7$/],
    ]);
    assert.equal(await digest(), before, 'nothing was written to Redis');
  });

  it('a bad group on an add is 400 VALIDATION naming it, and nothing is written', async () => {
    const name = uniqueQueue('groups');
    await call('POST', jobsPath(name), { payload: 0, id: 'kept', group: 'g' });
    const before = await digest();
    await assertRefused([
      [
        'a group too long',
        'POST',
        jobsPath(name),
        { payload: 1, group: 'g'.repeat(101) },
        /body\.group: Expected a group name of 1-100 characters without control characters, got 'g{60}\.\.\.' \(101 characters\)/,
      ],
      [
        'an empty group',
        'POST',
        jobsPath(name),
        { payload: 1, group: '' },
        /body\.group: Expected a group name of .*, got '' \(0 characters\)/,
      ],
      ['a group as a number', 'POST', jobsPath(name), { payload: 1, group: 42 }, /body\.group: Expected a group name of .*, got 42$/],
      ['a control character', 'POST', jobsPath(name), { payload: 1, group: 'shop\u0007' }, /group/],
      ['a newline', 'POST', jobsPath(name), { payload: 1, group: 'shop\n42' }, /group/],
      // 51 emoji: 51 characters to the schema, 102 UTF-16 code units to the library's rule, which refuses them.
      [
        'a group too long in UTF-16 units',
        'POST',
        jobsPath(name),
        { payload: 1, group: '😀'.repeat(51) },
        /Expected `group` to be a group name of 1-100/,
      ],
      [
        'one bad entry of a bulk add',
        'POST',
        `${jobsPath(name)}:bulk`,
        {
          jobs: [
            { payload: 1, group: 'fine' },
            { payload: 2, group: 'bad\u001b[31m' },
          ],
        },
        /group/,
      ],
      [
        'a bulk entry too long',
        'POST',
        `${jobsPath(name)}:bulk`,
        { jobs: [{ payload: 1, group: 'é'.repeat(101) }] },
        /body\.jobs\[0\]\.group: Expected a group name of .*\(101 characters\)/,
      ],
    ]);
    assert.equal(await digest(), before, 'nothing was written to Redis');
  });
});

describe('HTTP group limits', () => {
  it('PUT /group-limits sets the default of every group (rate per as ms or text); left out is kept, null clears it', async () => {
    const name = uniqueQueue('groups');
    assert.deepEqual(await call('GET', defaultsPath(name)), { source: 'default' }, 'none set');
    const set = await call('PUT', defaultsPath(name), { concurrency: 2, rate: { max: 10, per: '1s' } });
    assert.deepEqual(set, { concurrency: 2, rate: { max: 10, per: 1_000 } });
    assertDocumented('GroupLimits', set);
    const shown = await call('GET', defaultsPath(name));
    assert.deepEqual(shown, { concurrency: 2, rate: { max: 10, per: 1_000 }, source: 'default' });
    assertDocumented('GroupLimitsInfo', shown);
    assert.deepEqual(await queue(name).getGroupLimits(), shown, 'the library reads what HTTP wrote');

    assert.deepEqual(await call('PUT', defaultsPath(name), { concurrency: 1 }), { concurrency: 1, rate: { max: 10, per: 1_000 } });
    assert.deepEqual(await call('PUT', defaultsPath(name), {}), { concurrency: 1, rate: { max: 10, per: 1_000 } }, 'an empty body');
    assert.deepEqual(await call('PUT', defaultsPath(name), { rate: null }), { concurrency: 1 });
    assert.deepEqual(await call('PUT', defaultsPath(name), { concurrency: null }), {});
    assert.deepEqual(await call('GET', defaultsPath(name)), { source: 'default' });
  });

  it("a group's own limits override the default; GET says which is in force; DELETE removes the override", async () => {
    const name = uniqueQueue('groups');
    await call('PUT', defaultsPath(name), { concurrency: 5 });
    assert.deepEqual(await call('GET', `${groupPath(name, 'vip')}/limits`), { concurrency: 5, source: 'default' });

    const set = await call('PUT', `${groupPath(name, 'vip')}/limits`, { concurrency: 1, rate: { max: 3, per: 60_000 } });
    assert.deepEqual(set, { concurrency: 1, rate: { max: 3, per: 60_000 } });
    const shown = await call('GET', `${groupPath(name, 'vip')}/limits`);
    assert.deepEqual(shown, { concurrency: 1, rate: { max: 3, per: 60_000 }, source: 'group' });
    assertDocumented('GroupLimitsInfo', shown);
    assert.deepEqual(await queue(name).getGroupLimits({ group: 'vip' }), shown, 'the library reads what HTTP wrote');
    assert.deepEqual(await call('GET', `${groupPath(name, 'other')}/limits`), { concurrency: 5, source: 'default' }, 'other groups');
    assert.deepEqual(await call('GET', defaultsPath(name)), { concurrency: 5, source: 'default' }, 'the default is unchanged');

    const cleared = await call('DELETE', `${groupPath(name, 'vip')}/limits`);
    assert.deepEqual(cleared, { concurrency: 5, source: 'default' }, 'the group follows the default again');
    assertDocumented('GroupLimitsInfo', cleared);
    assert.deepEqual(await call('GET', `${groupPath(name, 'vip')}/limits`), cleared);
  });

  it('{group} in a path is percent-decoded exactly: a space, /, +, % and non-ASCII', async () => {
    const name = uniqueQueue('groups');
    await call('PUT', `${groupPath(name, AWKWARD)}/limits`, { concurrency: 3 });
    assert.equal((await queue(name).getGroupLimits({ group: AWKWARD })).source, 'group', 'stored under the decoded name');
    assert.equal((await call('GET', `${groupPath(name, AWKWARD)}/limits`)).concurrency, 3);
    // RFC 3986: '+' in a path is a plus, never a space; '%2B' is a plus too.
    await call('PUT', `/v1/queues/${name}/groups/a+b/limits`, { concurrency: 2 });
    assert.equal((await call('GET', `/v1/queues/${name}/groups/a%2Bb/limits`)).source, 'group');
    assert.equal((await call('GET', `/v1/queues/${name}/groups/a%20b/limits`)).source, 'default', "'a b' is another group");
    assert.equal((await queue(name).getGroupLimits({ group: 'a+b' })).source, 'group');
    assertError(await api.call('GET', `/v1/queues/${name}/groups/shop/eu/limits`), 404, 'ROUTE_NOT_FOUND', /No route/);
    assertError(await api.call('GET', `/v1/queues/${name}/groups/bad%E0%A4%A/limits`), 400, 'BAD_REQUEST');

    await call('POST', jobsPath(name), { payload: 1, group: AWKWARD });
    assert.deepEqual(await call('POST', `${groupPath(name, AWKWARD)}/pause`), { paused: true });
    const listed = (await groups(name)).find(info => info.group === AWKWARD);
    assert.equal(listed?.paused, true, 'the decoded name was paused');
  });

  it('nonsense limits and group names are 400 VALIDATION naming the field, and write nothing', async () => {
    const name = uniqueQueue('groups');
    await call('PUT', defaultsPath(name), { concurrency: 3 });
    await call('PUT', `${groupPath(name, 'g')}/limits`, { concurrency: 2 });
    const limits = `${groupPath(name, 'g')}/limits`;
    const cases: [what: string, method: string, path: string, body: unknown, message: RegExp][] = [];
    for (const path of [defaultsPath(name), limits]) {
      cases.push(
        // JSON types and unknown fields: the schema.
        ['concurrency as a string', 'PUT', path, { concurrency: '5' }, /body\.concurrency must be an integer/],
        ['rate as text', 'PUT', path, { rate: '10/1s' }, /body\.rate must be an object or null/],
        ['a typo in rate', 'PUT', path, { rate: { max: 10, pr: '1s' } }, /body\.rate has an unknown field `pr`/],
        ['an unknown field', 'PUT', path, { concurrency: 3, burst: 10 }, /body has an unknown field `burst`/],
        ['a queue limit that groups do not have', 'PUT', path, { expireAfter: '1h' }, /body has an unknown field `expireAfter`/],
        // Ranges and durations: the library's rules.
        ['concurrency 0', 'PUT', path, { concurrency: 0 }, /concurrency/],
        ['negative concurrency', 'PUT', path, { concurrency: -1 }, /concurrency/],
        ['concurrency over 100000', 'PUT', path, { concurrency: 100_001 }, /concurrency/],
        ['rate.max 0', 'PUT', path, { rate: { max: 0, per: '1s' } }, /max/],
        ['rate without per', 'PUT', path, { rate: { max: 10 } }, /per/],
        ['rate.per that is not a duration', 'PUT', path, { rate: { max: 10, per: 'a while' } }, /per/],
        ['rate.per 0', 'PUT', path, { rate: { max: 10, per: 0 } }, /per/],
      );
    }
    const tooLong = encodeURIComponent('g'.repeat(101));
    cases.push(
      ['a group too long in a path', 'PUT', `/v1/queues/${name}/groups/${tooLong}/limits`, { concurrency: 1 }, /params\.group/],
      ['a control character in a path', 'PUT', `/v1/queues/${name}/groups/bad%07/limits`, { concurrency: 1 }, /group/],
      ['a control character, pause', 'POST', `/v1/queues/${name}/groups/bad%1B/pause`, undefined, /group/],
      [
        'a group too long in UTF-16 units, in a path',
        'POST',
        `${groupPath(name, '😀'.repeat(51))}/pause`,
        undefined,
        /Expected `group` to be a group name of 1-100/,
      ],
      ['a group too long, DELETE', 'DELETE', `/v1/queues/${name}/groups/${tooLong}/limits`, undefined, /params\.group/],
      ['a body on pause', 'POST', `${groupPath(name, 'g')}/pause`, { now: true }, /body has an unknown field `now`/],
      ['a bad queue name', 'PUT', `/v1/queues/bad%20name/group-limits`, { concurrency: 1 }, /params\.queue/],
    );
    const before = await digest();
    await assertRefused(cases);
    assertError(await api.call('PUT', defaultsPath(name), '{"concurrency": '), 400, 'INVALID_JSON');
    assertError(await api.call('POST', defaultsPath(name), { concurrency: 1 }), 404, 'ROUTE_NOT_FOUND');
    assert.equal(await digest(), before, 'nothing was written to Redis');
    assert.deepEqual(await call('GET', defaultsPath(name)), { concurrency: 3, source: 'default' });
    assert.deepEqual(await call('GET', limits), { concurrency: 2, source: 'group' });
  });
});

describe('HTTP group pause and the list of groups', () => {
  it("pausing a group holds its jobs back while the other groups' jobs are claimed; resume lets them out", async () => {
    const name = uniqueQueue('groups');
    await call('POST', `${jobsPath(name)}:bulk`, {
      jobs: [
        { payload: 1, id: 'held-1', group: 'held' },
        { payload: 2, id: 'held-2', group: 'held' },
        { payload: 3, id: 'free-1', group: 'free' },
        { payload: 4, id: 'plain' },
      ],
    });
    assert.deepEqual(await call('POST', `${groupPath(name, 'held')}/pause`), { paused: true });
    assert.deepEqual(await call('POST', `${groupPath(name, 'held')}/pause`, {}), { paused: true }, 'again: still paused, {} as body');
    assert.deepEqual(await claimAll(name), ['free-1', 'plain'], 'the paused group gives nothing');
    const held = (await groups(name)).find(info => info.group === 'held');
    assert.deepEqual([held?.paused, held?.waiting, held?.active], [true, 2, 0]);

    assert.deepEqual(await call('POST', `${groupPath(name, 'held')}/resume`), { paused: false });
    assert.deepEqual(await claimAll(name), ['held-1', 'held-2']);
    assert.equal((await groups(name)).find(info => info.group === 'held')?.paused, false);
  });

  it('pause and resume of a group without jobs, in a queue that never had groups, are fine', async () => {
    const name = uniqueQueue('groups');
    assert.deepEqual(await call('POST', `${groupPath(name, 'later')}/pause`), { paused: true });
    assert.deepEqual(await call('POST', `${groupPath(name, 'later')}/resume`), { paused: false });
  });

  it('GET /groups lists the groups busiest first with their counts, a page at a time', async () => {
    const name = uniqueQueue('groups');
    await call('PUT', `${groupPath(name, 'busy')}/limits`, { concurrency: 1 });
    await call('POST', `${jobsPath(name)}:bulk`, {
      jobs: [
        ...[1, 2, 3].map(n => ({ payload: n, group: 'busy' })),
        ...[1, 2].map(n => ({ payload: n, group: 'mid', delay: '1h' })),
        { payload: 1, group: 'quiet', delay: '1h' },
      ],
    });
    const claimed = (await call('POST', `/v1/queues/${name}/claim`, { max: 10, waitMs: 5_000 })).jobs as { group: string }[];
    assert.deepEqual(
      claimed.map(job => job.group),
      ['busy'],
      'concurrency 1: one job of busy; the others are not due',
    );
    const listed = await groups(name);
    const byName = Object.fromEntries(listed.map(info => [info.group, info]));
    assert.deepEqual(byName.busy, { group: 'busy', waiting: 2, ready: 2, active: 1, limited: true, paused: false });
    assert.deepEqual(byName.mid, { group: 'mid', waiting: 2, ready: 0, active: 0, limited: false, paused: false });
    assert.deepEqual(byName.quiet, { group: 'quiet', waiting: 1, ready: 0, active: 0, limited: false, paused: false });
    const named = listed.filter(info => ['busy', 'mid', 'quiet'].includes(info.group));
    assert.deepEqual(
      named.map(info => info.waiting + info.active),
      [...named.map(info => info.waiting + info.active)].sort((a, b) => b - a),
      'most jobs (waiting and active) first',
    );

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page += 1) {
      const answer = await call('GET', `${groupsPath(name)}?limit=1${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      assert.ok(answer.groups.length <= 1, 'a page of at most `limit`');
      seen.push(...answer.groups.map((info: ListedGroup) => info.group));
      cursor = answer.nextCursor;
      if (cursor === undefined) break;
    }
    assert.deepEqual(seen.sort(), listed.map(info => info.group).sort(), 'the pages hold every group once');
  });

  it('bad list queries are 400 VALIDATION', async () => {
    const name = uniqueQueue('groups');
    await assertRefused([
      ['limit 0', 'GET', `${groupsPath(name)}?limit=0`, undefined, /limit/],
      ['limit over 1000', 'GET', `${groupsPath(name)}?limit=5000`, undefined, /limit/],
      ['limit not a number', 'GET', `${groupsPath(name)}?limit=ten`, undefined, /query\.limit is not valid: page size, 1-\d+/],
      ['an unknown parameter', 'GET', `${groupsPath(name)}?state=ready`, undefined, /query has an unknown field `state`/],
    ]);
  });

  it('with a token every group route needs it; a cross-origin change is refused', async () => {
    await secured.start();
    const name = uniqueQueue('groups');
    const anonymous = client(secured.url);
    const routes: [method: string, path: string, body?: unknown][] = [
      ['GET', defaultsPath(name)],
      ['PUT', defaultsPath(name), { concurrency: 2 }],
      ['GET', `${groupPath(name, 'g')}/limits`],
      ['PUT', `${groupPath(name, 'g')}/limits`, { concurrency: 1 }],
      ['DELETE', `${groupPath(name, 'g')}/limits`],
      ['POST', `${groupPath(name, 'g')}/pause`],
      ['POST', `${groupPath(name, 'g')}/resume`],
      ['GET', groupsPath(name)],
    ];
    const before = await digest();
    for (const [method, path, body] of routes) assertError(await anonymous.call(method, path, body), 401, 'UNAUTHORIZED', /Bearer/);
    for (const [method, path, body] of routes.filter(([method]) => method !== 'GET'))
      assertError(await secured.call(method, path, body, { origin: 'https://evil.example' }), 403, 'CROSS_ORIGIN');
    assert.equal(await digest(), before, 'nothing was written without the token');
    assert.deepEqual((await secured.call('PUT', defaultsPath(name), { concurrency: 2 })).body, { concurrency: 2 });
    assert.deepEqual((await secured.call('POST', `${groupPath(name, 'g')}/pause`)).body, { paused: true });
  });

  it('the OpenAPI document has the eight group operations under admin, and group in the job answers', () => {
    const doc = buildOpenApiDocument() as {
      paths: Record<
        string,
        Record<string, { operationId: string; tags: string[]; requestBody?: unknown; responses: Record<string, unknown> }>
      >;
      components: { schemas: Record<string, Schema> };
    };
    const expected: [operationId: string, method: string, path: string][] = [
      ['getDefaultGroupLimits', 'get', '/v1/queues/{queue}/group-limits'],
      ['setDefaultGroupLimits', 'put', '/v1/queues/{queue}/group-limits'],
      ['getGroupLimits', 'get', '/v1/queues/{queue}/groups/{group}/limits'],
      ['setGroupLimits', 'put', '/v1/queues/{queue}/groups/{group}/limits'],
      ['clearGroupLimits', 'delete', '/v1/queues/{queue}/groups/{group}/limits'],
      ['pauseGroup', 'post', '/v1/queues/{queue}/groups/{group}/pause'],
      ['resumeGroup', 'post', '/v1/queues/{queue}/groups/{group}/resume'],
      ['listGroups', 'get', '/v1/queues/{queue}/groups'],
    ];
    for (const [operationId, method, path] of expected) {
      const operation = doc.paths[path]?.[method];
      assert.ok(operation, `${method} ${path} is documented`);
      assert.equal(operation.operationId, operationId);
      assert.deepEqual(operation.tags, ['admin']);
      assert.ok(operation.responses['200'] && operation.responses['400'] && operation.responses['401'], `${operationId}: 200, 400, 401`);
      if (method === 'put') assert.ok(operation.requestBody, `${operationId} documents its body`);
    }
    const { schemas } = doc.components;
    for (const name of ['JobInfo', 'PulledJob']) assert.ok('group' in (schemas[name]?.properties ?? {}), `${name}.group`);
    const addBody = (doc.paths['/v1/queues/{queue}/jobs']?.post?.requestBody as { content: Record<string, { schema: Schema }> }).content;
    const group = addBody['application/json']?.schema.properties?.group as { maxLength: number; description: string };
    assert.equal(group.maxLength, 100);
    assert.match(group.description, /control/);
  });
});
