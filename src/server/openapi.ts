/**
 * The route table of the HTTP API: method, path, schemas, answers and errors of every operation.
 * Both the OpenAPI 3.1 document (served at /openapi.json, checked in as docs/openapi.json) and the
 * fastify route schemas are built from it, so the validation and the contract cannot drift apart.
 */
import { ERROR_CODES, type ErrorCode } from './errors.js';
import * as s from './schemas.js';
import type { JsonSchema } from './schemas.js';
import type { Scope } from './tokens.js';

export type OperationId =
  | 'addJob'
  | 'addJobs'
  | 'getJob'
  | 'cancelJob'
  | 'rescheduleJob'
  | 'upsertSchedule'
  | 'listSchedules'
  | 'getSchedule'
  | 'pauseSchedule'
  | 'resumeSchedule'
  | 'deleteSchedule'
  | 'claimJobs'
  | 'ackJob'
  | 'failJob'
  | 'extendLease'
  | 'listQueues'
  | 'getQueue'
  | 'listJobs'
  | 'getTimeline'
  | 'getActivity'
  | 'retryDead'
  | 'purgeDead'
  | 'pauseQueue'
  | 'resumeQueue'
  | 'getLimits'
  | 'setLimits'
  | 'getRetention'
  | 'setRetention'
  | 'getDefaultGroupLimits'
  | 'setDefaultGroupLimits'
  | 'getGroupLimits'
  | 'setGroupLimits'
  | 'clearGroupLimits'
  | 'pauseGroup'
  | 'resumeGroup'
  | 'listGroups'
  | 'metrics'
  | 'healthz'
  | 'readyz'
  | 'openapi'
  | 'dashboardIndex'
  | 'dashboardFile'
  | 'getInfo';

export interface RouteSpec {
  readonly operationId: OperationId;
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** OpenAPI form: `/v1/queues/{queue}/jobs/{id}`. */
  readonly path: string;
  readonly tag: 'producers' | 'schedules' | 'pull consumers' | 'admin' | 'operations' | 'dashboard';
  readonly summary: string;
  readonly query?: { properties: Record<string, JsonSchema>; required?: string[] };
  /** Optional request headers it reads (documented only: a malformed one is ignored, never refused). */
  readonly headers?: Record<string, JsonSchema>;
  readonly body?: JsonSchema;
  /** A POST whose body may be left out (same as `{}`). */
  readonly bodyOptional?: boolean;
  readonly ok: { status: 200 | 201; description: string; schema?: JsonSchema; contentType?: string };
  /** Errors particular to this route; the common ones are added from the route's shape. */
  readonly errors?: readonly ErrorCode[];
  /** Open without a token (health checks and the dashboard's static files). */
  readonly public?: boolean;
  /**
   * The scope a token needs (`admin` has them all), on the route's `{queue}` when it has one; `any`:
   * every valid token. Every route but the public ones has one; security.ts checks it before the body is read.
   */
  readonly scope?: Scope | 'any';
  /** Does not touch Redis. */
  readonly local?: boolean;
}

/** What each tag's routes are for, as the document's tag list says it. */
const TAG_DESCRIPTIONS: Record<RouteSpec['tag'], string> = {
  producers: 'Add, read, cancel and reschedule delayed jobs.',
  schedules: 'Recurring jobs: cron patterns in a time zone, or fixed intervals.',
  'pull consumers': 'Claim due jobs with a lease (long poll), then ack, fail or extend them with the fencing token.',
  admin: 'Queues, dead letters, pause and resume, flow-control limits, retention and groups.',
  operations: 'Health, readiness, Prometheus metrics, the service information and this document.',
  dashboard: "The dashboard's page and files.",
};

/** The contract's version: changes only when the API does (not with every release). */
export const API_VERSION = '1.0.0';

const Q = '/v1/queues/{queue}';
const J = `${Q}/jobs/{id}`;
const S = `${Q}/schedules/{key}`;
const G = `${Q}/groups/{group}`;
/** The body of a POST that takes none (it may be left out, or be `{}`). */
const NO_BODY: JsonSchema = { type: 'object', additionalProperties: false, properties: {} };

