/**
 * Type-level tests, checked by `npm run typecheck` (tsc over test/): each `@ts-expect-error` line
 * must fail to compile, and each plain line must compile. Never run.
 */
import { PullConsumer, Queue, Worker, type Duration, type Job } from '../../src/index.js';

declare const queue: Queue<{ n: number }>;
const connection = 'redis://127.0.0.1:6379';

export function durations(): void {
  const ok: Duration[] = [0, 1500, '1500', '250ms', '30s', '30m', '1h30m', '1h 30m', '1d2h3m', '1.5s', '5d', '2w'];
  void ok;
  // @ts-expect-error a unit the parser does not know
  void queue.add({ n: 1 }, { delay: '30 minutes' });
  // @ts-expect-error not a duration
  void queue.add({ n: 1 }, { delay: 'soon' });
  void queue.add({ n: 1 }, { delay: '30m', id: 'a' });
}

export function exclusiveDueTimes(): void {
  void queue.add({ n: 1 });
  void queue.add({ n: 1 }, {});
  void queue.add({ n: 1 }, { at: new Date() });
  // @ts-expect-error delay and at together
  void queue.add({ n: 1 }, { delay: 5, at: Date.now() });
  // @ts-expect-error delay and at together, in a bulk entry
  void queue.addBulk([{ payload: { n: 1 }, delay: 5, at: 6 }]);
  // @ts-expect-error ifExists is an argument of the whole call, not of an entry
  void queue.addBulk([{ payload: { n: 1 }, ifExists: 'replace' }]);
  void queue.addBulk([{ payload: { n: 1 }, delay: '5s' }], 'replace');
  void queue.reschedule('id', { delay: '5m' });
  void queue.reschedule('id', { at: 5 });
  // @ts-expect-error a reschedule needs a due time
  void queue.reschedule('id', {});
  // @ts-expect-error not both
  void queue.reschedule('id', { delay: 5, at: 5 });
}

export function unknownOptions(): void {
  // @ts-expect-error dealy is not an option
  void queue.add({ n: 1 }, { dealy: 5_000 });
  // @ts-expect-error offset is gone: page with a cursor
  void queue.list('dead', { offset: 5 });
  // @ts-expect-error unknown PullConsumer option
  void new PullConsumer('q', { connection, partition: 2 });
}

export function workerOverloads(): void {
  const single = new Worker<{ n: number }>('q', async (job: Job<{ n: number }>) => void job.payload.n, { connection, concurrency: 5 });
  const batch = new Worker<{ n: number }>('q', async jobs => void jobs.map(job => job.payload.n), { connection, batch: { size: 10 } });
  void single;
  void batch;
  // @ts-expect-error misspelled option (the error names `concurency`, not BatchProcessor)
  void new Worker('q', async job => void job.payload, { connection, concurency: 5 });
}
