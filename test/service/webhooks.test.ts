import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { Queue, ValidationError, type Job } from '../../src/index.js';
import { SlidingWindow } from '../../src/server/rate-window.js';
import { parseWebhookBindings, signPayload, verifySignature, WebhookDelivery, type WebhookBinding } from '../../src/server/webhooks.js';
import { startApp } from '../helpers/http.js';
import { assertNeverEarlyAndOnTime } from '../helpers/lateness.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const SECRET = 'test-secret-0123456789abcdef';

interface Delivery {
  /** Local time the request's headers arrived. */
  at: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: { id: string; queue: string; payload: unknown; dueAt: number; attempt: number };
}

interface Reply {
  status?: number;
  body?: string;
  /** Answer after this long, or never if the client gives up first. */
  delayMs?: number;
  /** A Location header. */
  location?: string;
}

/** A real HTTP receiver on 127.0.0.1 that records every request and answers as `reply` says. */
async function receiver(reply: (request: Delivery, index: number) => Reply = () => ({})) {
  const received: Delivery[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let hungUp = 0;
  const server = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const request: Delivery = {
        at,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body: raw ? JSON.parse(raw) : undefined,
      };
      received.push(request);
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const answer = reply(request, received.length - 1);
      void answerLater(res, answer.delayMs ?? 0).then(() => {
        inFlight -= 1;
        if (res.destroyed) hungUp += 1;
        const headers = { 'Content-Type': 'text/plain', ...(answer.location ? { Location: answer.location } : {}) };
        if (!res.destroyed) res.writeHead(answer.status ?? 200, headers).end(answer.body ?? 'ok');
      });
    });
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return redis.track({
    url: `http://127.0.0.1:${port}/hooks/token-in-path`,
    received,
    get maxInFlight() {
      return maxInFlight;
    },
    /** Requests whose client hung up before the answer. */
    get hungUp() {
      return hungUp;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>(resolve => server.close(() => resolve()));
    },
  });
}

