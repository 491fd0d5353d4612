import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ValidationError } from '../core/errors.js';
import { DEFAULT_CALL_TIMEOUT_MS, setCallTimeout } from '../store/redis/scripts.js';
import { RedisQueueStorage } from '../store/redis/queue-storage.js';
import { listQueueNames } from '../store/redis/registry.js';
import { recordConnectionErrors } from '../store/redis/unreachable.js';
import type { StorageConnection } from '../store/queue-storage.js';
import type { ConnectionOption, Logger } from '../core/types.js';
import { Waker } from './waker.js';

/** Defaults for connections sandglass opens itself. */
const OWNED_DEFAULTS: RedisOptions = {
  // How long a call waits for Redis is sandglass's own bound (`commandTimeout`, see callTimeoutOf);
  // this only keeps ioredis from holding queued commands across more than 10 reconnect attempts.
  maxRetriesPerRequest: 10,
  // Measured: ioredis auto-pipelining slows script-heavy workloads on loopback; sandglass batches itself.
  enableAutoPipelining: false,
};

/** What {@link openClient} opens: one Redis by URL, a Cluster from seed nodes, or a Redis by options (Sentinel). */
export type ClientSpec =
  | { readonly kind: 'url'; readonly url: string; readonly options: RedisOptions }
  | { readonly kind: 'cluster'; readonly nodes: readonly { host: string; port: number }[]; readonly redisOptions: RedisOptions }
  | { readonly kind: 'options'; readonly options: RedisOptions };

/**
 * Opens a client for a caller that owns it (the CLI, the service) and passes it to its queues as
 * `connection`, with sandglass's defaults under the caller's options. Not shared by this module:
 * sharing is by object identity, and closing is the owner's.
 */
export function openClient(spec: ClientSpec): Redis | Cluster {
  if (spec.kind === 'url') return new Redis(spec.url, { ...OWNED_DEFAULTS, ...spec.options });
  if (spec.kind === 'options') return new Redis({ ...OWNED_DEFAULTS, ...spec.options });
  return new Cluster(
    spec.nodes.map(node => ({ ...node })),
    {
      enableAutoPipelining: OWNED_DEFAULTS.enableAutoPipelining,
      redisOptions: { maxRetriesPerRequest: OWNED_DEFAULTS.maxRetriesPerRequest, ...spec.redisOptions },
    },
  );
}

interface Shared {
  readonly client: Redis | Cluster;
  readonly owned: boolean;
  readonly waker: Waker;
  refs: number;
  evictionChecked: boolean;
  readonly forget: () => void;
}

/**
 * A reference to a shared connection, and the storage on it: the roles' one way into the Redis
 * layer (they see it as a StorageConnection). `release()` closes it when the last user lets go.
 */
export interface ConnectionLease extends StorageConnection {
  readonly client: Redis | Cluster;
  readonly waker: Waker;
}

// Queues and Workers of one process that name the same Redis share one command connection and one
// pub/sub connection: a process serving 100 queues opens two connections, not 200.
const byUrl = new Map<string, Shared>();
const byObject = new WeakMap<object, Shared>();

function isClient(option: ConnectionOption): option is Redis | Cluster {
  return typeof (option as Redis).evalsha === 'function' && typeof (option as Redis).duplicate === 'function';
}

/**
 * How long each sandglass call may wait for Redis before it fails with a ConnectionError: the
 * connection's `commandTimeout` (ioredis option: in the options you pass, or on the instance, for a
 * Cluster in its `redisOptions`), else 3 s. An add with `waitForReplicas` may wait that much longer.
 */
function callTimeoutOf(option: ConnectionOption): number {
  const options: { commandTimeout?: unknown } | undefined =
    typeof option === 'string'
      ? undefined
      : isClient(option)
        ? 'redisOptions' in option.options
          ? option.options.redisOptions
          : (option.options as RedisOptions)
        : option;
  const timeoutMs = options?.commandTimeout;
  if (timeoutMs === undefined) return DEFAULT_CALL_TIMEOUT_MS;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600_000) {
    throw new ValidationError(
      `Expected the connection's \`commandTimeout\` to be an integer number of ms from 1 to 600000, got ${String(timeoutMs)}`,
    );
  }
  return timeoutMs;
}

/**
 * The factory of the storage every role uses: the process's shared connection to the Redis that
 * `option` names (opened on first use), as a lease of it.
 */
export function acquireConnection(option: ConnectionOption, logger: Logger): ConnectionLease {
  let shared = typeof option === 'string' ? byUrl.get(option) : byObject.get(option);
  if (!shared) {
    const owned = !isClient(option);
    const timeoutMs = callTimeoutOf(option);
    // On connections it opens, sandglass applies `commandTimeout` itself (to the whole call, WAIT
    // included) rather than ioredis (per command, which would cut a WAIT longer than it short).
    const client: Redis | Cluster = isClient(option)
      ? option
      : typeof option === 'string'
        ? new Redis(option, OWNED_DEFAULTS)
        : new Redis({ ...OWNED_DEFAULTS, ...option, commandTimeout: undefined });
    setCallTimeout(client, timeoutMs);
    // Without a listener ioredis prints every reconnect error; the callers see typed errors instead,
    // which name the last of them.
    if (owned) recordConnectionErrors(client);
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
    queue: (prefix, name, partitions) => new RedisQueueStorage(entry.client, entry.waker, prefix, name, partitions),
    listQueues: prefix => listQueueNames(entry.client, prefix),
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
