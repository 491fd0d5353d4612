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
    resolveScheduleSpec(key, spec, Date.now(), this.#maxPayloadBytes);
    await this.#register();
    return upsertSchedule(await this.#place(key, CREATE), key, spec, this.#maxPayloadBytes);
  }

  async get(key: string): Promise<ScheduleInfo | null> {
    assertScheduleKey(key);
    return getSchedule(await this.#place(key, READ), key);
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

  /** The partition a schedule lives in (that of its key), with the partition count its ticks' ids are placed by. */
  async #place(key: string, options: { create: boolean }): Promise<SchedulePlace> {
    const stores = await this.#storage.partitions(options);
    return { store: stores[partitionOf(key, stores.length)] as PartitionStorage, count: stores.length };
  }
}
