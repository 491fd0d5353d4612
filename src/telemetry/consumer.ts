/**
 * The consumer side of sandglass's OpenTelemetry (telemetry.ts has the rules they share): the
 * Worker's CONSUMER span `process <queue>` around each handler call, and the metrics
 * `messaging.process.duration` and `sandglass.job.lateness`. Each handler call asks `start` first:
 * with neither a tracer nor a meter provider registered it answers undefined after a few property
 * reads, and the Worker calls its handler as it would without telemetry.
 */
import type { Attributes, Context, Histogram, Link, MeterProvider, Span } from '@opentelemetry/api';
import { openTelemetry } from './otel-api.js';
import {
  ATTR,
  errorType,
  INSTRUMENTATION_NAME,
  loadedApi,
  recordFailure,
  registeredTracer,
  remoteSpanContext,
  SYSTEM,
} from './telemetry.js';

/**
 * How a Worker's `process` span relates to the context stored with the job: `'child'` continues
 * the producer's trace (one trace from the request to the handler); `'link'` starts a new trace
 * with a link to it (for jobs that run long after, or fan in from many producers).
 */
export type TracingParent = 'child' | 'link';

/** The fields of a job that telemetry reads (a `Job`). */
export interface ProcessedJob {
  readonly id: string;
  readonly queue: string;
  readonly dueAt: number;
  readonly attempt: number;
  readonly traceparent?: string | undefined;
  readonly group?: string | undefined;
}

/** One handler call under way: its span (when traced) and its start (when measured). */
export interface Processing {
  readonly span: Span | undefined;
  /** The context the handler runs in: the span's. */
  readonly context: Context | undefined;
  readonly queue: string;
  readonly startedAt: number;
  readonly instruments: Instruments | undefined;
}

interface Instruments {
  readonly duration: Histogram;
  readonly lateness: Histogram;
}

// The semantic conventions' advice for messaging.process.duration (seconds).
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
// Lateness is milliseconds when all is well, seconds to minutes when workers are short.
const LATENESS_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
let instrumentsOf: MeterProvider | undefined;
let cachedInstruments: Instruments | undefined;

/**
 * The histograms of the registered meter provider, or undefined when none is registered. Made once
 * per provider (the metrics API has no proxy: a meter taken before the SDK registered stays a no-op).
 */
function processInstruments(): Instruments | undefined {
  const api = openTelemetry();
  if (api === undefined) return undefined;
  const provider = api.metrics.getMeterProvider();
  if (provider !== instrumentsOf) {
    instrumentsOf = provider;
    const meter = provider.getMeter(INSTRUMENTATION_NAME);
    cachedInstruments =
      meter instanceof api.createNoopMeter().constructor
        ? undefined
        : {
            duration: meter.createHistogram('messaging.process.duration', {
              unit: 's',
              description: 'Duration of the handler call of a job (a batch in batch mode).',
              advice: { explicitBucketBoundaries: DURATION_BUCKETS },
            }),
            lateness: meter.createHistogram('sandglass.job.lateness', {
              unit: 's',
              description: "How late a job's handler started: its start minus the job's due time (Redis server clock).",
              advice: { explicitBucketBoundaries: LATENESS_BUCKETS },
            }),
          };
  }
  return cachedInstruments;
}

/**
 * The parent context and links of a `process` span: of one job, by the Worker's `tracing.parent`;
 * of a batch (`batch`, whatever its size), links to its jobs' contexts.
 */
