/**
 * Pull consumer routes (SQS-style, for any language): claim with a lease and a long poll, then
 * ack, fail or extend with the claim's fencing token.
 */
import type { PulledJob } from '../../index.js';
import { params, type Handlers, type ServiceContext } from '../context.js';
import { HttpError } from '../errors.js';

function stale(id: string): HttpError {
  return new HttpError(
    'STALE_TOKEN',
    `The token no longer holds the lease of job ${id} (it ran out and the job was claimed again, or the job was settled); nothing changed`,
  );
}

export function consumerRoutes({ pool, activity, metrics, logger, closing }: ServiceContext): Handlers {
  return {
    async claimJobs(request, reply) {
      const name = params(request).queue;
      const body = request.body as { max?: number; leaseMs?: number; waitMs?: number };
      const leaseMs = body.leaseMs ?? 30_000;
      // A long poll ends when the service closes (it answers what it has) and when the client hangs
      // up (the claim stops waiting and takes nothing).
      const shutdown = new AbortController();
      const hangUp = new AbortController();
      const onClosing = () => shutdown.abort();
      const onHangUp = () => {
        if (!reply.raw.writableEnded) {
          hangUp.abort();
          shutdown.abort();
        }
      };
      closing.addEventListener('abort', onClosing, { once: true });
      reply.raw.once('close', onHangUp);
      const waitMs = closing.aborted ? 0 : body.waitMs;
      let jobs: PulledJob<unknown>[];
      try {
        jobs = await pool.consumer(name, consumer => consumer.claim({ max: body.max, leaseMs, waitMs, signal: shutdown.signal }));
      } finally {
        closing.removeEventListener('abort', onClosing);
        reply.raw.off('close', onHangUp);
      }
      if (hangUp.signal.aborted && jobs.length > 0) {
        // Claimed in the instant the client left: nobody has them. Hand them back at once rather
        // than after the lease (the attempt counts, as it would when the lease ran out).
        await pool.consumer(name, consumer =>
          Promise.all(
            jobs.map(job =>
              consumer.fail(job.id, job.token, { retryDelayMs: 0, error: 'the HTTP client disconnected before the claim was answered' }),
            ),
          ),
        );
        logger.warn(`claim on ${name}: the client disconnected; ${jobs.length} job(s) handed back`);
        return { jobs: [] };
      }
      // Lateness on the server's clock: the claim happened at leaseUntilAt - leaseMs.
      const lateness = jobs.map(job => Math.max(0, job.leaseUntilAt - leaseMs - job.dueAt));
      if (jobs.length > 0) activity.delivered(name, lateness);
      // Lateness the queue's limit caused is reported apart from sandglass's own.
      jobs.forEach((job, i) =>
        job.heldByLimit
          ? metrics.observeLimitedLateness(name, 'pull', lateness[i] as number)
          : metrics.observeLateness(name, 'pull', lateness[i] as number),
      );
      // A schedule tick's first start, from its tick time (a caught-up tick falls due after it).
      for (const job of jobs)
        if (job.schedule && job.attempt === 1) metrics.observeTickLateness(name, 'pull', job.leaseUntilAt - leaseMs - job.schedule.tickAt);
      return { jobs };
    },

    async ackJob(request) {
      const { queue: name, id } = params(request);
      const body = request.body as { token: string; result?: unknown };
      // The handler's result, kept while the queue keeps completed jobs (setRetention); else ignored.
      const result = await pool.consumer(name, consumer => consumer.ack(id, body.token, 'result' in body ? { result: body.result } : {}));
      if (result === 'stale') throw stale(id);
      return { result };
    },

    async failJob(request) {
      const { queue: name, id } = params(request);
      const { token, ...options } = request.body as { token: string; error?: string; retryDelayMs?: number; dead?: boolean };
      const answer = await pool.consumer(name, consumer => consumer.fail(id, token, options));
      if (answer.result === 'stale') throw stale(id);
      activity.failed(name);
      return answer;
    },

    async extendLease(request) {
      const { queue: name, id } = params(request);
      const { token, leaseMs } = request.body as { token: string; leaseMs?: number };
      const answer = await pool.consumer(name, consumer => consumer.extend(id, token, leaseMs));
      if (answer.result === 'stale') throw stale(id);
      return answer;
    },
  };
}
