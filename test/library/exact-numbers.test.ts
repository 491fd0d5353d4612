// Numbers are never changed silently (issue 18, item 11): an integer beyond ±(2^53 - 1), which a
// JSON reader in JavaScript (and most others) rounds, and the values JSON cannot carry at all (NaN,
// ±Infinity, BigInt) are refused with their path, over HTTP and by the library, and nothing is
// written; numbers written as doubles (0.1, 1e300) keep their value.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PullConsumer, Queue, ValidationError, Worker } from '../../src/index.js';
import { useApp, type Answer } from '../helpers/http.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);

/** Redis's digest of the whole data set: equal before and after means nothing was written. */
const digest = async () => String(await redis.raw.call('DEBUG', 'DIGEST'));

function assertRefused(answer: Answer, path: string): void {
  assert.deepEqual([answer.status, answer.body?.error?.code], [400, 'VALIDATION'], answer.text.slice(0, 300));
  const message = answer.body.error.message as string;
  assert.ok(message.includes(`${path} is an integer beyond ±9007199254740991`), message);
  assert.match(message, /send it as a string/);
}

describe('integers beyond 2^53 over HTTP', () => {
  it('are refused with 400 VALIDATION naming their path in every body that carries user JSON, and nothing is written', async () => {
    const name = uniqueQueue('exact');
    await api.start();
    const before = await digest();
    assertRefused(await api.call('POST', `/v1/queues/${name}/jobs`, '{"payload":{"orderId":9007199254740993}}'), 'payload.orderId');
    assertRefused(await api.call('POST', `/v1/queues/${name}/jobs`, '{"payload":{"orderId":-12345678901234567890}}'), 'payload.orderId');
    assertRefused(
      await api.call('POST', `/v1/queues/${name}/jobs:bulk`, '{"jobs":[{"payload":1},{"payload":{"ids":[12345678901234567890]}}]}'),
      'jobs[1].payload.ids[0]',
    );
    // Beyond 1e21 the parsed double would be written back with an exponent: only the text shows the lost digits.
    assertRefused(
      await api.call('POST', `/v1/queues/${name}/jobs`, '{"payload":{"ids":[1,123456789012345678901234567890]}}'),
      'payload.ids[1]',
    );
    assertRefused(
      await api.call('PUT', `/v1/queues/${name}/schedules/nightly`, '{"every":"1h","payload":{"accountId":9007199254740993}}'),
      'payload.accountId',
    );
    assertRefused(
      await api.call('POST', `/v1/queues/${name}/jobs/x/ack`, '{"token":"1","result":{"orderId":9007199254740993}}'),
      'result.orderId',
    );
    // 1e20 and 12345678901234567890.0 are doubles as written, but their value would be stored as integer digits beyond 2^53.
    assertRefused(await api.call('POST', `/v1/queues/${name}/jobs`, '{"payload":{"n":1e20}}'), 'payload.n');
    assertRefused(await api.call('POST', `/v1/queues/${name}/jobs`, '{"payload":{"n":12345678901234567890.0}}'), 'payload.n');
    assert.equal(await digest(), before, 'nothing was written');
  });

  it('keeps safe integers, doubles and integers sent as strings exactly as they were sent', async () => {
    const name = uniqueQueue('exact');
    const text =
      '{"payload":{"max":9007199254740991,"min":-9007199254740991,"tiny":0.1,"huge":1e300,"neg":-2.5e21,"orderId":"9007199254740993"}}';
    const added = await api.call('POST', `/v1/queues/${name}/jobs`, text);
    assert.equal(added.status, 201, added.text);
    const job = await api.call('GET', `/v1/queues/${name}/jobs/${added.body.id}`);
    assert.equal(job.status, 200, job.text);
    assert.deepEqual(job.body.payload, {
      max: 9007199254740991,
      min: -9007199254740991,
      tiny: 0.1,
      huge: 1e300,
      neg: -2.5e21,
      orderId: '9007199254740993',
    });
    assert.ok(job.text.includes('"orderId":"9007199254740993"'), job.text);
  });

  it('an ack whose result JSON would change is refused, and the job stays claimed until acked without it', async () => {
    const name = uniqueQueue('exact');
    assert.equal((await api.call('POST', `/v1/queues/${name}/jobs`, { payload: 1 })).status, 201);
    assert.equal((await api.call('PUT', `/v1/queues/${name}/retention`, { completed: { count: 10 } })).status, 200);
    const claimed = await api.call('POST', `/v1/queues/${name}/claim`, { max: 1, waitMs: 5_000 });
    const { id, token } = (claimed.body.jobs as { id: string; token: string }[])[0] as { id: string; token: string };
    // 1e20 passes the text check (it is written as a double) and is refused by the library's rule.
    assertRefused(
      await api.call('POST', `/v1/queues/${name}/jobs/${id}/ack`, `{"token":"${token}","result":{"total":1e20}}`),
      'result.total',
    );
    assert.equal((await api.call('GET', `/v1/queues/${name}/jobs/${id}`)).body.state, 'active');
    const acked = await api.call('POST', `/v1/queues/${name}/jobs/${id}/ack`, { token, result: { total: '100000000000000000000' } });
    assert.equal(acked.status, 200, acked.text);
    assert.deepEqual((await api.call('GET', `/v1/queues/${name}/jobs/${id}`)).body.result, { total: '100000000000000000000' });
  });
});