export const ROUTES: readonly RouteSpec[] = [
  // producers
  {
    operationId: 'addJob',
    method: 'POST',
    path: `${Q}/jobs`,
    tag: 'producers',
    scope: 'produce',
    summary: 'Add a job (idempotent by id)',
    headers: { traceparent: s.traceparentHeader },
    body: s.addBody,
    ok: { status: 201, description: 'The job id (an existing id is returned unchanged).', schema: s.answers.id },
    errors: ['PAYLOAD_TOO_LARGE', 'CONFLICT', 'REDIS_FULL'],
  },
  {
    operationId: 'addJobs',
    method: 'POST',
    path: `${Q}/jobs:bulk`,
    tag: 'producers',
    scope: 'produce',
    summary: 'Add up to 1,000 jobs; every entry is validated before any is written',
    headers: { traceparent: s.traceparentHeader },
    body: s.bulkBody,
    ok: { status: 201, description: 'The ids, in the order of `jobs`.', schema: s.answers.ids },
    errors: ['PAYLOAD_TOO_LARGE', 'CONFLICT', 'REDIS_FULL'],
  },
  {
    operationId: 'getJob',
    method: 'GET',
    path: J,
    tag: 'producers',
    scope: 'any',
    summary: 'Look a job up',
    ok: { status: 200, description: 'The job.', schema: s.answers.job },
    errors: ['NOT_FOUND'],
  },
  {
    operationId: 'cancelJob',
    method: 'DELETE',
    path: J,
    tag: 'producers',
    scope: 'produce',
    summary: 'Cancel a waiting or dead job',
    ok: { status: 200, description: 'Cancelled (deleted).', schema: s.answers.result('cancelled') },
    errors: ['NOT_FOUND', 'JOB_RUNNING'],
  },
  {
    operationId: 'rescheduleJob',
    method: 'POST',
    path: `${J}/reschedule`,
    tag: 'producers',
    scope: 'produce',
    summary: 'Move a waiting job (or revive a dead one) to a new due time, atomically',
    body: s.rescheduleBody,
    ok: { status: 200, description: 'Rescheduled.', schema: s.answers.result('rescheduled') },
    errors: ['NOT_FOUND', 'JOB_RUNNING'],
  },
  // schedules
  {
    operationId: 'upsertSchedule',
    method: 'PUT',
    path: S,
    tag: 'schedules',
    scope: 'admin',
    summary: 'Create or change a recurring schedule (idempotent: the same definition again changes nothing)',
    body: s.scheduleBody,
    ok: { status: 200, description: 'The schedule as stored, with its next ticks.', schema: s.answers.schedule },
    errors: ['PAYLOAD_TOO_LARGE'],
  },
  {
    operationId: 'listSchedules',
    method: 'GET',
    path: `${Q}/schedules`,
    tag: 'schedules',
    scope: 'read',
    summary: "The queue's schedules",
    ok: {
      status: 200,
      description: 'Every schedule of the queue, sorted by key (paused and ended ones included).',
      schema: s.answers.schedules,
    },
  },
  {
    operationId: 'getSchedule',
    method: 'GET',
    path: S,
    tag: 'schedules',
    scope: 'read',
    summary: 'Look a schedule up',
    ok: { status: 200, description: 'The schedule, with its next 5 ticks and its last run.', schema: s.answers.schedule },
    errors: ['NOT_FOUND'],
  },
  {
    operationId: 'pauseSchedule',
    method: 'POST',
    path: `${S}/pause`,
    tag: 'schedules',
    scope: 'admin',
    summary: 'Stop a schedule from creating ticks (its pending tick is removed; a running one finishes)',
    body: NO_BODY,
    bodyOptional: true,
    ok: { status: 200, description: 'The paused schedule.', schema: s.answers.schedule },
    errors: ['NOT_FOUND'],
  },
  {
    operationId: 'resumeSchedule',
    method: 'POST',
    path: `${S}/resume`,
    tag: 'schedules',
    scope: 'admin',
    summary: 'Let a paused schedule go on at its next future tick (missed ticks are not caught up)',
    body: NO_BODY,
    bodyOptional: true,
    ok: { status: 200, description: 'The resumed schedule.', schema: s.answers.schedule },
    errors: ['NOT_FOUND'],
  },
  {
    operationId: 'deleteSchedule',
    method: 'DELETE',
    path: S,
    tag: 'schedules',
    scope: 'admin',
    summary: 'Remove a schedule and its pending tick (a running tick finishes)',
    ok: { status: 200, description: 'Removed.', schema: s.answers.result('removed') },
    errors: ['NOT_FOUND'],
  },
  // pull consumers
  {
    operationId: 'claimJobs',
    method: 'POST',
    path: `${Q}/claim`,
    tag: 'pull consumers',
    scope: 'consume',
    summary: 'Claim up to `max` due jobs under a lease, waiting up to `waitMs` for one to fall due',
    body: s.claimBody,
    bodyOptional: true,
    ok: { status: 200, description: 'The claimed jobs (empty when none fell due in time).', schema: s.answers.claimed },
  },
  {
    operationId: 'ackJob',
    method: 'POST',
    path: `${J}/ack`,
    tag: 'pull consumers',
    scope: 'consume',
    summary: 'Complete a claimed job',
    body: s.ackBody,
    ok: {
      status: 200,
      description: 'Acked: completed now, or already by this token (an ack resent after a lost reply, within a minute).',
      schema: s.answers.result('acked'),
    },
    errors: ['NOT_FOUND', 'STALE_TOKEN'],
  },
  {
    operationId: 'failJob',
    method: 'POST',
    path: `${J}/fail`,
    tag: 'pull consumers',
    scope: 'consume',
    summary: 'Fail a claimed job: retried with backoff, or dead-lettered when out of attempts',
    body: s.failBody,
    ok: { status: 200, description: 'Retried (with `retryAt`) or dead.', schema: s.answers.failed },
    errors: ['STALE_TOKEN'],
  },
  {
    operationId: 'extendLease',
    method: 'POST',
    path: `${J}/extend`,
    tag: 'pull consumers',
    scope: 'consume',
    summary: "Renew a claimed job's lease",
    body: s.extendBody,
    ok: { status: 200, description: 'Extended.', schema: s.answers.extended },
    errors: ['STALE_TOKEN'],
  },
  // admin
  {
    operationId: 'listQueues',
    method: 'GET',
    path: '/v1/queues',
    tag: 'admin',
    scope: 'read',
    summary: 'Queues with their counts',
    ok: { status: 200, description: 'Every queue ever added to under the prefix, sorted by name.', schema: s.answers.queues },
  },
  {
    operationId: 'getQueue',
    method: 'GET',
    path: Q,
    tag: 'admin',
    scope: 'read',
    summary: 'Counts and running totals of a queue',
    ok: { status: 200, description: 'Counts by state and totals (zeros for a queue never used).', schema: s.answers.queue },
  },
  {
    operationId: 'listJobs',
    method: 'GET',
    path: `${Q}/jobs`,
    tag: 'admin',
    scope: 'read',
    summary: 'A page of jobs in one state',
    query: s.listQuery,
    ok: {
      status: 200,
      description: 'delayed/ready: soonest due first; active: soonest lease end first; dead: most recent first.',
      schema: s.answers.jobs,
    },
  },
  {
    operationId: 'getTimeline',
    method: 'GET',
    path: `${Q}/timeline`,
    tag: 'admin',
    scope: 'read',
    summary: 'When waiting jobs fall due: a count per window',
    query: s.timelineQuery,
    ok: { status: 200, description: 'Ready now, a count per window, and later.', schema: s.answers.timeline },
  },
  {
    operationId: 'getActivity',
    method: 'GET',
    path: `${Q}/activity`,
    tag: 'admin',
    scope: 'read',
    summary: 'Deliveries, failures and lateness per second over the last 5 minutes, seen by this process',
    local: true,
    ok: { status: 200, description: 'One point per second, oldest first.', schema: s.answers.activity },
  },
  {
    operationId: 'retryDead',
    method: 'POST',
    path: `${Q}/dead/retry`,
    tag: 'admin',
    scope: 'admin',
    summary: 'Send dead letters back to run now with fresh attempts',
    body: s.retryDeadBody,
    bodyOptional: true,
    ok: { status: 200, description: 'How many were moved.', schema: s.answers.moved },
  },
  {
    operationId: 'purgeDead',
    method: 'DELETE',
    path: `${Q}/dead`,
    tag: 'admin',
    scope: 'admin',
    summary: 'Delete all dead letters',
    ok: { status: 200, description: 'How many were deleted.', schema: s.answers.deleted },
  },
  {
    operationId: 'pauseQueue',
    method: 'POST',
    path: `${Q}/pause`,
    tag: 'admin',
    scope: 'admin',
    summary: 'Stop consumers from claiming (running jobs carry on); an unknown queue is 404 unless `create` is true',
    body: s.pauseBody,
    bodyOptional: true,
    ok: { status: 200, description: 'Paused.', schema: s.answers.paused },
    errors: ['NOT_FOUND'],
  },
  {
    operationId: 'resumeQueue',
    method: 'POST',
    path: `${Q}/resume`,
    tag: 'admin',
    scope: 'admin',
    summary: 'Let consumers claim again (an unknown queue is 404)',
    bodyOptional: true,
    body: NO_BODY,
    ok: { status: 200, description: 'Resumed.', schema: s.answers.paused },
    errors: ['NOT_FOUND'],
  },
  // flow control (issue 10)
  {
    operationId: 'getLimits',
    method: 'GET',
    path: `${Q}/limits`,
    tag: 'admin',
    scope: 'read',
    summary: "The queue's limits: rate, concurrency and the default deadline of its jobs",
    ok: { status: 200, description: 'The limits set (none set: `{}`).', schema: s.answers.limits },
  },
  {
    operationId: 'setLimits',
    method: 'PUT',
    path: `${Q}/limits`,
    tag: 'admin',
    scope: 'admin',
    summary: "Change the queue's limits: a limit left out is kept, `null` clears it; running consumers obey at once",
    body: s.limitsBody,
    ok: { status: 200, description: 'The limits as stored.', schema: s.answers.limits },
  },
  {
    operationId: 'getRetention',
    method: 'GET',
    path: `${Q}/retention`,
    tag: 'admin',
    scope: 'read',
    summary: 'Which completed jobs the queue keeps, with their results',
    ok: { status: 200, description: 'The retention (none set: no `completed`, nothing kept).', schema: s.answers.retention },
  },
  {
    operationId: 'setRetention',
    method: 'PUT',
    path: `${Q}/retention`,
    tag: 'admin',
    scope: 'admin',
    summary: 'Keep completed jobs by count and/or age (`completed: null` keeps none again)',
    body: s.retentionBody,
    ok: { status: 200, description: 'The retention as stored.', schema: s.answers.retention },
  },
  // groups (issue 20)
  {
    operationId: 'getDefaultGroupLimits',
    method: 'GET',
    path: `${Q}/group-limits`,
    tag: 'admin',
    scope: 'read',
    summary: 'The default limits of every group of the queue (a group with an override of its own follows that instead)',
    ok: { status: 200, description: "The default (`source: 'default'`; none set: only `source`).", schema: s.answers.groupLimitsInfo },
  },
  {
    operationId: 'setDefaultGroupLimits',
    method: 'PUT',
    path: `${Q}/group-limits`,
    tag: 'admin',
    scope: 'admin',
    summary: 'Change the default limits of every group: a limit left out is kept, `null` clears it; running consumers obey at once',
    body: s.groupLimitsBody,
    ok: { status: 200, description: 'The default as stored.', schema: s.answers.groupLimits },
  },
  {
    operationId: 'getGroupLimits',
    method: 'GET',
    path: `${G}/limits`,
    tag: 'admin',
    scope: 'read',
    summary: "The limits in force for a group: its own override, or else the queue's default for groups",
    ok: { status: 200, description: 'The limits in force and their `source`.', schema: s.answers.groupLimitsInfo },
  },
  {
    operationId: 'setGroupLimits',
    method: 'PUT',
    path: `${G}/limits`,
    tag: 'admin',
    scope: 'admin',
    summary:
      'Give a group limits of its own (an override of the default; the first one starts from the default): a limit left out is kept, `null` clears it',
    body: s.groupLimitsBody,
    ok: { status: 200, description: "The group's own limits as stored, now in force for it.", schema: s.answers.groupLimits },
  },
  {
    operationId: 'clearGroupLimits',
    method: 'DELETE',
    path: `${G}/limits`,
    tag: 'admin',
    scope: 'admin',
    summary: "Remove a group's override: it follows the queue's default for groups again",
    ok: { status: 200, description: "The limits in force now (`source: 'default'`).", schema: s.answers.groupLimitsInfo },
  },
  {
    operationId: 'pauseGroup',
    method: 'POST',
    path: `${G}/pause`,
    tag: 'admin',
    scope: 'admin',
    summary: "Stop consumers from claiming the group's jobs (running jobs carry on; the other groups go on)",
    body: NO_BODY,
    bodyOptional: true,
    ok: { status: 200, description: 'Paused.', schema: s.answers.paused },
  },
  {
    operationId: 'resumeGroup',
    method: 'POST',
    path: `${G}/resume`,
    tag: 'admin',
    scope: 'admin',
    summary: "Let consumers claim the group's jobs again",
    body: NO_BODY,
    bodyOptional: true,
    ok: { status: 200, description: 'Resumed.', schema: s.answers.paused },
  },
  {
    operationId: 'listGroups',
    method: 'GET',
    path: `${Q}/groups`,
    tag: 'admin',
    scope: 'read',
    summary: 'A page of the groups with waiting or running jobs and their counts, busiest (most jobs) first',
    query: s.groupsQuery,
    ok: {
      status: 200,
      description: 'Each group with its waiting, ready and active jobs, whether a limit holds it back, and whether it is paused.',
      schema: s.answers.groups,
    },
  },
  // operations
  {
    operationId: 'getInfo',
    method: 'GET',
    path: '/v1/info',
    tag: 'operations',
    scope: 'any',
    summary: 'Which Redis (mode and addresses, never credentials) and key prefix this service shows, and its version',
    local: true,
    ok: { status: 200, description: "The service's Redis, prefix and version.", schema: s.answers.info },
  },
  {
    operationId: 'metrics',
    method: 'GET',
    path: '/metrics',
    tag: 'operations',
    scope: 'read',
    summary: 'Prometheus metrics',
    ok: { status: 200, description: 'Prometheus text format 0.0.4.', contentType: 'text/plain' },
  },
  {
    operationId: 'healthz',
    method: 'GET',
    path: '/healthz',
    tag: 'operations',
    summary: 'The process is alive',
    public: true,
    local: true,
    ok: { status: 200, description: 'Alive.', schema: s.answers.status },
  },
  {
    operationId: 'readyz',
    method: 'GET',
    path: '/readyz',
    tag: 'operations',
    summary: 'Redis answers a script call within 1 s',
    public: true,
    errors: ['NOT_READY'],
    ok: { status: 200, description: 'Ready.', schema: s.answers.status },
  },
  {
    operationId: 'openapi',
    method: 'GET',
    path: '/openapi.json',
    tag: 'operations',
    scope: 'any',
    summary: 'This document',
    local: true,
    ok: { status: 200, description: 'OpenAPI 3.1.', contentType: 'application/json' },
  },
  {
    operationId: 'dashboardIndex',
    method: 'GET',
    path: '/',
    tag: 'dashboard',
    summary: 'The dashboard',
    public: true,
    local: true,
    errors: ['DASHBOARD_NOT_FOUND'],
    ok: { status: 200, description: 'index.html', contentType: 'text/html' },
  },
  {
    operationId: 'dashboardFile',
    method: 'GET',
    path: '/{file}',
    tag: 'dashboard',
    summary: "The dashboard's scripts and styles",
    public: true,
    local: true,
    errors: ['DASHBOARD_NOT_FOUND'],
    ok: { status: 200, description: 'The file.', contentType: 'application/octet-stream' },
  },
];

