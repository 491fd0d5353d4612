/**
 * The one entry of the storage seam: a role (Queue, Worker, PullConsumer) gets a StorageConnection
 * from the factory (`acquireConnection`, src/connection/connection.ts) and from it each queue's
 * storage. Everything a role touches is an interface of src/store: partitions (PartitionStorage),
 * the limiter (LimiterStorage), wake-ups (WakeChannel) and the queue registry. The Redis
 * implementation: store/redis/queue-storage.ts. A second backend implements these interfaces
 * and passes the conformance suites of test/conformance/ (queue-storage.ts, partition-storage.ts,
 * limiter-storage.ts).
 */
import type { LimiterStorage } from './limiter-storage.js';
import type { PartitionStorage } from './partition-storage.js';
import type { WakeChannel } from './wake-channel.js';

/**
 * One queue's storage. Its partition count is stored with the queue the first time a process
 * creates it; a process that asks for another count gets a ConflictError (jobs placed by one count
 * cannot be found by another), and a queue in a newer storage format an IncompatibleStorageError,
 * before anything is written.
 */
export interface QueueStorage extends WakeChannel {
  readonly prefix: string;
  readonly name: string;
  /**
   * The partitions, in partition order (the i-th has `partition` i). With `create`, a new queue
   * gets its count stored; without it (reads) nothing is written, and a queue that does not exist
   * yet answers from the requested count (1 when none), asking again next time.
   */
  partitions(options: { create: boolean }): Promise<readonly PartitionStorage[]>;
  /** The partition that holds job id (or schedule key) `id` (src/store/placement.ts). */
  partitionFor(id: string, options: { create: boolean }): Promise<PartitionStorage>;
  /** The queue's limiter, once the partitions are known (as `partitions(options)`). */
  limiter(options: { create: boolean }): Promise<LimiterStorage>;
  /** Records the queue's name under the prefix, for admin tools that list queues. */
  register(): Promise<void>;
  /** Whether the queue is recorded (a job was added, or it was paused with `create`); `operation` names the call in errors. */
  isRegistered(operation: string): Promise<boolean>;
}

/** A role's reference to the storage: its queues, the queue registry, and the release of the connection. */
export interface StorageConnection {
  /** The storage of queue `name` under `prefix`; `partitions`: the count this process expects, or undefined to take whatever is stored. */
  queue(prefix: string, name: string, partitions: number | undefined): QueueStorage;
  /** Names of the queues recorded under `prefix`, sorted. */
  listQueues(prefix: string): Promise<string[]>;
  /** Lets the connection go (closed when no other role of the process uses it). */
  release(): Promise<void>;
}