describe('the library refuses what JSON cannot keep', () => {
  it('add, addBulk and schedule refuse BigInt, NaN, ±Infinity and integers beyond 2^53 with a ValidationError naming the path', async () => {
    const name = uniqueQueue('exact');
    const q = redis.track(new Queue<unknown>(name, { connection: redis.url }));
    const refused = async (promise: Promise<unknown>, message: string) => {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof ValidationError, `${message}: got ${String(error)}`);
      assert.ok(error.message.includes(message), error.message);
    };
    await refused(q.add({ orderId: 2 ** 53 }), 'payload.orderId is an integer beyond ±9007199254740991');
    await refused(q.add({ orderId: -(2 ** 63) }), 'payload.orderId is an integer beyond');
    await refused(q.add({ orderId: 10n }), 'payload.orderId is a BigInt, which JSON cannot carry');
    await refused(q.add([0, { n: Number.NaN }]), 'payload[1].n is a number JSON cannot carry');
    await refused(q.addBulk([{ payload: 1 }, { payload: { ids: [1e20] } }]), 'jobs[1].payload.ids[0] is an integer beyond');
    await refused(q.addBulk([{ payload: 1 }, { payload: { ids: [1n] } }]), 'jobs[1].payload.ids[0] is a BigInt');
    await refused(q.schedule('nightly', { every: '1h', payload: { accountId: 2 ** 60 } }), 'payload.accountId is an integer beyond');
    assert.deepEqual(await redis.raw.keys(`sg:{${name}:*`), [], 'nothing was written');
    // The edges: the largest safe integers and the doubles written with an exponent are kept.
    const id = await q.add({ max: Number.MAX_SAFE_INTEGER, min: Number.MIN_SAFE_INTEGER, huge: 1e21, tiny: 5e-324 });
    assert.deepEqual((await q.get(id))?.payload, { max: Number.MAX_SAFE_INTEGER, min: Number.MIN_SAFE_INTEGER, huge: 1e21, tiny: 5e-324 });
  });

  it("PullConsumer.ack refuses a result JSON would change, whether or not the queue keeps results, and the job's lease is untouched", async () => {
    const name = uniqueQueue('exact');
    const q = redis.track(new Queue<number>(name, { connection: redis.url }));
    const consumer = redis.track(new PullConsumer<number>(name, { connection: redis.url }));
    await q.add(1);
    const [job] = await consumer.claim({ max: 1, waitMs: 5_000 });
    assert.ok(job);
    for (const result of [{ n: Number.POSITIVE_INFINITY }, { n: 2 ** 53 }, { n: 3n }]) {
      await assert.rejects(consumer.ack(job.id, job.token, { result }), ValidationError);
    }
    assert.equal((await q.get(job.id))?.state, 'active');
    assert.equal(await consumer.ack(job.id, job.token, { result: { n: String(2n ** 64n) } }), 'acked');
  });

  it("a Worker handler's result that JSON would change completes the job without a result, and the logger says why", async () => {
    const name = uniqueQueue('exact');
    const q = redis.track(new Queue<number>(name, { connection: redis.url }));
    await q.setRetention({ completed: { count: 10 } });
    const warnings: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (message: string) => void warnings.push(message),
      error: () => undefined,
    };
    const results = [{ n: Number.NaN }, { id: 2 ** 53 }, { id: Number.MAX_SAFE_INTEGER }];
    const done: string[] = [];
    const worker = redis.track(new Worker<number>(name, job => results[job.payload], { connection: redis.url, logger }));
    worker.on('completed', job => done.push(job.id));
    const ids = await q.addBulk(results.map((_, i) => ({ payload: i })));
    await waitFor(() => done.length === 3, 10_000, '3 jobs');
    const [nan, unsafe, safe] = await Promise.all(ids.map(id => q.get(id)));
    assert.deepEqual([nan?.state, unsafe?.state, safe?.state], ['completed', 'completed', 'completed']);
    assert.equal('result' in (nan ?? {}), false, 'NaN is not kept as null');
    assert.equal('result' in (unsafe ?? {}), false, '2^53 is not kept as digits another reader takes for exact');
    assert.deepEqual(safe?.result, { id: Number.MAX_SAFE_INTEGER });
    assert.equal(warnings.length, 1, warnings.join('\n'));
    // Once per worker and queue: whichever of the two completed first.
    assert.match(
      warnings[0] as string,
      /cannot be written as JSON .*(result\.n is a number JSON cannot carry|result\.id is an integer beyond)/,
    );
  });
});
