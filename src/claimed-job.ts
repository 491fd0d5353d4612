import type { Job } from './types.js';

/**
 * The `Job` a handler receives. Its AbortSignal is made only when a handler asks for it: most
 * handlers never do, and an AbortController per job is a measurable share of a worker's CPU.
 */
export class ClaimedJob<T> implements Job<T> {
  readonly id!: string;
  readonly queue!: string;
  readonly payload!: T;
  readonly dueAt!: number;
  readonly attempt!: number;
  readonly maxAttempts!: number;
  #controller: AbortController | undefined;
  #abortReason: unknown;

  constructor(fields: Omit<Job<T>, 'signal'>) {
    Object.assign(this, fields);
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Aborts the signal (now, or as soon as it is asked for). The first reason wins. */
  abort(reason: Error): void {
    if (this.#abortReason !== undefined) return;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }
}
