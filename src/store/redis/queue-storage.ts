import type { Cluster, Redis } from 'ioredis';
import { limiterKeys, partitionKeys } from './keys.js';
import { LimiterStore } from './limiter-store.js';
import type { PartitionStore } from './partition-store.js';
import { QueuePartitions } from './partitions.js';
import { isQueueRegistered, registerQueue } from './registry.js';
import type { LimiterStorage } from '../limiter-storage.js';
import type { QueueStorage } from '../queue-storage.js';
import type { Unlisten, WakeListener } from '../wake-channel.js';

/** Subscribes to a pub/sub channel by name: the process's shared subscriber (src/connection/waker.ts). */
export interface ChannelListener {
  listen(channel: string, listener: WakeListener): Promise<Unlisten>;
}

/**
 * One queue's storage in Redis: its partitions (QueuePartitions), its limiter, its wake-up
 * channels and its registry record, on one connection. The only place that turns "partition 3's
 * wake-ups" into a channel name.
 */
export class RedisQueueStorage implements QueueStorage {
  readonly #redis: Redis | Cluster;
  readonly #channels: ChannelListener;
  readonly #partitions: QueuePartitions;

  constructor(
    redis: Redis | Cluster,
    channels: ChannelListener,
    readonly prefix: string,
    readonly name: string,
    requested: number | undefined,
  ) {
    this.#redis = redis;
    this.#channels = channels;
    this.#partitions = new QueuePartitions(redis, prefix, name, requested);
  }

  partitions(options: { create: boolean }): Promise<PartitionStore[]> {
    return this.#partitions.all(options);
  }

  partitionFor(id: string, options: { create: boolean }): Promise<PartitionStore> {
    return this.#partitions.storeFor(id, options);
  }

  async limiter(options: { create: boolean }): Promise<LimiterStorage> {
    return new LimiterStore(await this.#partitions.all(options));
  }

  register(): Promise<void> {
    return registerQueue(this.#redis, this.prefix, this.name);
  }

  isRegistered(operation: string): Promise<boolean> {
    return isQueueRegistered(this.#redis, this.prefix, this.name, operation);
  }

  listenPartition(partition: number, listener: WakeListener): Promise<Unlisten> {
    return this.#channels.listen(partitionKeys(this.prefix, this.name, partition).wakeChannel, listener);
  }

  listenLimiter(listener: () => void): Promise<Unlisten> {
    return this.#channels.listen(limiterKeys(this.prefix, this.name).wakeChannel, listener);
  }
}
