/**
 * The HTTP service: a fastify instance with every route of the route table (openapi.ts), the JSON
 * body parser, the security hooks, one error format, metrics and activity. It uses the library's
 * public API only, and does not listen: `startServer` (start.ts) or a test calls `listen`.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import {
  ConnectionError,
  JOB_ID_RULE,
  listQueues,
  Queue,
  ValidationError,
  type ConnectionOption,
  type Job,
  type Logger,
} from '../index.js';
import type { Socket } from 'node:net';
import { Activity } from './activity.js';
import { answerClientError } from './client-errors.js';
import type { Handlers, ServiceContext } from './context.js';
import { flowRoutes } from './routes/flow.js';
import { groupRoutes } from './routes/groups.js';
import { infoRoutes } from './routes/info.js';
import { DEFAULT_DASHBOARD_DIR } from './dashboard-files.js';
import { HttpError, toHttpError } from './errors.js';
import { formatSchemaErrors } from './schema-errors.js';
import { installJsonParser } from './json-body.js';
import { toLibraryLogger } from './logger.js';
import { ServiceMetrics, scheduleTotals, type QueueSnapshot } from './metrics.js';
import { buildOpenApiDocument, fastifyUrl, ROUTES, routeSchema } from './openapi.js';
import { QueuePool } from './pool.js';
import { adminRoutes, mapLimit } from './routes/admin.js';
import { consumerRoutes } from './routes/consumers.js';
import { operationRoutes } from './routes/operations.js';
import { producerRoutes } from './routes/producers.js';
import { scheduleRoutes } from './routes/schedules.js';
import { applySecurityHeaders, installSecurity } from './security.js';
import { adminEntry, TokenSet } from './tokens.js';
import type { WebhookDelivery } from './webhooks.js';

/** Options of {@link buildApp}. */
export interface AppOptions {
  /** Where Redis is: a URL, ioredis options or an ioredis instance (never closed by the app). */
  connection: ConnectionOption;
  /** @default 'sg' */
  prefix?: string;
  /** Partition count of the queues the service creates (adds, consumers); existing queues keep theirs. Default: 1. */
  partitions?: number;
  /**
   * Bearer token required on every route but /healthz, /readyz and the dashboard's files: the
   * token named `admin`, with every scope. Without it (and without `tokens`), only loopback Host names are served.
   */
  token?: string;
  /**
   * Named tokens with scopes and queue patterns (tokens.ts), instead of `token`; the set may be
   * replaced while the service runs (`sandglass serve` does on SIGHUP).
   */
  tokens?: TokenSet;
  /** Largest request body in bytes, refused before parsing. @default 1048576 (1 MiB) */
  bodyLimit?: number;
  /** A pino logger (or any fastify-compatible one). Default: no logs. */
  logger?: FastifyBaseLogger;
  /** Folder of the dashboard's files. Default: `dashboard/` of the repository. */
  dashboardDir?: string;
  /** Webhook deliveries whose events feed /activity and the lateness histogram. */
  webhooks?: WebhookDelivery;
  /**
   * Longest time to receive a whole request (headers and body); a request still incomplete then,
   * e.g. a body shorter than its Content-Length, is answered 408 REQUEST_TIMEOUT. Checked every
   * second. Answers being prepared (long polls) are not limited by it.
   * @default 30000
   */
  requestTimeoutMs?: number;
  /**
   * Why Redis is known to be down right now (the service's private redis-server died and is being
   * restarted), else undefined. While it says so, /readyz and every route that needs Redis answer
   * 503 at once instead of waiting for Redis calls to time out.
   */
  redisDown?: () => string | undefined;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Longest path parameter: a longest job id of 4-byte characters, percent-encoded (2,400). */
const MAX_PARAM_LENGTH = JOB_ID_RULE.maxLength * 4 * 3;
/** A queue that is never added to: /readyz reads its counts to see that Redis runs scripts. */
const PROBE_QUEUE = 'sandglass-readyz';

/** Builds the service (routes registered, not listening). Close it with `app.close()`. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const prefix = options.prefix ?? 'sg';
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit < 1_024)
    throw new ValidationError(`Expected \`bodyLimit\` to be an integer >= 1024 bytes, got ${bodyLimit}`);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs < 100)
    throw new ValidationError(`Expected \`requestTimeoutMs\` to be an integer >= 100, got ${requestTimeoutMs}`);
  if (options.token !== undefined && options.token.length === 0) throw new ValidationError('Expected `token` to be a non-empty string');
  if (options.token !== undefined && options.tokens !== undefined) throw new ValidationError('Give `token` or `tokens`, not both');
  const tokens = options.tokens ?? (options.token === undefined ? undefined : new TokenSet([adminEntry(options.token)]));

  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    // One debug line per answer (onResponse below) instead of fastify's two info lines per request.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: false,
    // Requests Node's parser refuses (bad Content-Length, headers over 16 KiB, a request cut short or
    // too slow) are answered in the API's error format too; Node checks the timeouts every second.
    requestTimeout: requestTimeoutMs,
    http: { requestTimeout: requestTimeoutMs, headersTimeout: requestTimeoutMs, connectionsCheckingInterval: 1_000 },
    clientErrorHandler(this: FastifyInstance, error: Error, socket: Socket) {
      answerClientError(error, socket, requestTimeoutMs, this.log);
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Bad types are refused, never coerced; unknown fields are refused, never dropped silently.
    // verbose: a violation carries its schema and value, so that a refused queue name or id is told in the library's words.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, allowUnionTypes: true, verbose: true } },
    schemaErrorFormatter: formatSchemaErrors,
    // Errors met before routing (a bad URL) skip the hooks: the headers are set here.
    frameworkErrors: (error, _request, reply) => {
      const http = toHttpError(error);
      applySecurityHeaders(reply as FastifyReply);
      void (reply as FastifyReply).code(http.statusCode).send(http.toJSON());
    },
  }) as unknown as FastifyInstance;

  const logger = toLibraryLogger(app.log);
  const pool = new QueuePool({ connection: options.connection, prefix, logger, partitions: options.partitions });
  const probeQueue = new Queue(PROBE_QUEUE, { connection: options.connection, prefix, logger });
  const activity = new Activity();
  const redisDown = options.redisDown ?? (() => undefined);
  /** Fails at once while Redis is known to be down (a ConnectionError: 503 REDIS_UNAVAILABLE). */
  const assertRedisUp = () => {
    const reason = redisDown();
    if (reason !== undefined) throw new ConnectionError(reason);
  };
  const metrics = new ServiceMetrics(async () => {
    assertRedisUp();
    return snapshot(options.connection, prefix, pool, logger);
  });
  const closing = new AbortController();
  const context: ServiceContext = {
    connection: options.connection,
    prefix,
    pool,
    activity,
    metrics,
    logger,
    dashboardDir: options.dashboardDir ?? DEFAULT_DASHBOARD_DIR,
    openApiJson: `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`,
    probe: async () => {
      assertRedisUp();
      await probeQueue.stats();
    },
    closing: closing.signal,
  };

