/**
 * One measurement's world: a fresh private Redis, one library's driver on it and a probe client
 * for INFO. Everything is closed and the server stopped when the measurement ends, also on error.
 */
import type { Redis } from 'ioredis';
import type { LocalRedis } from '../src/deploy/local-redis.js';
import { createDriver } from './drivers/index.js';
import type { Driver, LibraryName } from './drivers/types.js';
import { openProbe, startServer, stopServer } from './servers.js';

export interface Session {
  readonly server: LocalRedis;
  readonly driver: Driver;
  readonly probe: Redis;
}

export async function withSession<T>(library: LibraryName, run: (session: Session) => Promise<T>): Promise<T> {
  const server = await startServer();
  const probe = openProbe(server);
  const driver = createDriver(library, server);
  try {
    return await run({ server, driver, probe });
  } finally {
    await driver.close().catch(() => undefined);
    probe.disconnect();
    await stopServer(server);
  }
}
