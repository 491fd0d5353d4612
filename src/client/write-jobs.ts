/**
 * The write of validated jobs (queue.add, addBulk): partitions in parallel, each in chunks sent in
 * order, then what the partitions refused as one ConflictError, and the replication check.
 */
import { ConflictError, NotReplicatedError } from '../core/errors.js';
import { partitionOf } from '../store/placement.js';
import type { EncodedJob, PartitionStorage } from '../store/partition-storage.js';
import type { IfExists } from '../core/types.js';

/** Jobs per `add` call in `addBulk`: large enough to amortize the round trip, small enough not to block Redis. */
export const BULK_CHUNK = 500;
/** Chunks of one partition sent before the first one answers (see writeJobs). */
const BULK_IN_FLIGHT = 4;

/** Counts of a write by outcome, filled in by {@link writeJobs} when a caller asks for them. */
export interface WriteTally {
  /** Jobs written new (or replaced). */
  written: number;
  /** Jobs not written because their id existed (kept, or completed lately / kept completed). */
  existing: number;
}

/**
 * Writes `encoded` to the partitions their ids place them in; the ids, in order. `tally`, when
 * given, is incremented by what each job's write did (migrateFromBullMQ reports it).
 * @throws {ConflictError} some jobs are running or a schedule's pending tick and were not replaced (the others were written).
 * @throws {NotReplicatedError} fewer replicas than `waitForReplicas` asks confirmed a write.
 */
export async function writeJobs(
  stores: readonly PartitionStorage[],
  encoded: readonly EncodedJob[],
  ifExists: IfExists,
  waitForReplicas: { replicas: number; timeoutMs: number } | undefined,
  tally?: WriteTally,
): Promise<string[]> {
  const byPartition = stores.map(() => [] as EncodedJob[]);
  // A grouped job lives in its group's partition (README, "Groups"), any other in its id's.
  for (const job of encoded) byPartition[partitionOf(job.group ?? job.id, stores.length)]?.push(job);
  // Partitions in parallel (they may live on different nodes); chunks of one partition in order.
  let leastAcknowledged = Number.POSITIVE_INFINITY;
  // Every chunk is written even when one holds a running job, so that the error can say truly
  // that the other jobs were written.
  const running: string[] = [];
  const ticks: string[] = [];
  const writeChunk = async (store: PartitionStorage, chunk: readonly EncodedJob[]): Promise<void> => {
    const { statuses, acknowledged } = await store.add(chunk, ifExists, waitForReplicas);
    if (acknowledged !== undefined) leastAcknowledged = Math.min(leastAcknowledged, acknowledged);
    statuses.forEach((status, i) => {
      if (status === 'running') running.push((chunk[i] as EncodedJob).id);
      else if (status === 'tick') ticks.push((chunk[i] as EncodedJob).id);
      else if (tally && (status === 'added' || status === 'replaced')) tally.written += 1;
      else if (tally) tally.existing += 1;
    });
  };
  // A chunk's failure fails the call (as before, later chunks of its partition are not sent); every
  // write sent is awaited here, so none is left unobserved.
  const sent: Promise<void>[] = [];
  await Promise.all(
    byPartition.map(async (partitionJobs, partition) => {
      const store = stores[partition] as PartitionStorage;
      // Up to BULK_IN_FLIGHT chunks travel at once on the partition's connection, so that this
      // process encodes the next chunk while Redis writes the last. Redis runs them in the order
      // sent and answers in that order, so waiting for the oldest is waiting for the first to end.
      const window: Promise<void>[] = [];
      for (let start = 0; start < partitionJobs.length; start += BULK_CHUNK) {
        if (window.length >= BULK_IN_FLIGHT) await window.shift();
        const write = writeChunk(store, partitionJobs.slice(start, start + BULK_CHUNK));
        write.catch(() => undefined); // observed by the awaits here and below
        window.push(write);
        sent.push(write);
      }
    }),
  );
  await Promise.all(sent);
  const refused = running.length + ticks.length;
  if (refused > 0) throw refusal(running, ticks, encoded.length > refused);
  const ids = encoded.map(job => job.id);
  if (waitForReplicas && leastAcknowledged < waitForReplicas.replicas) {
    throw new NotReplicatedError(leastAcknowledged, waitForReplicas.replicas, ids);
  }
  return ids;
}

/** The error of jobs that could not be replaced: running ones, and schedules' pending ticks. */
export function refusal(running: readonly string[], ticks: readonly string[], othersWritten: boolean): ConflictError {
  const others = othersWritten ? '; the other jobs of the call were written' : '';
  const list = (ids: readonly string[]) => `${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', ...' : ''}`;
  const reasons: string[] = [];
  if (running.length === 1) reasons.push(`Job ${running[0]} is running and cannot be replaced`);
  else if (running.length > 1) reasons.push(`${running.length} jobs are running and cannot be replaced (${list(running)})`);
  if (ticks.length > 0) {
    const which = ticks.length === 1 ? `Job ${ticks[0]} is` : `${ticks.length} jobs are (${list(ticks)})`;
    reasons.push(`${which} a schedule's pending tick and cannot be replaced: change the schedule (queue.schedule) instead`);
  }
  return new ConflictError(`${reasons.join('; ')}${others}`);
}
