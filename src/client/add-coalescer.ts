/**
 * Coalesces concurrent single adds (`queue.add`) into one `add` call per partition.
 *
 * A producer that adds one job at a time from many concurrent callers (the HTTP service: one POST,
 * one job) would pay a script call, its round trip and its reply per job. Here the adds to one
 * partition (with the same `ifExists`) that arrive while a call for that partition is in flight wait
 * for it and then go together as one call, in arrival order; an add that finds its partition idle
 * goes at the next turn of the event loop (the adds arriving in the same turn join it). So an add
 * waits at most for the call before it, and an isolated add is sent as it was before.
 *
 * Each add still settles alone: with its own id once its job is stored, or with its own refusal
 * (a running job or a schedule's pending tick it would replace) while its neighbours are stored; a
 * failed call (Redis unreachable, a lost reply) fails exactly the adds it carried. The script
 * writes its jobs in order, so two adds of one id in a call behave as two calls in that order.
 */
import { NotReplicatedError } from '../core/errors.js';
import type { IfExists } from '../core/types.js';
import type { EncodedJob, PartitionStorage } from '../store/partition-storage.js';
import { partitionOf } from '../store/placement.js';
import { BULK_CHUNK, refusal } from './write-jobs.js';

interface PendingAdd {
  readonly job: EncodedJob;
  resolve(id: string): void;
  reject(error: unknown): void;
}

/** The adds waiting for one partition and `ifExists`, and whether a call of theirs is under way. */
interface Lane {
  readonly store: PartitionStorage;
  readonly ifExists: IfExists;
  pending: PendingAdd[];
  /** A call is in flight, or one is scheduled for the next turn: new adds just join `pending`. */
  busy: boolean;
}

export class AddCoalescer {
  readonly #lanes = new WeakMap<PartitionStorage, Map<IfExists, Lane>>();

  constructor(private readonly waitForReplicas: { replicas: number; timeoutMs: number } | undefined) {}

  /**
   * Stores one validated job in the partition its group or id places it in; its id.
   * @throws {ConflictError} the job is running or a schedule's pending tick and was not replaced.
   * @throws {NotReplicatedError} fewer replicas than `waitForReplicas` asks confirmed its call.
   */
  add(stores: readonly PartitionStorage[], job: EncodedJob, ifExists: IfExists): Promise<string> {
    const store = stores[partitionOf(job.group ?? job.id, stores.length)] as PartitionStorage;
    const lane = this.#lane(store, ifExists);
    return new Promise<string>((resolve, reject) => {
      lane.pending.push({ job, resolve, reject });
      if (lane.busy) return;
      lane.busy = true;
      setImmediate(() => void this.#send(lane));
    });
  }

  #lane(store: PartitionStorage, ifExists: IfExists): Lane {
    let byIfExists = this.#lanes.get(store);
    if (!byIfExists) this.#lanes.set(store, (byIfExists = new Map()));
    let lane = byIfExists.get(ifExists);
    if (!lane) byIfExists.set(ifExists, (lane = { store, ifExists, pending: [], busy: false }));
    return lane;
  }

  /** Sends the lane's waiting adds (up to a bulk chunk) as one call, then the ones that came meanwhile. */
  async #send(lane: Lane): Promise<void> {
    while (lane.pending.length > 0) {
      const batch = lane.pending.splice(0, BULK_CHUNK);
      try {
        const { statuses, acknowledged } = await lane.store.add(
          batch.map(add => add.job),
          lane.ifExists,
          this.waitForReplicas,
        );
        batch.forEach((add, i) => this.#settle(add, statuses[i], acknowledged));
      } catch (error) {
        for (const add of batch) add.reject(error);
      }
    }
    lane.busy = false;
  }

  /** One add's answer from its call's outcome, as writeJobs gives a call of that one job. */
  #settle(add: PendingAdd, status: string | undefined, acknowledged: number | undefined): void {
    const { id } = add.job;
    if (status === 'running') return add.reject(refusal([id], [], false));
    if (status === 'tick') return add.reject(refusal([], [id], false));
    const wanted = this.waitForReplicas?.replicas;
    if (wanted !== undefined && acknowledged !== undefined && acknowledged < wanted) {
      return add.reject(new NotReplicatedError(acknowledged, wanted, [id]));
    }
    add.resolve(id);
  }
}
