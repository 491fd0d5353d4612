import { ValidationError } from '../core/errors.js';
import type { QueuePriority } from './priority.js';
import type { TracingParent } from '../telemetry/consumer.js';
import { assertLeaseMs, resolveRetryOptions, resolveSharedOptions } from '../core/role-options.js';
import type { BackoffFunction, BackoffOption, ConnectionOption, Logger } from '../core/types.js';
import { assertInteger, assertOptions, assertQueueName, describe } from '../core/validate.js';

/**
 * Jobs one claim call takes at most: bounds the time a claim holds Redis. The one rule for a
 * Worker's `batch.size`, `max` of `consumer.claim` and the HTTP API's claim.
 */
export const MAX_CLAIM = 1_000;

/** Options of `new Worker`. */
export interface WorkerOptions {
  /** Where Redis is: URL, ioredis options, or an ioredis instance you own. */
  connection: ConnectionOption;
  /** Prefix of every Redis key; the same as the queues'. @default 'sg' */
  prefix?: string;
  /** Handlers running at once (in batch mode: batches at once). @default 10 */
  concurrency?: number;
  /**
   * How long a claim holds a job before another worker may take it. Renewed every `leaseMs / 3`
   * while the handler runs, so it bounds how fast a dead worker's jobs come back, not how long a
   * handler may take.
   * @default 30000
   */
  leaseMs?: number;
  /** Deliveries before a job is dead-lettered (a job's own `maxAttempts` wins). @default 3 */
  maxAttempts?: number;
  /**
   * Delay between attempts (a job's own `backoff` wins).
   * @default { type: 'exponential', delayMs: 1000, maxDelayMs: 3600000, jitter: 0.25 }
   */
  backoff?: BackoffOption | BackoffFunction;
  /**
   * The queues' partition count, if this worker should check it (a queue's count is fixed when it
   * is first used; a mismatch makes `waitUntilReady()` reject with ConflictError). Default: read it.
   */
  partitions?: number;
  /** Hand the handler arrays of up to `size` due jobs. */
  batch?: { size: number };
  /**
   * Due jobs claimed ahead of free handler slots (in batch mode: batches), held under lease and
   * renewed like running ones, so that a handler slot that frees starts its next job without waiting
   * for Redis, and claims are larger (fewer calls per job). `close()` hands them back at once. The
   * default queues at most one job behind each slot, so a prefetched job waits at most about one
   * handler run. Raise it for fast handlers; lower it (0 turns it off) when handlers are slow and
   * several workers share a queue: a prefetched job waits for a slot of this worker while another
   * worker might be idle.
   * @default concurrency
   */
  prefetch?: number;
  /**
   * How the claims are shared between this worker's queues while several have due jobs: in
   * proportion to the weights, counted in handler starts (`{ urgent: 6, bulk: 1 }`: 6 of every 7
   * starts are `urgent`'s while both have due work, over any stretch of a few claims; a claim takes
   * up to `(concurrency + prefetch) / 2` jobs). Every queue with due work gets its share, however
   * small its weight; a queue with nothing due leaves its share to the others. Integers from 1 to
   * 1000, by queue name; a queue not named has weight 1. Not with `strictPriority`.
   * Default: equal weights (each queue the same share, whatever its partition count).
   * @example new Worker(['urgent', 'bulk'], handler, { connection, weights: { urgent: 6 } })
   */
  weights?: Record<string, number>;
  /**
   * Serve the queues in the order given: a queue's jobs are claimed only while every queue listed
   * before it has nothing due, and a job falling due in an earlier queue is claimed before any more
   * of the later ones. Jobs of a later queue already claimed (running, prefetched, or on their way
   * from Redis) still run first: at most `concurrency + prefetch` handler calls' worth. Not with `weights`.
   * @default false
   */
  strictPriority?: boolean;
  /** How long `close()` waits for running handlers before releasing their jobs. @default 10000 */
  closeTimeoutMs?: number;
  /**
   * Longest sleep between two looks at Redis when nothing is announced. Wake-ups normally come at
   * the exact due time; this only bounds the damage of a lost wake-up message.
   * @default 5000
   */
  safetyIntervalMs?: number;
  /** Where warnings and errors without an 'error' listener go. Default: Node process warnings. */
  logger?: Logger;
  /**
   * OpenTelemetry (used only when the application registered a tracer provider; README,
   * "OpenTelemetry"). `parent`: how each handler's CONSUMER span `process <queue>` relates to the
   * trace context stored with the job: `'child'` continues the producer's trace (one trace from
   * the request that added the job to its handler), `'link'` starts a new trace linked to it (for
   * jobs that run long after they were added). A batch's span always links to its jobs' contexts.
   * @default { parent: 'child' }
   */
  tracing?: { parent?: TracingParent };
  /**
   * The local clock, for tests that skew it. Due times and leases are decided on the Redis
   * server's clock; this only converts them into sleep durations.
   * @internal
   */
  clock?: () => number;
}

