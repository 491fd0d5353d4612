/**
 * Flow control routes (issue 10): a queue's limits (rate, concurrency, default deadline) and its
 * retention of completed jobs. The body goes to `queue.setLimits` / `queue.setRetention` as the
 * client wrote it: the library's validators are the one judge of a limit, and their
 * ValidationError is the client's 400 VALIDATION. The schema only checks JSON types.
 */
import type { LimitsInput, RetentionInput } from '../../index.js';
import { params, type Handlers, type ServiceContext } from '../context.js';

export function flowRoutes({ pool }: ServiceContext): Handlers {
  return {
    async getLimits(request) {
      return pool.queue(params(request).queue, queue => queue.getLimits());
    },

    async setLimits(request) {
      return pool.queue(params(request).queue, queue => queue.setLimits(request.body as LimitsInput));
    },

    async getRetention(request) {
      return pool.queue(params(request).queue, queue => queue.getRetention());
    },

    async setRetention(request) {
      return pool.queue(params(request).queue, queue => queue.setRetention(request.body as RetentionInput));
    },
  };
}
