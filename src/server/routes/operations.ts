/** Operations routes: metrics, health, readiness, the OpenAPI document and the dashboard's files. */
import { params, type Handlers, type ServiceContext } from '../context.js';
import { readDashboardFile } from '../dashboard-files.js';
import { HttpError } from '../errors.js';
import { everyQueue, mayUseQueue, OPEN_ACCESS, type Access } from '../tokens.js';

/** How long /readyz waits for Redis. */
export const READY_TIMEOUT_MS = 1_000;

export function operationRoutes({ metrics, probe, openApiJson, dashboardDir }: ServiceContext): Handlers {
  return {
    async metrics(request, reply) {
      const text = await metrics.render();
      const access = request.access ?? OPEN_ACCESS;
      return reply.type(metrics.contentType).send(everyQueue(access) ? text : onlyQueuesOf(access, text));
    },

    async healthz() {
      return { status: 'ok' };
    },

    async readyz() {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      });
      try {
        await Promise.race([probe(), timeout]);
      } catch (error) {
        throw new HttpError('NOT_READY', `Redis is not ready: ${(error as Error).message}`);
      } finally {
        clearTimeout(timer);
      }
      return { status: 'ready' };
    },

    async openapi(_request, reply) {
      return reply.type('application/json; charset=utf-8').send(openApiJson);
    },

    async dashboardIndex(_request, reply) {
      const file = await readDashboardFile(dashboardDir, 'index.html');
      return reply.type(file.contentType).header('cache-control', 'no-cache').send(file.body);
    },

    async dashboardFile(request, reply) {
      const file = await readDashboardFile(dashboardDir, params(request).file);
      return reply.type(file.contentType).header('cache-control', 'no-cache').send(file.body);
    },
  };
}

/** A `queue="..."` label of a sample line (queue names need no escaping: A-Z a-z 0-9 . _ -). */
const QUEUE_LABEL = /[{,]queue="([^"]*)"/;

/** The metrics without the samples of queues the token's patterns do not match (the service-wide ones stay). */
function onlyQueuesOf(access: Access, text: string): string {
  return text
    .split('\n')
    .filter(line => {
      if (line.startsWith('#')) return true;
      const queue = QUEUE_LABEL.exec(line)?.[1];
      return queue === undefined || mayUseQueue(access, queue);
    })
    .join('\n');
}
