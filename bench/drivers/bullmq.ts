/**
 * The bench driver for BullMQ, configured the way its documentation recommends for production:
 * `maxRetriesPerRequest: null` on worker connections, and `removeOnComplete: true` so that, like
 * sandglass, it keeps no record of completed jobs (keeping them would slow it down and grow memory).
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { LocalRedis } from '../../src/deploy/local-redis.js';
import { PAYLOAD, type Driver, type Payload, type RunningWorker, type WorkerSpec } from './types.js';

export function bullmqDriver(server: LocalRedis): Driver {
  const connection: ConnectionOptions = { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null };
  const queues = new Map<string, Queue<Payload>>();
  const queueOf = (name: string): Queue<Payload> => {
    let queue = queues.get(name);
    if (!queue) {
      queue = new Queue<Payload>(name, { connection });
      queue.on('error', () => undefined); // connection errors surface as rejected calls
      queues.set(name, queue);
    }
    return queue;
  };

  return {
    library: 'bullmq',
    async addJobs(queue, count, delayMs, chunk) {
      const target = queueOf(queue);
      const opts = { delay: delayMs, removeOnComplete: true };
      for (let done = 0; done < count; done += chunk) {
        const size = Math.min(chunk, count - done);
        await target.addBulk(Array.from({ length: size }, () => ({ name: 'job', data: PAYLOAD, opts })));
      }
    },
    async addJobsWithDelays(queue, delaysMs, chunk) {
      const target = queueOf(queue);
      for (let done = 0; done < delaysMs.length; done += chunk) {
        await target.addBulk(
          delaysMs.slice(done, done + chunk).map(delay => ({ name: 'job', data: PAYLOAD, opts: { delay, removeOnComplete: true } })),
        );
      }
    },
    async countWaiting(queue) {
      const counts = await queueOf(queue).getJobCounts('delayed', 'wait', 'prioritized');
      return Object.values(counts).reduce((sum, n) => sum + n, 0);
    },
    startWorker: (queue, spec) => startWorker(connection, queue, spec),
    async close() {
      await Promise.all([...queues.values()].map(queue => queue.close()));
      queues.clear();
    },
  };
}

async function startWorker(connection: ConnectionOptions, queue: string, spec: WorkerSpec): Promise<RunningWorker> {
  if (spec.batchSize !== undefined) throw new Error('BullMQ (open source) has no batch handler');
  const onStart = spec.onStart;
  // BullMQ's due time is the producer's timestamp plus the delay; both clocks are this machine's.
  const worker = new Worker<Payload>(queue, async job => onStart?.(job.timestamp + (job.opts.delay ?? 0), Date.now()), {
    connection,
    concurrency: spec.concurrency,
  });
  worker.on('completed', () => spec.onCompleted());
  worker.on('error', error => spec.onError(error));
  await worker.waitUntilReady();
  return { close: () => worker.close() };
}
