// OpenTelemetry (README, "OpenTelemetry"): a job added in a trace stores its send span's context
// (a W3C traceparent in its record), every rewrite of the record keeps it, and the Worker runs the
// handler in a `process` span of that trace. The SDK is registered as an application registers it
// (test/fixtures/telemetry-sdk.ts); each test registers what it needs and unregisters it after.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { PullConsumer, Queue, ValidationError, Worker, type Job } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { decodeClaimed, decodeRecord } from '../../src/store/redis/record.js';
import { WebhookDelivery } from '../../src/server/webhooks.js';
import { formatTraceparent, normalizeTraceparent, parseTraceparent } from '../../src/core/traceparent.js';
import { registerMetrics, registerTracing, type SpanRecord, type Tracing } from '../fixtures/telemetry-sdk.js';
import { useApp } from '../helpers/http.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const app = useApp(redis);

const CALLER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function queue(name = uniqueQueue('otel')): Queue<{ n: number }> {
  return redis.track(new Queue<{ n: number }>(name, { connection: redis.url }));
}

/** Runs `test` with a tracer provider registered, unregistered after (also when it throws). */
async function traced(test: (tracing: Tracing) => Promise<void>): Promise<void> {
  const tracing = registerTracing();
  try {
    await test(tracing);
  } finally {
    await tracing.disable();
  }
}

function byName(spans: SpanRecord[], name: string): SpanRecord[] {
  return spans.filter(span => span.name === name);
}

function one(spans: SpanRecord[], name: string): SpanRecord {
  const found = byName(spans, name);
  assert.equal(found.length, 1, `one span '${name}' (got ${spans.map(span => span.name).join(', ')})`);
  return found[0] as SpanRecord;
}

function traceparentOf(span: SpanRecord): string {
  return formatTraceparent({ traceId: span.traceId, spanId: span.spanId, traceFlags: TraceFlags.SAMPLED });
}

/** A worker whose handler records each job it gets (and throws while `fail` says so). */
function worker(
  name: string,
  options: { fail?: (job: Job<{ n: number }>) => boolean; tracing?: { parent?: 'child' | 'link' }; batch?: number } = {},
) {
  const seen: Job<{ n: number }>[] = [];
  const handler = (job: Job<{ n: number }>) => {
    seen.push(job);
    // The handler runs inside the process span: a span it makes is that span's child.
    trace.getTracer('app').startActiveSpan('handler work', span => span.end());
    if (options.fail?.(job)) throw new TypeError(`job ${job.id} fails on attempt ${job.attempt}`);
  };
  const common = { connection: redis.url, backoff: { type: 'fixed' as const, delayMs: 10 }, tracing: options.tracing };
  const w =
    options.batch === undefined
      ? new Worker<{ n: number }>(name, handler, common)
      : new Worker<{ n: number }>(name, (jobs: Job<{ n: number }>[]) => jobs.forEach(handler), {
          ...common,
          batch: { size: options.batch },
        });
  return { worker: redis.track(w), seen };
}

