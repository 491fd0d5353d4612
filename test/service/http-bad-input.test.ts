// Hostile and careless requests: every one gets a 4xx with a stable code, never a 5xx, writes
// nothing to Redis, and leaves the service running. Then the bearer token and what the logs hold.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import {
  ClosedError,
  ConflictError,
  ConnectionError,
  JOB_ID_RULE,
  NotFoundError,
  PayloadTooLargeError,
  Queue,
  QUEUE_NAME_RULE,
  RedisCommandError,
  RedisOutOfMemoryError,
  ValidationError,
} from '../../src/index.js';
import { toHttpError } from '../../src/server/errors.js';
import { createLogger } from '../../src/server/logger.js';
import { rawRequest, useApp } from '../helpers/http.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);
const Q = '/v1/queues/bad';
const J = `${Q}/jobs/some-id`;

/** Nests `depth` arrays: [[[...]]]. */
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

type Case = [name: string, method: string, path: string, body: unknown, status: number, code: string];

const CASES: Case[] = [
  // wrong types and ranges
  ['no payload', 'POST', `${Q}/jobs`, { delay: 10 }, 400, 'VALIDATION'],
  ['delay of the wrong type', 'POST', `${Q}/jobs`, { payload: 1, delay: true }, 400, 'VALIDATION'],
  ['delay that is not a duration', 'POST', `${Q}/jobs`, { payload: 1, delay: '30 parsecs' }, 400, 'VALIDATION'],
  ['negative delay', 'POST', `${Q}/jobs`, { payload: 1, delay: -1 }, 400, 'VALIDATION'],
  ['a payload number beyond the double range', 'POST', `${Q}/jobs`, '{"payload":{"amount":1e400}}', 400, 'VALIDATION'],
  [
    'a bulk payload number beyond the double range',
    'POST',
    `${Q}/jobs:bulk`,
    '{"jobs":[{"payload":1},{"payload":[-1e999]}]}',
    400,
    'VALIDATION',
  ],
  ['delay over 10 years', 'POST', `${Q}/jobs`, { payload: 1, delay: 1e15 }, 400, 'VALIDATION'],
  ['fractional delay', 'POST', `${Q}/jobs`, { payload: 1, delay: 1.5 }, 400, 'VALIDATION'],
  ['at that is not a date', 'POST', `${Q}/jobs`, { payload: 1, at: 'tomorrow-ish' }, 400, 'VALIDATION'],
  ['delay and at', 'POST', `${Q}/jobs`, { payload: 1, delay: 10, at: Date.now() }, 400, 'VALIDATION'],
  ['empty id', 'POST', `${Q}/jobs`, { payload: 1, id: '' }, 400, 'VALIDATION'],
  ['id of 201 characters', 'POST', `${Q}/jobs`, { payload: 1, id: 'x'.repeat(201) }, 400, 'VALIDATION'],
  ['id with a control character', 'POST', `${Q}/jobs`, { payload: 1, id: 'a\u0000b' }, 400, 'VALIDATION'],
  ['id that is a number', 'POST', `${Q}/jobs`, { payload: 1, id: 42 }, 400, 'VALIDATION'],
  ['maxAttempts as a string', 'POST', `${Q}/jobs`, { payload: 1, maxAttempts: '3' }, 400, 'VALIDATION'],
  ['maxAttempts of 0', 'POST', `${Q}/jobs`, { payload: 1, maxAttempts: 0 }, 400, 'VALIDATION'],
  ['unknown backoff type', 'POST', `${Q}/jobs`, { payload: 1, backoff: { type: 'linear', delayMs: 5 } }, 400, 'VALIDATION'],
  ['unknown ifExists', 'POST', `${Q}/jobs`, { payload: 1, ifExists: 'merge' }, 400, 'VALIDATION'],
  ['unknown field', 'POST', `${Q}/jobs`, { payload: 1, delayy: 10 }, 400, 'VALIDATION'],
  ['body that is an array', 'POST', `${Q}/jobs`, '[1,2]', 400, 'VALIDATION'],
  ['body that is null', 'POST', `${Q}/jobs`, 'null', 400, 'VALIDATION'],
  ['empty body', 'POST', `${Q}/jobs`, '', 400, 'VALIDATION'],
  ['bulk over 1,000 jobs', 'POST', `${Q}/jobs:bulk`, { jobs: Array.from({ length: 1_001 }, () => ({ payload: 1 })) }, 400, 'VALIDATION'],
  [
    'bulk with one bad entry among good ones',
    'POST',
    `${Q}/jobs:bulk`,
    { jobs: [{ payload: 1 }, { payload: 2, delay: 'soon' }] },
    400,
    'VALIDATION',
  ],
  ['bulk that is not an array', 'POST', `${Q}/jobs:bulk`, { jobs: { payload: 1 } }, 400, 'VALIDATION'],
  ['reschedule with nothing', 'POST', `${J}/reschedule`, {}, 400, 'VALIDATION'],
  ['claim of 0 jobs', 'POST', `${Q}/claim`, { max: 0 }, 400, 'VALIDATION'],
  ['claim of 1,001 jobs', 'POST', `${Q}/claim`, { max: 1_001 }, 400, 'VALIDATION'],
  ['claim waiting over 60 s', 'POST', `${Q}/claim`, { waitMs: 60_001 }, 400, 'VALIDATION'],
  ['claim with a 100 ms lease', 'POST', `${Q}/claim`, { leaseMs: 100 }, 400, 'VALIDATION'],
  ['ack without a token', 'POST', `${J}/ack`, {}, 400, 'VALIDATION'],
  ['ack with a token that is not digits', 'POST', `${J}/ack`, { token: '12a' }, 400, 'VALIDATION'],
  ['ack with a numeric token', 'POST', `${J}/ack`, { token: 12 }, 400, 'VALIDATION'],
  ['fail with an error that is an object', 'POST', `${J}/fail`, { token: '1', error: { message: 'x' } }, 400, 'VALIDATION'],
  ['fail with an error over 4 KiB', 'POST', `${J}/fail`, { token: '1', error: 'e'.repeat(4_097) }, 400, 'VALIDATION'],
  ['retry dead with ids that are not a list', 'POST', `${Q}/dead/retry`, { ids: 'a' }, 400, 'VALIDATION'],
  ['list jobs without a state', 'GET', `${Q}/jobs`, undefined, 400, 'VALIDATION'],
  ['list jobs of an unknown state', 'GET', `${Q}/jobs?state=done`, undefined, 400, 'VALIDATION'],
  ['list jobs with a limit over 1,000', 'GET', `${Q}/jobs?state=dead&limit=5000`, undefined, 400, 'VALIDATION'],
  ['list jobs with a limit that is not a number', 'GET', `${Q}/jobs?state=dead&limit=ten`, undefined, 400, 'VALIDATION'],
  ['timeline bounds that are not numbers', 'GET', `${Q}/timeline?bounds=a,b`, undefined, 400, 'VALIDATION'],
  ['timeline bounds that decrease', 'GET', `${Q}/timeline?bounds=5000,3000`, undefined, 400, 'VALIDATION'],
  // bad names and ids in paths
  ['queue name with a space', 'POST', '/v1/queues/bad%20name/jobs', { payload: 1 }, 400, 'VALIDATION'],
  ['queue name with a colon', 'POST', '/v1/queues/a:b/jobs', { payload: 1 }, 400, 'VALIDATION'],
  ['queue name with braces', 'GET', '/v1/queues/%7Bx%7D', undefined, 400, 'VALIDATION'],
  ['queue name starting with a dot', 'GET', '/v1/queues/.hidden', undefined, 400, 'VALIDATION'],
  ['queue name of 101 characters', 'GET', `/v1/queues/${'q'.repeat(101)}`, undefined, 400, 'VALIDATION'],
  ['job id of 201 characters', 'GET', `${Q}/jobs/${'i'.repeat(201)}`, undefined, 400, 'VALIDATION'],
  ['job id with a NUL', 'GET', `${Q}/jobs/a%00b`, undefined, 400, 'VALIDATION'],
  ['broken percent-encoding', 'GET', `${Q}/jobs/%E0%A4%A`, undefined, 400, 'BAD_REQUEST'],
  // bodies that attack the parser
  ['invalid JSON', 'POST', `${Q}/jobs`, '{"payload": ', 400, 'INVALID_JSON'],
  ['JSON nested 65 levels', 'POST', `${Q}/jobs`, `{"payload": ${nested(64)}}`, 400, 'JSON_TOO_DEEP'],
  ['JSON nested 100,000 levels', 'POST', `${Q}/jobs`, `{"payload": ${nested(100_000)}}`, 400, 'JSON_TOO_DEEP'],
  ['__proto__ key at the top', 'POST', `${Q}/jobs`, '{"payload": 1, "__proto__": {"admin": true}}', 400, 'FORBIDDEN_KEY'],
  ['__proto__ key in the payload', 'POST', `${Q}/jobs`, '{"payload": {"a": [{"__proto__": {"polluted": 1}}]}}', 400, 'FORBIDDEN_KEY'],
  [
    'constructor.prototype in the payload',
    'POST',
    `${Q}/jobs`,
    '{"payload": {"constructor": {"prototype": {"x": 1}}}}',
    400,
    'FORBIDDEN_KEY',
  ],
  ['body over the 1 MiB limit', 'POST', `${Q}/jobs`, JSON.stringify({ payload: 'x'.repeat(1_100_000) }), 413, 'BODY_TOO_LARGE'],
  ['payload over 256 KiB', 'POST', `${Q}/jobs`, { payload: 'x'.repeat(300_000) }, 413, 'PAYLOAD_TOO_LARGE'],
  // routes
  ['unknown route', 'GET', '/v1/nothing/here', undefined, 404, 'ROUTE_NOT_FOUND'],
  ['wrong method', 'PUT', `${Q}/jobs`, { payload: 1 }, 404, 'ROUTE_NOT_FOUND'],
  ['state change by GET', 'GET', `${Q}/pause`, undefined, 404, 'ROUTE_NOT_FOUND'],
];

