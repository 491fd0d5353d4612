import type { LeaseRef, PartitionStorage } from '../store/partition-storage.js';

/** A lease this process holds: a running job, or a prefetched one waiting for a free handler slot. */
export interface HeldLease {
  readonly store: PartitionStorage;
  readonly stored: LeaseRef;
  /** Local time at which the lease runs out unless renewed (counted from before the claim was sent: errs early). */
  leaseUntilLocal: number;
  /** Where the renewer keeps the entry (its own bookkeeping, -1 while it holds none): set it to -1 at creation. */
  renewerIndex: number;
}

/**
 * Renews every held lease every `leaseMs / 3`, one `extend` call per partition, so that a job is
 * never taken back while this process still means to run or settle it, prefetched jobs included.
 * A lease the script reports as gone (it ran out and the job was reaped) is handed to `onLost`.
 */
export class LeaseRenewer<E extends HeldLease> {
  /**
   * The held entries, in no order; each knows its place (`renewerIndex`), so that holding and
   * dropping one, twice per job, is a push and a swap with the last: no Set (and no hash per job).
   */
  readonly #held: E[] = [];
  /** Partitions with a renewal in flight: one at a time each, a slow one never piles calls up. */
  readonly #renewing = new Set<PartitionStorage>();
  readonly #leaseMs: number;
  readonly #clock: () => number;
  readonly #onLost: (entry: E) => void;
  readonly #onError: (error: unknown) => void;
  readonly #onRenewed: ((store: PartitionStorage, renewed: E[]) => void) | undefined;
  readonly #timer: NodeJS.Timeout;

  /** `onRenewed`: the entries of one partition whose leases were renewed (a queue's concurrency slots follow them). */
  constructor(
    leaseMs: number,
    clock: () => number,
    onLost: (entry: E) => void,
    onError: (error: unknown) => void,
    onRenewed?: (store: PartitionStorage, renewed: E[]) => void,
  ) {
    this.#leaseMs = leaseMs;
    this.#clock = clock;
    this.#onLost = onLost;
    this.#onError = onError;
    this.#onRenewed = onRenewed;
    this.#timer = setInterval(() => void this.renew(), Math.floor(leaseMs / 3));
    this.#timer.unref();
  }

  /** Leases held now. */
  get size(): number {
    return this.#held.length;
  }

  /** Renews `entry` from now on (once: an entry already held stays as it is). */
  hold(entry: E): void {
    if (entry.renewerIndex >= 0) return;
    entry.renewerIndex = this.#held.length;
    this.#held.push(entry);
  }

  /** Stops renewing `entry` (settled, handed back or dropped); a no-op for one not held. */
  drop(entry: E): void {
    const index = entry.renewerIndex;
    if (index < 0 || this.#held[index] !== entry) return;
    const last = this.#held.pop() as E;
    if (last !== entry) {
      this.#held[index] = last;
      last.renewerIndex = index;
    }
    entry.renewerIndex = -1;
  }

  /** The held leases (a live view: copy it before dropping while iterating). */
  entries(): IterableIterator<E> {
    return this.#held.values();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Renews all held leases now. Partitions at once, each on its own: a slow node must not hold back the others' renewals. */
  async renew(): Promise<void> {
    if (this.#held.length === 0) return;
    const byStore = new Map<PartitionStorage, E[]>();
    for (const entry of this.#held) {
      const list = byStore.get(entry.store);
      if (list) list.push(entry);
      else byStore.set(entry.store, [entry]);
    }
    await Promise.all([...byStore].map(([store, entries]) => this.#renewStore(store, entries)));
  }

  async #renewStore(store: PartitionStorage, entries: E[]): Promise<void> {
    if (this.#renewing.has(store)) return;
    this.#renewing.add(store);
    const sentAt = this.#clock();
    try {
      const lost = new Set(
        await store.extend(
          this.#leaseMs,
          entries.map(entry => entry.stored),
        ),
      );
      for (let index = 0; index < entries.length; index++) {
        const entry = entries[index] as E;
        if (lost.has(index)) this.#onLost(entry);
        else entry.leaseUntilLocal = sentAt + this.#leaseMs;
      }
      this.#onRenewed?.(store, lost.size === 0 ? entries : entries.filter((_, index) => !lost.has(index)));
    } catch (error) {
      this.#onError(error);
    } finally {
      this.#renewing.delete(store);
    }
  }
}