describe('traceparent (W3C), the one parser', () => {
  it('reads version 00 and later versions, and refuses what the specification refuses', () => {
    assert.deepEqual(parseTraceparent(CALLER), { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
    // A later version is read by its first four fields, and stored as version 00.
    assert.equal(normalizeTraceparent(`01-${CALLER.slice(3)}-what-comes-next`), CALLER);
    for (const bad of [
      '',
      CALLER.toUpperCase(),
      `${CALLER}-`, // version 00 has exactly 55 characters
      `ff-${CALLER.slice(3)}`,
      '00-00000000000000000000000000000000-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-001',
      undefined,
      42,
    ]) {
      assert.equal(parseTraceparent(bad), undefined, String(bad));
    }
  });
});

describe('the record header (lua/includes/records.lua)', () => {
  it('reads a traceparent as its last field, after a tick time or without one; a record without one is as before', () => {
    const plain = '2,0,,5,f100\n{"n":1}';
    const tick = '0,0,,,,1767225600000\n{"n":1}';
    const traced = `0,0,,,e250,${CALLER}\n{"n":1}`;
    const both = `0,0,,,,1767225600000,${CALLER}\n{"n":1}`;
    assert.deepEqual(
      [plain, tick, traced, both].map(record => [decodeRecord('a', record).tickAt, decodeRecord('a', record).traceparent]),
      [
        [undefined, undefined],
        [1767225600000, undefined],
        [undefined, CALLER],
        [1767225600000, CALLER],
      ],
    );
    assert.equal(decodeRecord('a', traced).payloadJson, '{"n":1}');
    assert.deepEqual(decodeRecord('a', traced).backoff, { type: 'exponential', delayMs: 250 });
    const claimed = decodeClaimed('a\t1\tb\t2\tc\t3\td\t4', [plain, tick, traced, both].join('\t'), 7);
    assert.deepEqual(
      claimed.map(job => [job.id, job.tickAt, job.traceparent, job.payloadJson, job.token]),
      [
        ['a', undefined, undefined, '{"n":1}', '7'],
        ['b', 1767225600000, undefined, '{"n":1}', '8'],
        ['c', undefined, CALLER, '{"n":1}', '9'],
        ['d', 1767225600000, CALLER, '{"n":1}', '10'],
      ],
    );
  });
});

describe('the producer (Queue.add)', () => {
  it('without a tracer provider and outside any context, stores nothing (the record is as before)', async () => {
    const q = queue();
    const id = await q.add({ n: 1 }, { delay: '30s' }); // in `jobs` (not the wheel)
    const record = await redis.raw.hget(partitionKeys('sg', q.name, 0).jobs, id);
    assert.equal(record, '0,0,,,\n{"n":1}');
    assert.equal((await q.get(id))?.traceparent, undefined);
    assert.equal('traceparent' in ((await q.get(id)) ?? {}), false);
  });

  it('without a tracer provider, passes on the active context and an explicit traceparent as they are', async () => {
    const q = queue();
    // A context manager without a tracer provider: a service that extracts its caller's context but records no spans.
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const remote = { ...(parseTraceparent(CALLER) as { traceId: string; spanId: string; traceFlags: number }), isRemote: true };
      const id = await context.with(trace.setSpanContext(ROOT_CONTEXT, remote), () => q.add({ n: 1 }, { delay: '30s' }));
      assert.equal((await q.get(id))?.traceparent, CALLER);
      const record = await redis.raw.hget(partitionKeys('sg', q.name, 0).jobs, id);
      assert.equal(record, `0,0,,,,${CALLER}\n{"n":1}`);
    } finally {
      context.disable();
    }
    const explicit = '00-11111111111111111111111111111111-2222222222222222-00';
    const id = await q.add({ n: 2 }, { delay: '1h', traceparent: explicit });
    assert.equal((await q.get(id))?.traceparent, explicit);
  });

  it('refuses a malformed explicit traceparent with a ValidationError, writing nothing', async () => {
    const q = queue();
    await assert.rejects(
      q.add({ n: 1 }, { traceparent: 'not-a-traceparent' }),
      (error: unknown) => error instanceof ValidationError && /traceparent/.test(error.message),
    );
    await assert.rejects(q.addBulk([{ payload: { n: 1 } }, { payload: { n: 2 }, traceparent: CALLER.toUpperCase() }]), ValidationError);
    assert.deepEqual(await q.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it('makes a PRODUCER span `send <queue>` in the active trace and stores its context; addBulk one span for the call', () =>
    traced(async tracing => {
      const q = queue();
      const tracer = trace.getTracer('app');
      const [id, ids] = await tracer.startActiveSpan('request', async span => {
        const added = [
          await q.add({ n: 1 }, { delay: '1h' }),
          await q.addBulk([
            { payload: { n: 2 }, delay: '1h' },
            { payload: { n: 3 }, delay: '1h' },
          ]),
        ] as const;
        span.end();
        return added;
      });
      const spans = tracing.spans();
      const request = one(spans, 'request');
      const sends = byName(spans, `send ${q.name}`);
      assert.equal(sends.length, 2);
      const [single, bulk] = sends as [SpanRecord, SpanRecord];
      for (const send of sends) {
        assert.equal(send.kind, SpanKind.PRODUCER);
        assert.equal(send.traceId, request.traceId);
        assert.equal(send.parentSpanId, request.spanId);
        assert.equal(send.attributes['messaging.system'], 'sandglass');
        assert.equal(send.attributes['messaging.operation.name'], 'send');
        assert.equal(send.attributes['messaging.operation.type'], 'send');
        assert.equal(send.attributes['messaging.destination.name'], q.name);
      }
      assert.equal(single.attributes['messaging.message.id'], id);
      assert.equal(bulk.attributes['messaging.batch.message_count'], 2);
      assert.equal((await q.get(id))?.traceparent, traceparentOf(single));
      for (const bulkId of ids) assert.equal((await q.get(bulkId))?.traceparent, traceparentOf(bulk));
    }));

  it('an explicit traceparent wins over the active context: the send span is its child', () =>
    traced(async tracing => {
      const q = queue();
      const id = await trace.getTracer('app').startActiveSpan('request', async span => {
        const added = await q.add({ n: 1 }, { delay: '1h', traceparent: CALLER });
        span.end();
        return added;
      });
      const send = one(tracing.spans(), `send ${q.name}`);
      assert.equal(send.traceId, (parseTraceparent(CALLER) as { traceId: string }).traceId);
      assert.equal(send.parentSpanId, 'b7ad6b7169203331');
      assert.equal((await q.get(id))?.traceparent, traceparentOf(send));
    }));
});

describe('the consumer (Worker)', () => {
  it('runs the handler in a CONSUMER span `process <queue>`, child of the send span, with the messaging attributes', () =>
    traced(async tracing => {
      const q = queue();
      const id = await trace.getTracer('app').startActiveSpan('request', async span => {
        const added = await q.add({ n: 1 });
        span.end();
        return added;
      });
      const { seen } = worker(q.name);
      await waitFor(() => byName(tracing.spans(), `process ${q.name}`).length === 1, 10_000, 'the process span');
      const spans = tracing.spans();
      const send = one(spans, `send ${q.name}`);
      const processSpan = one(spans, `process ${q.name}`);
      assert.equal(processSpan.kind, SpanKind.CONSUMER);
      assert.equal(processSpan.traceId, send.traceId);
      assert.equal(processSpan.parentSpanId, send.spanId);
      assert.equal(seen[0]?.traceparent, traceparentOf(send));
      const attributes = processSpan.attributes;
      assert.equal(attributes['messaging.system'], 'sandglass');
      assert.equal(attributes['messaging.operation.name'], 'process');
      assert.equal(attributes['messaging.operation.type'], 'process');
      assert.equal(attributes['messaging.destination.name'], q.name);
      assert.equal(attributes['messaging.message.id'], id);
      assert.equal(attributes['sandglass.job.attempt'], 1);
      assert.equal(typeof attributes['sandglass.job.lateness_ms'], 'number');
      assert.ok((attributes['sandglass.job.lateness_ms'] as number) >= 0);
      assert.equal(processSpan.status.code, SpanStatusCode.UNSET);
      // The handler's own span is a child of the process span.
      assert.equal(one(spans, 'handler work').parentSpanId, processSpan.spanId);
    }));

  it('refuses a bad `tracing` option with exact messages, before connecting', () => {
    const handler = () => undefined;
    assert.throws(() => new Worker('q', handler, { connection: redis.url, tracing: { parent: 'sibling' as 'link' } }), {
      message: "Expected `tracing.parent` to be 'child' or 'link', got 'sibling' (7 characters)",
    });
    assert.throws(() => new Worker('q', handler, { connection: redis.url, tracing: { parnt: 'link' } as never }), {
      message: 'Unknown option `parnt` of `tracing` (known: parent)',
    });
  });

  it("a job its handler adds to another queue continues the trace: that send span is the process span's child", () =>
    traced(async tracing => {
      const first = queue();
      const second = queue();
      await first.add({ n: 1 });
      redis.track(new Worker<{ n: number }>(first.name, job => second.add({ n: job.payload.n + 1 }), { connection: redis.url }));
      const { seen } = worker(second.name);
      await waitFor(() => seen.length === 1, 10_000, 'the second job');
      await waitFor(() => byName(tracing.spans(), `process ${second.name}`).length === 1, 10_000, 'its process span');
      const spans = tracing.spans();
      const [send1, process1, send2, process2] = [
        `send ${first.name}`,
        `process ${first.name}`,
        `send ${second.name}`,
        `process ${second.name}`,
      ].map(name => one(spans, name)) as SpanRecord[];
      assert.equal(process1?.parentSpanId, send1?.spanId);
      assert.equal(send2?.parentSpanId, process1?.spanId);
      assert.equal(process2?.parentSpanId, send2?.spanId);
      assert.equal(new Set([send1, process1, send2, process2].map(span => span?.traceId)).size, 1);
    }));

  it("with tracing.parent 'link', starts a new trace linked to the send span", () =>
    traced(async tracing => {
      const q = queue();
      await q.add({ n: 1 });
      worker(q.name, { tracing: { parent: 'link' } });
      await waitFor(() => byName(tracing.spans(), `process ${q.name}`).length === 1, 10_000, 'the process span');
      const send = one(tracing.spans(), `send ${q.name}`);
      const processSpan = one(tracing.spans(), `process ${q.name}`);
      assert.notEqual(processSpan.traceId, send.traceId);
      assert.equal(processSpan.parentSpanId, undefined);
      assert.deepEqual(
        processSpan.links.map(link => [link.traceId, link.spanId]),
        [[send.traceId, send.spanId]],
      );
    }));

  it('a failed attempt sets error.type, status ERROR and the exception; the retry keeps the context', () =>
    traced(async tracing => {
      const q = queue();
      await q.add({ n: 1 }, { maxAttempts: 3 });
      worker(q.name, { fail: job => job.attempt === 1 });
      await waitFor(() => byName(tracing.spans(), `process ${q.name}`).length === 2, 10_000, 'two attempts');
      const send = one(tracing.spans(), `send ${q.name}`);
      const [first, second] = byName(tracing.spans(), `process ${q.name}`) as [SpanRecord, SpanRecord];
      assert.equal(first.attributes['error.type'], 'TypeError');
      assert.equal(first.status.code, SpanStatusCode.ERROR);
      assert.match(first.status.message ?? '', /fails on attempt 1/);
      assert.deepEqual(first.events, ['exception']);
      assert.equal(second.attributes['error.type'], undefined);
      assert.equal(second.attributes['sandglass.job.attempt'], 2);
      for (const span of [first, second]) assert.equal(span.parentSpanId, send.spanId);
    }));

  it('batch mode: one span per batch with messaging.batch.message_count and a link to each job', () =>
    traced(async tracing => {
      const q = queue();
      const q2 = await trace.getTracer('app').startActiveSpan('request', async span => {
        await q.addBulk([{ payload: { n: 1 } }, { payload: { n: 2 } }, { payload: { n: 3 } }]);
        span.end();
        return q;
      });
      worker(q2.name, { batch: 10 });
      await waitFor(() => byName(tracing.spans(), 'handler work').length === 3, 10_000, 'three handler spans');
      const send = one(tracing.spans(), `send ${q.name}`);
      const batches = byName(tracing.spans(), `process ${q.name}`);
      const linked = batches.flatMap(span => span.links);
      assert.equal(
        batches.reduce((n, span) => n + (span.attributes['messaging.batch.message_count'] as number), 0),
        3,
      );
      assert.equal(linked.length, 3);
      for (const link of linked) assert.deepEqual([link.traceId, link.spanId], [send.traceId, send.spanId]);
      assert.deepEqual(
        linked.map(link => typeof link.attributes['messaging.message.id']),
        ['string', 'string', 'string'],
      );
    }));

  it('without a provider, a traced job runs as any other and its handler sees job.traceparent', async () => {
    const q = queue();
    const id = await q.add({ n: 1 }, { traceparent: CALLER });
    const { seen } = worker(q.name);
    await waitFor(() => seen.length === 1, 10_000, 'the handler');
    assert.equal(seen[0]?.id, id);
    assert.equal(seen[0]?.traceparent, CALLER);
  });

  it('records messaging.process.duration (with error.type on failure) and sandglass.job.lateness', async () => {
    const meters = registerMetrics();
    try {
      const q = queue();
      await q.add({ n: 1 }, { maxAttempts: 2 });
      const { seen } = worker(q.name, { fail: job => job.attempt === 1 });
      await waitFor(() => seen.length === 2, 10_000, 'two attempts');
      await waitFor(
        async () => {
          const collected = await meters.collect();
          const all = collected.scopeMetrics.filter(scope => scope.scope.name === 'sandglass').flatMap(scope => scope.metrics);
          const duration = all.find(metric => metric.descriptor.name === 'messaging.process.duration');
          const lateness = all.find(metric => metric.descriptor.name === 'sandglass.job.lateness');
          const ours = (duration?.dataPoints ?? []).filter(point => point.attributes['messaging.destination.name'] === q.name);
          const failed = ours.find(point => point.attributes['error.type'] === 'TypeError');
          const ok = ours.find(point => point.attributes['error.type'] === undefined);
          const late = (lateness?.dataPoints ?? []).find(point => point.attributes['messaging.destination.name'] === q.name);
          return (
            duration?.descriptor.unit === 's' &&
            (failed?.value as { count: number } | undefined)?.count === 1 &&
            (ok?.value as { count: number } | undefined)?.count === 1 &&
            (late?.value as { count: number } | undefined)?.count === 2
          );
        },
        10_000,
        'the histograms',
      );
    } finally {
      await meters.disable();
    }
  });
});

describe('the stored context survives every rewrite of the record', () => {
  it('a reschedule, a dead letter retried, a lease that ran out, and retention keep it; a replace-add rewrites it', async () => {
    const q = queue();
    const A = CALLER;
    const B = '00-11111111111111111111111111111111-2222222222222222-01';
    // reschedule
    const rescheduled = await q.add({ n: 1 }, { delay: '1h', traceparent: A });
    assert.equal(await q.reschedule(rescheduled, { delay: '2h' }), 'rescheduled');
    assert.equal((await q.get(rescheduled))?.traceparent, A);
    // replace-add: the new job's context, or none
    const replaced = await q.add({ n: 2 }, { delay: '1h', traceparent: A });
    await q.add({ n: 3 }, { id: replaced, ifExists: 'replace', delay: '1h', traceparent: B });
    assert.equal((await q.get(replaced))?.traceparent, B);
    await q.add({ n: 4 }, { id: replaced, ifExists: 'replace', delay: '1h' });
    assert.equal((await q.get(replaced))?.traceparent, undefined);

    // a lease that ran out (reaped), a failure into the dead letters, retryDead, a kept completed job
    await q.setRetention({ completed: { count: 10 } });
    const consumer = redis.track(new PullConsumer<{ n: number }>(q.name, { connection: redis.url, maxAttempts: 3 }));
    const id = await q.add({ n: 5 }, { traceparent: A, maxAttempts: 3 });
    const [first] = await consumer.claim({ leaseMs: 200 });
    assert.equal(first?.traceparent, A);
    let reclaimed: Awaited<ReturnType<typeof consumer.claim>> = [];
    await waitFor(async () => (reclaimed = await consumer.claim({ leaseMs: 30_000 })).length === 1, 10_000, 'the reaped job');
    assert.equal(reclaimed[0]?.attempt, 2);
    assert.equal(reclaimed[0]?.traceparent, A);
    assert.equal((await q.get(id))?.traceparent, A); // active
    assert.equal((await consumer.fail(id, reclaimed[0]?.token as string, { dead: true })).result, 'dead');
    assert.equal((await q.get(id))?.traceparent, A); // dead
    assert.equal((await q.listDead()).jobs[0]?.traceparent, A);
    assert.equal(await q.retryDead(id), 1);
    const [again] = await consumer.claim();
    assert.equal(again?.traceparent, A);
    assert.equal(await consumer.ack(id, again?.token as string), 'acked');
    const kept = await q.get(id);
    assert.equal(kept?.state, 'completed');
    assert.equal(kept?.traceparent, A);
  });

  it('a job far in the future goes through the time wheel and keeps it', async () => {
    const name = uniqueQueue('otel-wheel');
    // Buckets of 1 s: a job due in 5 s is in the wheel, and moved into `due` about 1 s before.
    await redis.raw.hset(partitionKeys('sg', name, 0).meta, 'wheelSlotMs', 1_000);
    const q = queue(name);
    const id = await q.add({ n: 1 }, { delay: 5_000, traceparent: CALLER });
    const wheeled = await redis.raw.hget(partitionKeys('sg', name, 0).counters, 'wheeled');
    assert.equal(wheeled, '1');
    assert.equal((await q.get(id))?.traceparent, CALLER);
    const { seen } = worker(name);
    await waitFor(() => seen.length === 1, 15_000, 'the wheeled job');
    assert.equal(seen[0]?.traceparent, CALLER);
  });
});

describe('PullConsumer', () => {
  it('settle spans: `ack <queue>` and `fail <queue>`, CLIENT, operation type settle; fail links the job', () =>
    traced(async tracing => {
      const q = queue();
      const consumer = redis.track(new PullConsumer<{ n: number }>(q.name, { connection: redis.url }));
      const [a, b] = [await q.add({ n: 1 }), await q.add({ n: 2 })];
      const pulled = await consumer.claim({ max: 2 });
      const send = byName(tracing.spans(), `send ${q.name}`);
      assert.equal(pulled.length, 2);
      for (const job of pulled) assert.ok(send.some(span => traceparentOf(span) === job.traceparent));
      const token = (id: string) => pulled.find(job => job.id === id)?.token as string;
      await consumer.ack(a, token(a));
      await consumer.fail(b, token(b), { error: 'no' });
      const ack = one(tracing.spans(), `ack ${q.name}`);
      const fail = one(tracing.spans(), `fail ${q.name}`);
      for (const [span, op, id] of [
        [ack, 'ack', a],
        [fail, 'fail', b],
      ] as const) {
        assert.equal(span.kind, SpanKind.CLIENT);
        assert.equal(span.attributes['messaging.operation.type'], 'settle');
        assert.equal(span.attributes['messaging.operation.name'], op);
        assert.equal(span.attributes['messaging.message.id'], id);
      }
      const failedJob = pulled.find(job => job.id === b);
      assert.deepEqual(
        fail.links.map(link => traceparentOf({ ...fail, traceId: link.traceId, spanId: link.spanId })),
        [failedJob?.traceparent],
      );
    }));
});

describe('the HTTP service and webhooks', () => {
  it('stores the traceparent header of an add with the job; the job JSON shows it; a malformed one is ignored', async () => {
    const name = uniqueQueue('otel-http');
    const added = await app.call('POST', `/v1/queues/${name}/jobs`, { payload: { n: 1 }, delay: '1h' }, { traceparent: CALLER });
    assert.equal(added.status, 201);
    const job = await app.call('GET', `/v1/queues/${name}/jobs/${added.body.id}`);
    assert.equal(job.body.traceparent, CALLER);
    const bulk = await app.call(
      'POST',
      `/v1/queues/${name}/jobs:bulk`,
      { jobs: [{ payload: { n: 2 }, delay: '1h' }] },
      { traceparent: CALLER },
    );
    assert.equal((await app.call('GET', `/v1/queues/${name}/jobs/${bulk.body.ids[0]}`)).body.traceparent, CALLER);
    const malformed = await app.call('POST', `/v1/queues/${name}/jobs`, { payload: { n: 3 }, delay: '1h' }, { traceparent: 'garbage' });
    assert.equal(malformed.status, 201);
    const plain = await app.call('GET', `/v1/queues/${name}/jobs/${malformed.body.id}`);
    assert.equal(plain.status, 200);
    assert.equal('traceparent' in plain.body, false);
    // Pulled jobs carry it too.
    await app.call('POST', `/v1/queues/${name}/jobs`, { payload: { n: 4 } }, { traceparent: CALLER });
    const claimed = await app.call('POST', `/v1/queues/${name}/claim`, { max: 1 });
    assert.equal(claimed.body.jobs[0].traceparent, CALLER);
  });

  it("a job added over HTTP with a traceparent header is processed in a span of the header's trace", () =>
    traced(async tracing => {
      const name = uniqueQueue('otel-http');
      const added = await app.call('POST', `/v1/queues/${name}/jobs`, { payload: { n: 1 } }, { traceparent: CALLER });
      assert.equal(added.status, 201);
      worker(name);
      await waitFor(() => byName(tracing.spans(), `process ${name}`).length === 1, 10_000, 'the process span');
      const send = one(tracing.spans(), `send ${name}`);
      const processSpan = one(tracing.spans(), `process ${name}`);
      assert.equal(send.traceId, '0af7651916cd43dd8448eb211c80319c');
      assert.equal(send.parentSpanId, 'b7ad6b7169203331');
      assert.equal(processSpan.traceId, send.traceId);
      assert.equal(processSpan.parentSpanId, send.spanId);
    }));

  /** A receiver that answers 200 and keeps each request's headers. */
  async function receiver() {
    const headers: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      headers.push(req.headers);
      req.resume();
      req.on('end', () => res.writeHead(200).end('ok'));
    });
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    redis.track({ close: () => new Promise<void>(resolve => server.close(() => resolve())) });
    return { url: `http://127.0.0.1:${port}/hook`, headers };
  }

  it('a webhook delivery sends the job stored traceparent without a provider, its process span with one', async () => {
    const target = await receiver();
    const name = uniqueQueue('otel-hook');
    const delivery = redis.track(
      new WebhookDelivery({ connection: redis.url, bindings: [{ queue: name, url: target.url, secret: 'a-secret-of-16-chars' }] }),
    );
    await delivery.start();
    const q = queue(name);
    await q.add({ n: 1 }, { traceparent: CALLER });
    await q.add({ n: 2 });
    await waitFor(() => target.headers.length === 2, 10_000, 'two deliveries');
    assert.deepEqual(target.headers.map(h => h.traceparent).sort(), [CALLER, undefined].sort());

    await traced(async tracing => {
      await q.add({ n: 3 }, { traceparent: CALLER });
      await waitFor(() => target.headers.length === 3, 10_000, 'the third delivery');
      // The delivery's span ends once the target's answer is back, after the target saw the request.
      await waitFor(() => byName(tracing.spans(), `process ${name}`).length === 1, 10_000, 'the delivery span');
      const processSpan = one(tracing.spans(), `process ${name}`);
      assert.equal(target.headers[2]?.traceparent, traceparentOf(processSpan));
      assert.equal(processSpan.traceId, '0af7651916cd43dd8448eb211c80319c');
    });
  });
});
