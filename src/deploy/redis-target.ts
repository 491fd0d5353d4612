/**
 * Where Redis is, for the CLI and `sandglass serve` alike: one Redis by URL, a Redis Cluster, or a
 * primary found through Sentinel, with TLS files and credentials. {@link resolveRedisSettings}
 * settles it from flags and the environment (a flag wins over its variable, and a mode given by a
 * flag wins over one given by a variable); {@link RedisTarget.open} opens it as one ioredis client,
 * which the queues of a process share (the library shares connections by object identity).
 * Contradictions are refused with a message that names the fix. A password never appears in a
 * description or a message.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { openClient } from '../connection/connection.js';
import { ValidationError } from '../core/errors.js';
import { redactUrl } from './redact-url.js';
import { assertPartitions } from '../core/role-options.js';

/** How the servers are found: one URL, a Cluster's seed nodes, or the sentinels of a primary. */
export type RedisMode = 'single' | 'cluster' | 'sentinel';

export type RedisSettingName = 'redis' | 'cluster' | 'sentinels' | 'sentinelName' | 'tlsCa' | 'tlsCert' | 'tlsKey' | 'partitions';

/** One setting: its flag, environment variable and meaning (the CLI and serve list them in --help). */
export interface RedisSetting {
  readonly name: RedisSettingName;
  readonly flag: string;
  /** Placeholder of the flag's value in help, e.g. `<url>`. */
  readonly value: string;
  readonly env: string;
  readonly description: string;
}

export const REDIS_SETTINGS: readonly RedisSetting[] = [
  {
    name: 'redis',
    flag: '--redis',
    value: '<url>',
    env: 'REDIS_URL',
    description: 'one Redis: redis://[user:password@]host:port[/db], or rediss://... for TLS',
  },
  {
    name: 'cluster',
    flag: '--cluster',
    value: '<nodes>',
    env: 'REDIS_CLUSTER_NODES',
    description:
      'Redis Cluster seed nodes: host:port,host:port,... (an entry may be a redis:// or rediss:// URL; its user and password apply to every node)',
  },
  {
    name: 'sentinels',
    flag: '--sentinels',
    value: '<nodes>',
    env: 'REDIS_SENTINELS',
    description: 'Redis Sentinel: the sentinels, host:port,host:port,... (with --sentinel-name)',
  },
  {
    name: 'sentinelName',
    flag: '--sentinel-name',
    value: '<name>',
    env: 'REDIS_SENTINEL_NAME',
    description: "with --sentinels: the primary's name, as in 'sentinel monitor <name> ...'",
  },
  {
    name: 'tlsCa',
    flag: '--tls-ca',
    value: '<path>',
    env: 'REDIS_TLS_CA',
    description: "TLS: PEM file of the CA of the servers' certificates (turns TLS on with --cluster and --sentinels)",
  },
  {
    name: 'tlsCert',
    flag: '--tls-cert',
    value: '<path>',
    env: 'REDIS_TLS_CERT',
    description: "TLS: PEM file of this client's certificate (with --tls-key)",
  },
  {
    name: 'tlsKey',
    flag: '--tls-key',
    value: '<path>',
    env: 'REDIS_TLS_KEY',
    description: "TLS: PEM file of this client's private key (with --tls-cert)",
  },
  {
    name: 'partitions',
    flag: '--partitions',
    value: '<n>',
    env: 'SANDGLASS_PARTITIONS',
    description: 'partitions of the queues created here (1-1024); existing queues keep theirs',
  },
];

/** Credentials read from the environment only: a flag would show them in `ps`. */
export const REDIS_SECRETS: readonly { readonly env: string; readonly description: string }[] = [
  { env: 'REDIS_USERNAME', description: 'ACL user of the Redis servers (cluster nodes, the sentinel primary), when no URL gives one' },
  { env: 'REDIS_PASSWORD', description: 'password of the Redis servers, when no URL gives one' },
  { env: 'REDIS_SENTINEL_PASSWORD', description: "with --sentinels: the sentinels' own password (their requirepass)" },
];

/** An opened client and what it last complained about (for a message better than a timeout). */
export interface OpenedRedis {
  readonly client: Redis | Cluster;
  /** The last connection error the client reported (TLS, auth, refused), if any. */
  lastError(): string | undefined;
  /** QUIT, or a disconnect when Redis does not answer. Bound it yourself (closeWithin). */
  close(): Promise<void>;
}

