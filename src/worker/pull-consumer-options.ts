import { resolveRetryOptions, resolveSharedOptions } from '../core/role-options.js';
import type { BackoffOption, ConnectionOption, Logger } from '../core/types.js';
import { assertQueueName } from '../core/validate.js';

/** Options of `new PullConsumer`. */
export interface PullConsumerOptions {
  /** Where Redis is: URL, ioredis options, or an ioredis instance you own. */
  connection: ConnectionOption;
  /** @default 'sg' */
  prefix?: string;
  /** Deliveries before a job is dead-lettered (a job's own `maxAttempts` wins). @default 3 */
  maxAttempts?: number;
  /** Delay before a failed job's next attempt (a job's own `backoff` wins). Default: exponential from 1 s. */
  backoff?: BackoffOption;
  /** Where warnings go. Default: Node process warnings. */
  logger?: Logger;
  /** The queue's partition count, if this consumer should check it. Default: read it. */
  partitions?: number;
}

/** PullConsumer options checked and completed with their defaults. */
export interface ResolvedPullConsumerOptions {
  readonly queue: string;
  readonly prefix: string;
  readonly connection: ConnectionOption;
  readonly maxAttempts: number;
  readonly backoff: BackoffOption;
  readonly logger: Logger;
  readonly partitions: number | undefined;
}

const KNOWN = ['connection', 'prefix', 'maxAttempts', 'backoff', 'logger', 'partitions'];

/**
 * Validates a PullConsumer's arguments with exact messages, before anything connects: a bad option
 * must not leave an open connection behind that keeps the process alive.
 */
export function resolvePullConsumerOptions(queue: unknown, options: PullConsumerOptions): ResolvedPullConsumerOptions {
  assertQueueName(queue);
  const shared = resolveSharedOptions('new PullConsumer', options, KNOWN);
  const { maxAttempts, backoff } = resolveRetryOptions(options ?? {}, false);
  return { queue, ...shared, maxAttempts, backoff };
}
