import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDuration, PayloadTooLargeError, Queue, ValidationError, Worker } from '../../src/index.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

describe('parseDuration', () => {
  it('reads single and compound human durations', () => {
    assert.equal(parseDuration('250ms'), 250);
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('30m'), 1_800_000);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('5d'), 432_000_000);
    assert.equal(parseDuration('1w 2d'), 777_600_000);
    assert.equal(parseDuration('1.5s'), 1_500);
    assert.equal(parseDuration('1500'), 1_500, 'digits alone are milliseconds, as a number is');
  });

  it('refuses anything that is not a duration', () => {
    for (const text of ['', '-30', 'abc', '1x', '1h30', '-5m', 'm5', '1e3s', '5 minutes']) {
      assert.throws(() => parseDuration(text), ValidationError, text);
    }
  });
});

describe('bad input gets a typed error and writes nothing', () => {
  it('refuses bad queue names', () => {
    for (const name of ['', 'a b', 'a{b}', 'a:b', 'x'.repeat(101), '-lead', 'é']) {
      assert.throws(() => new Queue(name, { connection: redis.url }), ValidationError, name);
    }
    assert.throws(() => new Queue(42 as unknown as string, { connection: redis.url }), ValidationError);
  });

  it('refuses bad delays, dates, ids, payloads and options before touching Redis', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url, maxPayloadBytes: 1_024 }));
    const cases: [string, Promise<unknown>, new (...args: never[]) => Error][] = [
      ['negative delay', q.add(1, { delay: -1 }), ValidationError],
      ['NaN delay', q.add(1, { delay: Number.NaN }), ValidationError],
      ['infinite delay', q.add(1, { delay: Number.POSITIVE_INFINITY }), ValidationError],
      ['absurd delay', q.add(1, { delay: '11000d' }), ValidationError],
      ['unparseable delay', q.add(1, { delay: 'soon' as never }), ValidationError],
      ['delay and at', q.add(1, { delay: 5, at: Date.now() } as never), ValidationError],
      ['invalid date', q.add(1, { at: new Date('nope') }), ValidationError],
      ['negative at', q.add(1, { at: -5 }), ValidationError],
      ['empty id', q.add(1, { id: '' }), ValidationError],
      ['id with newline', q.add(1, { id: 'a\nb' }), ValidationError],
      ['id too long', q.add(1, { id: 'x'.repeat(201) }), ValidationError],
      ['function payload', q.add((() => 1) as unknown as number), ValidationError],
      ['undefined payload', q.add(undefined as unknown as number), ValidationError],
      ['bigint payload', q.add({ n: 1n } as unknown as number), ValidationError],
      ['Infinity in a payload (JSON would write null)', q.add({ amount: Number.POSITIVE_INFINITY } as unknown as number), ValidationError],
      ['NaN in a payload', q.add([1, { n: Number.NaN }] as unknown as number), ValidationError],
      [
        'circular payload',
        q.add(
          (() => {
            const o: Record<string, unknown> = {};
            o.self = o;
            return o;
          })() as unknown as number,
        ),
        ValidationError,
      ],
      ['payload too large', q.add('x'.repeat(2_000) as unknown as number), PayloadTooLargeError],
      ['maxAttempts 0', q.add(1, { maxAttempts: 0 }), ValidationError],
      ['bad backoff', q.add(1, { backoff: { type: 'linear', delayMs: 5 } as never }), ValidationError],
      ['bad ifExists', q.add(1, { ifExists: 'merge' as never }), ValidationError],
      ['bad bulk entry', q.addBulk([{ payload: 1 }, { payload: 2, delay: -3 }]), ValidationError],
      ['reschedule without time', q.reschedule('x', {} as never), ValidationError],
      ['cancel with bad id', q.cancel(''), ValidationError],
    ];
    for (const [label, promise, type] of cases) await assert.rejects(promise, type, label);
    const error = await q.add('x'.repeat(2_000) as unknown as number).catch((e: unknown) => e);
    assert.ok(error instanceof PayloadTooLargeError);
    assert.equal(error.code, 'ERR_PAYLOAD_TOO_LARGE');
    assert.equal(error.limitBytes, 1_024);
    assert.match(error.message, /2002 bytes/);
    await assert.rejects(q.add({ order: { amount: Number.NEGATIVE_INFINITY } } as unknown as number), {
      name: 'ValidationError',
      message: 'Payload is not JSON-serializable: payload.order.amount is a number JSON cannot carry (NaN or ±Infinity)',
    });
    assert.deepEqual(await redis.raw.keys(`sg:{${name}:0}:*`), [], 'nothing was written');
  });

  it('gives exact messages for bad worker options', () => {
    const make = (options: object) => () => new Worker('w', () => undefined, { connection: redis.url, ...options });
    assert.throws(make({ concurrency: 0 }), {
      name: 'ValidationError',
      message: 'Expected `concurrency` to be an integer from 1 to 100000, got 0',
    });
    assert.throws(make({ concurrency: 1.5 }), ValidationError);
    assert.throws(make({ leaseMs: 10 }), ValidationError);
    assert.throws(make({ maxAttempts: 0 }), ValidationError);
    assert.throws(make({ batch: { size: 0 } }), ValidationError);
    assert.throws(make({ backoff: { type: 'fixed', delayMs: -1 } }), ValidationError);
    assert.throws(() => new Worker([], () => undefined, { connection: redis.url }), ValidationError);
    assert.throws(() => new Worker('w', 'nope' as never, { connection: redis.url }), ValidationError);
  });
});

describe('generated ids', () => {
  it('sort in creation order even when a million are made in one millisecond', async () => {
    const { newJobId } = await import('../../src/core/ids.js');
    const frozenMs = Date.now() + 10_000;
    let previous = newJobId(frozenMs);
    for (let i = 0; i < 1_700_000; i++) {
      const id = newJobId(frozenMs);
      if (id <= previous) assert.fail(`id ${i} (${id}) does not sort after ${previous}`);
      previous = id;
    }
    assert.ok(newJobId(frozenMs + 5) > previous, 'a later millisecond sorts later');
  });
});