function consumerParent(
  jobs: readonly ProcessedJob[],
  mode: TracingParent,
  batch: boolean,
): { parent: Context; links: Link[] | undefined } {
  const { ROOT_CONTEXT, trace } = loadedApi();
  const first = jobs[0];
  if (!batch && first?.traceparent !== undefined) {
    const remote = remoteSpanContext(first.traceparent);
    if (remote && mode === 'child') return { parent: trace.setSpanContext(ROOT_CONTEXT, remote), links: undefined };
    return { parent: ROOT_CONTEXT, links: remote ? [{ context: remote }] : undefined };
  }
  // A batch: a span of its own, linked to each job's context (a span has one parent).
  let links: Link[] | undefined;
  for (const job of jobs) {
    const remote = job.traceparent === undefined ? undefined : remoteSpanContext(job.traceparent);
    if (remote) (links ??= []).push({ context: remote, attributes: { [ATTR.messageId]: job.id, [ATTR.attempt]: job.attempt } });
  }
  return { parent: ROOT_CONTEXT, links };
}

/** A Worker's telemetry: one per Worker. */
export class ConsumerTelemetry {
  readonly #parent: TracingParent;
  readonly #serverNow: () => number;

  /** `serverNow`: now on the Redis server's clock (due times are on it). */
  constructor(parent: TracingParent, serverNow: () => number) {
    this.#parent = parent;
    this.#serverNow = serverNow;
  }

  /**
   * Starts the measurement of one handler call (a job, or a batch of one queue's jobs): records
   * each job's lateness and starts the `process` span. Undefined when nothing is registered.
   */
  start(unit: ProcessedJob | readonly ProcessedJob[]): Processing | undefined {
    const tracer = registeredTracer();
    const instruments = processInstruments();
    if (tracer === undefined && instruments === undefined) return undefined;
    const jobs: readonly ProcessedJob[] = Array.isArray(unit) ? unit : [unit as ProcessedJob];
    const first = jobs[0] as ProcessedJob;
    const queue = first.queue;
    const now = this.#serverNow();
    let latenessMs = 0;
    const metricAttributes = instruments && { [ATTR.system]: SYSTEM, [ATTR.destination]: queue };
    for (const job of jobs) {
      const late = Math.max(0, now - job.dueAt);
      if (late > latenessMs) latenessMs = late;
      instruments?.lateness.record(late / 1000, metricAttributes);
    }
    let span: Span | undefined;
    let spanContext: Context | undefined;
    if (tracer !== undefined) {
      const { parent, links } = consumerParent(jobs, this.#parent, Array.isArray(unit));
      const attributes: Attributes = {
        [ATTR.system]: SYSTEM,
        [ATTR.operationName]: 'process',
        [ATTR.operationType]: 'process',
        [ATTR.destination]: queue,
        [ATTR.latenessMs]: Math.round(latenessMs),
      };
      if (Array.isArray(unit)) {
        attributes[ATTR.batchCount] = jobs.length;
      } else {
        attributes[ATTR.messageId] = first.id;
        attributes[ATTR.attempt] = first.attempt;
        if (first.group !== undefined) attributes[ATTR.group] = first.group;
      }
      span = tracer.startSpan(`process ${queue}`, { kind: loadedApi().SpanKind.CONSUMER, attributes, links }, parent);
      spanContext = loadedApi().trace.setSpan(parent, span);
    }
    return { span, context: spanContext, queue, startedAt: performance.now(), instruments };
  }

  /** Calls `handler(arg)` with the call's span active, so that the handler's own spans are its children. */
  run<A, R>(processing: Processing, handler: (arg: A) => R, arg: A): R {
    return processing.context === undefined ? handler(arg) : loadedApi().context.with(processing.context, handler, undefined, arg);
  }

  /** The handler settled: `ok` with its value, or failed with `outcome`. Ends the span, records the duration. */
  finish(processing: Processing, ok: boolean, outcome: unknown): void {
    if (processing.instruments) {
      const attributes: Attributes = { [ATTR.system]: SYSTEM, [ATTR.operationName]: 'process', [ATTR.destination]: processing.queue };
      if (!ok) attributes[ATTR.errorType] = errorType(outcome);
      processing.instruments.duration.record((performance.now() - processing.startedAt) / 1000, attributes);
    }
    if (processing.span) {
      if (!ok) recordFailure(processing.span, outcome);
      processing.span.end();
    }
  }
}
