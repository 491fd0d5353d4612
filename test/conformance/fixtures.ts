// What the conformance cases share: a job to add, a claim with fresh ids, waiting on the backend's
// clock. Time is the backend's own: cases read its `now` from the answers and wait real
// milliseconds for a due time or a lease to pass; none needs a clock that can be set.
import { newClaimId } from '../../src/core/ids.js';
import type { ClaimResult, EncodedJob, LeaseRef, PartitionStorage } from '../../src/store/partition-storage.js';
import type { QueueStorage, StorageConnection } from '../../src/store/queue-storage.js';
import type { Due } from '../../src/core/validate.js';

/** What a backend gives the suites: its storage entry, as a role gets it. */
export interface StorageBackend {
  /** The entry (src/store/queue-storage.ts), open while the suites run. */
  connection(): StorageConnection;
}

/** The key prefix of every queue the suites make. */
export const PREFIX = 'conformance';
let queues = 0;

/** A queue no other case uses, of `partitions` partitions (1 unless given), not created yet. */
export function freshQueue(backend: StorageBackend, partitions: number | undefined = 1): QueueStorage {
  queues += 1;
  return backend.connection().queue(PREFIX, `q-${process.pid}-${queues}`, partitions);
}

/** Opens what a case runs against: partition 0 of a fresh queue of one partition, holding nothing yet. */
export type OpenPartition = () => Promise<PartitionStorage>;

/** Due a minute ago on any clock of the machine: due at once. */
export function overdue(agoMs = 0): Due {
  return { atMs: Date.now() - 60_000 - agoMs };
}

/** A job to add: due at once unless `due` says otherwise, payload `{"id":...}`. */
export function job(id: string, due: Due = overdue(), extra: Partial<EncodedJob> = {}): EncodedJob {
  return { id, due, maxAttempts: '', backoff: '', payloadJson: JSON.stringify({ id }), ...extra };
}

export interface ClaimOptions {
  leaseMs?: number;
  reapLimit?: number;
  defaultMaxAttempts?: number;
  claimId?: string;
  askSchedules?: boolean;
}

/** A claim of up to `limit` jobs under a fresh claim id (or `claimId`: a resend). */
export function claim(store: PartitionStorage, limit: number, options: ClaimOptions = {}): Promise<ClaimResult> {
  const { leaseMs = 30_000, reapLimit = 100, defaultMaxAttempts = 3, claimId = newClaimId(), askSchedules = true } = options;
  return store.claim(limit, leaseMs, reapLimit, defaultMaxAttempts, { claimId, answeredClaimId: undefined }, askSchedules);
}

/** The lease of a claimed job. */
export function lease(claimed: { id: string; token: string }): LeaseRef {
  return { id: claimed.id, token: claimed.token };
}

/** Adds `ids` due at once and claims them all; their leases, in the order of `ids`. */
export async function claimed(store: PartitionStorage, ids: readonly string[], leaseMs = 30_000): Promise<LeaseRef[]> {
  await store.add(
    ids.map(id => job(id)),
    'keep',
  );
  const result = await claim(store, ids.length, { leaseMs });
  const byId = new Map(result.jobs.map(taken => [taken.id, lease(taken)]));
  return ids.map(id => {
    const held = byId.get(id);
    if (!held) throw new Error(`${id} was not claimed (claimed: ${[...byId.keys()].join(', ')})`);
    return held;
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** Waits until the backend's clock, as `store` reports it, has passed `at` (server ms). */
export async function until(store: PartitionStorage, at: number): Promise<void> {
  for (let now = (await store.stats()).now; now <= at; now = (await store.stats()).now) await sleep(Math.min(50, at - now + 1));
}