  app.addHook('onRequest', async () => {
    if (closing.signal.aborted) throw new HttpError('SHUTTING_DOWN', 'The service is shutting down');
  });
  // While closing, answers end their keep-alive connection, so that close does not wait for the
  // clients' idle connections to time out (72 s in fastify).
  app.addHook('onSend', async (_request, reply) => {
    if (closing.signal.aborted) reply.header('connection', 'close');
  });
  installSecurity(app, { tokens });
  installJsonParser(app);

  app.setErrorHandler((error, request, reply) => {
    const http = toHttpError(error);
    const route = request.routeOptions.url;
    // Redis being away is already logged once where it is noticed (its death, the start-up check):
    // each request it refuses is a warning without a stack, or an outage would flood the log.
    if (http.statusCode === 503) request.log.warn({ code: http.apiCode, route }, `refused: ${http.message}`);
    else if (http.statusCode >= 500) request.log.error({ err: error, route }, `request failed: ${http.apiCode}`);
    else if (http.statusCode === 401 || http.statusCode === 403)
      request.log.info({ code: http.apiCode, route, ip: request.ip }, `refused: ${http.message}`);
    else request.log.debug({ code: http.apiCode, route }, http.message);
    return reply.code(http.statusCode).send(http.toJSON());
  });
  app.setNotFoundHandler(request => {
    const path = request.url.split('?')[0]?.slice(0, 200) ?? '';
    throw new HttpError('ROUTE_NOT_FOUND', `No route ${request.method} ${path}`);
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.countRequest(request.method, route, reply.statusCode);
    request.log.debug({ method: request.method, route, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'answered');
  });

  const handlers: Handlers = {
    ...producerRoutes(context),
    ...scheduleRoutes(context),
    ...consumerRoutes(context),
    ...adminRoutes(context),
    ...flowRoutes(context),
    ...groupRoutes(context),
    ...operationRoutes(context),
    ...infoRoutes(context),
  };
  for (const spec of ROUTES) {
    const handler = handlers[spec.operationId];
    if (!handler) throw new Error(`No handler for operation ${spec.operationId}`);
    app.route({
      method: spec.method,
      url: fastifyUrl(spec.path),
      schema: routeSchema(spec),
      config: { public: spec.public === true, scope: spec.scope, operationId: spec.operationId },
      // An optional body left out is the empty object, so the schema applies the same way.
      ...(spec.bodyOptional ? { preValidation: async request => void (request.body ??= {}) } : {}),
      // Routes that need Redis fail fast while it is known to be down (/readyz and /metrics say so themselves).
      ...(spec.local || spec.operationId === 'readyz' || spec.operationId === 'metrics' ? {} : { preHandler: async () => assertRedisUp() }),
      handler,
    });
  }

  const webhooks = options.webhooks;
  const onDelivered = (queue: string, job: Job<unknown>, latenessMs: number, heldMs: number) => {
    activity.delivered(queue, [Math.max(0, latenessMs)]);
    // Lateness a limit caused (the queue's rate or concurrency, or the binding's rate) is reported apart from sandglass's own.
    if (job.heldByLimit === true || heldMs > 0) metrics.observeLimitedLateness(queue, 'webhook', latenessMs + heldMs);
    else metrics.observeLateness(queue, 'webhook', latenessMs);
    // latenessMs is start minus due time; a catch-up tick fell due after its tick time.
    if (job.schedule && job.attempt === 1) metrics.observeTickLateness(queue, 'webhook', latenessMs + job.dueAt - job.schedule.tickAt);
  };
  const onFailed = (queue: string) => activity.failed(queue);
  webhooks?.on('delivered', onDelivered);
  webhooks?.on('failed', onFailed);

  // Closing: refuse new requests, end pending long polls (they answer what they have), let
  // requests in flight finish (an ack in flight still lands), then release the queues.
  app.addHook('preClose', async () => {
    closing.abort();
  });
  app.addHook('onClose', async () => {
    webhooks?.off('delivered', onDelivered);
    webhooks?.off('failed', onFailed);
    await Promise.all([pool.close(), probeQueue.close()]);
  });

  try {
    await app.ready();
  } catch (error) {
    await Promise.all([pool.close(), probeQueue.close()]);
    throw error;
  }
  return app;
}

/** Every queue's counts, totals, schedules and groups, for one metrics scrape. */
async function snapshot(connection: ConnectionOption, prefix: string, pool: QueuePool, logger: Logger): Promise<QueueSnapshot[]> {
  const names = await listQueues({ connection, prefix, logger });
  return mapLimit(names, 32, name =>
    pool.queue(name, async queue => {
      const [stats, counters, schedules, groups] = await Promise.all([
        queue.stats(),
        queue.counters(),
        queue.listSchedules(),
        queue.groupTotals(),
      ]);
      return { name, stats, counters, schedules: scheduleTotals(schedules), groups };
    }),
  );
}
