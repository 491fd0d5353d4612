/** Picks the driver of a library. */
import type { LocalRedis } from '../../src/deploy/local-redis.js';
import { bullmqDriver } from './bullmq.js';
import { sandglassDriver } from './sandglass.js';
import type { Driver, LibraryName } from './types.js';

export function createDriver(library: LibraryName, server: LocalRedis): Driver {
  return library === 'sandglass' ? sandglassDriver(server) : bullmqDriver(server);
}
