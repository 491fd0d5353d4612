/**
 * OpenTelemetry, through `@opentelemetry/api` only: the one home of sandglass's tracing rules
 * (span names, kinds, attributes, what a job stores). The SDK is the application's choice; without
 * a registered tracer provider the API's calls are no-ops, and sandglass skips even those on its
 * per-job paths (`registeredTracer`).
 *
 * The trace context travels with the job as a W3C `traceparent` (traceparent.ts) that sandglass
 * writes and reads itself, so no global propagator is needed. README, "OpenTelemetry".
 */
import type { Attributes, Span, SpanContext, Tracer } from '@opentelemetry/api';
import { openTelemetry, type OpenTelemetryApi } from './otel-api.js';
import { formatTraceparent, parseTraceparent } from '../core/traceparent.js';

/** The instrumentation scope of sandglass's tracer and meter. */
export const INSTRUMENTATION_NAME = 'sandglass';

/** Attribute names (OpenTelemetry messaging semantic conventions, and sandglass's own). */
export const ATTR = {
  system: 'messaging.system',
  operationName: 'messaging.operation.name',
  operationType: 'messaging.operation.type',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  batchCount: 'messaging.batch.message_count',
  errorType: 'error.type',
  attempt: 'sandglass.job.attempt',
  latenessMs: 'sandglass.job.lateness_ms',
  /**
   * The job's group (README, "Groups"). Not `messaging.message.conversation_id`: a group is a
   * tenant or an ordering key, not a conversation; the semantic conventions have no attribute for it.
   */
  group: 'sandglass.group',
} as const;

/** `messaging.system`. */
export const SYSTEM = 'sandglass';

/**
 * The tracer of a registered tracer provider, or undefined when none is registered: then sandglass
 * creates no span at all. A handful of property reads: the API's global is a ProxyTracerProvider
 * that has a delegate only once an SDK registered one. (With a second copy of the API in the
 * application the instanceof fails, and the provider's own tracer is used: correct, if slower.)
 */
export function registeredTracer(): Tracer | undefined {
  const api = openTelemetry();
  if (api === undefined) return undefined;
  const provider = api.trace.getTracerProvider();
  if (provider instanceof api.ProxyTracerProvider) return provider.getDelegateTracer(INSTRUMENTATION_NAME);
  return provider.getTracer(INSTRUMENTATION_NAME);
}

/**
 * The API, where a span or tracer exists: loaded, since something made them. Only for code that
 * holds one.
 */
export function loadedApi(): OpenTelemetryApi {
  const api = openTelemetry();
  if (api === undefined) throw new Error('@opentelemetry/api is not loaded although a span exists');
  return api;
}

/** The span context of a stored traceparent, as a remote parent; undefined when it is malformed. */
export function remoteSpanContext(traceparent: string): SpanContext | undefined {
  const fields = parseTraceparent(traceparent);
  return fields && { traceId: fields.traceId, spanId: fields.spanId, traceFlags: fields.traceFlags, isRemote: true };
}

/** The traceparent of the active context's span, or undefined when there is no valid one. */
export function activeTraceparent(): string | undefined {
  const api = openTelemetry();
  const spanContext = api?.trace.getSpanContext(api.context.active());
  return spanContext && api?.isSpanContextValid(spanContext) ? formatTraceparent(spanContext) : undefined;
}

/**
 * The W3C `traceparent` to send on when a handler passes a job to another service (the HTTP
 * service's webhooks send it as a header): the active span's (the Worker's `process` span, when a
 * tracer provider is registered), else the one stored with the job; undefined when there is neither.
 * README, "OpenTelemetry".
 * @example
 * new Worker('orders', async job => {
 *   const traceparent = deliveryTraceparent(job);
 *   await fetch(url, { method: 'POST', headers: traceparent ? { traceparent } : {}, body: JSON.stringify(job.payload) });
 * }, { connection });
 */
export function deliveryTraceparent(job: { readonly traceparent?: string | undefined }): string | undefined {
  return activeTraceparent() ?? job.traceparent;
}

/**
 * The trace context an incoming HTTP request asks jobs to be added in, for the `traceparent` option
 * of `add`: its `traceparent` header, unless the receiving process is traced itself and has an
 * active span (HTTP instrumentation made the request's span, itself a child of the header's
 * context: the jobs' send spans belong under it, and `add` takes it from the active context). A
 * malformed or repeated header gives undefined (ignored, as the W3C specification asks of a
 * receiver) rather than the ValidationError `add` would throw on it. The HTTP service's add routes
 * use it. README, "OpenTelemetry".
 * @example
 * await queue.add(request.body, { delay: '30m', traceparent: requestTraceparent(request.headers.traceparent) });
 */
export function requestTraceparent(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string' || activeTraceparent() !== undefined) return undefined;
  const fields = parseTraceparent(header.trim());
  return fields && formatTraceparent(fields);
}

