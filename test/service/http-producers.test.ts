// The HTTP API end to end for producers and pull consumers: a real service on a real Redis, over fetch.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue } from '../../src/index.js';
import { useApp } from '../helpers/http.js';
import { sleep, uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);

const jobsOf = (queue: string) => `/v1/queues/${queue}/jobs`;
const jobPath = (queue: string, id: string) => `/v1/queues/${queue}/jobs/${encodeURIComponent(id)}`;

async function claimOne(queue: string, body: Record<string, unknown> = {}) {
  const answer = await api.call('POST', `/v1/queues/${queue}/claim`, body);
  assert.equal(answer.status, 200, answer.text);
  return answer.body.jobs as { id: string; token: string; attempt: number; dueAt: number; leaseUntilAt: number; payload: unknown }[];
}

describe('HTTP producers', () => {
  it('adds a job and reads it back; adding the same id again is idempotent', async () => {
    const queue = uniqueQueue('http');
    const id = 'order/42:é';
    const added = await api.call('POST', jobsOf(queue), { payload: { orderId: 42 }, id, delay: '1h' });
    assert.equal(added.status, 201, added.text);
    assert.deepEqual(added.body, { id });
    const again = await api.call('POST', jobsOf(queue), { payload: { orderId: 43 }, id, delay: '2h' });
    assert.deepEqual([again.status, again.body], [201, { id }]);
    const job = await api.call('GET', jobPath(queue, id));
    assert.equal(job.status, 200);
    assert.equal(job.body.state, 'delayed');
    assert.deepEqual(job.body.payload, { orderId: 42 }, 'the first payload stays');
    assert.ok(job.body.dueAt > Date.now() + 3_500_000 && job.body.dueAt < Date.now() + 3_700_000);
  });

  it('ids in paths are RFC 3986 percent-encoded: `+` is a literal plus, and a form-encoded space is told so in the 404', async () => {
    const queue = uniqueQueue('http');
    const ids = ['order/42', 'a b', 'a+b', '100%', 'Zürich 🚀', 'x%2Fy', ' +/%é'];
    for (const id of ids) assert.equal((await api.call('POST', jobsOf(queue), { payload: id, id, delay: '1h' })).status, 201, id);
    for (const id of ids) {
      const job = await api.call('GET', jobPath(queue, id));
      assert.deepEqual([job.status, job.body.id, job.body.payload], [200, id, id], id);
    }
    // 'a+b' is the id with a plus, sent as it is or as %2B; never the id with a space.
    assert.equal((await api.call('GET', `${jobsOf(queue)}/a+b`)).body.id, 'a+b');
    assert.equal((await api.call('GET', `${jobsOf(queue)}/a%2Bb`)).body.id, 'a+b');
    const other = uniqueQueue('http');
    await api.call('POST', jobsOf(other), { payload: 1, id: 'order 42', delay: '1h' });
    // What Java's URLEncoder.encode("order 42") sends: a 404 that says why.
    for (const [method, suffix] of [
      ['GET', ''],
      ['DELETE', ''],
      ['POST', '/reschedule'],
    ] as const) {
      const formEncoded = await api.call(method, `${jobsOf(other)}/order+42${suffix}`, method === 'POST' ? { delay: 5 } : undefined);
      assert.equal(formEncoded.status, 404);
      assert.match(
        formEncoded.body.error.message,
        /^No job order\+42 in queue .*A \+ in a path is a literal plus: if the id has a space, send it as %20/,
      );
    }
    assert.equal((await api.call('GET', jobPath(other, 'order 42'))).body.state, 'delayed', 'the job is still there');
    const plain = await api.call('GET', jobPath(other, 'nothing-here'));
    assert.doesNotMatch(plain.body.error.message, /literal plus/, 'the hint is only for an id with a +');
  });

  it('takes `at` as epoch ms or RFC 3339, and a generated id when none is given', async () => {
    const queue = uniqueQueue('http');
    const at = Date.now() + 60_000;
    const byMs = await api.call('POST', jobsOf(queue), { payload: 1, at });
    const byText = await api.call('POST', jobsOf(queue), { payload: 2, at: new Date(at).toISOString() });
    assert.equal(byMs.status, 201);
    assert.match(byMs.body.id, /^[0-9a-z]+$/);
    for (const answer of [byMs, byText]) assert.equal((await api.call('GET', jobPath(queue, answer.body.id))).body.dueAt, at);
  });

  it('bulk adds up to 1,000 jobs and returns their ids in order', async () => {
    const queue = uniqueQueue('http');
    const jobs = Array.from({ length: 1_000 }, (_, i) => ({ payload: { i }, id: `b${i}`, delay: i % 2 === 0 ? 0 : '1h' }));
    const answer = await api.call('POST', `${jobsOf(queue)}:bulk`, { jobs });
    assert.equal(answer.status, 201, answer.text);
    assert.deepEqual(
      answer.body.ids,
      jobs.map(job => job.id),
    );
    const stats = (await api.call('GET', `/v1/queues/${queue}`)).body.stats;
    assert.deepEqual([stats.ready, stats.delayed], [500, 500]);
  });

  it('cancel answers 200, then 404; a running job is 409 JOB_RUNNING and keeps running', async () => {
    const queue = uniqueQueue('http');
    await api.call('POST', jobsOf(queue), { payload: 'a', id: 'waiting', delay: '1h' });
    assert.deepEqual((await api.call('DELETE', jobPath(queue, 'waiting'))).body, { result: 'cancelled' });
    const gone = await api.call('DELETE', jobPath(queue, 'waiting'));
    assert.deepEqual([gone.status, gone.body.error.code], [404, 'NOT_FOUND']);
    assert.equal((await api.call('GET', jobPath(queue, 'waiting'))).status, 404);

    await api.call('POST', jobsOf(queue), { payload: 'b', id: 'running' });
    const [claimed] = await claimOne(queue);
    assert.equal(claimed?.id, 'running');
    const refused = await api.call('DELETE', jobPath(queue, 'running'));
    assert.deepEqual([refused.status, refused.body.error.code], [409, 'JOB_RUNNING']);
    assert.equal((await api.call('GET', jobPath(queue, 'running'))).body.state, 'active');
  });

  it('reschedules a waiting job; 404 for an unknown one, 409 for a running one', async () => {
    const queue = uniqueQueue('http');
    await api.call('POST', jobsOf(queue), { payload: 'a', id: 'r1', delay: '1h' });
    const moved = await api.call('POST', `${jobPath(queue, 'r1')}/reschedule`, { delay: 5_000 });
    assert.deepEqual([moved.status, moved.body], [200, { result: 'rescheduled' }]);
    const dueAt = (await api.call('GET', jobPath(queue, 'r1'))).body.dueAt;
    assert.ok(Math.abs(dueAt - (Date.now() + 5_000)) < 1_000, `due in ${dueAt - Date.now()} ms`);
    assert.equal((await api.call('POST', `${jobPath(queue, 'nope')}/reschedule`, { delay: 1 })).body.error.code, 'NOT_FOUND');
    await api.call('POST', `${jobPath(queue, 'r1')}/reschedule`, { delay: 0 });
    await claimOne(queue);
    const running = await api.call('POST', `${jobPath(queue, 'r1')}/reschedule`, { at: Date.now() + 60_000 });
    assert.deepEqual([running.status, running.body.error.code], [409, 'JOB_RUNNING']);
  });

  it("ifExists 'replace' debounces a waiting job and is 409 CONFLICT for a running one", async () => {
    const queue = uniqueQueue('http');
    await api.call('POST', jobsOf(queue), { payload: 1, id: 'd', delay: '1h' });
    await api.call('POST', jobsOf(queue), { payload: 2, id: 'd', delay: 0, ifExists: 'replace' });
    const [claimed] = await claimOne(queue);
    assert.deepEqual(claimed?.payload, 2);
    const conflict = await api.call('POST', jobsOf(queue), { payload: 3, id: 'd', ifExists: 'replace' });
    assert.deepEqual([conflict.status, conflict.body.error.code], [409, 'CONFLICT']);
  });
});