/** Waits `ms`, or less if the client hangs up first (no timer outlives the test). */
function answerLater(res: ServerResponse, ms: number): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise(resolve => {
    const timer = setTimeout(resolve, ms);
    res.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

interface Recorded {
  delivered: { job: Job<unknown>; latenessMs: number; heldMs: number }[];
  failed: { job: Job<unknown>; error: Error; retryAt: number | undefined }[];
  dead: { job: Job<unknown>; error: Error }[];
}

function deliveryFor(bindings: (Omit<WebhookBinding, 'secret'> & { secret?: string })[], closeTimeoutMs?: number) {
  const delivery = redis.track(
    new WebhookDelivery({ connection: redis.url, bindings: bindings.map(binding => ({ secret: SECRET, ...binding })), closeTimeoutMs }),
  );
  const events: Recorded = { delivered: [], failed: [], dead: [] };
  delivery.on('delivered', (_queue, job, latenessMs, heldMs) => events.delivered.push({ job, latenessMs, heldMs }));
  delivery.on('failed', (_queue, job, error, retryAt) => events.failed.push({ job, error, retryAt }));
  delivery.on('dead', (_queue, job, error) => events.dead.push({ job, error }));
  return { delivery, events };
}

function queue(name: string): Queue<unknown> {
  return redis.track(new Queue<unknown>(name, { connection: redis.url }));
}

/** Fast retries for the tests: the job's own backoff wins over the Worker's default. */
const fast = { backoff: { type: 'fixed', delayMs: 50 } } as const;

describe('webhook delivery', () => {
  it('POSTs a due job as signed JSON with the documented headers, and acks it on 2xx', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver();
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url }]);
    await delivery.start();
    const id = await queue(name).add({ orderId: 42, note: 'café' }, { id: 'order:42', delay: 150 });
    await waitFor(() => events.delivered.length === 1, 5_000, 'the delivery');

    const [request] = target.received;
    assert.ok(request);
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/hooks/token-in-path');
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers['sandglass-id'], 'order:42');
    assert.equal(request.headers['sandglass-attempt'], '1');
    const dueAt = events.delivered[0]?.job.dueAt as number;
    assert.deepEqual(request.body, { id, queue: name, payload: { orderId: 42, note: 'café' }, dueAt, attempt: 1 });
    assert.ok(request.at >= dueAt, `arrived ${dueAt - request.at} ms early`);

    const timestamp = String(request.headers['sandglass-timestamp']);
    const signature = String(request.headers['sandglass-signature']);
    assert.ok(Math.abs(Number(timestamp) - request.at / 1000) <= 2, 'the timestamp is unix seconds at send time');
    assert.equal(signature, `v1=${createHmac('sha256', SECRET).update(`${timestamp}.${request.raw}`).digest('hex')}`);
    assert.equal(signature, signPayload(SECRET, Number(timestamp), request.raw));
    assert.equal(verifySignature(SECRET, timestamp, request.raw, signature), true);
    assert.equal(verifySignature(SECRET, timestamp, Buffer.from(request.raw), signature), true, 'a raw Buffer body verifies too');
    assert.equal(verifySignature(`${SECRET}x`, timestamp, request.raw, signature), false, 'another secret');
    assert.equal(verifySignature(SECRET, timestamp, request.raw.replace('42', '43'), signature), false, 'a changed body');
    assert.equal(verifySignature(SECRET, Number(timestamp) + 1, request.raw, signature), false, 'a changed timestamp');

    const { latenessMs } = events.delivered[0] as { latenessMs: number };
    assert.ok(latenessMs >= 0 && latenessMs < 1_000, `lateness ${latenessMs} ms`);
    assert.equal(await queue(name).get(id), null, 'acked: the job is gone');
    assert.equal(events.failed.length, 0);
  });

  it("sends a job's group in the body (a job without one has no group field)", async () => {
    const name = uniqueQueue('hook');
    const target = await receiver();
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url }]);
    await delivery.start();
    await queue(name).addBulk([
      { payload: 1, id: 'in-group', group: 'shop 42/eu-café' },
      { payload: 2, id: 'plain' },
    ]);
    await waitFor(() => events.delivered.length === 2, 5_000, 'both deliveries');
    const byId = Object.fromEntries(target.received.map(request => [request.body.id, request.body as Record<string, unknown>]));
    assert.equal(byId['in-group']?.group, 'shop 42/eu-café');
    assert.equal(byId.plain !== undefined && 'group' in byId.plain, false);
    assert.deepEqual(Object.keys(byId['in-group'] ?? {}), ['id', 'queue', 'payload', 'dueAt', 'attempt', 'group']);
  });

  it('delivers nothing before its due time', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver();
    const { delivery } = deliveryFor([{ queue: name, url: target.url, concurrency: 20 }]);
    await delivery.start();
    await queue(name).addBulk(Array.from({ length: 40 }, (_, i) => ({ payload: i, delay: 100 + i * 20 })));
    await waitFor(() => target.received.length === 40, 5_000, '40 deliveries');
    // Never early (exact, every request); on time as a distribution (an HTTP round trip per job).
    assertNeverEarlyAndOnTime(
      target.received.map(request => request.at - request.body.dueAt),
      { p50Ms: 50, p99Ms: 1_000 },
      'deliveries',
    );
  });

  it('retries after a 500 and acks the 2xx that follows, signing each attempt afresh', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver((_request, index) => (index < 2 ? { status: 500, body: 'database down' } : {}));
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url }]);
    await delivery.start();
    const id = await queue(name).add({ n: 1 }, fast);
    await waitFor(() => events.delivered.length === 1, 5_000, 'the third attempt to be acked');

    assert.deepEqual(
      target.received.map(request => request.headers['sandglass-attempt']),
      ['1', '2', '3'],
    );
    assert.deepEqual(
      target.received.map(request => request.body.attempt),
      [1, 2, 3],
    );
    const dueAts = target.received.map(request => request.body.dueAt);
    assert.ok(dueAts[0]! < dueAts[1]! && dueAts[1]! < dueAts[2]!, 'a retry carries the due time of its own attempt');
    for (const request of target.received) {
      assert.ok(
        verifySignature(
          SECRET,
          request.headers['sandglass-timestamp'] as string,
          request.raw,
          request.headers['sandglass-signature'] as string,
        ),
      );
    }
    assert.equal(events.failed.length, 2);
    for (const { error, retryAt } of events.failed) {
      assert.match(error.message, /answered 500 Internal Server Error: database down/);
      assert.equal(typeof retryAt, 'number');
    }
    assert.equal(events.delivered[0]?.job.attempt, 3);
    assert.equal(events.dead.length, 0);
    assert.equal(await queue(name).get(id), null);
  });

  it('dead-letters after the last attempt, keeping the status and the first 200 characters of the answer', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver(() => ({ status: 503, body: `${'A'.repeat(200)}${'B'.repeat(300)}` }));
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url, maxAttempts: 3 }]);
    await delivery.start();
    const id = await queue(name).add({ n: 1 }, fast);
    await waitFor(() => events.dead.length === 1, 5_000, 'the job to die');

    assert.equal(target.received.length, 3);
    assert.deepEqual(
      events.failed.map(event => event.retryAt === undefined),
      [false, false, true],
      'the last failure has no retry',
    );
    assert.match(events.dead[0]?.error.message ?? '', /answered 503 Service Unavailable/);
    const dead = await queue(name).get(id);
    assert.equal(dead?.state, 'dead');
    assert.equal(dead?.attempts, 3);
    assert.match(dead?.lastError ?? '', new RegExp(`answered 503 Service Unavailable: A{200}(\\s|$)`));
    assert.doesNotMatch(dead?.lastError ?? '', /B/, 'only the first 200 characters of the answer are kept');
    assert.doesNotMatch(dead?.lastError ?? '', /token-in-path/, 'the error names the origin, not the path');
  });

  it('410 Gone dead-letters at once; other 4xx and 3xx are retried, and redirects are not followed', async () => {
    const gone = uniqueQueue('gone');
    const missing = uniqueQueue('missing');
    const moved = uniqueQueue('moved');
    const target = await receiver((request, _index) => {
      if (request.body?.queue === gone) return { status: 410 };
      if (request.body?.queue === missing) return request.body.attempt === 1 ? { status: 404 } : {};
      // A followed redirect would arrive here as a bodiless GET, and its 200 would ack the job.
      return request.path === '/moved-here' ? {} : { status: 301, location: '/moved-here' };
    });
    const { delivery, events } = deliveryFor([
      { queue: gone, url: target.url },
      { queue: missing, url: target.url },
      { queue: moved, url: target.url, maxAttempts: 2 },
    ]);
    await delivery.start();
    const goneId = await queue(gone).add('x', fast);
    await queue(missing).add('x', fast);
    const movedId = await queue(moved).add('x', fast);
    await waitFor(() => events.dead.length === 2 && events.delivered.length === 1, 5_000, 'all three outcomes');

    const sent = (name: string) => target.received.filter(request => request.body?.queue === name).length;
    assert.equal(sent(gone), 1, '410: no second attempt');
    assert.equal((await queue(gone).get(goneId))?.attempts, 1);
    assert.match((await queue(gone).get(goneId))?.lastError ?? '', /^Webhook http:\/\/127\.0\.0\.1:\d+ answered 410 Gone: ok$/);
    assert.equal(sent(missing), 2, '404: retried, then delivered');
    assert.equal(sent(moved), 2, '301: retried up to maxAttempts');
    assert.ok(
      target.received.every(request => request.method === 'POST'),
      'a redirect never turns into a GET',
    );
    assert.match((await queue(moved).get(movedId))?.lastError ?? '', /answered 301 Moved Permanently \(redirects are not followed/);
  });

  it("a dead letter read over HTTP holds the documented message and none of the service's stack frames", async () => {
    const gone = uniqueQueue('gone');
    const failing = uniqueQueue('failing');
    const unreachable = uniqueQueue('unreachable');
    const target = await receiver(request =>
      request.body?.queue === gone ? { status: 410, body: 'gone for good' } : { status: 503, body: 'upstream timed out' },
    );
    const closed = await receiver();
    await closed.close();
    const { delivery, events } = deliveryFor([
      { queue: gone, url: target.url },
      { queue: failing, url: target.url, maxAttempts: 1 },
      { queue: unreachable, url: closed.url, maxAttempts: 1 },
    ]);
    const api = await startApp(redis, { webhooks: delivery });
    await delivery.start();
    for (const name of [gone, failing, unreachable]) await queue(name).add('x');
    await waitFor(() => events.dead.length === 3, 5_000, 'three dead letters');

    const origin = (url: string) => new URL(url).origin.replaceAll('.', '\\.');
    const expected: [string, RegExp][] = [
      [gone, new RegExp(`^Webhook ${origin(target.url)} answered 410 Gone: gone for good$`)],
      [failing, new RegExp(`^Webhook ${origin(target.url)} answered 503 Service Unavailable: upstream timed out$`)],
      [unreachable, new RegExp(`^Webhook ${origin(closed.url)} request failed: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+$`)],
    ];
    for (const [name, message] of expected) {
      const listed = await api.call('GET', `/v1/queues/${name}/jobs?state=dead`);
      assert.equal(listed.status, 200, listed.text);
      const [letter] = listed.body.jobs as { id: string; lastError: string }[];
      const job = await api.call('GET', `/v1/queues/${name}/jobs/${letter?.id}`);
      for (const lastError of [letter?.lastError, job.body.lastError as string]) {
        assert.match(lastError ?? '', message);
        assert.ok(!lastError?.includes('file://') && !/\n\s*at /.test(lastError ?? ''), `no stack frames: ${lastError}`);
      }
    }
  });

  it('a receiver slower than timeoutMs fails the attempt; the next attempt is delivered', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver((_request, index) => (index === 0 ? { delayMs: 5_000 } : {}));
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url, timeoutMs: 200 }]);
    await delivery.start();
    await queue(name).add('x', fast);
    await waitFor(() => events.delivered.length === 1, 5_000, 'the second attempt');
    assert.equal(events.failed.length, 1);
    assert.match(events.failed[0]?.error.message ?? '', /did not answer within 200 ms/);
    const [first, second] = target.received;
    assert.ok((second?.at ?? 0) - (first?.at ?? 0) >= 200, 'the first attempt was given its 200 ms');
    assert.equal(events.delivered[0]?.job.attempt, 2);
  });

  it('an unreachable receiver fails the attempt with the network error', async () => {
    const name = uniqueQueue('hook');
    const closed = await receiver();
    await closed.close();
    const { delivery, events } = deliveryFor([{ queue: name, url: closed.url, maxAttempts: 1 }]);
    await delivery.start();
    const id = await queue(name).add('x');
    await waitFor(() => events.dead.length === 1, 5_000, 'the job to die');
    assert.match((await queue(name).get(id))?.lastError ?? '', /request failed: connect ECONNREFUSED 127\.0\.0\.1/);
  });

  it("never has more requests in flight to a target than the binding's concurrency", async () => {
    const name = uniqueQueue('hook');
    const target = await receiver(() => ({ delayMs: 100 }));
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url, concurrency: 3 }]);
    await delivery.start();
    await queue(name).addBulk(Array.from({ length: 15 }, (_, i) => ({ payload: i })));
    await waitFor(() => events.delivered.length === 15, 5_000, '15 deliveries');
    assert.equal(target.maxInFlight, 3);
  });

  it("never starts more requests to a target than the binding's rate in any sliding window, and concurrency still holds", async () => {
    const name = uniqueQueue('hook');
    const target = await receiver(() => ({ delayMs: 30 }));
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url, concurrency: 4, rate: { max: 20, per: '1s' } }]);
    await delivery.start();
    await queue(name).addBulk(Array.from({ length: 60 }, (_, i) => ({ payload: i })));
    await waitFor(() => events.delivered.length === 60, 15_000, '60 deliveries');
    const arrivals = target.received.map(request => request.at).sort((a, b) => a - b);
    // Every window that starts at an arrival: a sliding window, not fixed seconds. The rate is kept
    // exactly where requests are sent (the SlidingWindow test below); the receiver stamps arrivals in
    // this same event loop, late by up to tens of ms on a loaded machine, so 100 ms of each window are
    // left to that jitter. A fixed-window counter (20 at the end of one second, 20 at the start of the
    // next) or a token bucket of 20 (20 at once, then one per 50 ms) would put 38-40 in such a window.
    const inWindow = (windowMs: number) =>
      Math.max(...arrivals.map((at, i) => arrivals.slice(i).filter(other => other < at + windowMs).length));
    const busiest = inWindow(900);
    assert.ok(
      busiest <= 21,
      `at most 20 (+1 for timing) arrivals in any 900 ms window, got ${busiest}: ${JSON.stringify(arrivals.map(at => at - (arrivals[0] as number)))}`,
    );
    assert.ok(busiest >= 15, `the rate is used, not just obeyed: ${busiest} in the busiest window`);
    // 60 starts at 20 per second: the third batch of 20 cannot start before 2 s after the first.
    assert.ok(
      (arrivals.at(-1) as number) - (arrivals[0] as number) >= 1_900,
      `60 arrivals span ${(arrivals.at(-1) as number) - (arrivals[0] as number)} ms`,
    );
    assert.ok(target.maxInFlight <= 4, `at most 4 in flight, got ${target.maxInFlight}`);
    assert.ok(
      events.delivered.some(({ heldMs }) => heldMs >= 500),
      'the deliveries held by the rate say how long',
    );
  });

  it('close() while requests wait for the rate hands their jobs back, none sent twice', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver();
    const first = deliveryFor([{ queue: name, url: target.url, concurrency: 5, rate: { max: 2, per: 60_000 } }], 1_000);
    await first.delivery.start();
    await queue(name).addBulk(Array.from({ length: 5 }, (_, i) => ({ payload: i })));
    await waitFor(() => first.events.delivered.length === 2, 5_000, 'the two requests the rate allows');
    const closing = Date.now();
    await first.delivery.close();
    assert.ok(Date.now() - closing < 3_000, 'close() does not wait out the rate window');
    assert.equal(target.received.length, 2);
    assert.equal((await queue(name).stats()).ready, 3, 'the three held jobs are waiting again');
    const second = deliveryFor([{ queue: name, url: target.url }]);
    await second.delivery.start();
    await waitFor(() => second.events.delivered.length === 3, 5_000, 'the rest after the restart');
    assert.equal(new Set(target.received.map(request => request.body.id)).size, 5);
  });

  it('sends an id beyond printable ASCII percent-encoded in Sandglass-Id (as is in the body), and URL credentials as Basic auth', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver();
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url.replace('http://', 'http://hook:p%40ss@') }]);
    await delivery.start();
    await queue(name).add('x', { id: 'commande:été-✓' });
    await waitFor(() => events.delivered.length === 1, 5_000, 'the delivery');
    assert.equal(target.received[0]?.headers['sandglass-id'], encodeURIComponent('commande:été-✓'));
    assert.equal(target.received[0]?.body.id, 'commande:été-✓');
    assert.equal(target.received[0]?.headers.authorization, `Basic ${Buffer.from('hook:p@ss').toString('base64')}`);
  });

  it('close() lets a delivery in flight finish and acks it', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver(() => ({ delayMs: 300 }));
    const { delivery, events } = deliveryFor([{ queue: name, url: target.url }], 5_000);
    await delivery.start();
    const id = await queue(name).add('x');
    await waitFor(() => target.received.length === 1, 5_000, 'the request');
    await delivery.close();
    assert.equal(events.delivered.length, 1);
    assert.equal(await queue(name).get(id), null);
  });

  it('close() during a slow delivery hands the job back; a restarted delivery sends it again', async () => {
    const name = uniqueQueue('hook');
    const target = await receiver((_request, index) => (index === 0 ? { delayMs: 10_000 } : {}));
    const first = deliveryFor([{ queue: name, url: target.url }], 100);
    await first.delivery.start();
    const id = await queue(name).add({ order: 7 });
    await waitFor(() => target.received.length === 1, 5_000, 'the first request');
    const closing = Date.now();
    await first.delivery.close();
    assert.ok(Date.now() - closing < 2_000, 'close() waited closeTimeoutMs, not for the receiver');
    await waitFor(() => target.hungUp === 1, 2_000, 'the abandoned request to be aborted');
    assert.deepEqual([first.events.delivered.length, first.events.failed.length, first.events.dead.length], [0, 0, 0]);
    const handedBack = await queue(name).get(id);
    assert.equal(handedBack?.state, 'ready', 'the job is waiting again, due at once');
    assert.equal(handedBack?.attempts, 0, 'the interrupted attempt does not count');

    const second = deliveryFor([{ queue: name, url: target.url }]);
    await second.delivery.start();
    await waitFor(() => second.events.delivered.length === 1, 5_000, 'the delivery after the restart');
    assert.equal(target.received.length, 2);
    assert.equal(target.received[1]?.headers['sandglass-attempt'], '1');
    assert.deepEqual(target.received[1]?.body.payload, { order: 7 });
    assert.equal(await queue(name).get(id), null);
    await assert.rejects(first.delivery.start(), { code: 'ERR_CLOSED' });
  });
});

