import { DEFAULT_BACKOFF } from './backoff.js';
import { ValidationError } from './errors.js';
import { resolveLogger } from './logger.js';
import type { BackoffFunction, BackoffOption, ConnectionOption, Logger } from './types.js';
import { MAX_ATTEMPTS, assertBackoff, assertInteger, assertOptions, assertQueueName } from './validate.js';

/** The options every role (Queue, Worker, PullConsumer) takes, as given. */
interface SharedOptions {
  connection?: ConnectionOption;
  prefix?: string;
  logger?: Logger;
  partitions?: number;
}

/** The shared options checked and completed with their defaults. */
export interface ResolvedSharedOptions {
  readonly connection: ConnectionOption;
  readonly prefix: string;
  readonly logger: Logger;
  readonly partitions: number | undefined;
}

/**
 * The one home of the rules every role shares: no unknown option names (`known` lists the role's
 * own), a connection, a key prefix that obeys the queue-name rule, a logger, a partition count.
 * Runs before anything connects.
 */
export function resolveSharedOptions(role: string, options: SharedOptions, known: readonly string[]): ResolvedSharedOptions {
  assertOptions(role, options, known);
  if (!options?.connection) throw new ValidationError('Expected `connection`: a Redis URL, ioredis options or an ioredis instance');
  const prefix = options.prefix ?? 'sg';
  assertQueueName(prefix);
  if (options.partitions !== undefined) assertPartitions(options.partitions);
  return { connection: options.connection, prefix, logger: resolveLogger(options.logger), partitions: options.partitions };
}

/** Partitions a queue may have at most. */
export const MAX_PARTITIONS = 1_024;

/**
 * The one rule for a partition count (the `partitions` option, and the CLI's and service's
 * `--partitions` / SANDGLASS_PARTITIONS): an integer from 1 to {@link MAX_PARTITIONS}.
 */
export function assertPartitions(value: unknown, name = 'partitions'): asserts value is number {
  assertInteger(name, value, 1, MAX_PARTITIONS);
}

/**
 * The range of a lease's length in ms, from {@link MIN_LEASE_MS} to {@link MAX_LEASE_MS}: the one
 * rule for `leaseMs` of a Worker and of `consumer.claim` and `consumer.extend` (the HTTP API's
 * claim and extend read it too).
 */
export const MIN_LEASE_MS = 200;
/** The longest lease a claim may take or an extend may set: a day. See {@link MIN_LEASE_MS}. */
export const MAX_LEASE_MS = 86_400_000;

/** Throws {@link ValidationError} unless `value` is a lease length from {@link MIN_LEASE_MS} to {@link MAX_LEASE_MS}. */
export function assertLeaseMs(value: unknown, name = 'leaseMs'): asserts value is number {
  assertInteger(name, value, MIN_LEASE_MS, MAX_LEASE_MS);
}

/** Default attempts of a job that does not set its own `maxAttempts`. */
export const DEFAULT_MAX_ATTEMPTS = 3;

/**
 * The retry defaults of a role that settles jobs (Worker, PullConsumer): `maxAttempts` and
 * `backoff`, which a job's own values override. A function backoff only where `allowFunction`.
 */
export function resolveRetryOptions<B extends BackoffOption | BackoffFunction>(
  options: { maxAttempts?: number; backoff?: B },
  allowFunction: boolean,
): { maxAttempts: number; backoff: B | BackoffOption } {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  assertInteger('maxAttempts', maxAttempts, 1, MAX_ATTEMPTS);
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  if (!(allowFunction && typeof backoff === 'function')) assertBackoff(backoff);
  return { maxAttempts, backoff };
}
