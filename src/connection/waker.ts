import type { Cluster, Redis } from 'ioredis';
import { withinCallTimeout } from '../store/redis/scripts.js';
import type { WakeListener } from '../store/wake-channel.js';

/**
 * One pub/sub connection per Redis connection, shared by every Worker in the process however many
 * queues they serve. Scripts PUBLISH a due time on a partition's wake channel when a job becomes the
 * earliest; listeners re-arm their timers. After a reconnect the listeners hear NaN ("you may have
 * missed something, look now"), so a lost message delays nothing beyond one claim.
 */
export class Waker {
  readonly #source: Redis | Cluster;
  /** Per channel: its listeners, and a promise that settles when Redis confirmed the subscription. */
  readonly #channels = new Map<string, { listeners: Set<WakeListener>; confirmed: Promise<void> }>();
  #subscriber: Redis | Cluster | undefined;
  #connectedOnce = false;

  constructor(source: Redis | Cluster) {
    this.#source = source;
  }

  /**
   * Subscribes `listener` to `channel`; resolves once Redis confirmed, or after the connection's call
   * timeout when Redis is away or frozen (a Worker must still start and close). The subscription then
   * goes through when Redis answers, and the channel's listeners hear NaN at that moment.
   * Returns the unsubscribe call.
   */
  async listen(channel: string, listener: WakeListener): Promise<() => Promise<void>> {
    const subscriber = this.#connect();
    let channelState = this.#channels.get(channel);
    let answered: Promise<void>;
    if (channelState) {
      answered = withinCallTimeout(this.#source, 'subscribe', channelState.confirmed);
    } else {
      const listeners = new Set<WakeListener>();
      let late = false;
      const confirmed = subscriber.subscribe(channel).then(
        () => {
          if (late) for (const wake of listeners) wake(Number.NaN);
        },
        () => undefined, // only when closing: ioredis resubscribes after reconnects by itself
      );
      channelState = { listeners, confirmed };
      this.#channels.set(channel, channelState);
      answered = withinCallTimeout(this.#source, 'subscribe', confirmed);
      answered.catch(() => (late = true));
    }
    channelState.listeners.add(listener);
    await answered.catch(() => undefined);
    return async () => {
      const current = this.#channels.get(channel);
      if (!current?.listeners.delete(listener) || current.listeners.size > 0) return;
      this.#channels.delete(channel);
      if (subscriber.status === 'ready') await subscriber.unsubscribe(channel).catch(() => undefined);
    };
  }

  get listenerCount(): number {
    let count = 0;
    for (const { listeners } of this.#channels.values()) count += listeners.size;
    return count;
  }

  async close(): Promise<void> {
    this.#channels.clear();
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }

  #connect(): Redis | Cluster {
    if (this.#subscriber) return this.#subscriber;
    // A subscriber must keep retrying: it is the workers' ear, and ioredis resubscribes on reconnect.
    const subscriber = this.#source.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true } as never) as Redis | Cluster;
    subscriber.on('error', () => undefined); // reconnects are reported by the workers' own calls
    subscriber.on('message', (channel: string, message: string) => {
      const dueAt = Number(message);
      for (const listener of this.#channels.get(channel)?.listeners ?? []) listener(dueAt);
    });
    subscriber.on('ready', () => {
      if (!this.#connectedOnce) {
        this.#connectedOnce = true;
        return;
      }
      for (const { listeners } of this.#channels.values()) for (const listener of listeners) listener(Number.NaN);
    });
    this.#subscriber = subscriber;
    return subscriber;
  }
}
