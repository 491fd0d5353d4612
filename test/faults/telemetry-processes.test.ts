// One trace across processes (README, "OpenTelemetry"): a job added inside a request span in this
// process is processed by a Worker in another process (test/fixtures/telemetry-worker.ts, with its
// own SDK registered) in a span of the same trace, the send span its parent; or, with
// `tracing.parent: 'link'`, in a new trace linked to it. Nothing but Redis joins the two processes.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SpanKind, trace } from '@opentelemetry/api';
import { Queue } from '../../src/index.js';
import { registerTracing, type SpanRecord } from '../fixtures/telemetry-sdk.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const tracing = registerTracing();
after(() => tracing.disable());

const FIXTURE = fileURLToPath(new URL('../fixtures/telemetry-worker.ts', import.meta.url));
const UNTRACED = fileURLToPath(new URL('../fixtures/untraced-worker.ts', import.meta.url));

interface TracedWorker {
  readonly child: ChildProcess;
  /** The spans the child printed so far. */
  readonly spans: SpanRecord[];
  stop(): Promise<void>;
}

/** Starts the fixture worker on `queue`; resolves once it prints `ready`. */
async function spawnTracedWorker(queue: string, parent: 'child' | 'link'): Promise<TracedWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: { ...process.env, SG_URL: redis.url, SG_QUEUE: queue, SG_PARENT: parent },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()));
  const spans: SpanRecord[] = [];
  let ready = false;
  let buffered = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line === 'ready') ready = true;
      else if (line.startsWith('span ')) spans.push(JSON.parse(line.slice(5)) as SpanRecord);
    }
  });
  const worker = {
    child,
    spans,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  redis.track({ close: () => worker.stop() });
  await waitFor(() => ready, 30_000, 'the traced worker process to be ready');
  return worker;
}

/** Adds a job inside a span 'request' of this process; answers the request and send spans. */
async function addInRequest(queue: Queue<{ n: number }>): Promise<{ request: SpanRecord; send: SpanRecord; id: string }> {
  const id = await trace.getTracer('app').startActiveSpan('request', async span => {
    const added = await queue.add({ n: 1 });
    span.end();
    return added;
  });
  const spans = tracing.spans();
  const request = spans.find(
    span => span.name === 'request' && spans.some(send => send.name === `send ${queue.name}` && send.parentSpanId === span.spanId),
  );
  const send = spans.find(span => span.name === `send ${queue.name}`);
  assert.ok(request && send);
  return { request, send, id };
}

describe('a job added inside a request span, processed by a worker in another process', () => {
  it('is processed in a span of the same trace, the send span its parent, the handler span its child', async () => {
    const name = uniqueQueue('otel-proc');
    const queue = redis.track(new Queue<{ n: number }>(name, { connection: redis.url }));
    const worker = await spawnTracedWorker(name, 'child');
    const { request, send, id } = await addInRequest(queue);
    // The handler's span ends (and is printed) before the process span that holds it: wait for both.
    const printed = (spanName: string) => worker.spans.some(span => span.name === spanName);
    await waitFor(
      () => printed('handler work') && printed(`process ${name}`),
      20_000,
      'the handler and process spans from the child process',
    );
    const processSpan = worker.spans.find(span => span.name === `process ${name}`);
    const handlerSpan = worker.spans.find(span => span.name === 'handler work');
    assert.ok(processSpan && handlerSpan);
    assert.equal(processSpan.kind, SpanKind.CONSUMER);
    assert.equal(processSpan.traceId, request.traceId);
    assert.equal(send.traceId, request.traceId);
    assert.equal(processSpan.parentSpanId, send.spanId);
    assert.equal(handlerSpan.traceId, request.traceId);
    assert.equal(handlerSpan.parentSpanId, processSpan.spanId);
    assert.equal(processSpan.attributes['messaging.message.id'], id);
    assert.equal(processSpan.attributes['messaging.destination.name'], name);
    assert.equal(processSpan.attributes['messaging.system'], 'sandglass');
    await worker.stop();
  });

  it("with tracing.parent 'link', is processed in a new trace with one link to the send span", async () => {
    const name = uniqueQueue('otel-proc');
    const queue = redis.track(new Queue<{ n: number }>(name, { connection: redis.url }));
    const worker = await spawnTracedWorker(name, 'link');
    const { request, send } = await addInRequest(queue);
    await waitFor(() => worker.spans.some(span => span.name === `process ${name}`), 20_000, 'the process span from the child process');
    const processSpan = worker.spans.find(span => span.name === `process ${name}`) as SpanRecord;
    assert.notEqual(processSpan.traceId, request.traceId);
    assert.equal(processSpan.parentSpanId, undefined);
    assert.deepEqual(
      processSpan.links.map(link => [link.traceId, link.spanId]),
      [[send.traceId, send.spanId]],
    );
    await worker.stop();
  });

  it('a process without an SDK never loads @opentelemetry/api (about 40 ms of CPU at every start)', async () => {
    const run = async (preload: string[]): Promise<string> => {
      const child = spawn(process.execPath, [...preload, '--import', 'tsx', UNTRACED], {
        env: { ...process.env, SG_URL: redis.url, SG_QUEUE: uniqueQueue('untraced') },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let output = '';
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      const code = await new Promise<number | null>(resolve => child.once('exit', resolve));
      assert.equal(code, 0, output);
      return output.trim();
    };
    assert.equal(await run([]), 'api-loaded false');
    // The check can see it: with the API imported by the application (nothing registered), it is loaded.
    assert.equal(await run(['--import', '@opentelemetry/api']), 'api-loaded true');
  });
});
