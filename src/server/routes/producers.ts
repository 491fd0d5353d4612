/** Producer routes: add, bulk add, get, cancel, reschedule. */
import {
  ValidationError,
  requestTraceparent,
  type AddOptions,
  type BackoffOption,
  type Duration,
  type IfExists,
  type OnExpire,
  type When,
} from '../../index.js';
import { params, type Handlers, type ServiceContext } from '../context.js';
import { HttpError } from '../errors.js';
import { jobNotFound } from '../not-found.js';

interface JobBody {
  payload: unknown;
  // Any text up to 64 characters (the schema); the library's duration rule judges it.
  delay?: Duration;
  at?: number | string;
  id?: string;
  maxAttempts?: number;
  backoff?: BackoffOption;
  expireAfter?: Duration;
  onExpire?: OnExpire;
  // Checked by the schema with the library's GROUP_RULE (and by the library again).
  group?: string;
}

/** An instant (`at`, a schedule's `startAt`) arrives as epoch ms or an RFC 3339 string (checked by the schema). */
export function toAt(at: number | string | undefined, name = 'at'): number | undefined {
  if (typeof at !== 'string') return at;
  const ms = Date.parse(at);
  if (Number.isNaN(ms)) throw new ValidationError(`Expected \`${name}\` to be epoch ms or an RFC 3339 date-time, got '${at.slice(0, 64)}'`);
  return ms;
}

function addOptions(body: JobBody): AddOptions {
  // Both `delay` and `at` pass on as given: the library refuses the pair with its exact message.
  const { delay, at, id, maxAttempts, backoff, expireAfter, onExpire, group } = body;
  // The deadline options only when given: a job without its own deadline takes the queue's default.
  const deadline = { ...(expireAfter === undefined ? {} : { expireAfter }), ...(onExpire === undefined ? {} : { onExpire }) };
  // No group given: the option is left out, and the job joins the default group.
  return { delay, at: toAt(at), id, maxAttempts, backoff, ...deadline, ...(group === undefined ? {} : { group }) } as AddOptions;
}

export function producerRoutes({ pool }: ServiceContext): Handlers {
  return {
    async addJob(request, reply) {
      const body = request.body as JobBody & { ifExists?: IfExists };
      // The caller's trace context (a `traceparent` header) goes with the job: its handler's span joins that trace.
      const traceparent = requestTraceparent(request.headers.traceparent);
      const id = await pool.queue(params(request).queue, queue =>
        queue.add(body.payload, { ...addOptions(body), ifExists: body.ifExists, traceparent }),
      );
      return reply.code(201).send({ id });
    },

    async addJobs(request, reply) {
      const body = request.body as { jobs: JobBody[]; ifExists?: IfExists };
      const traceparent = requestTraceparent(request.headers.traceparent);
      const jobs = body.jobs.map(job => ({ payload: job.payload, ...addOptions(job), traceparent }));
      const ids = await pool.queue(params(request).queue, queue => queue.addBulk(jobs, body.ifExists));
      return reply.code(201).send({ ids });
    },

    async getJob(request) {
      const { queue: name, id } = params(request);
      const job = await pool.queue(name, queue => queue.get(id));
      if (!job) throw jobNotFound(name, id);
      return job;
    },

    async cancelJob(request) {
      const { queue: name, id } = params(request);
      const result = await pool.queue(name, queue => queue.cancel(id));
      if (result === 'not_found') throw jobNotFound(name, id);
      if (result === 'running') throw new HttpError('JOB_RUNNING', `Job ${id} is running: a consumer holds it; it was not cancelled`);
      return { result };
    },

    async rescheduleJob(request) {
      const { queue: name, id } = params(request);
      const body = request.body as { delay?: Duration; at?: number | string };
      const result = await pool.queue(name, queue => queue.reschedule(id, { delay: body.delay, at: toAt(body.at) } as When));
      if (result === 'not_found') throw jobNotFound(name, id);
      if (result === 'running') throw new HttpError('JOB_RUNNING', `Job ${id} is running: a consumer holds it; it was not rescheduled`);
      return { result };
    },
  };
}
