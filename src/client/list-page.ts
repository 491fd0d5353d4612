/**
 * Paging of `queue.list` over a queue's partitions by cursor. A cursor is a position in the
 * state's order, the (time, id) of the last job of a page (the time the state is ordered by), so a page costs the same whatever its
 * position: each partition reads `limit + 1` jobs after the cursor and the pages are merged. An
 * offset would make every partition read offset + limit jobs (guarantee 5, bounded work).
 */
import { ValidationError } from '../core/errors.js';
import { toJobInfo } from './job-info.js';
import type { JobSnapshot, ListPosition, PartitionStorage } from '../store/partition-storage.js';
import type { JobInfo, JobState } from '../core/types.js';
import { assertJobId } from '../core/validate.js';

export type { ListPosition } from '../store/partition-storage.js';

/** A page of `queue.list`: the jobs, and the cursor of the next page (null on the last page). */
export interface JobPage<T> {
  jobs: JobInfo<T>[];
  /** Pass it as `cursor` to get the next page; null when this page is the last. */
  nextCursor: string | null;
}

/** Options of `queue.list` and `queue.listDead`. */
export interface ListOptions {
  /** Page size, 1-1000. @default 100 */
  limit?: number;
  /** The `nextCursor` of the previous page; the first page without it. */
  cursor?: string;
}

/**
 * One page of jobs in `state` after `after` (or from the start), of up to `limit`: each partition
 * is in the state's order, so the page is within the first limit + 1 jobs after the cursor of
 * each (the one extra tells whether there is a next page).
 */
export async function readPage<T>(
  stores: readonly PartitionStorage[],
  state: JobState,
  after: ListPosition | undefined,
  limit: number,
): Promise<JobPage<T>> {
  const pages = await Promise.all(stores.map(store => store.listJobs(state, after, limit + 1)));
  const more = pages.some(page => page.count > limit);
  const { entries, next } = mergePages(
    state,
    pages.map(page => page.entries),
    limit,
    more,
  );
  return { jobs: entries.map(entry => toJobInfo<T>(entry)), nextCursor: next ? encodeCursor(next) : null };
}

/** The time a listed job is ordered by in its state: lease end (active), dead-lettered at (dead), finished at (completed), else due time. */
export function orderTime(entry: JobSnapshot): number {
  return entry.leaseUntil ?? entry.deadAt ?? entry.finishedAt ?? entry.dueAt;
}

const CURSOR = /^[A-Za-z0-9_-]{1,400}$/;

/** The opaque text form of a position: base64url of `<time>:<id>`. */
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(`${position.at}:${position.id}`).toString('base64url');
}

/** The position of a cursor that `encodeCursor` made. */
export function decodeCursor(cursor: unknown): ListPosition {
  const refuse = () =>
    new ValidationError(
      `Expected \`cursor\` to be the \`nextCursor\` of a previous page, got ${typeof cursor === 'string' ? `'${cursor.slice(0, 60)}'` : typeof cursor}`,
    );
  if (typeof cursor !== 'string' || !CURSOR.test(cursor)) throw refuse();
  const match = /^(\d{1,16}):([\s\S]+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  const at = Number(match?.[1]);
  if (!match || !Number.isSafeInteger(at)) throw refuse();
  try {
    assertJobId(match[2]);
  } catch {
    throw refuse();
  }
  return { at, id: match[2] as string };
}

/**
 * Merges the partitions' pages in the state's order (time, then id as bytes, as Redis orders a
 * sorted set; reversed for `dead` and `completed`, most recent first) and cuts the page. `more` says whether any partition had more
 * than the page: then the page ends with a cursor.
 */
export function mergePages(
  state: JobState,
  pages: readonly (readonly JobSnapshot[])[],
  limit: number,
  more: boolean,
): { entries: JobSnapshot[]; next: ListPosition | null } {
  const sign = state === 'dead' || state === 'completed' ? -1 : 1;
  const merged = pages
    .flat()
    .sort((a, b) => sign * (orderTime(a) - orderTime(b) || Buffer.compare(Buffer.from(a.job.id), Buffer.from(b.job.id))));
  const entries = merged.slice(0, limit);
  const last = entries.at(-1);
  return { entries, next: (more || merged.length > limit) && last ? { at: orderTime(last), id: last.job.id } : null };
}