describe('HTTP bad input', () => {
  it('every bad request gets its 4xx and code, Redis is unchanged, the service stays up', async () => {
    await api.call('POST', `${Q}/jobs`, { payload: 'existing', id: 'some-id', delay: '1h' });
    const digest = async () => String(await redis.raw.call('DEBUG', 'DIGEST'));
    const before = await digest();
    for (const [name, method, path, body, status, code] of CASES) {
      const answer = await api.call(method, path, body);
      assert.deepEqual([name, answer.status, answer.body?.error?.code], [name, status, code], `${name}: ${answer.text.slice(0, 300)}`);
      assert.equal(typeof answer.body.error.message, 'string');
      assert.ok(answer.body.error.message.length > 0 && answer.body.error.message.length < 1_000, `${name}: the message is short`);
    }
    assert.equal(await digest(), before, 'nothing was written to Redis');
    assert.equal((await api.call('GET', '/healthz')).status, 200);
    assert.equal((await api.call('GET', `${J}`)).body.payload, 'existing');
  });

  it('names the offending field in validation messages', async () => {
    const unknown = await api.call('POST', `${Q}/jobs`, { payload: 1, delayy: 10 });
    assert.match(unknown.body.error.message, /unknown field `delayy`/);
    const range = await api.call('POST', `${Q}/claim`, { max: 0 });
    assert.match(range.body.error.message, /body\.max must be >= 1/);
    const overflow = await api.call('POST', `${Q}/jobs:bulk`, '{"jobs":[{"payload":1},{"payload":{"n":[0,1e400]}}]}');
    assert.equal(overflow.body.error.message, 'body.jobs[1].payload.n[1] is a number out of range (beyond ±1.7976931348623157e308)');
  });

  it('says what is allowed, in words: no answer to a bad request speaks JSON schema', async () => {
    const schemaSpeak =
      /must match pattern|must NOT have|must be equal to|must match exactly one schema|must have required property|\bproperties\b/;
    for (const [name, method, path, body, status] of CASES) {
      if (status !== 400) continue;
      const answer = await api.call(method, path, body);
      assert.doesNotMatch(answer.body.error.message, schemaSpeak, name);
    }
    const told = async (method: string, path: string, body: unknown) => (await api.call(method, path, body)).body.error.message;
    assert.equal(await told('POST', `${J}/reschedule`, { delay: 10, at: Date.now() }), 'body: give either `delay` or `at`, not both');
    assert.equal(await told('POST', `${J}/reschedule`, {}), 'body: give `delay` or `at`');
    assert.equal(
      await told('POST', `${Q}/jobs`, { payload: 1, backoff: { type: 'linear', delayMs: 5 } }),
      "body.backoff.type must be one of 'fixed', 'exponential', got 'linear'",
    );
    assert.equal(
      await told('POST', `${Q}/jobs`, { payload: 1, backoff: 'exponential' }),
      "body.backoff must be an object: { type: 'fixed', delayMs } or { type: 'exponential', delayMs, maxDelayMs?, jitter? }, got 'exponential'",
    );
    assert.equal(
      await told('POST', `${Q}/jobs`, { payload: 1, backoff: { type: 'exponential' } }),
      'body.backoff is missing the required field `delayMs`',
    );
    // The entry of a bulk add, by the schema and by the library's own checks.
    assert.equal(
      await told('POST', `${Q}/jobs:bulk`, { jobs: [{ payload: 1 }, { payload: 1, delay: -5 }] }),
      'body.jobs[1].delay must be >= 0, got -5',
    );
    assert.equal(
      await told('POST', `${Q}/jobs:bulk`, { jobs: [{ payload: 1 }, { payload: 1 }, { payload: 1, delay: '5 parsecs' }] }),
      "In jobs[2]: `delay`: Expected a duration like '30m' or '1h30m', got '5 parsecs'",
    );
    assert.equal(
      await told('POST', `${J}/ack`, { token: 'abc' }),
      "body.token is not valid: the fencing token of the claim: a string of 1-20 digits, sent back exactly as the claim answered it, got 'abc'",
    );
    assert.equal(
      await told('POST', `${Q}/jobs`, { payload: 1, onExpire: 'keep' }),
      "body.onExpire must be one of 'dead', 'drop', got 'keep'",
    );
    assert.match(
      await told('POST', `${Q}/jobs`, { payload: 1, delayy: 1 }),
      /^body has an unknown field `delayy` \(known: payload, delay, at, /,
    );
  });

  it("tells a bad queue name, job id or group in the library's words, with the field, not the schema's pattern", async () => {
    const name = await api.call('POST', '/v1/queues/bad%20name/jobs', { payload: 1 });
    assert.equal(name.body.error.code, 'VALIDATION');
    assert.equal(
      name.body.error.message,
      `params.queue: Expected a queue name of ${QUEUE_NAME_RULE.description}, got 'bad name' (8 characters)`,
    );
    // The library says the same of the same name.
    assert.throws(() => new Queue('bad name', { connection: redis.url }), {
      message: name.body.error.message.replace('params.queue: ', ''),
    });
    const long = await api.call('GET', `/v1/queues/${'q'.repeat(101)}`);
    assert.match(long.body.error.message, /^params\.queue: Expected a queue name of .*, got 'q{60}\.\.\.' \(101 characters\)$/);
    const id = await api.call('GET', `${Q}/jobs/a%00b`);
    assert.equal(id.body.error.message, `params.id: Expected a job id of ${JOB_ID_RULE.description}, got 'a\\u0000b' (3 characters)`);
    const group = await api.call('POST', `${Q}/jobs`, { payload: 1, group: 'g'.repeat(101) });
    assert.match(group.body.error.message, /^body\.group: Expected a group name of 1-100 characters without control characters, got /);
    for (const answer of [name, long, id, group]) assert.doesNotMatch(answer.body.error.message, /must match pattern|must NOT have/);
  });

  it('refuses a chunked body over the limit while it streams, and a body that is not JSON with 415', async () => {
    await api.start();
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const streamed = await rawRequest(api.url, {
      method: 'POST',
      path: `${Q}/jobs`,
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      chunks: Array.from({ length: 40 }, () => chunk),
    });
    assert.equal(streamed.status, 413);
    assert.equal(JSON.parse(streamed.text).error.code, 'BODY_TOO_LARGE');
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const answer = await api.call('POST', `${Q}/pause`, 'a=1', { 'content-type': type });
      assert.deepEqual([type, answer.status, answer.body.error.code], [type, 415, 'UNSUPPORTED_MEDIA_TYPE']);
    }
    assert.equal((await api.call('GET', `${Q}`)).body.stats.paused, false);
  });

  it('refuses cross-origin state changes, and Host names other than loopback without a token', async () => {
    const crossSite = await api.call('POST', `${Q}/pause`, {}, { origin: 'https://evil.example' });
    assert.deepEqual([crossSite.status, crossSite.body.error.code], [403, 'CROSS_ORIGIN']);
    const sameSite = await api.call('POST', `${Q}/resume`, {}, { origin: api.url });
    assert.equal(sameSite.status, 200);
    const rebound = await rawRequest(api.url, { method: 'GET', path: '/v1/queues', headers: { host: 'evil.example:8080' } });
    assert.deepEqual([rebound.status, JSON.parse(rebound.text).error.code], [403, 'FORBIDDEN_HOST']);
    for (const host of ['localhost:1234', '127.0.0.1', '[::1]:80']) {
      assert.equal((await rawRequest(api.url, { method: 'GET', path: '/healthz', headers: { host } })).status, 200, host);
    }
  });
});