const PATH_PARAMS: Record<string, JsonSchema> = {
  queue: s.queueName,
  id: s.jobId,
  key: s.scheduleKey,
  group: s.groupName,
  file: s.dashboardFile,
};

/** The names of the `{param}`s of a path, in order. */
function pathParams(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map(match => match[1] as string);
}

/** find-my-way's form of a path: `{x}` becomes `:x`, and a literal `:` is doubled. */
export function fastifyUrl(path: string): string {
  return path.replaceAll(':', '::').replace(/\{(\w+)\}/g, ':$1');
}

/** The schemas fastify validates a route's request against. */
export function routeSchema(spec: RouteSpec): Record<string, JsonSchema> {
  const schema: Record<string, JsonSchema> = {};
  const params = pathParams(spec.path);
  if (params.length > 0) {
    schema.params = { type: 'object', required: params, properties: Object.fromEntries(params.map(name => [name, PATH_PARAMS[name]])) };
  }
  // Unknown query parameters are refused like unknown body fields: a misspelled one must not be ignored.
  if (spec.query)
    schema.querystring = {
      type: 'object',
      additionalProperties: false,
      properties: spec.query.properties,
      ...(spec.query.required ? { required: spec.query.required } : {}),
    };
  if (spec.body) schema.body = spec.body;
  return schema;
}

