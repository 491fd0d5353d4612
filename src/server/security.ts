/**
 * Who may call the API, and the headers that keep a browser safe. Installed as fastify hooks:
 * - a bearer token, compared in constant time, on every route but the public ones;
 * - without a token (loopback only), requests must name a loopback host: a web page cannot reach
 *   the API through DNS rebinding;
 * - POST/PUT/DELETE with an Origin header of another origin are refused (no cross-site requests);
 * - every answer carries a strict Content-Security-Policy, nosniff and no-referrer.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
} as const;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Route config flag of the routes open without a token. */
declare module 'fastify' {
  interface FastifyContextConfig {
    public?: boolean;
  }
}

/** Checks a presented token against the configured one in constant time (equal-length digests). */
export function tokenMatches(expected: string, presented: string): boolean {
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(presented).digest();
  return timingSafeEqual(a, b);
}

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

export function installSecurity(app: FastifyInstance, options: { token: string | undefined }): void {
  const { token } = options;

  app.addHook('onRequest', async (request, reply) => {
    if (token === undefined) {
      const host = request.headers.host ?? '';
      if (!LOOPBACK_HOSTS.has(hostName(host))) {
        throw new HttpError(
          'FORBIDDEN_HOST',
          'Without a token the service answers only requests to a loopback host name (127.0.0.1, localhost, [::1]); set SANDGLASS_TOKEN to serve others',
        );
      }
    }
    if (request.method === 'POST' || request.method === 'PUT' || request.method === 'DELETE' || request.method === 'PATCH') {
      const origin = request.headers.origin;
      if (origin !== undefined && !sameOrigin(origin, request.headers.host)) {
        throw new HttpError('CROSS_ORIGIN', 'Requests that change state must come from the same origin');
      }
    }
    if (token === undefined || request.routeOptions.config?.public === true) return;
    const presented = bearerToken(request);
    if (presented === undefined || !tokenMatches(token, presented)) {
      reply.header('www-authenticate', 'Bearer');
      throw new HttpError(
        'UNAUTHORIZED',
        presented === undefined ? 'Send the token as `Authorization: Bearer <token>`' : 'The token is not valid',
      );
    }
  });

  app.addHook('onSend', async (_request, reply) => applySecurityHeaders(reply));
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
