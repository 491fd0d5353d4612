/**
 * How a Worker that serves several queues divides its claims between them when more than one has
 * due work (Asynq's model): by weight, or in strict order. The claim loop asks this module which
 * queue each claim goes to; it never looks at Redis.
 */

/** The resolved `weights` (one per queue, in the order of the worker's queue list) or `strictPriority`. */
export type QueuePriority = { readonly weights: readonly number[] } | { readonly strict: true };

/** What the shares need to know of a partition (the claim loop's ClaimSource). */
export interface PartitionState {
  /** When to claim from the partition next, server ms: at or before now while it has due work. */
  nextAt: number;
  inFlight: number;
  /** Claims in flight past the claim loop's patience (the partition's node slow or away). */
  waitedOut: number;
  lastFull: boolean;
}

/**
 * Whether a claim may be sent to the partition now: it is due, has no claim in flight (two while its
 * claims come back full) and none that hung.
 */
export function canClaim(source: PartitionState, now: number): boolean {
  return source.nextAt <= now && source.waitedOut === 0 && source.inFlight < (source.lastFull ? 2 : 1);
}

/**
 * One queue's partitions (the range `start` to `end` of the claim loop's sources: it adds each
 * queue's in turn) and its standing in the shares. The loop without priorities uses one group for
 * all partitions.
 */
export interface QueueGroup {
  readonly start: number;
  readonly end: number;
  readonly weight: number;
  /** The partition the group's claims start from next (they take turns). */
  cursor: number;
  /**
   * Handler calls' worth claimed so far, divided by the weight (stride scheduling's "pass"): the
   * shares hold when the due queues' passes stay level. Charged when a claim is sent, refunded for
   * the jobs it did not bring.
   */
  pass: number;
  /** Had nothing due at the last round: it rejoins at the others' level instead of banking the rounds it sat out. */
  idle: boolean;
  /** Per round: whether any partition of the queue is due. */
  due: boolean;
  /** Per round: handler calls' worth to claim from the queue. */
  share: number;
  /** Per round, while the shares are computed: whether the pass is below the level. */
  filling: boolean;
  /** Per round, while the shares are computed: the fraction of the share that rounding left out. */
  fraction: number;
}

export function newGroup(start: number, end: number, weight: number): QueueGroup {
  return { start, end, weight, cursor: 0, pass: 0, idle: true, due: false, share: 0, filling: false, fraction: 0 };
}

/**
 * Splits a round of `units` handler calls' worth of claims between the groups marked `due`, by
 * weight, into whole `share`s that add up to `units`, and returns false when no group is due.
 *
 * Water-filling of the passes: the due queues' passes are raised to one level, the lowest first, so
 * a queue that got less than its share of an earlier round (it could not be sent) gets it back in
 * this one, and the fractions a round rounds away are carried in the passes. A queue that
 * had nothing due rejoins at the level of the others (all that wake together start level): an idle
 * queue banks no share, so it cannot crowd the others out with a burst when it wakes.
 */
export function splitRound(groups: readonly QueueGroup[], units: number): boolean {
  let staying = Number.POSITIVE_INFINITY;
  let waking = Number.NEGATIVE_INFINITY;
  for (const group of groups) {
    if (!group.due) continue;
    if (group.idle) waking = Math.max(waking, group.pass);
    else staying = Math.min(staying, group.pass);
  }
  if (waking === Number.NEGATIVE_INFINITY && staying === Number.POSITIVE_INFINITY) {
    for (const group of groups) group.idle = true;
    return false;
  }
  const rejoinAt = staying === Number.POSITIVE_INFINITY ? waking : staying;
  for (const group of groups) {
    group.share = 0;
    group.filling = group.due;
    if (!group.due) {
      group.idle = true;
    } else if (group.idle) {
      group.idle = false;
      group.pass = Math.max(group.pass, rejoinAt);
    }
  }
  // The level L with sum(weight * (L - pass)) = units over the groups below it. L is above the
  // weighted average pass of those groups, so the lowest one always stays: at most one pass per group.
  let level = 0;
  for (let changed = true; changed;) {
    changed = false;
    let weights = 0;
    let weighted = 0;
    for (const group of groups) {
      if (!group.filling) continue;
      weights += group.weight;
      weighted += group.weight * group.pass;
    }
    level = (units + weighted) / weights;
    for (const group of groups) {
      if (group.filling && group.pass >= level) {
        group.filling = false;
        changed = true;
      }
    }
  }
  // Whole handler calls: the integer parts, then what is left to the largest fractions.
  let left = units;
  for (const group of groups) {
    if (!group.filling) continue;
    const exact = group.weight * (level - group.pass);
    group.share = Math.floor(exact);
    group.fraction = exact - group.share;
    left -= group.share;
  }
  for (; left > 0; left--) {
    let best: QueueGroup | undefined;
    for (const group of groups) if (group.filling && (best === undefined || group.fraction > best.fraction)) best = group;
    if (best === undefined) break;
    best.share += 1;
    best.filling = false;
  }
  return true;
}
