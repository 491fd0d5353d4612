/**
 * Schedule routes (issue 9): upsert, list, get, pause, resume and delete a queue's recurring
 * schedules. The body is passed to `queue.schedule` as the user wrote it: the library's
 * resolveScheduleSpec is the one judge of a spec, and its ValidationError is the client's 400.
 */
import type { FastifyRequest } from 'fastify';
import type { ScheduleSpec } from '../../index.js';
import type { Handlers, ServiceContext } from '../context.js';
import { scheduleNotFound } from '../not-found.js';
import { toAt } from './producers.js';

/** The body of an upsert: a {@link ScheduleSpec} as JSON, with instants as epoch ms or RFC 3339 text. */
type ScheduleBody = Omit<ScheduleSpec, 'startAt' | 'endAt'> & { startAt?: number | string; endAt?: number | string };

/** The path parameters of a schedule's routes (decoded: `refund-poll%3A42` is `refund-poll:42`). */
function scheduleParams(request: FastifyRequest): { queue: string; key: string } {
  return request.params as { queue: string; key: string };
}

function toSpec(body: ScheduleBody): ScheduleSpec {
  const { startAt, endAt, ...rest } = body;
  const spec: ScheduleSpec = { ...rest };
  if (startAt !== undefined) spec.startAt = toAt(startAt, 'startAt');
  if (endAt !== undefined) spec.endAt = toAt(endAt, 'endAt');
  return spec;
}

export function scheduleRoutes({ pool }: ServiceContext): Handlers {
  return {
    async upsertSchedule(request) {
      const { queue: name, key } = scheduleParams(request);
      return pool.queue(name, queue => queue.schedule(key, toSpec(request.body as ScheduleBody)));
    },

    async listSchedules(request) {
      const schedules = await pool.queue(scheduleParams(request).queue, queue => queue.listSchedules());
      return { schedules };
    },

    async getSchedule(request) {
      const { queue: name, key } = scheduleParams(request);
      const schedule = await pool.queue(name, queue => queue.getSchedule(key));
      if (!schedule) throw scheduleNotFound(name, key);
      return schedule;
    },

    // Pause and resume of an unknown key: the library's NotFoundError, answered 404 NOT_FOUND.
    async pauseSchedule(request) {
      const { queue: name, key } = scheduleParams(request);
      return pool.queue(name, queue => queue.pauseSchedule(key));
    },

    async resumeSchedule(request) {
      const { queue: name, key } = scheduleParams(request);
      return pool.queue(name, queue => queue.resumeSchedule(key));
    },

    async deleteSchedule(request) {
      const { queue: name, key } = scheduleParams(request);
      const result = await pool.queue(name, queue => queue.unschedule(key));
      if (result === 'not_found') throw scheduleNotFound(name, key);
      return { result };
    },
  };
}
