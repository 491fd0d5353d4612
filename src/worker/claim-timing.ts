/**
 * When the claim loop claims from a partition next: what a wake-up or a freed limiter slot makes
 * due, when a queue's limits hold its claims back, the next due time the loop sleeps until (server
 * clock), and the one timer that wakes it then.
 */
import type { QueueLimiter } from '../flow/limiter.js';
import type { ClaimSource } from './claim-source.js';

/** What the timing reads of the claim loop's host: the jobs its free handler slots can start now (ClaimHost.idle). */
export interface IdleHandlers {
  idle(): number;
}

/** A wake-up of the source's partition: a job due at `dueAt` (server ms; NaN: look now) was added or moved. */
export function heardWake(source: ClaimSource, dueAt: number): void {
  const at = Number.isNaN(dueAt) ? 0 : dueAt;
  source.nextAt = Math.min(source.nextAt, at);
  source.heardAt = Math.min(source.heardAt, at);
}

/** A slot of a full concurrency limit freed (or tokens came back): the partitions it refused are due again. */
export function slotFreed(sources: readonly ClaimSource[], limiter: QueueLimiter): void {
  limiter.slotFreed();
  for (const source of sources) {
    if (source.limiter !== limiter || !source.limitBlocked) continue;
    source.limitBlocked = false;
    source.nextAt = Math.min(source.nextAt, source.heardAt, 0);
  }
}

/**
 * Whether the queue's limits hold a claim of the source back now: a limited queue claims one call
 * at a time and only for free handler slots (the finished job or the claim's reply pumps again),
 * and none of its partitions before the limiter has a token (the timer wakes for it, see nextClaimAt).
 */
export function limitHolds(source: ClaimSource, now: number, host: IdleHandlers): boolean {
  return limitAwaitsEvent(source, host) || (source.limiter.active && source.unanswered.length === 0 && now < source.limiter.blockedUntil);
}

/**
 * Whether a limited queue's claim waits for an event, not a time: its claim's reply or a finished
 * handler (both pump again). A resend waits for neither free handlers nor a token: it brings back
 * jobs already taken, under the tokens its first send held.
 */
export function limitAwaitsEvent(source: ClaimSource, host: IdleHandlers): boolean {
  const { limiter } = source;
  return limiter.active && (limiter.busy || (source.unanswered.length === 0 && host.idle() <= 0));
}

/** When the source may claim next: its due time, or later while the queue's limiter has no token (a resend: its due time). */
export function claimableAt(source: ClaimSource): number {
  const { limiter } = source;
  return limiter.active && source.unanswered.length === 0 ? Math.max(source.nextAt, limiter.blockedUntil) : source.nextAt;
}

function anyInFlight(sources: readonly ClaimSource[]): boolean {
  for (const source of sources) if (source.inFlight > 0) return true;
  return false;
}

/**
 * The earliest time (server ms) a partition may be claimed from that no event will look at first,
 * and `latest` if none is earlier. `underPriority`: the worker shares claims between queues (weights
 * or strictPriority).
 */
export function nextClaimAt(
  sources: readonly ClaimSource[],
  now: number,
  latest: number,
  underPriority: boolean,
  host: IdleHandlers,
): number {
  let next = latest;
  // A partition with a claim in flight is looked at again when the reply arrives.
  // Under priorities, a due partition may be held back for another queue's claim in flight
  // (weights, strictPriority): that claim's reply looks again, a timer would spin until then.
  const heldBackUntil = underPriority && anyInFlight(sources) ? now : Number.NEGATIVE_INFINITY;
  for (const source of sources) {
    if (source.inFlight > 0 || limitAwaitsEvent(source, host)) continue;
    const at = claimableAt(source);
    if (at > heldBackUntil) next = Math.min(next, at);
  }
  return next;
}

/** How much earlier than wanted an armed timer may fire and still be kept (ClaimTimer.arm). */
const EARLY_KEPT_MAX_MS = 20;

/** The claim loop's one timer: it pumps the loop at the next due time. */
export class ClaimTimer {
  readonly #clock: () => number;
  readonly #fire: () => void;
  #timer: NodeJS.Timeout | undefined;
  /** Local time the armed timer fires at. */
  #timerAt = 0;

  /** `clock`: local ms (ClaimLoopOptions.clock); `fire`: what the timer runs when it fires. */
  constructor(clock: () => number, fire: () => void) {
    this.#clock = clock;
    this.#fire = fire;
  }

  /**
   * Fires in `delayMs` instead of when it was armed for. An armed timer that fires at about the same
   * moment stays: within a millisecond, or earlier by at most an eighth of the delay and at most
   * EARLY_KEPT_MAX_MS.
   */
  arm(delayMs: number): void {
    const fireAt = this.#clock() + delayMs;
    // Called after every job, mostly to push the safety interval's timer out by the time since the
    // last job: re-arming it each millisecond costs a clearTimeout and a setTimeout each time. A
    // timer that fires a little early only pumps once more (and arms itself again); one that fires
    // late would hold a due partition back, so that one is always re-armed.
    // (An idle worker's safety interval is not shortened by an eighth: each early fire is a claim.)
    if (this.#timer && this.#timerAt <= fireAt + 1 && this.#timerAt >= fireAt - Math.max(1, Math.min(delayMs / 8, EARLY_KEPT_MAX_MS)))
      return;
    clearTimeout(this.#timer);
    this.#timerAt = fireAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#fire();
    }, delayMs);
  }

  /** Fires no more (until armed again). */
  clear(): void {
    clearTimeout(this.#timer);
  }
}
