/**
 * Group routes (issue 20): the default limits of a queue's groups, a group's own limits, pausing a
 * group, and the page of groups with their counts. Bodies and names go to the library as the client
 * wrote them (the router has percent-decoded `{group}`): `queue.setGroupLimits`, `pauseGroup` and the
 * others judge every limit and name, and their ValidationError is the client's 400 VALIDATION. The
 * schemas check JSON types, and group names by the library's own GROUP_RULE.
 */
import type { FastifyRequest } from 'fastify';
import type { GroupLimitsInput } from '../../index.js';
import { params, type Handlers, type ServiceContext } from '../context.js';

/** The path parameters of a group's routes (decoded: `shop%2042%2Feu` is `shop 42/eu`). */
function groupParams(request: FastifyRequest): { queue: string; group: string } {
  return request.params as { queue: string; group: string };
}

export function groupRoutes({ pool }: ServiceContext): Handlers {
  return {
    async getDefaultGroupLimits(request) {
      return pool.queue(params(request).queue, queue => queue.getGroupLimits());
    },

    async setDefaultGroupLimits(request) {
      return pool.queue(params(request).queue, queue => queue.setGroupLimits(request.body as GroupLimitsInput));
    },

    async getGroupLimits(request) {
      const { queue: name, group } = groupParams(request);
      return pool.queue(name, queue => queue.getGroupLimits({ group }));
    },

    async setGroupLimits(request) {
      const { queue: name, group } = groupParams(request);
      return pool.queue(name, queue => queue.setGroupLimits(request.body as GroupLimitsInput, { group }));
    },

    async clearGroupLimits(request) {
      const { queue: name, group } = groupParams(request);
      return pool.queue(name, async queue => {
        await queue.clearGroupLimits({ group });
        // What the group follows now: the default (answered so the client need not ask again).
        return queue.getGroupLimits({ group });
      });
    },

    async pauseGroup(request) {
      const { queue: name, group } = groupParams(request);
      await pool.queue(name, queue => queue.pauseGroup(group));
      return { paused: true };
    },

    async resumeGroup(request) {
      const { queue: name, group } = groupParams(request);
      await pool.queue(name, queue => queue.resumeGroup(group));
      return { paused: false };
    },

    async listGroups(request) {
      const query = request.query as { limit?: string; cursor?: string };
      // Digits only (the schema); the library judges the range.
      const options = { limit: query.limit === undefined ? undefined : Number(query.limit), cursor: query.cursor };
      return pool.queue(params(request).queue, queue => queue.listGroups(options));
    },
  };
}