/** Every error a route can answer: its own, and those that follow from its shape. */
export function routeErrors(spec: RouteSpec): ErrorCode[] {
  const codes = new Set<ErrorCode>();
  if (spec.body)
    ['INVALID_JSON', 'JSON_TOO_DEEP', 'FORBIDDEN_KEY', 'BODY_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'].forEach(code =>
      codes.add(code as ErrorCode),
    );
  if (spec.body || spec.query || pathParams(spec.path).length > 0) codes.add('VALIDATION');
  if (spec.method !== 'GET') codes.add('CROSS_ORIGIN');
  if (!spec.public) codes.add('UNAUTHORIZED');
  // Refused for the scope, or (any scope) for the route's queue.
  if (spec.scope !== undefined && (spec.scope !== 'any' || spec.path.includes('{queue}'))) codes.add('FORBIDDEN_SCOPE');
  codes.add('FORBIDDEN_HOST');
  for (const code of spec.errors ?? []) codes.add(code);
  if (!spec.local && spec.operationId !== 'readyz')
    ['REDIS_UNAVAILABLE', 'REDIS_FULL', 'SHUTTING_DOWN'].forEach(code => codes.add(code as ErrorCode));
  // A queue written by a newer sandglass is refused by every route that opens a queue.
  if (spec.path.includes('{queue}')) codes.add('INCOMPATIBLE_STORAGE');
  return [...codes];
}

