/** Timed building blocks shared by the phases: add throughput, drain throughput, warm-up. */
import type { Driver } from './drivers/types.js';
import { FAR_FUTURE_MS } from './drivers/types.js';
import { perSecond } from './stats.js';

/**
 * Counts completions and resolves the moment a target is reached (no polling, so the end time of a
 * drain is exact); rejects when the count stops moving, so a stuck library fails its figure
 * instead of hanging the bench.
 */
export class Progress {
  #count = 0;
  #target = Number.POSITIVE_INFINITY;
  #done: (() => void) | undefined;

  get count(): number {
    return this.#count;
  }

  increment(): void {
    this.#count += 1;
    if (this.#count >= this.#target) this.#done?.();
  }

  reach(target: number, stallMs: number): Promise<void> {
    if (this.#count >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      let seen = this.#count;
      let movedAt = Date.now();
      const watchdog = setInterval(() => {
        if (this.#count !== seen) {
          seen = this.#count;
          movedAt = Date.now();
        } else if (Date.now() - movedAt > stallMs) {
          clearInterval(watchdog);
          this.#finish();
          reject(new Error(`no progress for ${stallMs} ms: ${this.#count} of ${target} jobs completed`));
        }
      }, 250);
      this.#target = target;
      this.#done = () => {
        clearInterval(watchdog);
        this.#finish();
        resolve();
      };
    });
  }

  #finish(): void {
    this.#target = Number.POSITIVE_INFINITY;
    this.#done = undefined;
  }
}

export interface DrainSpec {
  readonly concurrency: number;
  readonly batchSize?: number;
  readonly stallMs: number;
}

/** Adds jobs and returns jobs/s, after checking that every one of them was written. */
export async function timeAdd(driver: Driver, queue: string, count: number, delayMs: number, chunk: number): Promise<number> {
  const before = await driver.countWaiting(queue);
  const started = performance.now();
  await driver.addJobs(queue, count, delayMs, chunk);
  const rate = perSecond(count, performance.now() - started);
  const after = await driver.countWaiting(queue);
  if (after - before !== count)
    throw new Error(`${driver.library}: added ${count} jobs to ${queue} but ${after - before} more are waiting`);
  return rate;
}

/**
 * Starts one worker on a queue holding `count` due jobs and returns jobs/s from its start to the
 * last completion (worker start-up is inside the window, as a deployment would see it).
 */
export async function timeDrain(driver: Driver, queue: string, count: number, spec: DrainSpec): Promise<number> {
  const progress = new Progress();
  const errors: Error[] = [];
  const started = performance.now();
  const worker = await driver.startWorker(queue, {
    concurrency: spec.concurrency,
    ...(spec.batchSize === undefined ? {} : { batchSize: spec.batchSize }),
    onCompleted: () => progress.increment(),
    onError: error => errors.push(error),
  });
  try {
    await progress.reach(count, spec.stallMs).catch(error => {
      throw new Error(
        `${driver.library} drain of ${queue}: ${(error as Error).message}${errors[0] ? `; worker error: ${errors[0].message}` : ''}`,
      );
    });
    const rate = perSecond(count, performance.now() - started);
    // A drain that needed retries after Redis errors is not the figure it claims to be.
    if (errors[0])
      throw new Error(`${driver.library} drain of ${queue}: the worker reported ${errors.length} error(s), first: ${errors[0].message}`);
    return rate;
  } finally {
    await worker.close();
  }
}

/**
 * Runs a little of every code path a measurement uses (adding due and delayed jobs, claiming,
 * acking) on a throwaway queue, so that script loading, connection set-up and JIT compilation are
 * not inside any timed window.
 */
export async function warmUp(driver: Driver, jobs: number, concurrency: number, chunk: number, stallMs: number): Promise<void> {
  await driver.addJobs('warmup', Math.min(jobs, chunk), FAR_FUTURE_MS, chunk);
  await driver.addJobs('warmup-due', jobs, 0, chunk);
  await timeDrain(driver, 'warmup-due', jobs, { concurrency, stallMs });
}
