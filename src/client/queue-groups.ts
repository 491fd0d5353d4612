/**
 * A queue's groups as `Queue` manages them (README, "Groups"): limits (the default of every group
 * and a group's own), pause and resume, the list of groups and their totals, and where a job of a
 * group lives. A grouped job lives in the partition its group's name hashes to, so a group's
 * limits, pause and order are kept by that one partition; the default limits are written to every
 * partition.
 */
import { mergeGroupLimits } from '../flow/group-limits.js';
import { ValidationError } from '../core/errors.js';
import { partitionOf } from '../store/placement.js';
import type { PartitionStorage } from '../store/partition-storage.js';
import type { QueueStorage } from '../store/queue-storage.js';
import type { GroupInfo, GroupLimits, GroupLimitsInfo, GroupLimitsInput, GroupPage, GroupTotals } from '../core/types.js';
import { MAX_LIST_LIMIT, assertGroup, assertInteger, assertOptions } from '../core/validate.js';

const READ = { create: false } as const;
const CREATE = { create: true } as const;
/** The page size of `listGroups` when none is given. */
const DEFAULT_GROUP_PAGE = 50;

export class QueueGroups {
  constructor(
    private readonly storage: QueueStorage,
    private readonly register: () => Promise<void>,
  ) {}

  /** The partition that holds group `group`'s jobs, limits and state. */
  async partitionOf(group: string, options: { create: boolean } = READ): Promise<PartitionStorage> {
    const stores = await this.storage.partitions(options);
    return stores[partitionOf(group, stores.length)] as PartitionStorage;
  }

  async setLimits(input: GroupLimitsInput, options: { group?: string } | undefined): Promise<GroupLimits> {
    assertOptions('queue.setGroupLimits (options)', options, ['group']);
    mergeGroupLimits({}, input); // refused before anything is read or written
    const group = options?.group === undefined ? undefined : assertGroup(options.group);
    await this.register();
    if (group === undefined) {
      const stores = await this.storage.partitions(CREATE);
      const next = mergeGroupLimits((await (stores[0] as PartitionStorage).readGroupLimits(undefined)).fallback, input);
      await Promise.all(stores.map(store => store.setDefaultGroupLimits(next)));
      return next;
    }
    const store = await this.partitionOf(group, CREATE);
    const { own, fallback } = await store.readGroupLimits(group);
    // A group's own limits start from what was in force for it: a change of one limit keeps the others.
    const next = mergeGroupLimits(own ?? fallback, input);
    await store.setGroupLimits(group, next);
    return next;
  }

  async clearLimits(options: { group: string }): Promise<void> {
    assertOptions('queue.clearGroupLimits (options)', options, ['group']);
    if (options?.group === undefined) throw new ValidationError('queue.clearGroupLimits needs { group }: the group whose own limits go');
    const group = assertGroup(options.group);
    await (await this.partitionOf(group, CREATE)).setGroupLimits(group, undefined);
  }

  async getLimits(options: { group?: string } | undefined): Promise<GroupLimitsInfo> {
    assertOptions('queue.getGroupLimits (options)', options, ['group']);
    const group = options?.group === undefined ? undefined : assertGroup(options.group);
    const store = group === undefined ? ((await this.storage.partitions(READ))[0] as PartitionStorage) : await this.partitionOf(group);
    const { own, fallback } = await store.readGroupLimits(group);
    return own ? { ...own, source: 'group' } : { ...fallback, source: 'default' };
  }

  async setPaused(group: unknown, paused: boolean): Promise<void> {
    const name = assertGroup(group);
    await this.register();
    await (await this.partitionOf(name, CREATE)).setGroupPaused(name, paused);
  }

  /**
   * A page of the groups with waiting or running jobs, busiest first. The cursor holds, per
   * partition, how many of its groups earlier pages showed: each partition answers its busiest
   * from there, and the page takes the busiest of all.
   */
  async list(options: { limit?: number; cursor?: string } | undefined): Promise<GroupPage> {
    assertOptions('queue.listGroups', options, ['limit', 'cursor']);
    const limit = options?.limit ?? DEFAULT_GROUP_PAGE;
    assertInteger('limit', limit, 1, MAX_LIST_LIMIT);
    const stores = await this.storage.partitions(READ);
    const from = decodeGroupCursor(options?.cursor, stores.length);
    const pages = await Promise.all(stores.map((store, p) => store.listGroups(from[p] as number, limit)));
    const merged: { info: GroupInfo; partition: number }[] = [];
    pages.forEach((page, partition) => page.groups.forEach(info => merged.push({ info, partition })));
    merged.sort((a, b) => b.info.waiting + b.info.active - (a.info.waiting + a.info.active));
    const shown = merged.slice(0, limit);
    const next = [...from];
    for (const { partition } of shown) next[partition] = (next[partition] as number) + 1;
    const more = pages.some((page, p) => (next[p] as number) < page.total);
    const result: { groups: GroupInfo[]; nextCursor?: string } = { groups: shown.map(entry => entry.info) };
    if (more) result.nextCursor = next.join('.');
    return result;
  }

  async totals(): Promise<GroupTotals> {
    const all = await Promise.all((await this.storage.partitions(READ)).map(store => store.groupTotals()));
    return all.reduce((sum, t) => ({ withWork: sum.withWork + t.withWork, held: sum.held + t.held, paused: sum.paused + t.paused }), {
      withWork: 0,
      held: 0,
      paused: 0,
    });
  }
}

/** A `listGroups` cursor: one count per partition, "12.0.5". */
function decodeGroupCursor(cursor: unknown, partitions: number): number[] {
  if (cursor === undefined) return Array.from({ length: partitions }, () => 0);
  const parts = typeof cursor === 'string' ? cursor.split('.') : [];
  if (parts.length !== partitions || !parts.every(part => /^\d{1,9}$/.test(part))) {
    throw new ValidationError(`Expected \`cursor\` to be the nextCursor of an earlier listGroups page, got ${JSON.stringify(cursor)}`);
  }
  return parts.map(Number);
}
