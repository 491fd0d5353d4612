/** Admin routes: queues and their counts, jobs by state, the due timeline, activity, dead letters, pause. */
import { listQueues, type JobState } from '../../index.js';
import { params, type Handlers, type ServiceContext } from '../context.js';
import { mayUseQueue, OPEN_ACCESS } from '../tokens.js';

const DEFAULT_BOUNDS_MS = [60_000, 3_600_000, 86_400_000];
/** Queues read at once when listing them all. */
const LIST_CONCURRENCY = 32;

/** Maps `items` through `run`, at most `limit` at a time, keeping the order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await run(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

export function adminRoutes({ connection, prefix, pool, activity, logger }: ServiceContext): Handlers {
  return {
    async listQueues(request) {
      // Only the queues the token may use (its queue patterns): the others are not even named.
      const access = request.access ?? OPEN_ACCESS;
      const names = (await listQueues({ connection, prefix, logger })).filter(name => mayUseQueue(access, name));
      const queues = await mapLimit(names, LIST_CONCURRENCY, async name => ({
        name,
        stats: await pool.queue(name, queue => queue.stats()),
      }));
      return { queues };
    },

    async getQueue(request) {
      const name = params(request).queue;
      const [stats, counters] = await pool.queue(name, queue => Promise.all([queue.stats(), queue.counters()]));
      return { name, stats, counters };
    },

    async listJobs(request) {
      const query = request.query as { state: JobState; limit?: string; cursor?: string };
      const options = { limit: query.limit === undefined ? undefined : Number(query.limit), cursor: query.cursor };
      return pool.queue(params(request).queue, queue => queue.list(query.state, options));
    },

    async getTimeline(request) {
      const { bounds } = request.query as { bounds?: string };
      const boundsMs = bounds === undefined ? DEFAULT_BOUNDS_MS : bounds.split(',').map(Number);
      return pool.queue(params(request).queue, queue => queue.dueHistogram(boundsMs));
    },

    async getActivity(request) {
      return { windowMs: activity.windowMs, stepMs: activity.stepMs, points: activity.points(params(request).queue) };
    },

    async retryDead(request) {
      const { ids } = request.body as { ids?: string[] };
      const moved = await pool.queue(params(request).queue, queue => queue.retryDead(ids));
      return { moved };
    },

    async purgeDead(request) {
      const deleted = await pool.queue(params(request).queue, queue => queue.purgeDead());
      return { deleted };
    },

    async pauseQueue(request) {
      const { create } = request.body as { create?: boolean };
      await pool.queue(params(request).queue, queue => queue.pause({ create }));
      return { paused: true };
    },

    async resumeQueue(request) {
      await pool.queue(params(request).queue, queue => queue.resume());
      return { paused: false };
    },
  };
}