describe('HTTP requests refused by the HTTP parser', () => {
  // A short request timeout, so that a body that never comes is answered within seconds.
  const service = useApp(redis, { requestTimeoutMs: 1_000 });
  const HOST = 'Host: 127.0.0.1\r\n';
  const post = (headers: string, body: string) =>
    `POST /v1/queues/raw/jobs HTTP/1.1\r\n${HOST}Content-Type: application/json\r\n${headers}\r\n${body}`;

  /** Writes `data` on a TCP connection (then ends it if asked) and reads everything until the service closes it. */
  async function rawExchange(
    data: string,
    options: { end?: boolean } = {},
  ): Promise<{
    status: number;
    headers: Record<string, string>;
    body: { error?: { code?: string; message: string } } | undefined;
    text: string;
  }> {
    await service.start();
    const port = Number(new URL(service.url).port);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let received = '';
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`the service did not close the connection within 20 s; got: ${JSON.stringify(received)}`));
      }, 20_000);
      socket.on('data', chunk => (received += String(chunk)));
      socket.on('error', () => undefined); // a reset after the answer: the answer is what counts
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(received);
      });
      socket.write(data);
      if (options.end) socket.end();
    });
    const [head = '', body = ''] = text.split('\r\n\r\n', 2);
    const [statusLine = '', ...headerLines] = head.split('\r\n');
    const headers = Object.fromEntries(
      headerLines.map(line => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    let parsed: { error?: { code?: string; message: string } } | undefined;
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      parsed = undefined;
    }
    return { status: Number(statusLine.split(' ')[1]), headers, body: parsed, text };
  }

  const cases: [name: string, request: string, status: number, code: string, message: RegExp, end?: boolean][] = [
    ['a Content-Length that is not a number', post('Content-Length: abc\r\n', '{}'), 400, 'BAD_REQUEST', /Content-Length/],
    ['two different Content-Lengths', post('Content-Length: 2\r\nContent-Length: 3\r\n', '{}'), 400, 'BAD_REQUEST', /Content-Length/],
    [
      'headers over 16 KiB',
      `GET /healthz HTTP/1.1\r\n${HOST}X-Big: ${'a'.repeat(17_000)}\r\n\r\n`,
      431,
      'HEADERS_TOO_LARGE',
      /headers are over 16384 bytes/,
    ],
    ['a malformed request line', 'GARBAGE\r\n\r\n', 400, 'BAD_REQUEST', /request line is malformed/],
    ['a method with a forbidden character', `G@T / HTTP/1.1\r\n${HOST}\r\n`, 400, 'BAD_REQUEST', /request line is malformed/],
    ['a header name with a space', `GET /healthz HTTP/1.1\r\n${HOST}Bad Header: 1\r\n\r\n`, 400, 'BAD_REQUEST', /not valid HTTP/],
    [
      'a body shorter than its Content-Length, then the end of the connection',
      post('Content-Length: 100\r\n', '{"payload":1}'),
      400,
      'BAD_REQUEST',
      /ended before the request was complete/,
      true,
    ],
    [
      'a body shorter than its Content-Length, then nothing',
      post('Content-Length: 100\r\n', '{"payload":1}'),
      408,
      'REQUEST_TIMEOUT',
      /not received completely within 1 s/,
    ],
  ];

  it('answers each in the API error format with a stable code, and closes the connection', async () => {
    for (const [name, request, status, code, message, end] of cases) {
      const answer = await rawExchange(request, { end });
      assert.equal(answer.status, status, `${name}: ${answer.text.slice(0, 300)}`);
      assert.equal(answer.body?.error?.code, code, name);
      assert.match(answer.body?.error?.message ?? '', message, name);
      assert.match(answer.headers['content-type'] ?? '', /^application\/json/, name);
      assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(JSON.stringify(answer.body)), name);
      assert.equal(answer.headers.connection, 'close', name);
      assert.equal(answer.headers['x-content-type-options'], 'nosniff', name);
    }
    assert.deepEqual(await redis.raw.keys('sg:{raw:*'), [], 'nothing was written');
    assert.equal((await service.call('GET', '/healthz')).status, 200, 'the service still answers');
  });

  it('does not cut a long poll that lasts longer than the request timeout (the request was received)', async () => {
    const startedAt = Date.now();
    const answer = await service.call('POST', '/v1/queues/raw-poll/claim', { waitMs: 2_500 });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.jobs, []);
    assert.ok(Date.now() - startedAt >= 2_400, 'the poll waited its full time');
  });
});

