// Every option of every public call is checked before anything is written or connected: absurd
// numbers, unknown option names and bad shapes get a ValidationError with an exact message (HTTP
// 400), never a RangeError, a 500, a silently ignored option or an open connection left behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ConflictError,
  MAX_DELAY_MS,
  PullConsumer,
  Queue,
  SandglassError,
  ValidationError,
  Worker,
  listQueues,
  parseDuration,
} from '../../src/index.js';
import { ConfigError } from '../../src/server/config.js';
import { HttpError, toHttpError } from '../../src/server/errors.js';
import { WebhookError } from '../../src/server/webhooks.js';
import { useApp } from '../helpers/http.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);
const digest = async () => String(await redis.raw.call('DEBUG', 'DIGEST'));
/** Checks that `call` throws (or rejects with) a ValidationError whose message is `message` (or matches it). */
async function refuses(label: string, call: () => unknown, message: string | RegExp): Promise<void> {
  let caught: unknown;
  try {
    await call();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ValidationError, `${label}: expected a ValidationError, got ${String(caught)}`);
  if (typeof message === 'string') assert.equal(caught.message, message, label);
  else assert.match(caught.message, message, label);
}

describe('absurd numbers', () => {
  it('refuses `at` beyond the date range and every absurd delay on add, bulk add and reschedule, with exact messages', async () => {
    const q = redis.track(new Queue(uniqueQueue(), { connection: redis.url }));
    await q.add(1, { id: 'kept', delay: '1h' });
    const before = await digest();
    for (const at of [1e16, Number('9007199254740993'), 1e20, Number.MAX_VALUE]) {
      const message = new RegExp(`^\`at\` of ${String(at).replace('+', '\\+')} is more than 10 years away \\(at most \\d+ now\\)$`);
      await refuses(`add at ${at}`, () => q.add(1, { at }), message);
      await refuses(
        `bulk add at ${at}`,
        () => q.addBulk([{ payload: 1 }, { payload: 2, at }]),
        new RegExp(message.source.replace('^', '^In jobs\\[1\\]: ')),
      );
      await refuses(`reschedule at ${at}`, () => q.reschedule('kept', { at }), message);
    }
    const notAnInstant = /^Expected `at` to be a valid Date or epoch milliseconds >= 0, got /;
    for (const at of [Number.NaN, Number.POSITIVE_INFINITY, -1, new Date(8.64e15 + 1), '2030-01-01' as never]) {
      await refuses(`add at ${String(at)}`, () => q.add(1, { at }), notAnInstant);
    }
    await refuses(
      'delay just over 10 years',
      () => q.add(1, { delay: MAX_DELAY_MS + 1 }),
      `\`delay\` of ${MAX_DELAY_MS + 1} ms is more than 10 years (${MAX_DELAY_MS} ms)`,
    );
    for (const delay of [Number.NaN, Number.POSITIVE_INFINITY, -1, 1e20, 2 ** 53 + 2]) {
      await refuses(
        `delay ${delay}`,
        () => q.add(1, { delay }),
        /^(Expected `delay` to be milliseconds >= 0|`delay` of .* ms is more than 10 years)/,
      );
    }
    await refuses('delay text of 1e27 ms', () => q.add(1, { delay: '99999999999999999999d' }), /^`delay` of .* ms is more than 10 years/);
    await refuses(
      'reschedule delay NaN',
      () => q.reschedule('kept', { delay: Number.NaN }),
      "Expected `delay` to be milliseconds >= 0 or a duration like '30m', got NaN",
    );
    assert.equal(await digest(), before, 'nothing was written');
  });

  it('refuses non-integers, unsafe integers and out-of-range numbers in every numeric option', async () => {
    const q = redis.track(new Queue(uniqueQueue(), { connection: redis.url }));
    const consumer = redis.track(new PullConsumer(q.name, { connection: redis.url }));
    const unsafe = 2 ** 53 + 2;
    const cases: [string, () => unknown, string][] = [
      ['maxAttempts 1.5', () => q.add(1, { maxAttempts: 1.5 }), 'Expected `maxAttempts` to be an integer from 1 to 1000000, got 1.5'],
      [
        'maxAttempts NaN',
        () => q.add(1, { maxAttempts: Number.NaN }),
        'Expected `maxAttempts` to be an integer from 1 to 1000000, got NaN',
      ],
      [
        'backoff.delayMs unsafe',
        () => q.add(1, { backoff: { type: 'fixed', delayMs: unsafe } }),
        `Expected \`backoff.delayMs\` to be an integer from 0 to ${MAX_DELAY_MS}, got ${unsafe}`,
      ],
      [
        'backoff.maxDelayMs Infinity',
        () => q.add(1, { backoff: { type: 'exponential', delayMs: 5, maxDelayMs: Infinity } }),
        `Expected \`backoff.maxDelayMs\` to be an integer from 0 to ${MAX_DELAY_MS}, got Infinity`,
      ],
      [
        'backoff.jitter NaN',
        () => q.add(1, { backoff: { type: 'exponential', delayMs: 5, jitter: Number.NaN } }),
        'Expected `backoff.jitter` to be a number from 0 to 1, got NaN',
      ],
      ['list limit 0', () => q.list('dead', { limit: 0 }), 'Expected `limit` to be an integer from 1 to 1000, got 0'],
      ['list limit 2.5', () => q.list('dead', { limit: 2.5 }), 'Expected `limit` to be an integer from 1 to 1000, got 2.5'],
      [
        'histogram bound unsafe',
        () => q.dueHistogram([unsafe]),
        `Expected \`boundsMs[0]\` to be an integer from 1 to ${MAX_DELAY_MS}, got ${unsafe}`,
      ],
      ['claim max NaN', () => consumer.claim({ max: Number.NaN }), 'Expected `max` to be an integer from 1 to 1000, got NaN'],
      [
        'claim leaseMs Infinity',
        () => consumer.claim({ leaseMs: Infinity }),
        'Expected `leaseMs` to be an integer from 200 to 86400000, got Infinity',
      ],
      ['claim waitMs -1', () => consumer.claim({ waitMs: -1 }), 'Expected `waitMs` to be an integer from 0 to 60000, got -1'],
      [
        'fail retryDelayMs 1e20',
        () => consumer.fail('a', '1', { retryDelayMs: 1e20 }),
        `Expected \`retryDelayMs\` to be an integer from 0 to ${MAX_DELAY_MS}, got 100000000000000000000`,
      ],
      ['extend leaseMs 0.5', () => consumer.extend('a', '1', 0.5), 'Expected `leaseMs` to be an integer from 200 to 86400000, got 0.5'],
      [
        'Queue partitions 0',
        () => new Queue('q', { connection: redis.url, partitions: 0 }),
        'Expected `partitions` to be an integer from 1 to 1024, got 0',
      ],
      [
        'Queue maxPayloadBytes NaN',
        () => new Queue('q', { connection: redis.url, maxPayloadBytes: Number.NaN }),
        'Expected `maxPayloadBytes` to be an integer from 2 to 536870912, got NaN',
      ],
      [
        'Queue waitForReplicas.timeoutMs 1e9',
        () => new Queue('q', { connection: redis.url, waitForReplicas: { replicas: 1, timeoutMs: 1e9 } }),
        'Expected `waitForReplicas.timeoutMs` to be an integer from 1 to 60000, got 1000000000',
      ],
      [
        'PullConsumer partitions 1.5',
        () => new PullConsumer('q', { connection: redis.url, partitions: 1.5 }),
        'Expected `partitions` to be an integer from 1 to 1024, got 1.5',
      ],
      [
        'Worker closeTimeoutMs over a timer',
        () => new Worker('q', () => undefined, { connection: redis.url, closeTimeoutMs: 2 ** 31 }),
        'Expected `closeTimeoutMs` to be an integer from 0 to 2147483647, got 2147483648',
      ],
      [
        'Worker concurrency Infinity',
        () => new Worker('q', () => undefined, { connection: redis.url, concurrency: Infinity }),
        'Expected `concurrency` to be an integer from 1 to 100000, got Infinity',
      ],
    ];
    for (const [label, call, message] of cases) await refuses(label, call, message);
  });

  it('answers 400 with the exact message over HTTP for `at` beyond the date range, never 500', async () => {
    await api.call('POST', '/v1/queues/far/jobs', { payload: 1, id: 'kept', delay: '1h' });
    const before = await digest();
    const bodies = (at: number) =>
      [
        ['/v1/queues/far/jobs', { payload: 1, at }, 'body.at'],
        ['/v1/queues/far/jobs:bulk', { jobs: [{ payload: 1 }, { payload: 2, at }] }, 'body.jobs[1].at'],
        ['/v1/queues/far/jobs/kept/reschedule', { at }, 'body.at'],
      ] as const;
    // Integers JSON keeps exact, but years away: the option's own rule answers.
    for (const at of [9e15, Date.now() + 11 * 365 * 86_400_000]) {
      for (const [path, body] of bodies(at)) {
        const answer = await api.call('POST', path, body);
        assert.equal(answer.status, 400, `${path} at ${at}: ${answer.text}`);
        assert.equal(answer.body.error.code, 'VALIDATION');
        assert.match(answer.body.error.message, /^(In jobs\[1\]: )?`at` of \S+ is more than 10 years away/);
        if (path.endsWith(':bulk')) assert.match(answer.body.error.message, /^In jobs\[1\]: /, 'the bulk entry is named');
      }
    }
    // Integer digits beyond 2^53 are refused by the body's text before any field is read (json-numbers.ts).
    for (const at of [1e16, Number('9007199254740993'), 1e20]) {
      for (const [path, body, field] of bodies(at)) {
        const answer = await api.call('POST', path, body);
        assert.equal(answer.status, 400, `${path} at ${at}: ${answer.text}`);
        assert.equal(answer.body.error.code, 'VALIDATION');
        assert.equal(answer.body.error.message.split(' is ')[0], field);
        assert.match(answer.body.error.message, /is an integer beyond ±9007199254740991/);
      }
    }
    const farDate = await api.call('POST', '/v1/queues/far/jobs', { payload: 1, at: '9999-12-31T00:00:00Z' });
    assert.deepEqual([farDate.status, farDate.body.error.code], [400, 'VALIDATION']);
    assert.equal(await digest(), before, 'nothing was written');
  });
});