/** `error.type` of a failure: the error's class name, `_OTHER` for a thrown non-error. */
export function errorType(error: unknown): string {
  if (error instanceof Error) return error.constructor.name || error.name || '_OTHER';
  return '_OTHER';
}

/** Marks `span` failed by `error`: `error.type`, status ERROR and the exception event. */
export function recordFailure(span: Span, error: unknown): void {
  const { SpanStatusCode } = loadedApi();
  span.setAttribute(ATTR.errorType, errorType(error));
  if (error instanceof Error) {
    span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
  }
}

// --- producer -------------------------------------------------------------------------------

/** A job about to be written: `traceparent` is its explicit parent on the way in, what it stores on the way out. */
export interface TracedWrite {
  readonly id: string;
  readonly group?: string | undefined;
  traceparent?: string | undefined;
}

/**
 * Starts the PRODUCER spans `send <queue>` of one add call and sets what each job stores: one span
 * per parent (the active context, or a job's explicit `traceparent`, which wins): one for `add`,
 * one for a whole `addBulk` (with `messaging.batch.message_count`) unless entries name different
 * parents. Each job then stores its span's context. Without a provider no span is made: a job
 * stores its explicit parent, or the active context's span if there is one (a service without an
 * SDK passes its caller's context on), else nothing. Returns the spans to end with `endSend`.
 */
export function startSend(queue: string, jobs: readonly TracedWrite[], bulk: boolean): Span[] | undefined {
  const tracer = registeredTracer();
  if (tracer === undefined) {
    const active = activeTraceparent();
    if (active !== undefined) for (const job of jobs) job.traceparent ??= active;
    return undefined;
  }
  const groups = new Map<string, TracedWrite[]>();
  for (const job of jobs) {
    const key = job.traceparent ?? '';
    const group = groups.get(key);
    if (group) group.push(job);
    else groups.set(key, [job]);
  }
  const { context, isSpanContextValid, SpanKind, trace } = loadedApi();
  const spans: Span[] = [];
  const active = context.active();
  for (const [parent, group] of groups) {
    const remote = parent === '' ? undefined : remoteSpanContext(parent);
    const attributes: Attributes = {
      [ATTR.system]: SYSTEM,
      [ATTR.operationName]: 'send',
      [ATTR.operationType]: 'send',
      [ATTR.destination]: queue,
    };
    if (bulk) attributes[ATTR.batchCount] = group.length;
    else {
      attributes[ATTR.messageId] = (group[0] as TracedWrite).id;
      const jobGroup = (group[0] as TracedWrite).group;
      if (jobGroup !== undefined) attributes[ATTR.group] = jobGroup;
    }
    const span = tracer.startSpan(
      `send ${queue}`,
      { kind: SpanKind.PRODUCER, attributes },
      remote ? trace.setSpanContext(active, remote) : active,
    );
    const spanContext = span.spanContext();
    const stored = isSpanContextValid(spanContext) ? formatTraceparent(spanContext) : remote ? parent : undefined;
    for (const job of group) job.traceparent = stored;
    spans.push(span);
  }
  return spans;
}

/** Ends the spans of `startSend`, failed when `error` is given. */
export function endSend(spans: readonly Span[] | undefined, error?: unknown): void {
  if (spans === undefined) return;
  for (const span of spans) {
    if (error !== undefined) recordFailure(span, error);
    span.end();
  }
}

// --- settling (PullConsumer) ------------------------------------------------------------------

/**
 * A CLIENT span `<ack|fail> <queue>` around a PullConsumer's settle call, a child of the caller's
 * context and linked to the job's stored context when known; undefined without a provider.
 */
export function startSettle(queue: string, operation: 'ack' | 'fail', id: string): Span | undefined {
  const tracer = registeredTracer();
  if (tracer === undefined) return undefined;
  return tracer.startSpan(`${operation} ${queue}`, {
    kind: loadedApi().SpanKind.CLIENT,
    attributes: {
      [ATTR.system]: SYSTEM,
      [ATTR.operationName]: operation,
      [ATTR.operationType]: 'settle',
      [ATTR.destination]: queue,
      [ATTR.messageId]: id,
    },
  });
}

/**
 * Runs `call` with `span` active (when there is one) and ends the span when it settles, failed if
 * it threw.
 */
export async function withSpan<R>(span: Span | undefined, call: () => Promise<R>): Promise<R> {
  if (span === undefined) return call();
  const { context, trace } = loadedApi();
  try {
    const result = await context.with(trace.setSpan(context.active(), span), call);
    span.end();
    return result;
  } catch (error) {
    recordFailure(span, error);
    span.end();
    throw error;
  }
}

/** Links a settle span to the job's stored context (known to `fail`, which reads the job). */
export function linkJob(span: Span | undefined, traceparent: string | undefined): void {
  const remote = span && traceparent !== undefined ? remoteSpanContext(traceparent) : undefined;
  if (span && remote) span.addLink({ context: remote });
}
