/**
 * Wake-ups of one queue's storage, as the consumers (ClaimLoop, PullConsumer) hear them: a job that
 * became a partition's earliest, a freed slot of a full concurrency limit. The storage names the
 * channels; a role only says which partition. Redis: pub/sub through src/connection/waker.ts, on
 * the channels store/redis/keys.ts names. Its contract: test/conformance/queue-storage.ts.
 */

/** Called with the due time (server ms) of a job that became a partition's earliest, or NaN after a reconnect ("look now"). */
export type WakeListener = (dueAt: number) => void;

/** Stops a listener; the last one of a channel ends its subscription. */
export type Unlisten = () => Promise<void>;

export interface WakeChannel {
  /**
   * Listens to partition `partition`'s wake-ups. Resolves once the subscription is confirmed, or
   * after the connection's call timeout when the server is away (it goes through later, and the
   * listener then hears NaN). A wake-up may be lost (a reconnect): it only hastens a claim that
   * the due time would bring anyway.
   */
  listenPartition(partition: number, listener: WakeListener): Promise<Unlisten>;
  /** Listens for freed slots of the queue's full concurrency limit (and, as for partitions, reconnects). */
  listenLimiter(listener: () => void): Promise<Unlisten>;
}