/** What a route's `scope` asks of a token, for its description. */
function scopeText(spec: RouteSpec): string {
  const onQueue = spec.path.includes('{queue}');
  const where = onQueue ? ' on the queue (one of its `queues` patterns matches it)' : '';
  if (spec.scope === 'any') return onQueue ? `Any valid token${where}; else 403 FORBIDDEN_SCOPE.` : 'Any valid token.';
  const admin = spec.scope === 'admin' ? '' : ' (or `admin`)';
  const only = onQueue ? '' : ' It answers for the queues its `queues` patterns match only.';
  return `Needs the \`${spec.scope}\` scope${admin}${where}; else 403 FORBIDDEN_SCOPE.${only}`;
}

/** The OpenAPI 3.1 document of the API (deterministic: the same input gives the same bytes). */
export function buildOpenApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of ROUTES) {
    const parameters = [
      ...pathParams(spec.path).map(name => ({ name, in: 'path', required: true, schema: PATH_PARAMS[name] })),
      ...Object.entries(spec.query?.properties ?? {}).map(([name, schema]) => ({
        name,
        in: 'query',
        required: spec.query?.required?.includes(name) ?? false,
        schema,
      })),
      ...Object.entries(spec.headers ?? {}).map(([name, schema]) => ({ name, in: 'header', required: false, schema })),
    ];
    const responses: Record<string, unknown> = {
      [spec.ok.status]: {
        description: spec.ok.description,
        content: { [spec.ok.contentType ?? 'application/json']: { schema: spec.ok.schema ?? {} } },
      },
    };
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of routeErrors(spec)) byStatus.set(ERROR_CODES[code].status, [...(byStatus.get(ERROR_CODES[code].status) ?? []), code]);
    for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
      responses[status] = {
        description: codes.join(', '),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    paths[spec.path] ??= {};
    (paths[spec.path] as Record<string, unknown>)[spec.method.toLowerCase()] = {
      operationId: spec.operationId,
      tags: [spec.tag],
      summary: spec.summary,
      ...(spec.scope ? { description: scopeText(spec), 'x-sandglass-scope': spec.scope } : {}),
      ...(spec.public ? { security: [] } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(spec.body ? { requestBody: { required: !spec.bodyOptional, content: { 'application/json': { schema: spec.body } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'sandglass HTTP API',
      version: API_VERSION,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'A delay queue on Redis as a service. Every error is `{ "error": { "code", "message" } }`; docs/http-api.md explains each code.',
    },
    // Where a generated client sends its requests by default: `serve`'s own default address, with
    // the host and port as variables to set for a deployment.
    servers: [
      {
        url: 'http://{host}:{port}',
        description: '`sandglass serve` (PORT, default 8080; HOST, default 127.0.0.1)',
        variables: { host: { default: '127.0.0.1' }, port: { default: '8080' } },
      },
    ],
    security: [{ bearer: [] }],
    tags: Object.entries(TAG_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'SANDGLASS_TOKEN, or a named token of SANDGLASS_TOKENS, when the service has one. Each operation says the scope it needs (`x-sandglass-scope`).',
        },
      },
      schemas: {
        ...s.components,
        Error: {
          ...s.components.Error,
          description: `Every error answer. Codes: ${Object.entries(ERROR_CODES)
            .map(([code, { status, when }]) => `${code} (${status}): ${when}`)
            .join('; ')}.`,
        },
      },
    },
  };
}