describe('webhook bindings', () => {
  const good = { queue: 'orders', url: 'https://shop.example/hooks?token=t0ps3cret', secret: SECRET };
  const make = (binding: Record<string, unknown>) =>
    new WebhookDelivery({ connection: 'redis://127.0.0.1:1', bindings: [binding as unknown as WebhookBinding] });

  it('refuses a bad binding with a ValidationError that quotes neither the secret nor the URL', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...good, url: 'ftp://shop.example/hooks' }, /http\(s\) URL, got protocol 'ftp:'/],
      [{ ...good, url: '/hooks/relative' }, /absolute http\(s\) URL/],
      [{ ...good, url: 'mailto:t0ps3cret@shop.example' }, /got protocol 'mailto:'/],
      [{ ...good, url: 42 }, /absolute http\(s\) URL, got number/],
      [{ ...good, secret: '' }, /at least 16 characters, got 0 characters/],
      [{ ...good, secret: 'short-secret' }, /at least 16 characters, got 12 characters/],
      [{ ...good, secret: undefined }, /at least 16 characters, got undefined/],
      [{ ...good, queue: 'bad:name' }, /queue name/],
      [{ ...good, concurrency: 0 }, /`bindings\[0\]\.concurrency` to be an integer from 1/],
      [{ ...good, timeoutMs: 1.5 }, /`bindings\[0\]\.timeoutMs`/],
      [{ ...good, maxAttempts: '5' }, /`bindings\[0\]\.maxAttempts`/],
      [{ ...good, timeout: 5_000 }, /unknown field `timeout`/],
      [{ ...good, rate: { max: 0, per: '1s' } }, /`bindings\[0\]\.rate\.max` to be an integer from 1 to 100000, got 0/],
      [{ ...good, rate: { max: 10, per: 'soon' } }, /`bindings\[0\]\.rate\.per`: Expected a duration/],
      [{ ...good, rate: { max: 10, per: 0 } }, /`bindings\[0\]\.rate\.per` to be from 1 ms to 1 day \(86400000 ms\), got 0/],
      [{ ...good, rate: { max: 10, per: '2d' } }, /`bindings\[0\]\.rate\.per` to be from 1 ms to 1 day/],
      [{ ...good, rate: { max: '10', per: '1s' } }, /`bindings\[0\]\.rate\.max`/],
      [{ ...good, rate: { max: 10 } }, /`bindings\[0\]\.rate\.per`/],
      [{ ...good, rate: { max: 10, per: '1s', burst: 5 } }, /Unknown option `burst` of `bindings\[0\]\.rate`/],
      [{ ...good, rate: '100/s' }, /`bindings\[0\]\.rate` to be \{ max, per \}/],
    ];
    for (const [binding, message] of cases) {
      assert.throws(
        () => make(binding),
        (error: unknown) => {
          assert.ok(error instanceof ValidationError, `${String(message)}: ${String(error)}`);
          assert.match(error.message, message);
          assert.doesNotMatch(error.message, /t0ps3cret|test-secret/);
          return true;
        },
      );
    }
    assert.throws(
      () => new WebhookDelivery({ connection: 'redis://127.0.0.1:1', bindings: [good, { ...good, url: 'https://other.example/' }] }),
      /bound twice/,
    );
    assert.ok(make(good) instanceof WebhookDelivery);
    assert.ok(make({ ...good, rate: { max: 100, per: '1s' } }) instanceof WebhookDelivery);
    assert.ok(make({ ...good, rate: { max: 5, per: 250 } }) instanceof WebhookDelivery);
  });

  it('parses SANDGLASS_WEBHOOKS: a JSON array of bindings', () => {
    assert.deepEqual(parseWebhookBindings(JSON.stringify([good])), [good]);
    assert.deepEqual(parseWebhookBindings(undefined), []);
    assert.deepEqual(parseWebhookBindings('  '), []);
    assert.throws(
      () => parseWebhookBindings(`[${JSON.stringify(good)}`),
      (error: unknown) => error instanceof ValidationError && !error.message.includes('t0ps3cret'),
    );
    assert.throws(() => parseWebhookBindings(JSON.stringify(good)), /JSON array/);
    assert.throws(() => parseWebhookBindings(JSON.stringify([{ ...good, secret: 'x' }])), /bindings\[0\]\.secret/);
    const limited = { ...good, rate: { max: 100, per: '1s' } };
    assert.deepEqual(parseWebhookBindings(JSON.stringify([limited])), [limited]);
    assert.throws(() => parseWebhookBindings(JSON.stringify([{ ...good, rate: { max: 100, per: 'often' } }])), /bindings\[0\]\.rate\.per/);
  });

  it('verifySignature refuses stale, future and malformed requests, and an unset secret', () => {
    const body = '{"id":"a"}';
    const nowMs = 1_767_225_600_000;
    const at = nowMs / 1000;
    const signature = signPayload(SECRET, at, body);
    assert.equal(verifySignature(SECRET, at, body, signature, { nowMs }), true);
    assert.equal(verifySignature(SECRET, at, body, signature, { nowMs: nowMs + 300_000 }), true, 'exactly 5 minutes old');
    assert.equal(verifySignature(SECRET, at, body, signature, { nowMs: nowMs + 301_000 }), false, 'older than 5 minutes: a replay');
    assert.equal(verifySignature(SECRET, at, body, signature, { nowMs: nowMs - 301_000 }), false, 'more than 5 minutes ahead');
    assert.equal(verifySignature(SECRET, at, body, signature.toUpperCase().replace('V1=', 'v1='), { nowMs }), true, 'hex in capitals');
    for (const bad of [
      undefined,
      null,
      '',
      'v1=',
      signature.slice(3),
      `v0=${signature.slice(3)}`,
      `${signature}00`,
      `v1=${'z'.repeat(64)}`,
    ]) {
      assert.equal(verifySignature(SECRET, at, body, bad, { nowMs }), false, String(bad));
    }
    for (const bad of [undefined, null, '', '1e9', ' 1767225600', '-1767225600', '1767225600.5']) {
      assert.equal(verifySignature(SECRET, bad, body, signature, { nowMs }), false, String(bad));
    }
    assert.throws(() => verifySignature('', at, body, signature, { nowMs }), TypeError);
    assert.throws(() => signPayload('short', at, body), TypeError);
  });
});

