import type { Cluster, Redis } from 'ioredis';
import { withinCallTimeout } from './store/scripts.js';

/** Called with the due time (server ms) of a job that became a partition's earliest, or NaN after a reconnect. */
export type WakeListener = (dueAt: number) => void;

/**
 * One pub/sub connection per Redis connection, shared by every Worker in the process however many
 * queues they serve. Scripts PUBLISH a due time on a partition's wake channel when a job becomes the
 * earliest; listeners re-arm their timers. After a reconnect the listeners hear NaN ("you may have
 * missed something, look now"), so a lost message delays nothing beyond one claim.
 */
export class Waker {
  readonly #source: Redis | Cluster;
  readonly #listeners = new Map<string, Set<WakeListener>>();
  /** Per channel: settles when Redis confirmed the subscription. */
  readonly #confirmations = new Map<string, Promise<void>>();
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
    let set = this.#listeners.get(channel);
    let confirmed = this.#confirmations.get(channel);
    if (!set || !confirmed) {
      set = new Set();
      this.#listeners.set(channel, set);
      const listeners = set;
      let late = false;
      confirmed = subscriber.subscribe(channel).then(
        () => {
          if (late) for (const wake of listeners) wake(Number.NaN);
        },
        () => undefined, // only when closing: ioredis resubscribes after reconnects by itself
      );
      this.#confirmations.set(channel, confirmed);
      withinCallTimeout(this.#source, 'subscribe', confirmed).catch(() => (late = true));
    }
    set.add(listener);
    await withinCallTimeout(this.#source, 'subscribe', confirmed).catch(() => undefined);
    return async () => {
      const current = this.#listeners.get(channel);
      if (!current?.delete(listener) || current.size > 0) return;
      this.#listeners.delete(channel);
      this.#confirmations.delete(channel);
      if (subscriber.status === 'ready') await subscriber.unsubscribe(channel).catch(() => undefined);
    };
  }

  get listenerCount(): number {
    let count = 0;
    for (const set of this.#listeners.values()) count += set.size;
    return count;
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    this.#confirmations.clear();
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
      for (const listener of this.#listeners.get(channel) ?? []) listener(dueAt);
    });
    subscriber.on('ready', () => {
      if (!this.#connectedOnce) {
        this.#connectedOnce = true;
        return;
      }
      for (const set of this.#listeners.values()) for (const listener of set) listener(Number.NaN);
    });
    this.#subscriber = subscriber;
    return subscriber;
  }
}