/** A settled Redis to connect to. */
export interface RedisTarget {
  readonly mode: RedisMode;
  /** For messages and logs: the mode and the addresses, e.g. `cluster 10.0.0.1:6379,10.0.0.2:6379 (TLS)`; never a password. */
  readonly description: string;
  /** Which setting named it, e.g. `--cluster` or `REDIS_URL`. */
  readonly from: string;
  /** The URL in single mode; undefined for a cluster or sentinels. */
  readonly url: string | undefined;
  /** Opens a new client with sandglass's defaults; each call opens another one. */
  open(): OpenedRedis;
}

/** Everything the Redis settings decide. */
export interface RedisSettings {
  /** Undefined: no Redis given (the CLI then looks further, serve starts its own). */
  readonly target: RedisTarget | undefined;
  /** The partition count of queues created here; undefined: the library's default (1). */
  readonly partitions: number | undefined;
}

interface Address {
  readonly host: string;
  readonly port: number;
}

interface Tls {
  readonly options: ConnectionOptions;
  /** Which setting asked for TLS files (for messages). */
  readonly from: string;
}

const MODES = ['redis', 'cluster', 'sentinels'] as const;

/**
 * Settles the Redis settings. `flags` are values given on the command line, by setting name;
 * `env` is read for the rest. `fallback` is used when neither names a Redis (the CLI's default);
 * `private` marks a passwordless private redis-server, to which REDIS_USERNAME / REDIS_PASSWORD do not apply.
 * TLS files are read here, once.
 *
 * @throws {ValidationError} a setting is malformed or contradicts another; the message names the fix.
 */
export function resolveRedisSettings(
  flags: Partial<Record<RedisSettingName, string>>,
  env: NodeJS.ProcessEnv,
  fallback?: { url: string; from: string; private?: boolean },
): RedisSettings {
  const setting = (name: RedisSettingName) => REDIS_SETTINGS.find(candidate => candidate.name === name) as RedisSetting;
  /** The value and the name to quote in messages: the flag when it came from one, else the variable. */
  const read = (name: RedisSettingName): { value: string; label: string } | undefined => {
    const { flag, env: variable } = setting(name);
    if (given(flags[name])) return { value: flags[name] as string, label: flag };
    if (given(env[variable])) return { value: env[variable] as string, label: variable };
    return undefined;
  };

  const partitions = readPartitions(read('partitions'));

  // One mode: flags first, then variables; two of the same kind are a contradiction.
  const byFlag = MODES.filter(name => given(flags[name]));
  const chosen = byFlag.length > 0 ? byFlag : MODES.filter(name => given(env[setting(name).env]));
  if (chosen.length > 1) {
    const labels = chosen.map(name => (byFlag.length > 0 ? setting(name).flag : setting(name).env));
    throw new ValidationError(
      `${labels.join(' and ')} name different Redis setups: give one of them (--redis <url> for one Redis, --cluster <nodes> for a Redis Cluster, --sentinels <nodes> with --sentinel-name <name> for Sentinel)`,
    );
  }
  const mode = chosen[0];
  const name = read('sentinelName');
  if (mode !== 'sentinels' && given(flags.sentinelName)) {
    throw new ValidationError(
      '--sentinel-name is for Sentinel: give the sentinels too, e.g. --sentinels 10.0.0.1:26379,10.0.0.2:26379 --sentinel-name mymaster',
    );
  }

  const tls = readTls(read('tlsCa'), read('tlsCert'), read('tlsKey'));
  const credentials = { username: nonEmpty(env.REDIS_USERNAME), password: nonEmpty(env.REDIS_PASSWORD) };
  let target: RedisTarget | undefined;
  if (mode === 'cluster') {
    target = clusterTarget(read('cluster') as { value: string; label: string }, tls, credentials);
  } else if (mode === 'sentinels') {
    const sentinels = read('sentinels') as { value: string; label: string };
    if (name === undefined) {
      throw new ValidationError(
        `${sentinels.label} needs the primary's name: add --sentinel-name <name> (or REDIS_SENTINEL_NAME), the name in 'sentinel monitor <name> ...'`,
      );
    }
    target = sentinelTarget(sentinels, name.value, tls, credentials, nonEmpty(env.REDIS_SENTINEL_PASSWORD));
  } else {
    const url =
      mode === 'redis' ? (read('redis') as { value: string; label: string }) : fallback && { value: fallback.url, label: fallback.from };
    const own = mode !== 'redis' && fallback?.private === true;
    if (url !== undefined)
      target = singleTarget(url.value, url.label, tls, own ? { username: undefined, password: undefined } : credentials);
    else if (tls)
      throw new ValidationError(
        `${tls.from} is given, but no Redis: add --redis rediss://host:port, --cluster <nodes> or --sentinels <nodes>`,
      );
  }
  return { target, partitions };
}

