/** The bench driver for sandglass, through its public API only. */
import { Queue, Worker } from '../../src/index.js';
import type { LocalRedis } from '../../src/deploy/local-redis.js';
import { PAYLOAD, type Driver, type Payload, type RunningWorker, type WorkerSpec } from './types.js';

export function sandglassDriver(server: LocalRedis): Driver {
  const queues = new Map<string, Queue<Payload>>();
  const queueOf = (name: string): Queue<Payload> => {
    let queue = queues.get(name);
    if (!queue) {
      queue = new Queue<Payload>(name, { connection: server.url });
      queues.set(name, queue);
    }
    return queue;
  };

  return {
    library: 'sandglass',
    async addJobs(queue, count, delayMs, chunk) {
      const target = queueOf(queue);
      for (let done = 0; done < count; done += chunk) {
        const size = Math.min(chunk, count - done);
        await target.addBulk(Array.from({ length: size }, () => ({ payload: PAYLOAD, delay: delayMs })));
      }
    },
    async addJobsWithDelays(queue, delaysMs, chunk) {
      const target = queueOf(queue);
      for (let done = 0; done < delaysMs.length; done += chunk) {
        await target.addBulk(delaysMs.slice(done, done + chunk).map(delay => ({ payload: PAYLOAD, delay })));
      }
    },
    async countWaiting(queue) {
      const stats = await queueOf(queue).stats();
      return stats.delayed + stats.ready;
    },
    startWorker: (queue, spec) => startWorker(server.url, queue, spec),
    async close() {
      await Promise.all([...queues.values()].map(queue => queue.close()));
      queues.clear();
    },
  };
}

async function startWorker(url: string, queue: string, spec: WorkerSpec): Promise<RunningWorker> {
  const options = { connection: url, concurrency: spec.concurrency };
  const onStart = spec.onStart;
  // The handlers are async no-ops (plus a timestamp when lateness is measured), as for BullMQ.
  const worker =
    spec.batchSize === undefined
      ? new Worker<Payload>(queue, async job => onStart?.(job.dueAt, Date.now()), options)
      : new Worker<Payload>(
          queue,
          async jobs => {
            const startedAt = Date.now();
            if (onStart) for (const job of jobs) onStart(job.dueAt, startedAt);
          },
          { ...options, batch: { size: spec.batchSize } },
        );
  worker.on('completed', () => spec.onCompleted());
  worker.on('error', error => spec.onError(error));
  await worker.waitUntilReady();
  return { close: () => worker.close() };
}
