/**
 * A queue's schedules as `Queue` offers them (queue.schedule, getSchedule, listSchedules,
 * pauseSchedule, resumeSchedule, unschedule): the checks of key and spec, the partition a schedule
 * lives in (that of its key), then the operations of schedules.ts. Typed against QueueStorage only.
 */
import { assertScheduleKey, resolveScheduleSpec } from './spec.js';
import {
  getSchedule,
  listSchedules,
  pauseSchedule,
  removeSchedule,
  resumeSchedule,
  upsertSchedule,
  type SchedulePlace,
} from './schedules.js';
import { partitionOf } from '../store/placement.js';
import type { PartitionStorage } from '../store/partition-storage.js';
import type { QueueStorage } from '../store/queue-storage.js';
import type { ScheduleInfo, ScheduleSpec, UnscheduleResult } from '../core/types.js';

/** Reads never create a queue; an upsert does. */
const READ = { create: false } as const;
const CREATE = { create: true } as const;

export class QueueSchedules {
  readonly #storage: QueueStorage;
  readonly #maxPayloadBytes: number;
  readonly #register: () => Promise<void>;

  /** `register`: records the queue for admin tools (the Queue's, once per Queue), before the first write. */
  constructor(storage: QueueStorage, maxPayloadBytes: number, register: () => Promise<void>) {
    this.#storage = storage;
    this.#maxPayloadBytes = maxPayloadBytes;
    this.#register = register;
  }

  async upsert(key: string, spec: ScheduleSpec): Promise<ScheduleInfo> {
    // Checked before anything is written (the queue is registered only for a valid spec).
    const resolved = resolveScheduleSpec(key, spec, Date.now(), this.#maxPayloadBytes);
    await this.#register();
    const stores = await this.#storage.partitions(CREATE);
    // A schedule with a group lives in its group's partition, where its ticks must be; another in its key's.
    const home = stores[partitionOf(resolved.group ?? key, stores.length)] as PartitionStorage;
    // On a partitioned queue a change of group may move the schedule: the old place goes first.
    if (stores.length > 1) {
      const found = await this.#find(key, READ);
      if (found && found.store !== home) await removeSchedule(found, key);
    }
    return upsertSchedule({ store: home, count: stores.length }, key, spec, this.#maxPayloadBytes);
  }

  async get(key: string): Promise<ScheduleInfo | null> {
    assertScheduleKey(key);
    const found = await this.#find(key, READ);
    return found ? getSchedule(found, key) : null;
  }

  async list(): Promise<ScheduleInfo[]> {
    return listSchedules(await this.#storage.partitions(READ));
  }

  async pause(key: string): Promise<ScheduleInfo> {
    assertScheduleKey(key);
    return pauseSchedule(await this.#place(key, READ), key);
  }

  async resume(key: string): Promise<ScheduleInfo> {
    assertScheduleKey(key);
    return resumeSchedule(await this.#place(key, READ), key);
  }

  async remove(key: string): Promise<UnscheduleResult> {
    assertScheduleKey(key);
    return removeSchedule(await this.#place(key, READ), key);
  }

  /**
   * The partition a schedule lives in (that of its key, or of its group: on a partitioned queue
   * looked for in the key's partition first, then in the others), with the partition count its
   * ticks' ids are placed by; its key's partition when no partition has it.
   */
  async #place(key: string, options: { create: boolean }): Promise<SchedulePlace> {
    const found = await this.#find(key, options);
    if (found) return found;
    const stores = await this.#storage.partitions(options);
    return { store: stores[partitionOf(key, stores.length)] as PartitionStorage, count: stores.length };
  }

  /** The place of the schedule `key`, or undefined when no partition has it (see #place). */
  async #find(key: string, options: { create: boolean }): Promise<SchedulePlace | undefined> {
    const stores = await this.#storage.partitions(options);
    const own = stores[partitionOf(key, stores.length)] as PartitionStorage;
    const count = stores.length;
    if (count === 1) return { store: own, count };
    for (const store of [own, ...stores.filter(other => other !== own)]) {
      if ((await store.readSchedules(key)).schedules.length > 0) return { store, count };
    }
    return undefined;
  }
}
