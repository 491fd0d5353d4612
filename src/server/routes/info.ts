/** The service-info route: which Redis and key prefix this service shows, and its version. */
import { readFileSync } from 'node:fs';
import { describeConnection } from '../../deploy/redis-description.js';
import type { Handlers, ServiceContext } from '../context.js';
import { OPEN_ACCESS, SCOPES } from '../tokens.js';

/** The package's version, from package.json (two folders up from both src/server/routes and dist/server/routes). */
function packageVersion(): string {
  const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

export function infoRoutes({ connection, prefix }: ServiceContext): Handlers {
  // Both are fixed for the service's life: read once. The description comes from the connection's
  // options only (no Redis call), so the page can say which Redis is down while it is.
  const info = { version: packageVersion(), prefix, redis: describeConnection(connection) };
  return {
    async getInfo(request) {
      // What the caller's token may do (the dashboard hides what it may not): scopes with admin's implied ones.
      const access = request.access ?? OPEN_ACCESS;
      const scopes = SCOPES.filter(scope => access.granted.has(scope));
      return { ...info, access: { name: access.name, scopes, queues: [...access.queues] } };
    },
  };
}
