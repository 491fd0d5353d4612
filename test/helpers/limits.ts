import { Worker, type WorkerOptions } from '../../src/index.js';
// Measures of how work started: the busiest window of starts, the most handlers at once.

/** The most starts any window of `windowMs` holds (windows start at each start: the worst ones). */
export function busiestWindow(starts: readonly number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && (sorted[j] as number) < (sorted[i] as number) + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

/**
 * How far apart in time, at most, two handler starts may lag their grants on a loaded 2-core
 * machine (seen: ~120 ms). A rate limit holds exactly on the Redis clock, where the limiter grants
 * (test/conformance/limiter-storage.ts judges that); a start comes some ms after its grant, when
 * the claim's reply reaches its process and the process gets a core, and those delays differ.
 */
export const START_SPREAD_MS = 200;

/**
 * The most starts a window of `per` measured at the handlers may hold under a rate of `max` per
 * `per`: the grants of a window START_SPREAD_MS longer. A limit kept per process, per worker or per
 * partition instead of per queue lets 2-4 times the rate through: far beyond this.
 */
export function mostStartsAtHandlers(rate: { max: number; per: number }): number {
  return rate.max + Math.ceil((rate.max * START_SPREAD_MS) / rate.per);
}

/** The most handlers running at once, from [start, end] intervals. */
export function mostOverlapping(intervals: readonly (readonly [number, number])[]): number {
  const events = intervals.flatMap(([start, end]) => [
    [start, 1],
    [end, -1],
  ]);
  // An end and a start at the same ms: the end first (the slot was free).
  events.sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number));
  let now = 0;
  let most = 0;
  for (const [, step] of events) {
    now += step as number;
    most = Math.max(most, now);
  }
  return most;
}

/** A handler's run, as a recording worker keeps it (local ms). */
export interface Run {
  id: string;
  attempt: number;
  start: number;
  end: number;
}

/**
 * A Worker whose handler takes `handlerMs` and records each run, and the messages of its `error`
 * events: what the lost-reply tests judge. Capacity 4 over a queue limit of 2 in those tests: a
 * claim asks for (and is granted) both slots, and only the limiter keeps the worker from running more.
 */
export function recordingWorker(
  name: string,
  options: WorkerOptions & { batch?: undefined },
  handlerMs = 150,
): { worker: Worker<string>; runs: Run[]; errors: string[] } {
  const runs: Run[] = [];
  const errors: string[] = [];
  const worker = new Worker<string>(
    name,
    async job => {
      const start = Date.now();
      await new Promise(resolve => setTimeout(resolve, handlerMs));
      runs.push({ id: job.id, attempt: job.attempt, start, end: Date.now() });
    },
    options,
  );
  worker.on('error', error => errors.push((error as Error).message));
  return { worker, runs, errors };
}
