/**
 * The ids of a schedule's tick jobs, "<key>@<entry>", an entry being "<tickAt>[~<n>]": the rule
 * the scripts create tick jobs by (lua/includes/schedules.lua, "Schedules") and the roles read ticks back by.
 * Imports only the placement rule.
 */
import { partitionOf } from './placement.js';

/** The tick time of an entry. */
export function entryTickAt(entry: string): number {
  return Number.parseInt(entry, 10);
}

/**
 * The entry of the tick at `tickAt` of schedule `key`: its job must live in the schedule's
 * partition `home` (the claim script creates it there: its key's, or its group's for a schedule
 * with a group), and a job is looked for in its id's partition first, so on a partitioned queue a
 * suffix `~<n>` is added, the smallest n that lands the id there (about `count` tries).
 * Deterministic: every process finds the same entry.
 */
export function tickEntry(key: string, tickAt: number, count: number, home = partitionOf(key, count)): string {
  const base = String(tickAt);
  if (count === 1) return base;
  if (partitionOf(`${key}@${base}`, count) === home) return base;
  for (let n = 1; ; n++) {
    const entry = `${base}~${n}`;
    if (partitionOf(`${key}@${entry}`, count) === home) return entry;
  }
}

/**
 * The schedule of a tick job, from its id and the tick time in its record (lua/includes/records.lua): the key is
 * the id up to its last '@'.
 */
export function tickOfJob(id: string, tickAt: number): { key: string; tickAt: number } {
  return { key: id.slice(0, id.lastIndexOf('@')), tickAt };
}
