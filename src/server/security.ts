/**
 * Who may call the API, and the headers that keep a browser safe. Installed as fastify hooks:
 * - a bearer token, compared in constant time, on every route but the public ones;
 * - the token's scopes and queue patterns against the route's `scope` (openapi.ts) and `{queue}`,
 *   before the body is read or any handler runs: a refusal is 403 FORBIDDEN_SCOPE and writes nothing;
 * - every admin-scope request is logged ('admin action') with the token's name, never the token;
 * - without a token (loopback only), requests must name a loopback host: a web page cannot reach
 *   the API through DNS rebinding;
 * - POST/PUT/DELETE with an Origin header of another origin are refused (no cross-site requests);
 * - every answer carries a strict Content-Security-Policy, nosniff and no-referrer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';
import { allows, OPEN_ACCESS, type Access, type Scope, type TokenSet } from './tokens.js';

export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
} as const;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Route config: open without a token, or the scope a token needs; and which operation it is. */
declare module 'fastify' {
  interface FastifyContextConfig {
    public?: boolean;
    scope?: Scope | 'any';
    operationId?: string;
  }
  interface FastifyRequest {
    /** What the caller may do: set by the security hook on every authenticated request (null before, and on public routes). */
    access: Access | null;
  }
}

/** The path parameters an admin action is logged with. */
const LOGGED_PARAMS = ['queue', 'id', 'key', 'group'] as const;

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

function hostName(host: string): string {
  // '[::1]:8080' -> '[::1]', '127.0.0.1:8080' -> '127.0.0.1', 'localhost' -> 'localhost'
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  const colon = host.lastIndexOf(':');
  return (colon === -1 ? host : host.slice(0, colon)).toLowerCase();
}

/**
 * `tokens` undefined: no authentication (loopback host names only), every request may do
 * everything. Otherwise a request needs a token of the set (which SIGHUP may replace meanwhile).
 */
export function installSecurity(app: FastifyInstance, options: { tokens: TokenSet | undefined }): void {
  const { tokens } = options;
  app.decorateRequest('access', null);

  app.addHook('onRequest', async (request, reply) => {
    if (tokens === undefined) {
      const host = request.headers.host ?? '';
      if (!LOOPBACK_HOSTS.has(hostName(host))) {
        throw new HttpError(
          'FORBIDDEN_HOST',
          'Without a token the service answers only requests to a loopback host name (127.0.0.1, localhost, [::1]); set SANDGLASS_TOKEN or SANDGLASS_TOKENS to serve others',
        );
      }
    }
    if (request.method === 'POST' || request.method === 'PUT' || request.method === 'DELETE' || request.method === 'PATCH') {
      const origin = request.headers.origin;
      if (origin !== undefined && !sameOrigin(origin, request.headers.host)) {
        throw new HttpError('CROSS_ORIGIN', 'Requests that change state must come from the same origin');
      }
    }
    const config = request.routeOptions.config;
    if (config?.public === true) return;
    let access: Access = OPEN_ACCESS;
    if (tokens !== undefined) {
      const presented = bearerToken(request);
      const found = presented === undefined ? undefined : tokens.authenticate(presented);
      if (found === undefined) {
        reply.header('www-authenticate', 'Bearer');
        throw new HttpError(
          'UNAUTHORIZED',
          presented === undefined ? 'Send the token as `Authorization: Bearer <token>`' : 'The token is not valid',
        );
      }
      access = found;
    }
    request.access = access;
    const scope = config?.scope;
    if (scope === undefined) return; // no route matched: answered 404
    const queue = (request.params as { queue?: unknown } | undefined)?.queue;
    const name = typeof queue === 'string' ? queue : undefined;
    if (!allows(access, scope, name)) throw forbidden(access, scope, name, config?.operationId ?? request.method);
  });

  // The audit log: each admin action once answered, with its token's name and its outcome (403:
  // refused, nothing done; a token that is not valid is logged as refused, without a name).
  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.config?.scope !== 'admin' || request.access === null) return;
    const params = (request.params ?? {}) as Record<string, unknown>;
    const where = Object.fromEntries(LOGGED_PARAMS.filter(key => typeof params[key] === 'string').map(key => [key, params[key]]));
    request.log.info(
      { tokenName: request.access.name, action: request.routeOptions.config.operationId, ...where, status: reply.statusCode },
      'admin action',
    );
  });

  app.addHook('onSend', async (_request, reply) => applySecurityHeaders(reply));
}

/** The 403 of a request outside its token's scopes or queues: names the scope it lacks, never the token. */
function forbidden(access: Access, scope: Scope | 'any', queue: string | undefined, action: string): HttpError {
  const where = queue === undefined ? '' : ` for queue "${queue}"`;
  const needs = scope === 'any' ? `it has no scope${where}` : `it needs the ${scope} scope${where}`;
  const has = `${access.scopes.join(', ')} on ${access.queues.join(', ')}`;
  return new HttpError('FORBIDDEN_SCOPE', `The token "${access.name ?? ''}" may not call ${action}: ${needs} (it has ${has})`);
}

/** Sets the security headers (and no-store, unless the route chose its caching) on an answer. */
export function applySecurityHeaders(reply: FastifyReply): void {
  reply.headers(SECURITY_HEADERS);
  // API answers may hold job data: never cached. The dashboard's files set their own.
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
}

function sameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}
