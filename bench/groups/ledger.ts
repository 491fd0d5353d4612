/**
 * What a group worker process (bench/groups/worker-process.ts) notes of its handler runs, and the
 * measures the groups phase reads from those notes: starts per group in a window, the most
 * handlers of a group at once, the busiest window of starts, the order of a group's runs.
 * Every time is CLOCK_MONOTONIC microseconds, the one clock all processes on the machine share.
 */

/** One handler run, in the order the runs started. */
export interface HandlerRun {
  readonly id: string;
  /** The job's group, '' for the default group. */
  readonly group: string;
  readonly startUs: number;
  /** null when the handler had not returned when the worker closed. */
  readonly endUs: number | null;
}

export interface GroupLedger {
  readonly runs: HandlerRun[];
  /** Sum of the payloads' `pad.length` the handlers read. */
  readonly payloadChars: number;
  readonly errors: number;
  readonly firstError?: string;
}

/** The monotonic clock of every process of the phase, microseconds. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** A run and the process (the index of its ledger) that ran it. */
export interface MergedRun extends HandlerRun {
  readonly process: number;
}

/** The runs of several ledgers (processes) in one list, ordered by start. */
export function mergeRuns(ledgers: readonly GroupLedger[]): MergedRun[] {
  return ledgers.flatMap((ledger, process) => ledger.runs.map(run => ({ ...run, process }))).sort((a, b) => a.startUs - b.startUs);
}

/** Runs by group. */
export function runsByGroup<R extends HandlerRun>(runs: readonly R[]): Map<string, R[]> {
  const out = new Map<string, R[]>();
  for (const run of runs) {
    const list = out.get(run.group);
    if (list) list.push(run);
    else out.set(run.group, [run]);
  }
  return out;
}

/** The most of `runs` running at once (a run that had not ended counts as running to the end). */
export function mostAtOnce(runs: readonly HandlerRun[]): number {
  const events: [number, number][] = [];
  for (const run of runs) {
    events.push([run.startUs, 1]);
    if (run.endUs !== null) events.push([run.endUs, -1]);
  }
  // An end and a start at the same microsecond: the end first (the slot was free).
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, step] of events) {
    now += step;
    most = Math.max(most, now);
  }
  return most;
}

/** The most of `times` in any window [t, t + windowUs) (windows opening at each time: the worst ones). */
export function busiestWindow(times: readonly number[], windowUs: number): number {
  return busiestWindowTimes(times, windowUs).length;
}

/** The times inside the busiest window [t, t + windowUs), ascending (the earliest such window). */
export function busiestWindowTimes(times: readonly number[], windowUs: number): number[] {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && (sorted[j] as number) < (sorted[i] as number) + windowUs) j++;
    if (j - i > most) {
      most = j - i;
      from = i;
    }
  }
  return sorted.slice(from, from + most);
}

/** One group's part of the fairness window. */
export interface GroupShare {
  readonly group: string;
  readonly backlog: number;
  /** Its handler starts inside the window. */
  readonly starts: number;
  /** Whether it still had a job not yet started when the window closed. */
  readonly hadWorkThroughout: boolean;
  /** starts / the equal share; null for a group that ran out (not judged). */
  readonly ofEqualShare: number | null;
}

/**
 * Each group's starts in [fromUs, toUs) against an equal share. The equal share is the total of
 * the starts of the groups that had work during the whole window divided by how many they are: a
 * group that ran out of jobs inside the window took less through no unfairness, so it is left out
 * of both the total and the count, and gets no ratio. The window opens at the first start, so no
 * group had started anything before it: a group had work throughout when its starts up to the end
 * of the window are fewer than its backlog.
 */
export function equalShares(
  runs: readonly HandlerRun[],
  backlogs: ReadonlyMap<string, number>,
  fromUs: number,
  toUs: number,
): GroupShare[] {
  const inWindow = new Map<string, number>();
  for (const run of runs) {
    if (run.startUs >= fromUs && run.startUs < toUs) inWindow.set(run.group, (inWindow.get(run.group) ?? 0) + 1);
  }
  const counted = [...backlogs].map(([group, backlog]) => {
    const starts = inWindow.get(group) ?? 0;
    return { group, backlog, starts, hadWorkThroughout: starts < backlog };
  });
  const judged = counted.filter(share => share.hadWorkThroughout);
  const equal = judged.reduce((sum, share) => sum + share.starts, 0) / judged.length;
  return counted.map(share => ({ ...share, ofEqualShare: share.hadWorkThroughout ? share.starts / equal : null }));
}

/** Whether runs ordered by start are the ids in `order`, and whether each started after the one before it ended. */
export function orderOf(
  runs: readonly HandlerRun[],
  order: readonly string[],
): { inOrder: boolean; noOverlap: boolean; firstOutOfOrder?: string } {
  const sorted = [...runs].sort((a, b) => a.startUs - b.startUs);
  let inOrder = sorted.length === order.length;
  let firstOutOfOrder: string | undefined;
  let noOverlap = true;
  for (let k = 0; k < sorted.length; k++) {
    const run = sorted[k] as HandlerRun;
    if (run.id !== order[k] || (k > 0 && run.startUs === (sorted[k - 1] as HandlerRun).startUs)) {
      // Two starts in one microsecond leave the order unproven: counted as out of order.
      inOrder = false;
      firstOutOfOrder ??= `position ${k}: ${run.id}, expected ${order[k] ?? '(none)'}`;
    }
    const previous = sorted[k - 1];
    if (previous && (previous.endUs === null || run.startUs < previous.endUs)) noOverlap = false;
  }
  return { inOrder, noOverlap, ...(firstOutOfOrder === undefined ? {} : { firstOutOfOrder }) };
}
