/**
 * What the route handlers share: the queue pool, this process's activity and metrics, and the
 * options they need. Built once by `buildApp`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConnectionOption, Logger } from '../index.js';
import type { Activity } from './activity.js';
import type { ServiceMetrics } from './metrics.js';
import type { OperationId } from './openapi.js';
import type { QueuePool } from './pool.js';

export interface ServiceContext {
  readonly connection: ConnectionOption;
  readonly prefix: string;
  readonly pool: QueuePool;
  readonly activity: Activity;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  readonly dashboardDir: string;
  /** The OpenAPI document, serialized once. */
  readonly openApiJson: string;
  /** Resolves when Redis answers a script call (the readiness probe). */
  readonly probe: () => Promise<void>;
  /** Aborted when the service starts closing: pending long polls end then. */
  readonly closing: AbortSignal;
}

export type RouteHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** Handlers by operation id; app.ts pairs them with the route table (openapi.ts). */
export type Handlers = Partial<Record<OperationId, RouteHandler>>;

/** The path parameters of the API's routes (validated by the route schema before a handler runs). */
export interface PathParams {
  queue: string;
  id: string;
  file: string;
}

export function params(request: FastifyRequest): PathParams {
  return request.params as PathParams;
}