/**
 * A target for one Redis by URL. The URL must be redis:// or rediss://; its user and password win
 * over REDIS_USERNAME / REDIS_PASSWORD.
 */
function singleTarget(url: string, from: string, tls: Tls | undefined, credentials: Credentials): RedisTarget {
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    const shown = url.includes('@') ? '(a value with credentials, not shown)' : `'${url.slice(0, 100)}'`;
    throw new ValidationError(
      `--redis (or REDIS_URL) must be a URL such as redis://127.0.0.1:6379 or rediss://user:password@host:6380/0, got ${shown}`,
    );
  }
  if (tls && protocol === 'redis:')
    throw new ValidationError(`${tls.from} is given, but ${from} is a redis:// URL (no TLS): use rediss://`);
  return {
    mode: 'single',
    description: redactUrl(url),
    from,
    url,
    open: () => watch(openClient({ kind: 'url', url, options: { ...(tls ? { tls: tls.options } : {}), ...definedOnly(credentials) } })),
  };
}

function clusterTarget(setting: { value: string; label: string }, tls: Tls | undefined, envCredentials: Credentials): RedisTarget {
  const list = parseNodes(setting, true);
  if (tls && list.scheme === 'redis:')
    throw new ValidationError(
      `${tls.from} is given, but ${setting.label} names redis:// nodes (no TLS): use rediss:// or plain host:port entries`,
    );
  const secure = tls !== undefined || list.scheme === 'rediss:';
  const username = list.username ?? envCredentials.username;
  const password = list.password ?? envCredentials.password;
  const redisOptions: RedisOptions = {
    ...definedOnly({ username, password }),
    ...(secure ? { tls: tls?.options ?? {} } : {}),
  };
  return {
    mode: 'cluster',
    description: `cluster ${list.nodes.map(addressText).join(',')}${details(secure, username)}`,
    from: setting.label,
    url: undefined,
    open: () => watch(openClient({ kind: 'cluster', nodes: list.nodes, redisOptions }), true),
  };
}

function sentinelTarget(
  setting: { value: string; label: string },
  name: string,
  tls: Tls | undefined,
  credentials: Credentials,
  sentinelPassword: string | undefined,
): RedisTarget {
  const list = parseNodes(setting, false);
  const options: RedisOptions = {
    sentinels: list.nodes.map(node => ({ ...node })),
    name,
    ...definedOnly({ ...credentials, sentinelPassword }),
    // One TLS setting for every server: the sentinels and the primary they name.
    ...(tls ? { tls: tls.options, enableTLSForSentinelMode: true, sentinelTLS: tls.options } : {}),
  };
  return {
    mode: 'sentinel',
    description: `sentinel primary '${name}' via ${list.nodes.map(addressText).join(',')}${details(tls !== undefined, credentials.username)}`,
    from: setting.label,
    url: undefined,
    open: () => watch(openClient({ kind: 'options', options })),
  };
}

interface Credentials {
  readonly username: string | undefined;
  readonly password: string | undefined;
}

interface NodeList {
  readonly nodes: Address[];
  readonly username: string | undefined;
  readonly password: string | undefined;
  /** `redis:` or `rediss:` when entries are URLs; undefined for host:port entries. */
  readonly scheme: string | undefined;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^\s:/@[\]]+):(\d{1,5})$/;

/**
 * `host:port,host:port,...`; with `urls`, entries may also be redis:// or rediss:// URLs, whose
 * user, password and scheme apply to the whole list (entries that disagree are refused).
 */
