/**
 * Which Redis a connection points at, fit to show to anyone who may read the queues: the mode, the
 * addresses, TLS and the database, never a password or user name. The one place that decides what
 * of a connection is shown (the service's /v1/info and the dashboard's header use it).
 */
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { ConnectionOption } from '../core/types.js';

/** A connection as it may be shown. */
export interface RedisDescription {
  /** `cluster`: a Redis Cluster; `sentinel`: a master found through Sentinel; else `single`. */
  mode: 'single' | 'cluster' | 'sentinel';
  /**
   * Where the client connects first, as `host:port` (IPv6 hosts in brackets) or a Unix socket path:
   * the server (single), the startup nodes (cluster), the sentinels (sentinel).
   */
  nodes: string[];
  /** Whether the connection to Redis uses TLS. */
  tls: boolean;
  /** The database number (single and sentinel; a cluster has only database 0). */
  db?: number;
  /** The master's name (sentinel). */
  name?: string;
}

const DEFAULT_HOST = 'localhost';
const DEFAULT_PORT = 6379;

/**
 * Describes the Redis an ioredis client points at: a Cluster by its startup nodes, a Redis with
 * `sentinels` by its sentinels and master name, else the server's address. Reads the client's
 * options only: no call to Redis, so it answers while Redis is down.
 */
export function describeRedis(client: Redis | Cluster): RedisDescription {
  if (client.isCluster) {
    const cluster = client as Cluster;
    // `startupNodes` is private in ioredis's types but set by its constructor: what the user gave.
    const startup = (cluster as unknown as { startupNodes?: unknown }).startupNodes;
    const nodes = Array.isArray(startup) ? startup.map(node => nodeAddress(node, '127.0.0.1')) : [];
    return { mode: 'cluster', nodes, tls: hasTls(cluster.options.redisOptions) || (Array.isArray(startup) && startup.some(isTlsUrl)) };
  }
  return describeOptions((client as Redis).options);
}

/**
 * Describes any connection option sandglass accepts: an ioredis client (see {@link describeRedis}),
 * a URL (`redis://`, `rediss://`, a socket path) or ioredis options.
 */
export function describeConnection(connection: ConnectionOption): RedisDescription {
  if (typeof connection === 'string') return describeUrl(connection);
  if (isClient(connection)) return describeRedis(connection);
  return describeOptions(connection);
}

function isClient(option: RedisOptions | Redis | Cluster): option is Redis | Cluster {
  return typeof (option as Redis).duplicate === 'function';
}

function describeOptions(options: RedisOptions): RedisDescription {
  const db = typeof options.db === 'number' ? options.db : 0;
  if (Array.isArray(options.sentinels) && options.sentinels.length > 0) {
    return {
      mode: 'sentinel',
      nodes: options.sentinels.map(sentinel => hostPort(sentinel.host ?? DEFAULT_HOST, sentinel.port ?? 26379)),
      tls: hasTls(options),
      db,
      name: options.name ?? 'mymaster',
    };
  }
  const node =
    typeof options.path === 'string' && options.path !== ''
      ? options.path
      : hostPort(options.host ?? DEFAULT_HOST, options.port ?? DEFAULT_PORT);
  return { mode: 'single', nodes: [node], tls: hasTls(options), db };
}

function describeUrl(url: string): RedisDescription {
  if (url.startsWith('/')) return { mode: 'single', nodes: [url.split('?')[0] as string], tls: false, db: 0 };
  const parsed = parseUrl(url);
  if (!parsed) return { mode: 'single', nodes: ['(an invalid URL)'], tls: false };
  const db = Number(parsed.pathname.slice(1) || parsed.searchParams.get('db') || 0);
  return { mode: 'single', nodes: [urlAddress(parsed)], tls: parsed.protocol === 'rediss:', db: Number.isSafeInteger(db) ? db : 0 };
}

/** A startup node as ioredis takes it (a port, `host:port`, a URL, or `{ host, port }`) as `host:port`. */
function nodeAddress(node: unknown, defaultHost: string): string {
  if (typeof node === 'number') return hostPort(defaultHost, node);
  if (typeof node === 'string') {
    if (/^\d+$/.test(node)) return hostPort(defaultHost, Number(node));
    const parsed = parseUrl(/^[a-z][a-z0-9+.-]*:\/\//i.test(node) ? node : `redis://${node.replace(/^\/\//, '')}`);
    return parsed ? urlAddress(parsed, defaultHost) : '(an invalid address)';
  }
  if (node && typeof node === 'object') {
    const { host, port } = node as { host?: unknown; port?: unknown };
    return hostPort(typeof host === 'string' && host ? host : defaultHost, Number(port) || DEFAULT_PORT);
  }
  return '(an invalid address)';
}

function isTlsUrl(node: unknown): boolean {
  return typeof node === 'string' && /^rediss:\/\//i.test(node);
}

function parseUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/** Host and port of a parsed URL; its user name and password are never read. */
function urlAddress(url: URL, defaultHost = DEFAULT_HOST): string {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1') || defaultHost;
  return hostPort(host, Number(url.port) || DEFAULT_PORT);
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** TLS to Redis itself (for Sentinel, to the master; the sentinels' own TLS is not shown). */
function hasTls(options: RedisOptions | undefined): boolean {
  return Boolean(options?.tls);
}
