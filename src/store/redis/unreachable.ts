/**
 * The library's ConnectionError for a Redis that cannot be reached, in the words the CLI uses
 * (src/core/unreachable.ts): the address the client connects to (password redacted) and the
 * client's last connection error (`connect ECONNREFUSED 127.0.0.1:6379`), which ioredis's own
 * error for a dropped command ("Reached the max retries per request limit") does not carry.
 */
import type { Cluster, Redis } from 'ioredis';
import { ConnectionError } from '../../core/errors.js';
import { redactUrl } from '../../core/redact-url.js';
import { cannotReachRedis, givenUpReason } from '../../core/unreachable.js';

const lastErrors = new WeakMap<object, string>();
const recorded = new WeakSet<object>();

/**
 * Keeps the last connection error of `client` for the messages of {@link unreachableError}. Its
 * listener also keeps ioredis from printing each reconnect error, so it is for clients sandglass
 * opened itself (a user's client keeps the error handling its owner gave it).
 */
export function recordConnectionErrors(client: Redis | Cluster): void {
  if (recorded.has(client)) return;
  recorded.add(client);
  client.on('error', (error: Error & { lastNodeError?: Error }) => {
    // A Cluster's "Failed to refresh slots cache." carries the reason in lastNodeError.
    lastErrors.set(client, error.lastNodeError ? `${error.message} ${error.lastNodeError.message}` : error.message);
  });
  // A Cluster reports a node's failure here and only a summary as 'error'.
  if (client.isCluster) client.on('node error', (error: Error) => lastErrors.set(client, error.message));
}

/** Where `client` connects, for a message: a URL with the password as `***`, the cluster's or the sentinels' nodes. */
export function clientAddress(client: Redis | Cluster): string {
  if (client.isCluster) {
    // `startupNodes` is private in ioredis's types but set by its constructor: what the user gave.
    const startup = (client as unknown as { startupNodes?: unknown }).startupNodes;
    const nodes = Array.isArray(startup) ? startup.map(nodeText) : [];
    return `cluster ${nodes.join(',')}`;
  }
  const options = (client as Redis).options;
  if (options.sentinels && options.sentinels.length > 0) {
    return `sentinel primary '${options.name ?? ''}' via ${options.sentinels.map(nodeText).join(',')}`;
  }
  if (options.path) return options.path;
  const host = (options.host ?? 'localhost').includes(':') ? `[${options.host}]` : (options.host ?? 'localhost');
  const credentials =
    options.password !== undefined && options.password !== null && options.password !== ''
      ? `${encodeURIComponent(options.username ?? '')}:${encodeURIComponent(String(options.password))}@`
      : options.username
        ? `${encodeURIComponent(options.username)}@`
        : '';
  const db = options.db ? `/${options.db}` : '';
  return redactUrl(`${options.tls ? 'rediss' : 'redis'}://${credentials}${host}:${options.port ?? 6379}${db}`);
}

function nodeText(node: unknown): string {
  if (typeof node === 'string') return /^rediss?:\/\//.test(node) ? redactUrl(node) : node;
  if (typeof node === 'number') return `127.0.0.1:${node}`;
  const { host, port } = (node ?? {}) as { host?: string; port?: number };
  return `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}

/**
 * A ConnectionError saying that Redis at the client's address cannot be reached: `reason` is what
 * gave up (an ioredis message, put in plain words), followed by the client's last connection error.
 */
export function unreachableError(client: Redis | Cluster, operation: string, reason: string, cause?: unknown): ConnectionError {
  const message = cannotReachRedis(clientAddress(client), givenUpReason(reason), lastErrors.get(client));
  return new ConnectionError(`${operation}: ${message}`, cause === undefined ? undefined : { cause });
}

/** Whether `client` is not connected right now (connecting or reconnecting): a call that waits then is waiting for a connection. */
export function isDisconnected(client: Redis | Cluster): boolean {
  return client.status !== 'ready';
}
