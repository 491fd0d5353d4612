import { ValidationError } from '../core/errors.js';
import { describe, toDelayMs } from '../core/validate.js';
import type { VirtualClockServer } from '../store/redis/virtual-clock.js';
import type { Duration } from '../core/types.js';

/** A moment for {@link VirtualClock.set}: a Date, epoch milliseconds, or an ISO 8601 text such as `'2027-03-28T00:59:00Z'`. */
export type Instant = Date | number | string;

/** Epoch ms of an {@link Instant}, or a ValidationError that names `name`. */
export function toInstantMs(value: Instant, name: string): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new ValidationError(`Expected \`${name}\` to be a Date, epoch milliseconds or an ISO 8601 text, got ${describe(value)}`);
  }
  return Math.floor(ms);
}

/**
 * The test environment's clock: "now" for every script on the environment's Redis (due times,
 * leases, backoff, deadlines, retention, schedules' ticks, limits' windows) is the server's own
 * time plus this clock's offset. It runs on at real speed between moves, and moves forward only:
 * going back would hand out a lease's or a window's time twice, which no real clock does.
 */
export class VirtualClock {
  readonly #server: VirtualClockServer;
  readonly #afterMove: () => Promise<void>;
  #offsetMs: number;

  /** @internal Made by createTestEnvironment. */
  constructor(server: VirtualClockServer, offsetMs: number, afterMove: () => Promise<void>) {
    this.#server = server;
    this.#offsetMs = offsetMs;
    this.#afterMove = afterMove;
  }

  /** Now on the virtual clock, in epoch ms. */
  now(): number {
    return Date.now() + this.#offsetMs;
  }

  /** How far the virtual clock is ahead of the real one (ms; negative when the environment started in the past). */
  get offsetMs(): number {
    return this.#offsetMs;
  }

  /**
   * Moves the clock forward by `duration` (ms or a text such as `'29m'`, `'30d'`), then wakes the
   * workers on the environment's Redis, so that what fell due runs now. A running handler whose
   * lease the move passed loses it, as a frozen process would.
   */
  async advance(duration: Duration): Promise<void> {
    const ms = toDelayMs(duration, 'advance');
    await this.#move(this.#offsetMs + ms);
  }

  /** Moves the clock forward to `at` (a Date, epoch ms, or an ISO text), then wakes the workers; never back. */
  async set(at: Instant): Promise<void> {
    const target = toInstantMs(at, 'set');
    const now = this.now();
    if (target < now) {
      throw new ValidationError(
        `The virtual clock moves forward only: ${new Date(target).toISOString()} is before its now, ${new Date(now).toISOString()} (start an environment with \`now\` to begin in the past)`,
      );
    }
    await this.#move(this.#offsetMs + (target - now));
  }

  async #move(offsetMs: number): Promise<void> {
    this.#offsetMs = offsetMs;
    await this.#server.setOffset(offsetMs);
    await this.#afterMove();
  }
}