const KNOWN = [
  'connection',
  'prefix',
  'concurrency',
  'leaseMs',
  'maxAttempts',
  'backoff',
  'partitions',
  'batch',
  'prefetch',
  'weights',
  'strictPriority',
  'closeTimeoutMs',
  'safetyIntervalMs',
  'logger',
  'tracing',
  'clock',
];
/** The heaviest queue weight: beyond 1000:1 a share is too small to matter, and strict order says it better. */
const MAX_WEIGHT = 1_000;
/** The longest timer Node keeps: a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** Worker options checked and completed with their defaults. */
export interface ResolvedWorkerOptions {
  readonly names: string[];
  readonly prefix: string;
  readonly connection: ConnectionOption;
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly maxAttempts: number;
  readonly backoff: BackoffOption | BackoffFunction;
  readonly batchSize: number | undefined;
  /** Handler calls' worth of jobs held beyond `concurrency`. */
  readonly prefetch: number;
  readonly partitions: number | undefined;
  readonly closeTimeoutMs: number;
  readonly safetyIntervalMs: number;
  /** How claims are shared between the queues; undefined with one queue, or when neither option is given. */
  readonly priority: QueuePriority | undefined;
  readonly logger: Logger;
  readonly clock: () => number;
  /** How `process` spans relate to the jobs' stored trace contexts. */
  readonly tracingParent: TracingParent;
}

/** Validates a Worker's arguments with exact messages, before anything connects. */
export function resolveWorkerOptions(queues: string | readonly string[], handler: unknown, options: WorkerOptions): ResolvedWorkerOptions {
  const names = typeof queues === 'string' ? [queues] : [...(queues ?? [])];
  if (names.length === 0) throw new ValidationError('Expected at least one queue name');
  names.forEach(assertQueueName);
  if (new Set(names).size !== names.length) throw new ValidationError('Expected distinct queue names');
  if (typeof handler !== 'function') throw new ValidationError('Expected `handler` to be a function');
  const shared = resolveSharedOptions('new Worker', options, KNOWN);
  const concurrency = options.concurrency ?? 10;
  assertInteger('concurrency', concurrency, 1, 100_000);
  const leaseMs = options.leaseMs ?? 30_000;
  assertLeaseMs(leaseMs);
  const { maxAttempts, backoff } = resolveRetryOptions(options, true);
  if (options.batch !== undefined) {
    assertOptions('`batch`', options.batch, ['size']);
    assertInteger('batch.size', options.batch?.size, 1, MAX_CLAIM);
  }
  // Bounded like concurrency: what a worker holds is at most (concurrency + prefetch) handler calls' worth.
  const prefetch = options.prefetch ?? concurrency;
  assertInteger('prefetch', prefetch, 0, 100_000);
  const closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
  assertInteger('closeTimeoutMs', closeTimeoutMs, 0, MAX_TIMER_MS);
  const safetyIntervalMs = options.safetyIntervalMs ?? 5_000;
  assertInteger('safetyIntervalMs', safetyIntervalMs, 10, 3_600_000);
  const priority = resolvePriority(names, options.weights, options.strictPriority);
  const tracingParent = resolveTracing(options.tracing);
  return {
    names,
    ...shared,
    concurrency,
    leaseMs,
    maxAttempts,
    backoff,
    batchSize: options.batch?.size,
    prefetch,
    closeTimeoutMs,
    safetyIntervalMs,
    priority,
    clock: options.clock ?? Date.now,
    tracingParent,
  };
}

/** The `tracing` option: `{ parent: 'child' | 'link' }`. */
function resolveTracing(tracing: unknown): TracingParent {
  if (tracing === undefined) return 'child';
  assertOptions('`tracing`', tracing, ['parent']);
  const parent = (tracing as { parent?: unknown }).parent ?? 'child';
  if (parent !== 'child' && parent !== 'link')
    throw new ValidationError(`Expected \`tracing.parent\` to be 'child' or 'link', got ${describe(parent)}`);
  return parent;
}

/**
 * `weights` and `strictPriority`. A queue missing from `weights` gets weight 1 (so `{ urgent: 6 }`
 * reads "six times any other"); a name that is not one of the worker's queues is refused, so a
 * misspelled name cannot silently leave its queue at weight 1. With one queue both are accepted
 * and mean nothing.
 */
function resolvePriority(names: readonly string[], weights: unknown, strictPriority: unknown): QueuePriority | undefined {
  if (strictPriority !== undefined && typeof strictPriority !== 'boolean') {
    throw new ValidationError(`Expected \`strictPriority\` to be true or false, got ${describe(strictPriority)}`);
  }
  // Several queues without either: equal shares per queue (otherwise their partitions would take
  // turns, and a queue of 3 partitions would get 3 times the claims of a queue of 1).
  if (weights === undefined)
    return names.length < 2 ? undefined : strictPriority === true ? { strict: true } : { weights: names.map(() => 1) };
  if (strictPriority === true) {
    throw new ValidationError(
      'Give either `weights` or `strictPriority: true`, not both: weights share the claims between the queues, strict priority serves a queue only when those before it have nothing due',
    );
  }
  if (typeof weights !== 'object' || weights === null || Array.isArray(weights)) {
    throw new ValidationError(`Expected \`weights\` to be an object of queue name -> integer weight, got ${describe(weights)}`);
  }
  for (const name of Object.keys(weights)) {
    if (!names.includes(name))
      throw new ValidationError(`\`weights\` names ${describe(name)}, which is not one of this worker's queues (${names.join(', ')})`);
  }
  const list = names.map(name => {
    const weight: unknown = Object.hasOwn(weights, name) ? ((weights as Record<string, unknown>)[name] ?? 1) : 1;
    assertInteger(`weights.${name}`, weight, 1, MAX_WEIGHT);
    return weight;
  });
  return names.length > 1 ? { weights: list } : undefined;
}