describe('one duration rule', () => {
  it('reads digits without a unit as milliseconds, in the library and over HTTP, as the CLI does', async () => {
    assert.equal(parseDuration('1500'), 1_500);
    assert.equal(parseDuration(' 250 '), 250);
    const q = redis.track(new Queue(uniqueQueue(), { connection: redis.url }));
    const sentAt = Date.now();
    const id = await q.add(1, { delay: '60000' });
    const dueAt = (await q.get(id))?.dueAt ?? 0;
    assert.ok(dueAt >= sentAt + 60_000 - 1_000 && dueAt <= Date.now() + 60_000 + 1_000, `due in about 60 s, got ${dueAt - sentAt} ms`);
    const answer = await api.call('POST', '/v1/queues/digits/jobs', { payload: 1, delay: '1500' });
    assert.equal(answer.status, 201, answer.text);
    for (const text of ['-5', '1e3', '15 00 0x', '0x10'])
      await refuses(text, () => q.add(1, { delay: text as never }), /^`delay`: Expected a duration like '30m' or '1h30m', got /);
  });
});

describe('unknown option names', () => {
  it('are refused on every public call, with the name and the known ones, and nothing is written', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    const consumer = redis.track(new PullConsumer(name, { connection: redis.url }));
    const before = await digest();
    const odd = (value: object) => value as never;
    const cases: [string, () => unknown, string | RegExp][] = [
      [
        'add',
        () => q.add(1, odd({ dealy: 5_000 })),
        'Unknown option `dealy` of queue.add (known: delay, at, id, ifExists, maxAttempts, backoff, expireAfter, onExpire, traceparent, group)',
      ],
      [
        'add with options that are not an object',
        () => q.add(1, odd([5])),
        'Expected the options of queue.add to be an object, got an array',
      ],
      [
        'bulk entry',
        () => q.addBulk([{ payload: 1 }, odd({ payload: 2, dealy: 5 })]),
        'Unknown option `dealy` of queue.addBulk (jobs[1]) (known: payload, delay, at, id, maxAttempts, backoff, expireAfter, onExpire, traceparent, group)',
      ],
      [
        'setGroupLimits',
        () => q.setGroupLimits(odd({ concurency: 2 })),
        'Unknown option `concurency` of queue.setGroupLimits (known: rate, concurrency)',
      ],
      [
        'setGroupLimits options',
        () => q.setGroupLimits({ concurrency: 2 }, odd({ gruop: 'g' })),
        'Unknown option `gruop` of queue.setGroupLimits (options) (known: group)',
      ],
      [
        'getGroupLimits',
        () => q.getGroupLimits(odd({ gruop: 'g' })),
        'Unknown option `gruop` of queue.getGroupLimits (options) (known: group)',
      ],
      ['listGroups', () => q.listGroups(odd({ limt: 5 })), 'Unknown option `limt` of queue.listGroups (known: limit, cursor)'],
      ['get by id', () => q.get('x', odd({ gruop: 'g' })), 'Unknown option `gruop` of queue.get (options) (known: group)'],
      [
        'bulk entry ifExists',
        () => q.addBulk([odd({ payload: 1, ifExists: 'replace' })]),
        "`jobs[0].ifExists` is not an option of one entry: give it for the whole call, addBulk(jobs, 'replace')",
      ],
      [
        'backoff field',
        () => q.add(1, { backoff: odd({ type: 'fixed', delayMs: 5, maxDelayMs: 9 }) }),
        'Unknown option `maxDelayMs` of `backoff` (known: type, delayMs)',
      ],
      ['reschedule', () => q.reschedule('x', odd({ dely: 5 })), 'Unknown option `dely` of queue.reschedule (known: delay, at)'],
      ['list', () => q.list('dead', odd({ limt: 5 })), 'Unknown option `limt` of queue.list (known: limit, cursor)'],
      [
        'list offset',
        () => q.list('dead', odd({ offset: 5 })),
        '`offset` is not an option of queue.list: page with `cursor`, the `nextCursor` of the previous page',
      ],
      [
        'list cursor',
        () => q.list('dead', { cursor: 'not a cursor' }),
        "Expected `cursor` to be the `nextCursor` of a previous page, got 'not a cursor'",
      ],
      ['claim', () => consumer.claim(odd({ wait: 5 })), 'Unknown option `wait` of consumer.claim (known: max, leaseMs, waitMs, signal)'],
      [
        'fail',
        () => consumer.fail('a', '1', odd({ retryDelay: 5 })),
        'Unknown option `retryDelay` of consumer.fail (known: error, retryDelayMs, dead)',
      ],
      [
        'new Queue',
        () => new Queue('q', odd({ connection: redis.url, partition: 2 })),
        /^Unknown option `partition` of new Queue \(known: connection, prefix, /,
      ],
      [
        'new PullConsumer',
        () => new PullConsumer('q', odd({ connection: redis.url, maxAttempt: 2 })),
        /^Unknown option `maxAttempt` of new PullConsumer /,
      ],
      [
        'new Worker',
        () => new Worker('q', () => undefined, odd({ connection: redis.url, concurency: 5 })),
        /^Unknown option `concurency` of new Worker \(known: connection, prefix, concurrency, /,
      ],
      [
        'worker batch',
        () => new Worker('q', () => undefined, odd({ connection: redis.url, batch: { size: 2, wait: 5 } })),
        'Unknown option `wait` of `batch` (known: size)',
      ],
      [
        'Queue waitForReplicas',
        () => new Queue('q', odd({ connection: redis.url, waitForReplicas: { replicas: 1, timeout: 5 } })),
        'Unknown option `timeout` of `waitForReplicas` (known: replicas, timeoutMs)',
      ],
      [
        'logger',
        () => new Queue('q', odd({ connection: redis.url, logger: { info: () => undefined } })),
        'Expected `logger` to have the methods debug, info, warn and error (pino and console do)',
      ],
      [
        'listQueues',
        () => listQueues(odd({ connection: redis.url, prefx: 'x' })),
        'Unknown option `prefx` of listQueues (known: connection, prefix, logger)',
      ],
    ];
    for (const [label, call, message] of cases) await refuses(label, call, message);
    assert.equal(await digest(), before, 'nothing was written');
  });

  it('are refused over HTTP: body fields and query parameters', async () => {
    const body = await api.call('POST', '/v1/queues/unknown/jobs', { payload: 1, dealy: 5_000 });
    assert.deepEqual([body.status, body.body.error.code], [400, 'VALIDATION']);
    assert.match(body.body.error.message, /unknown field `dealy`/);
    const query = await api.call('GET', '/v1/queues/unknown/jobs?state=dead&offset=5');
    assert.deepEqual([query.status, query.body.error.code], [400, 'VALIDATION'], query.text);
    assert.match(query.body.error.message, /unknown field `offset`/);
  });
});

describe('bad options leave nothing open', () => {
  for (const [role, construct] of [
    ['Queue', "new Queue('q', { connection: url, partitions: 0 })"],
    ['PullConsumer', "new PullConsumer('q', { connection: url, partitions: 100000 })"],
    ['Worker', "new Worker('q', () => undefined, { connection: url, partitions: -1 })"],
  ] as const) {
    it(`a ${role} with an invalid option throws ValidationError before connecting, and the process exits by itself`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sg-options-'));
      const script = join(dir, 'construct.mts');
      const index = new URL('../../src/index.ts', import.meta.url).href;
      writeFileSync(
        script,
        [
          `import { PullConsumer, Queue, Worker } from '${index}';`,
          `const url = ${JSON.stringify(redis.url)};`,
          'void [PullConsumer, Queue, Worker];',
          `try { ${construct}; console.log('constructed'); } catch (error) { console.log(error.name, error.code); }`,
        ].join('\n'),
      );
      const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', chunk => (out += chunk));
      child.stderr.on('data', chunk => (out += chunk));
      const exited = await new Promise<number | null>(resolve => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve(null);
        }, 20_000);
        child.on('exit', code => {
          clearTimeout(timer);
          resolve(code);
        });
      });
      assert.equal(exited, 0, `the process did not exit by itself within 20 s (a connection kept it alive): ${out}`);
      assert.equal(out.trim(), 'ValidationError ERR_VALIDATION');
    });
  }
});