describe('HTTP pull consumers', () => {
  it('a long-polling claim returns as soon as a job falls due', async () => {
    const queue = uniqueQueue('http');
    const started = Date.now();
    const pending = claimOne(queue, { waitMs: 5_000, leaseMs: 10_000 });
    await sleep(100);
    const { body } = await api.call('POST', jobsOf(queue), { payload: 'soon', delay: 300 });
    const jobs = await pending;
    assert.deepEqual(
      jobs.map(job => job.id),
      [body.id],
    );
    const job = jobs[0]!;
    // Returned when the job fell due, not at the end of the 5 s long poll; never early is exact.
    assert.ok(Date.now() - started < 3_000, `took ${Date.now() - started} ms`);
    assert.ok(job.leaseUntilAt - 10_000 >= job.dueAt, 'never early');
    assert.ok(job.leaseUntilAt - 10_000 - job.dueAt < 1_000, `claimed ${job.leaseUntilAt - 10_000 - job.dueAt} ms after due`);
    assert.equal(job.attempt, 1);
  });

  it('a claim with nothing due returns an empty list after waitMs', async () => {
    const started = Date.now();
    assert.deepEqual(await claimOne(uniqueQueue('http'), { waitMs: 200 }), []);
    assert.ok(Date.now() - started >= 190);
  });

  it('ack completes the job; a repeated ack (a client retrying after a lost reply) answers acked again and changes nothing', async () => {
    const queue = uniqueQueue('http');
    await api.call('POST', jobsOf(queue), { payload: 'x', id: 'a1' });
    const [job] = await claimOne(queue);
    const acked = await api.call('POST', `${jobPath(queue, 'a1')}/ack`, { token: job!.token });
    assert.deepEqual([acked.status, acked.body], [200, { result: 'acked' }]);
    assert.equal((await api.call('GET', jobPath(queue, 'a1'))).status, 404, 'an acked job is gone');
    const again = await api.call('POST', `${jobPath(queue, 'a1')}/ack`, { token: job!.token });
    assert.deepEqual([again.status, again.body], [200, { result: 'acked' }]);
    assert.equal((await api.call('GET', jobPath(queue, 'a1'))).status, 404, 'still gone, nothing recreated');
  });

  it('a token whose lease ran out is stale: the new holder keeps the job', async () => {
    const queue = uniqueQueue('http');
    await api.call('POST', jobsOf(queue), { payload: 'x', id: 's1' });
    const [first] = await claimOne(queue, { leaseMs: 200 });
    await sleep(300);
    const [second] = await claimOne(queue, { leaseMs: 10_000 });
    assert.equal(second?.attempt, 2);
    for (const [action, body] of [
      ['ack', {}],
      ['fail', {}],
      ['extend', {}],
    ] as const) {
      const answer = await api.call('POST', `${jobPath(queue, 's1')}/${action}`, { token: first!.token, ...body });
      assert.deepEqual([action, answer.status, answer.body.error.code], [action, 409, 'STALE_TOKEN']);
    }
    assert.equal((await api.call('POST', `${jobPath(queue, 's1')}/ack`, { token: second!.token })).status, 200);
  });

  it('ack of a job that never existed (unknown queue or id) is 404 NOT_FOUND; a late ack after another token completed the job is 409, and both stale settles count', async () => {
    const queue = uniqueQueue('http');
    await api.call('POST', jobsOf(queue), { payload: 'x', id: 'n1' });
    for (const path of [`${jobPath(queue, 'no-such-id')}/ack`, `${jobPath(uniqueQueue('typo'), 'n1')}/ack`]) {
      const answer = await api.call('POST', path, { token: '1' });
      assert.deepEqual([answer.status, answer.body.error.code], [404, 'NOT_FOUND'], path);
    }
    const [first] = await claimOne(queue, { leaseMs: 200 });
    await sleep(300);
    const [second] = await claimOne(queue, { leaseMs: 10_000 });
    assert.equal((await api.call('POST', `${jobPath(queue, 'n1')}/ack`, { token: second!.token })).status, 200);
    const late = await api.call('POST', `${jobPath(queue, 'n1')}/ack`, { token: first!.token });
    assert.deepEqual([late.status, late.body.error?.code], [409, 'STALE_TOKEN'], 'the job is gone, but another token completed it');
    const lateFail = await api.call('POST', `${jobPath(queue, 'n1')}/fail`, { token: first!.token });
    assert.deepEqual([lateFail.status, lateFail.body.error?.code], [409, 'STALE_TOKEN']);
    const metrics = await api.call('GET', '/metrics');
    const stale = new RegExp(`sandglass_jobs_stale_total\\{queue="${queue}"\\} (\\d+)`).exec(metrics.text)?.[1];
    assert.equal(stale, '2', 'the stale ack and the stale fail are both counted');
  });

  it('fail retries with retryAt, then dead-letters with the error; extend renews the lease', async () => {
    const queue = uniqueQueue('http');
    await api.call('POST', jobsOf(queue), { payload: 'x', id: 'f1', maxAttempts: 2 });
    const [first] = await claimOne(queue);
    const extended = await api.call('POST', `${jobPath(queue, 'f1')}/extend`, { token: first!.token, leaseMs: 60_000 });
    assert.equal(extended.body.result, 'extended');
    assert.ok(extended.body.leaseUntilAt > Date.now() + 55_000);
    const retried = await api.call('POST', `${jobPath(queue, 'f1')}/fail`, { token: first!.token, error: 'first', retryDelayMs: 50 });
    assert.equal(retried.body.result, 'retried');
    assert.ok(retried.body.retryAt > Date.now() - 1_000);
    const [second] = await claimOne(queue, { waitMs: 2_000 });
    assert.equal(second?.attempt, 2);
    const dead = await api.call('POST', `${jobPath(queue, 'f1')}/fail`, { token: second!.token, error: 'second' });
    assert.deepEqual(dead.body, { result: 'dead' });
    const job = (await api.call('GET', jobPath(queue, 'f1'))).body;
    assert.deepEqual([job.state, job.lastError], ['dead', 'second']);
  });

  it('a client that hangs up ends its long poll: the job that falls due later is not taken', async () => {
    const queue = uniqueQueue('http');
    await api.start();
    const controller = new AbortController();
    const pending = fetch(`${api.url}/v1/queues/${queue}/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ waitMs: 5_000 }),
      signal: controller.signal,
    }).catch(error => error as Error);
    await sleep(100);
    controller.abort();
    assert.equal(((await pending) as Error).name, 'AbortError');
    const { body } = await api.call('POST', jobsOf(queue), { payload: 'later', delay: 200 });
    await sleep(400);
    const job = (await api.call('GET', jobPath(queue, body.id))).body;
    assert.equal(job.state, 'ready', 'nobody claimed it');
    assert.equal(job.attempts, 0);
  });

  it('jobs added over HTTP are the same jobs the library sees', async () => {
    const queue = uniqueQueue('http');
    const { body } = await api.call('POST', jobsOf(queue), { payload: { hello: 'world' }, delay: '10m' });
    const library = redis.track(new Queue(queue, { connection: redis.url }));
    assert.deepEqual((await library.get(body.id))?.payload, { hello: 'world' });
  });
});
