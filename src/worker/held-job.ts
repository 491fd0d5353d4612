import type { ClaimSource } from './claim-source.js';
import { ClaimedJob } from './claimed-job.js';
import type { HeldLease } from './lease-renewer.js';
import type { KeptSettlement, SettleOutcome } from './settler.js';
import type { LeaseRef, PartitionStorage } from '../store/partition-storage.js';
import type { StoredJob } from '../store/stored.js';

/** Who hears what became of a held job's ack (the Worker). */
export interface AckListener<T> {
  acked(held: HeldJob<T>, outcome: SettleOutcome): void;
}

/**
 * A job a Worker claimed and holds under lease, from the claim to its settlement: waiting in the
 * prefetch, then running, then being acked. One object per job carries everything the renewer and
 * the settler need (it is their `HeldLease` and `Settlement`), so a job costs no Map key, no Promise
 * and no closure of its own on the way.
 */
export class HeldJob<T> implements HeldLease, KeptSettlement {
  readonly source: ClaimSource;
  readonly stored: StoredJob;
  readonly job: ClaimedJob<T>;
  leaseUntilLocal: number;
  /** The LeaseRenewer's bookkeeping (HeldLease). */
  renewerIndex = -1;
  /** The renewer learned the lease is gone (it ran out and the job was taken back). */
  lost = false;
  /** Handed back by close(): its outcome is no longer ours to report. */
  released = false;
  /** What the handler returned, for the 'completed' event once the ack landed. */
  result: unknown = undefined;
  /** The JSON of the result to keep, when the queue keeps completed jobs ('' for none). */
  keptResult = '';
  readonly #listener: AckListener<T>;

  constructor(
    source: ClaimSource,
    stored: StoredJob,
    defaultMaxAttempts: number,
    leaseUntilLocal: number,
    listener: AckListener<T>,
    limitedAt = -1,
  ) {
    this.source = source;
    this.stored = stored;
    // As claimedJobFields (claimed-job.ts) builds them, without the object in between. A claim always
    // answers with the due score it took the job at.
    this.job = new ClaimedJob<T>(
      stored.id,
      source.queue,
      JSON.parse(stored.payloadJson) as T,
      stored.dueAt as number,
      stored.attempts,
      stored.maxAttempts ?? defaultMaxAttempts,
      stored.tickAt,
      stored.traceparent,
      limitedAt,
      stored.group,
    );
    this.leaseUntilLocal = leaseUntilLocal;
    this.#listener = listener;
  }

  get store(): PartitionStorage {
    return this.source.store;
  }

  get settleEntry(): LeaseRef {
    return this.stored;
  }

  get settleGiveUpAt(): number {
    return this.leaseUntilLocal;
  }

  settled(outcome: SettleOutcome): void {
    this.#listener.acked(this, outcome);
  }

  /**
   * Whether a prefetched job may still start: not when its lease was reported lost, nor when it may
   * have run out unrenewed (renewals failing): another worker may hold the job by now.
   */
  canStart(nowLocal: number): boolean {
    return !this.lost && !this.released && nowLocal < this.leaseUntilLocal;
  }
}

/** Held jobs grouped by partition, for one `release` call each. */
export function byStore<T>(held: Iterable<HeldJob<T>>): Map<PartitionStorage, StoredJob[]> {
  const groups = new Map<PartitionStorage, StoredJob[]>();
  for (const entry of held) {
    const list = groups.get(entry.store);
    if (list) list.push(entry.stored);
    else groups.set(entry.store, [entry.stored]);
  }
  return groups;
}