describe('HTTP bearer token', () => {
  const TOKEN = 'tok_4f1d2b3c9e8a7d6f5e4c3b2a1908f7e6';
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const secured = useApp(redis, { token: TOKEN, logger: createLogger({ level: 'trace', destination: sink }) });

  it('answers 401 UNAUTHORIZED without the token or with a wrong one, and 200 with it', async () => {
    await secured.start();
    const cases: [string, Record<string, string>][] = [
      ['no header', {}],
      ['wrong token', { authorization: 'Bearer tok_wrong' }],
      ['right token with a suffix', { authorization: `Bearer ${TOKEN}x` }],
      ['a prefix of the token', { authorization: `Bearer ${TOKEN.slice(0, 10)}` }],
      ['basic auth', { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` }],
      ['token without the scheme', { authorization: TOKEN }],
    ];
    for (const [name, headers] of cases) {
      for (const path of ['/v1/queues', '/metrics', '/openapi.json', '/v1/nothing/here']) {
        const answer = await fetch(secured.url + path, { headers });
        const body = (await answer.json()) as { error: { code: string } };
        assert.deepEqual([name, path, answer.status, body.error.code], [name, path, 401, 'UNAUTHORIZED']);
        assert.equal(answer.headers.get('www-authenticate'), 'Bearer');
      }
    }
    const ok = await fetch(`${secured.url}/v1/queues`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    const lowercase = await fetch(`${secured.url}/v1/queues`, { headers: { authorization: `bearer ${TOKEN}` } });
    assert.equal(lowercase.status, 200);
  });

  it('leaves /healthz, /readyz and the dashboard open; a token lifts the loopback Host rule', async () => {
    for (const path of ['/healthz', '/readyz']) assert.equal((await fetch(secured.url + path)).status, 200, path);
    assert.notEqual((await fetch(`${secured.url}/`)).status, 401);
    const remote = await rawRequest(secured.url, {
      method: 'GET',
      path: '/v1/queues',
      headers: { host: 'queues.example.com', authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(remote.status, 200);
  });

  it('never writes the token to the log', async () => {
    lines.length = 0;
    await secured.call('POST', '/v1/queues/logged/jobs', { payload: 1 });
    await secured.call('GET', '/v1/queues/logged/jobs?state=nope');
    await fetch(`${secured.url}/v1/queues`, { headers: { authorization: `Bearer ${TOKEN}-wrong` } });
    // Whoever logs a request's headers gets them redacted.
    const logger = createLogger({ level: 'info', destination: sink });
    logger.info({ req: { headers: { authorization: `Bearer ${TOKEN}` } }, token: TOKEN }, 'request');
    const log = lines.join('');
    assert.ok(lines.length >= 4, `log lines were written (${lines.length})`);
    assert.ok(!log.includes(TOKEN.slice(4)), 'the token is not in the log');
    assert.match(log, /\[redacted\]/);
  });
});

describe('toHttpError', () => {
  it('maps every library error to its status and code, and hides unknown errors behind 500 INTERNAL', () => {
    const cases: [unknown, number, string][] = [
      [new ValidationError('bad'), 400, 'VALIDATION'],
      [new PayloadTooLargeError(300_000, 262_144), 413, 'PAYLOAD_TOO_LARGE'],
      [new ConflictError('running'), 409, 'CONFLICT'],
      [new NotFoundError('gone'), 404, 'NOT_FOUND'],
      [new ConnectionError('down'), 503, 'REDIS_UNAVAILABLE'],
      [new RedisOutOfMemoryError('OOM'), 507, 'REDIS_FULL'],
      [new ClosedError('closed'), 503, 'SHUTTING_DOWN'],
      [new RedisCommandError('ERR wrong type: secret-key-name'), 500, 'INTERNAL'],
      [new TypeError('x is undefined'), 500, 'INTERNAL'],
      ['a string', 500, 'INTERNAL'],
      [Object.assign(new Error('Request header fields too large'), { statusCode: 431 }), 400, 'BAD_REQUEST'],
    ];
    for (const [error, status, code] of cases) {
      const http = toHttpError(error);
      assert.deepEqual([http.statusCode, http.apiCode], [status, code], String(error));
      if (status === 500) assert.doesNotMatch(http.message, /secret-key-name|undefined/, 'internals stay in the log');
    }
  });
});