describe('SlidingWindow (a binding rate)', () => {
  it('allows max starts in any window of perMs, in FIFO order; an aborted waiter takes no start', async () => {
    const limiter = new SlidingWindow({ max: 3, perMs: 200 });
    const starts: { index: number; at: number }[] = [];
    const aborted = new AbortController();
    const waits = Array.from({ length: 8 }, (_, index) =>
      limiter.acquire(index === 4 ? aborted.signal : undefined).then(
        () => void starts.push({ index, at: performance.now() }),
        (reason: unknown) => assert.equal(reason, 'gone'),
      ),
    );
    aborted.abort('gone');
    await Promise.all(waits);
    assert.deepEqual(
      starts.map(start => start.index),
      [0, 1, 2, 3, 5, 6, 7],
    );
    // Stamped when each promise's callback ran, a little after the limiter recorded the start (the
    // first three resolve at once but run their callbacks only after this loop): 5 ms of slack for
    // that under load; a limiter letting a 4th start into a window would show a gap near 0.
    for (let i = 3; i < starts.length; i++) {
      const gap = (starts[i] as { at: number }).at - (starts[i - 3] as { at: number }).at;
      assert.ok(gap >= 195, `start ${i} came ${gap} ms after start ${i - 3}: 4 starts in one window`);
    }
    assert.equal(limiter.waiting, 0);
  });

  it('counts a start from when it was marked sent (a new connection may take a while): later, never earlier', async () => {
    const limiter = new SlidingWindow({ max: 1, perMs: 100 });
    const first = performance.now();
    const markSent = await limiter.acquire();
    await sleep(60);
    markSent(); // sent 60 ms after it was granted: the window runs from here
    await limiter.acquire();
    const gap = performance.now() - first;
    assert.ok(gap >= 159, `the next start waited for the marked start to leave the window: ${gap} ms`);
  });
});
