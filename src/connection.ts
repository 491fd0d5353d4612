import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import type { ConnectionOption, Logger } from './types.js';
import { Waker } from './waker.js';

/** Defaults for connections sandglass opens itself. */
const OWNED_DEFAULTS: RedisOptions = {
  // A call made while Redis is away waits through ~10 reconnect attempts (about 3 s), then fails
  // with a ConnectionError instead of hanging forever.
  maxRetriesPerRequest: 10,
  // Measured: ioredis auto-pipelining slows script-heavy workloads on loopback; sandglass batches itself.
  enableAutoPipelining: false,
};

interface Shared {
  readonly client: Redis | Cluster;
  readonly owned: boolean;
  readonly waker: Waker;
  refs: number;
  evictionChecked: boolean;
  readonly forget: () => void;
}

/** A reference to a shared connection; `release()` closes it when the last user lets go. */
export interface ConnectionLease {
  readonly client: Redis | Cluster;
  readonly waker: Waker;
  release(): Promise<void>;
}

// Queues and Workers of one process that name the same Redis share one command connection and one
// pub/sub connection: a process serving 100 queues opens two connections, not 200.
const byUrl = new Map<string, Shared>();
const byObject = new WeakMap<object, Shared>();

function isClient(option: ConnectionOption): option is Redis | Cluster {
  return typeof (option as Redis).evalsha === 'function' && typeof (option as Redis).duplicate === 'function';
}

export function acquireConnection(option: ConnectionOption, logger: Logger): ConnectionLease {
  let shared = typeof option === 'string' ? byUrl.get(option) : byObject.get(option);
  if (!shared) {
    const owned = !isClient(option);
    const client: Redis | Cluster = isClient(option)
      ? option
      : typeof option === 'string'
        ? new Redis(option, OWNED_DEFAULTS)
        : new Redis({ ...OWNED_DEFAULTS, ...option });
    // Without a listener ioredis prints every reconnect error; the callers see typed errors instead.
    if (owned) client.on('error', () => undefined);
    const forget = typeof option === 'string' ? () => byUrl.delete(option) : () => byObject.delete(option);
    shared = { client, owned, waker: new Waker(client), refs: 0, evictionChecked: false, forget };
    if (typeof option === 'string') byUrl.set(option, shared);
    else byObject.set(option, shared);
  }
  shared.refs += 1;
  if (!shared.evictionChecked) {
    shared.evictionChecked = true;
    void warnUnlessNoEviction(shared.client, logger);
  }
  const entry = shared;
  let released = false;
  return {
    client: entry.client,
    waker: entry.waker,
    async release() {
      if (released) return;
      released = true;
      entry.refs -= 1;
      if (entry.refs > 0) return;
      entry.forget();
      await entry.waker.close();
      if (entry.owned) await entry.client.quit().catch(() => entry.client.disconnect());
    },
  };
}

/**
 * Jobs live only in Redis: an eviction policy other than `noeviction` lets Redis delete them
 * silently under memory pressure. Managed services may refuse CONFIG; then nothing is said.
 */
async function warnUnlessNoEviction(client: Redis | Cluster, logger: Logger): Promise<void> {
  try {
    const reply = (await client.call('CONFIG', 'GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy !== undefined && policy !== 'noeviction') {
      logger.warn(
        `sandglass: Redis maxmemory-policy is '${policy}', not 'noeviction': under memory pressure Redis may evict jobs silently. Set 'maxmemory-policy noeviction'.`,
      );
    }
  } catch {
    // CONFIG disabled or Redis not reachable yet: the first real call will report the latter.
  }
}