describe('small things', () => {
  it('a single add of a running job says nothing of "other jobs"; addBulk says which jobs and that the others were written', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    const consumer = redis.track(new PullConsumer(name, { connection: redis.url }));
    await q.add(1, { id: 'busy' });
    assert.equal((await consumer.claim({ leaseMs: 60_000 })).length, 1);
    await assert.rejects(
      q.add(2, { id: 'busy', ifExists: 'replace' }),
      (error: unknown) => error instanceof ConflictError && error.message === 'Job busy is running and cannot be replaced',
    );
    await assert.rejects(
      q.addBulk(
        [
          { payload: 3, id: 'busy' },
          { payload: 4, id: 'fresh' },
        ],
        'replace',
      ),
      (error: unknown) =>
        error instanceof ConflictError &&
        error.message === 'Job busy is running and cannot be replaced; the other jobs of the call were written',
    );
    assert.equal((await q.get('fresh'))?.payload, 4);
  });

  it("extend answers leaseUntilAt on the server's clock, as claim does", async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    const consumer = redis.track(new PullConsumer(name, { connection: redis.url }));
    await q.add(1, { id: 'held' });
    const [job] = await consumer.claim({ leaseMs: 10_000 });
    assert.equal((await q.get('held'))?.leaseUntilAt, job?.leaseUntilAt, 'claim');
    const extended = await consumer.extend('held', job?.token as string, 20_000);
    assert.equal(extended.result, 'extended');
    assert.equal(extended.leaseUntilAt, (await q.get('held'))?.leaseUntilAt, 'extend gives the stored lease deadline');
  });

  it("the worker's `failed` event gives retryAt in whole milliseconds", async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    await q.addBulk(Array.from({ length: 5 }, (_, n) => ({ payload: n })));
    // A clock with fractions (as performance.now has) makes the server-clock estimate fractional.
    const clock = () => performance.timeOrigin + performance.now();
    const worker = redis.track(
      new Worker(name, () => Promise.reject(new Error('no')), {
        connection: redis.url,
        clock,
        backoff: { type: 'fixed', delayMs: 60_000 },
      }),
    );
    const retryAts = await new Promise<unknown[]>(resolve => {
      const seen: unknown[] = [];
      worker.on('failed', (_job, _error, retryAt) => {
        seen.push(retryAt);
        if (seen.length === 5) resolve(seen);
      });
    });
    assert.ok(
      retryAts.every(retryAt => Number.isInteger(retryAt)),
      `whole ms: ${retryAts.join(', ')}`,
    );
  });

  it('ConfigError, WebhookError and HttpError are SandglassErrors with stable codes; HTTP maps every code', () => {
    const errors: [SandglassError, string][] = [
      [new ConfigError('bad port'), 'ERR_CONFIG'],
      [new WebhookError('timeout'), 'ERR_WEBHOOK'],
      [new HttpError('NOT_FOUND', 'none'), 'ERR_HTTP'],
    ];
    for (const [error, code] of errors) {
      assert.ok(error instanceof SandglassError, error.name);
      assert.equal(error.code, code);
    }
    assert.equal(errors[2]?.[0].name, 'HttpError');
    assert.equal(toHttpError(new ConfigError('x')).apiCode, 'INTERNAL');
    assert.equal(toHttpError(new HttpError('NOT_FOUND', 'none')).statusCode, 404);
  });
});
