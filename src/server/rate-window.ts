/**
 * A sliding-window rate limit for one process: at most `max` starts in any window of `perMs`.
 * Not a token bucket, which lets up to 2x `max` through across a window edge: the last `max` start
 * times are kept, and a start is allowed only once the oldest of them has left the window.
 */

/** A rate: at most `max` starts in any window of `perMs` milliseconds. */
export interface Rate {
  max: number;
  perMs: number;
}

/**
 * Moves a granted start to now: call it when the request actually left (a new connection's setup
 * must not count as window time). Later only, and only while its entry is still that start.
 */
export type MarkSent = () => void;

interface Waiter {
  resolve: (markSent: MarkSent) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * Hands out starts in FIFO order. A caller that must wait is woken by one timer set to when the
 * oldest recorded start leaves the window: no polling, and no timer at all while nobody waits.
 */
export class SlidingWindow {
  readonly #max: number;
  readonly #perMs: number;
  readonly #now: () => number;
  /** A ring of the last `max` start times; `#next` is the oldest, overwritten by the next start. */
  readonly #starts: number[] = [];
  #next = 0;
  readonly #waiters: Waiter[] = [];
  #timer: NodeJS.Timeout | undefined;

  /** `now` is a monotonic clock in ms (a wall clock that steps back would stretch the window). */
  constructor(rate: Rate, now: () => number = () => performance.now()) {
    this.#max = rate.max;
    this.#perMs = rate.perMs;
    this.#now = now;
  }

  /**
   * Resolves when a start is allowed, and records it; rejects with `signal.reason` if aborted first.
   * Moving a start later (`MarkSent`) only makes the limit stricter, never looser.
   */
  acquire(signal?: AbortSignal): Promise<MarkSent> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#waiters.length === 0 && this.#waitMs() === 0) return Promise.resolve(this.#record());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: undefined };
      if (signal) {
        waiter.onAbort = () => {
          const index = this.#waiters.indexOf(waiter);
          if (index >= 0) this.#waiters.splice(index, 1);
          if (this.#waiters.length === 0) this.#clearTimer();
          reject(signal.reason);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.#waiters.push(waiter);
      this.#arm();
    });
  }

  /** Callers waiting for a start. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Milliseconds until a start is allowed (0: now). */
  #waitMs(): number {
    const oldest = this.#starts.length < this.#max ? undefined : this.#starts[this.#next];
    if (oldest === undefined) return 0;
    return Math.max(0, oldest + this.#perMs - this.#now());
  }

  #record(): MarkSent {
    const index = this.#next;
    const at = this.#now();
    this.#starts[index] = at;
    this.#next = (index + 1) % this.#max;
    return () => {
      // Overwritten already: the ring came round, so this start left the window long ago.
      if (this.#starts[index] === at) this.#starts[index] = Math.max(at, this.#now());
    };
  }

  #arm(): void {
    if (this.#timer !== undefined) return;
    // Rounded up, and checked again on waking: a timer may fire a fraction of a ms early.
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#release();
    }, Math.ceil(this.#waitMs()));
  }

  #release(): void {
    while (this.#waiters.length > 0 && this.#waitMs() === 0) {
      const waiter = this.#waiters.shift() as Waiter;
      if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve(this.#record());
    }
    if (this.#waiters.length > 0) this.#arm();
  }

  #clearTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
