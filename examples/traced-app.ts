// A traced app: a producer process adds jobs inside a request span, a worker process runs them, and
// every span (request -> `send` -> `process` -> the handler's own) lands in one trace per request,
// although the two processes share nothing but Redis. Each process registers the OpenTelemetry SDK
// itself; sandglass uses only @opentelemetry/api. README, "OpenTelemetry".
//
//   npx tsx examples/traced-app.ts                        (starts a private redis-server, both roles)
//   REDIS_URL=redis://... npx tsx examples/traced-app.ts worker     (one role per process)
//   REDIS_URL=redis://... npx tsx examples/traced-app.ts producer
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { trace } from '@opentelemetry/api';
import { NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { Queue, Worker } from '../src/index.js';
import { startLocalRedis, type LocalRedis } from '../src/deploy/local-redis.js';

const QUEUE = 'traced-emails';
const role = process.argv[2] ?? 'both';
const label = role === 'both' ? 'producer' : role;

/**
 * Prints one line per finished span. In production, export to your collector instead:
 * `new BatchSpanProcessor(new OTLPTraceExporter())` (@opentelemetry/exporter-trace-otlp-http).
 */
class LineExporter implements SpanExporter {
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    for (const span of spans) {
      const parent = span.parentSpanContext?.spanId ?? '(root)';
      console.log(
        `[${label.padEnd(8)}] trace ${span.spanContext().traceId}  ${span.name.padEnd(22)} span ${span.spanContext().spanId} parent ${parent}`,
      );
    }
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

// 1. In every process that adds or runs jobs: register a tracer provider, before using sandglass.
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new LineExporter())] });
provider.register();
const tracer = trace.getTracer('traced-app');

async function producer(url: string): Promise<void> {
  const emails = new Queue<{ to: string }>(QUEUE, { connection: url });
  for (const to of ['ada@example.com', 'grace@example.com']) {
    // 2. Add jobs inside your request's span (an HTTP instrumentation makes it for you): each add
    //    makes a `send` span and stores its context with the job.
    await tracer.startActiveSpan(`POST /signup ${to}`, async span => {
      await emails.add({ to }, { delay: 500 });
      span.end();
    });
  }
  await emails.close();
}

async function worker(url: string, expected: number): Promise<void> {
  let done = 0;
  let finished!: () => void;
  const allDone = new Promise<void>(resolve => (finished = resolve));
  // 3. The handler runs inside a `process` span, a child of the job's `send` span: its own spans
  //    (and those of your instrumented HTTP or database clients) join the request's trace.
  const emails = new Worker<{ to: string }>(
    QUEUE,
    async job => {
      await tracer.startActiveSpan(`send mail to ${job.payload.to}`, async span => span.end());
      if (++done === expected) finished();
    },
    { connection: url },
  );
  process.once('SIGTERM', finished);
  process.once('SIGINT', finished);
  await allDone;
  await emails.close();
}

let server: LocalRedis | undefined;
const url = process.env.REDIS_URL ?? (server = await startLocalRedis({ appendOnly: false })).url;
if (role === 'producer') {
  await producer(url);
} else if (role === 'worker') {
  await worker(url, Number(process.env.JOBS ?? Number.POSITIVE_INFINITY));
} else {
  // Both roles, each in its own process: the worker is this file again, in a child process.
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'worker'], {
    env: { ...process.env, REDIS_URL: url, JOBS: '2' },
    stdio: 'inherit',
  });
  await producer(url);
  await new Promise(resolve => child.once('exit', resolve));
}
await provider.shutdown();
await server?.stop();
