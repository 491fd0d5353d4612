import type { Logger } from '../core/types.js';

/** What a thrown value says about itself: an Error's stack, a string as it is, anything else as JSON. */
export function describeThrown(value: unknown): string {
  if (value instanceof Error) return value.stack ?? `${value.name}: ${value.message}`;
  if (typeof value === 'string') return value;
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    json = undefined; // a cycle or a BigInt: String() below still says something
  }
  return `a thrown ${value === null ? 'null' : typeof value}, not an Error: ${json ?? String(value)}`;
}

/** One failure the handler's code made, as the worker settled it. */
export interface FailureToReport {
  readonly queue: string;
  readonly id: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly error: unknown;
  /** When the job runs again (epoch ms), or undefined when it went to the dead letters. */
  readonly retryAt: number | undefined;
}

/**
 * Says through the worker's logger what nobody else would hear: a failure when the worker has no
 * listener for it (`failed`, or `dead` for a job that gave up), so that a handler that throws is
 * never silent by default. At most one line per kind (retry, dead) per `intervalMs`; the next line
 * counts the ones not shown, so a failing flood does not flood the log.
 */
export class UnheardFailures {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #lastAt = { retry: -Infinity, dead: -Infinity };
  readonly #notShown = { retry: 0, dead: 0 };

  constructor(logger: Logger, intervalMs = 10_000, now: () => number = Date.now) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  report(failure: FailureToReport): void {
    const kind = failure.retryAt === undefined ? 'dead' : 'retry';
    const now = this.#now();
    if (now - this.#lastAt[kind] < this.#intervalMs) {
      this.#notShown[kind] += 1;
      return;
    }
    this.#lastAt[kind] = now;
    const notShown = this.#notShown[kind];
    this.#notShown[kind] = 0;
    const what =
      kind === 'dead'
        ? `went to the dead letters after attempt ${failure.attempt} of ${failure.maxAttempts}`
        : `failed attempt ${failure.attempt} of ${failure.maxAttempts} and runs again at ${new Date(failure.retryAt as number).toISOString()}`;
    const more = notShown > 0 ? ` (${notShown} more like it in the last ${this.#intervalMs / 1000} s not shown)` : '';
    const line = `sandglass worker: job ${failure.id} of queue ${failure.queue} ${what}${more}; listen to the worker's 'failed' and 'dead' events to handle failures yourself: ${describeThrown(failure.error)}`;
    if (kind === 'dead') this.#logger.error(line);
    else this.#logger.warn(line);
  }
}