function parseNodes(setting: { value: string; label: string }, urls: boolean): NodeList {
  const example = urls
    ? '10.0.0.1:6379,10.0.0.2:6379 or rediss://user:password@10.0.0.1:6379,10.0.0.2:6379'
    : '10.0.0.1:26379,10.0.0.2:26379';
  const entries = setting.value
    .split(',')
    .map(entry => entry.trim())
    .filter(entry => entry !== '');
  const nodes: Address[] = [];
  const seen = { username: new Set<string>(), password: new Set<string>(), scheme: new Set<string>() };
  for (const entry of entries) {
    const shown = entry.includes('@') ? '(an entry with credentials, not shown)' : `'${entry.slice(0, 100)}'`;
    const bad = () =>
      new ValidationError(`Expected ${setting.label} to be a comma-separated list of host:port, e.g. ${example}; got ${shown}`);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) {
      let url: URL;
      try {
        url = new URL(entry);
      } catch {
        throw bad();
      }
      if (!urls || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') throw bad();
      nodes.push({ host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port === '' ? 6379 : Number(url.port) });
      seen.scheme.add(url.protocol);
      if (url.username !== '') seen.username.add(decodeURIComponent(url.username));
      if (url.password !== '') seen.password.add(decodeURIComponent(url.password));
      continue;
    }
    const match = HOST_PORT.exec(entry);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65_535) throw bad();
    nodes.push({ host: (match[1] as string).replace(/^\[(.*)\]$/, '$1'), port });
  }
  if (nodes.length === 0) throw new ValidationError(`Expected ${setting.label} to name at least one node as host:port, e.g. ${example}`);
  for (const [field, values] of Object.entries(seen)) {
    if (values.size > 1)
      throw new ValidationError(
        `The entries of ${setting.label} give different ${field === 'scheme' ? 'schemes (redis:// and rediss://)' : `${field}s`}: give it once, on one entry (it applies to every node)`,
      );
  }
  const first = (values: Set<string>) => values.values().next().value;
  return { nodes, username: first(seen.username), password: first(seen.password), scheme: first(seen.scheme) };
}

/** Reads the TLS files once; a clear error when one cannot be read or is not PEM. */
function readTls(ca: Read, cert: Read, key: Read): Tls | undefined {
  if ((cert === undefined) !== (key === undefined)) {
    throw new ValidationError(
      `${(cert ?? key)?.label} is given without ${cert ? '--tls-key (or REDIS_TLS_KEY)' : '--tls-cert (or REDIS_TLS_CERT)'}: a client certificate needs both`,
    );
  }
  const files = [ca, cert, key].filter((file): file is { value: string; label: string } => file !== undefined);
  if (files.length === 0) return undefined;
  const read = (file: Read) => {
    if (file === undefined) return undefined;
    let text: string;
    try {
      text = readFileSync(file.value, 'utf8');
    } catch (error) {
      throw new ValidationError(
        `Cannot read ${file.label} '${file.value}': ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
    if (!text.includes('-----BEGIN ')) throw new ValidationError(`${file.label} '${file.value}' is not a PEM file (no '-----BEGIN' line)`);
    return text;
  };
  const options: ConnectionOptions = definedOnly({ ca: read(ca), cert: read(cert), key: read(key) });
  return { options, from: files.map(file => file.label).join(', ') };
}

type Read = { value: string; label: string } | undefined;

function readPartitions(setting: Read): number | undefined {
  if (setting === undefined) return undefined;
  const value = /^\s*\d+\s*$/.test(setting.value) ? Number(setting.value) : setting.value;
  try {
    assertPartitions(value, setting.label);
  } catch (error) {
    // The library's rule and wording, with the setting's name in place of the option's.
    throw new ValidationError((error as Error).message.replace(`\`${setting.label}\``, setting.label));
  }
  return value;
}

/** Keeps the client's last connection error, and a listener so that ioredis does not print each one. */
function watch(client: Redis | Cluster, cluster = false): OpenedRedis {
  let last: string | undefined;
  client.on('error', (error: Error & { lastNodeError?: Error }) => {
    // A Cluster's "Failed to refresh slots cache." carries the reason in lastNodeError.
    last = error.lastNodeError ? `${error.message} ${error.lastNodeError.message}` : error.message;
  });
  // A Cluster reports a node's failure here and only a summary ("Failed to refresh slots cache") as 'error'.
  if (cluster) client.on('node error', (error: Error) => (last = error.message));
  return {
    client,
    lastError: () => last,
    async close() {
      await client.quit().catch(() => client.disconnect());
    },
  };
}

function details(tls: boolean, username: string | undefined): string {
  const parts = [...(tls ? ['TLS'] : []), ...(username ? [`user ${username}`] : [])];
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

function addressText({ host, port }: Address): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function given(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}

function nonEmpty(value: string | undefined): string | undefined {
  return given(value) ? value : undefined;
}

/** The object without its undefined fields (ioredis treats a present `password: undefined` as set). */
function definedOnly<T extends object>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as Partial<T>;
}
