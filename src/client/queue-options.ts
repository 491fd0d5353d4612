import { resolveSharedOptions } from '../core/role-options.js';
import type { ConnectionOption, Logger } from '../core/types.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, assertInteger, assertOptions, assertQueueName } from '../core/validate.js';

/** Options of `new Queue`. */
export interface QueueOptions {
  /** Where Redis is: URL, ioredis options, or an ioredis instance you own. */
  connection: ConnectionOption;
  /**
   * Prefix of every Redis key. Queues and workers must use the same one.
   * @default 'sg'
   */
  prefix?: string;
  /**
   * Largest payload accepted, in bytes of JSON.
   * @default 262144 (256 KiB)
   */
  maxPayloadBytes?: number;
  /** Where warnings go. Default: Node process warnings. */
  logger?: Logger;
  /**
   * Split the queue into this many partitions, each under its own hash tag, so that one queue
   * spreads over the nodes of a Redis Cluster. Fixed when the queue is first used; opening it
   * with another count throws ConflictError. Default: the stored count (1 for a new queue).
   */
  partitions?: number;
  /**
   * After each add, wait until this many replicas confirmed the write (Redis `WAIT`), at most
   * `timeoutMs`; if fewer did, `add` throws {@link NotReplicatedError} (the job is written; adding
   * it again with the same id is safe). Narrows, but does not close, the window in which a failover
   * loses acknowledged jobs. Default: off.
   */
  waitForReplicas?: { replicas: number; timeoutMs: number };
}

/** Queue options checked and completed with their defaults. */
export interface ResolvedQueueOptions {
  readonly name: string;
  readonly prefix: string;
  readonly connection: ConnectionOption;
  readonly maxPayloadBytes: number;
  readonly logger: Logger;
  readonly partitions: number | undefined;
  readonly waitForReplicas: { readonly replicas: number; readonly timeoutMs: number } | undefined;
}

const KNOWN = ['connection', 'prefix', 'maxPayloadBytes', 'logger', 'partitions', 'waitForReplicas'];

/**
 * Validates a Queue's arguments with exact messages, before anything connects: a bad option must
 * not leave an open connection behind that keeps the process alive.
 */
export function resolveQueueOptions(name: unknown, options: QueueOptions): ResolvedQueueOptions {
  assertQueueName(name);
  const shared = resolveSharedOptions('new Queue', options, KNOWN);
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  assertInteger('maxPayloadBytes', maxPayloadBytes, 2, 512 * 1024 * 1024);
  let waitForReplicas: ResolvedQueueOptions['waitForReplicas'];
  if (options.waitForReplicas !== undefined) {
    assertOptions('`waitForReplicas`', options.waitForReplicas, ['replicas', 'timeoutMs']);
    assertInteger('waitForReplicas.replicas', options.waitForReplicas?.replicas, 1, 100);
    assertInteger('waitForReplicas.timeoutMs', options.waitForReplicas.timeoutMs, 1, 60_000);
    waitForReplicas = { replicas: options.waitForReplicas.replicas, timeoutMs: options.waitForReplicas.timeoutMs };
  }
  return { name, ...shared, maxPayloadBytes, waitForReplicas };
}
