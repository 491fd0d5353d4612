/**
 * Configuration of `sandglass serve`, from flags, then environment variables, then defaults.
 * {@link SERVE_OPTIONS} lists every setting (for `--help`); {@link parseServeConfig} reads argv and
 * env; {@link resolveServeConfig} takes values a CLI parser already collected. Secrets (the token,
 * webhook secrets) come from the environment or a file, never from a flag, which `ps` would show.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { QUEUE_NAME_RULE, SandglassError, ValidationError, isQueueName } from '../index.js';
import { DEFAULT_DATA_DIR } from '../deploy/data-folder.js';
import {
  REDIS_SECRETS,
  REDIS_SETTINGS,
  resolveRedisSettings,
  type RedisSettingName,
  type RedisSettings,
  type RedisTarget,
} from '../deploy/redis-target.js';
import { combineEntries, parseTokenEntries, TOKEN_CHARACTERS, type TokenEntry } from './tokens.js';
import { parseWebhookBindings, type WebhookBinding } from './webhooks.js';

/** The settled configuration. */
export interface ServeConfig {
  /** Where Redis is (one URL, a Cluster or Sentinel, see redis-target.ts); undefined: start and manage a private redis-server in `dataDir`. */
  redis: RedisTarget | undefined;
  /** Partition count of the queues the service creates (`--partitions`); undefined: 1. Existing queues keep theirs. */
  partitions: number | undefined;
  port: number;
  host: string;
  /** The single bearer token (SANDGLASS_TOKEN / --token-file), named `admin`; undefined: none. */
  token: string | undefined;
  /**
   * Every token the service accepts: the single token as `admin` and the entries of the tokens
   * file (SANDGLASS_TOKENS / --tokens-file); undefined: neither is set, no auth, loopback only.
   */
  tokens: TokenEntry[] | undefined;
  /** Where the tokens came from, for {@link readTokens} to read the files again on SIGHUP. */
  tokenSources: TokenSources;
  prefix: string;
  /** Absolute path of the managed Redis's data folder. */
  dataDir: string;
  bodyLimit: number;
  webhooks: WebhookBinding[];
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `json` or `pretty` log lines; undefined: pretty on a terminal, JSON otherwise. */
  logFormat: 'json' | 'pretty' | undefined;
  /**
   * What `sandglass serve` does when the process that started it exits: `stop` (the default: npx
   * and npm exec do not pass a SIGTERM on, so the parent's death is the only sign) or `keep`
   * (a shell that starts it with nohup or `&` and exits).
   */
  onParentExit: 'stop' | 'keep';
  /** Things worth a warning in the start log (never fatal). */
  warnings: string[];
}

/** Credentials the Redis settings read from the environment only (listed in help). */
type RedisSecretName = 'redisUsername' | 'redisPassword' | 'redisSentinelPassword';

export type ServeOptionName =
  | RedisSettingName
  | RedisSecretName
  | 'port'
  | 'host'
  | 'token'
  | 'tokenFile'
  | 'tokensFile'
  | 'prefix'
  | 'dataDir'
  | 'bodyLimit'
  | 'webhooks'
  | 'webhooksFile'
  | 'logLevel'
  | 'logFormat'
  | 'onParentExit';

/** One setting: its flag (none for secrets), environment variable, default and meaning. */
export interface ServeOption {
  name: ServeOptionName;
  flag: string | undefined;
  /** Placeholder of the flag's value in help, e.g. `<url>`. */
  value: string;
  env: string;
  default: string | undefined;
  description: string;
}

const SECRET_NAMES: Record<string, RedisSecretName> = {
  REDIS_USERNAME: 'redisUsername',
  REDIS_PASSWORD: 'redisPassword',
  REDIS_SENTINEL_PASSWORD: 'redisSentinelPassword',
};

export const SERVE_OPTIONS: readonly ServeOption[] = [
  // Where Redis is: the settings the CLI has too, declared once in redis-target.ts.
  ...REDIS_SETTINGS.map(setting => ({
    name: setting.name,
    flag: setting.flag,
    value: setting.value,
    env: setting.env,
    default: undefined,
    description:
      setting.name === 'redis'
        ? `Redis to use: redis://[user:password@]host:port[/db], or rediss:// for TLS. Without it (or --cluster or --sentinels), a private redis-server (AOF on) is started in the data folder and stopped on exit`
        : setting.description.charAt(0).toUpperCase() + setting.description.slice(1),
  })),
  ...REDIS_SECRETS.map(secret => ({
    name: SECRET_NAMES[secret.env] as RedisSecretName,
    flag: undefined,
    value: '<secret>',
    env: secret.env,
    default: undefined,
    description: `${secret.description.charAt(0).toUpperCase()}${secret.description.slice(1)} (not a flag: ps would show it)`,
  })),
  { name: 'port', flag: '--port', value: '<port>', env: 'PORT', default: '8080', description: 'TCP port to listen on (0: any free port)' },
  {
    name: 'host',
    flag: '--host',
    value: '<address>',
    env: 'HOST',
    default: '127.0.0.1',
    description: 'Address to listen on. Other than loopback only with a token',
  },
  {
    name: 'token',
    flag: undefined,
    value: '<token>',
    env: 'SANDGLASS_TOKEN',
    default: undefined,
    description:
      'Bearer token required by the API (not a flag: ps would show it). Without one the service is open and listens on loopback only',
  },
  {
    name: 'tokenFile',
    flag: '--token-file',
    value: '<path>',
    env: 'SANDGLASS_TOKEN_FILE',
    default: undefined,
    description: 'Read the token from this file instead',
  },
  {
    name: 'tokensFile',
    flag: '--tokens-file',
    value: '<path>',
    env: 'SANDGLASS_TOKENS',
    default: undefined,
    description:
      'File of named tokens with scopes: a JSON array of { name, sha256 (hex of the token\'s SHA-256), scopes: produce|consume|read|admin, queues?: ["orders-*"] }; re-read on SIGHUP. With SANDGLASS_TOKEN too, that one is the token named admin',
  },
  {
    name: 'prefix',
    flag: '--prefix',
    value: '<prefix>',
    env: 'SANDGLASS_PREFIX',
    default: 'sg',
    description: 'Prefix of the Redis keys (the same as your producers and workers)',
  },
  {
    name: 'dataDir',
    flag: '--data-dir',
    value: '<path>',
    env: 'SANDGLASS_DATA_DIR',
    default: DEFAULT_DATA_DIR,
    description: 'Data folder of the private redis-server (created when missing); one sandglass serve at a time',
  },
  {
    name: 'bodyLimit',
    flag: '--body-limit',
    value: '<bytes>',
    env: 'SANDGLASS_BODY_LIMIT',
    default: '1048576',
    description: "Largest request body, refused before parsing: bytes, or '512kb', '2mb'",
  },
  {
    name: 'webhooks',
    flag: undefined,
    value: '<json>',
    env: 'SANDGLASS_WEBHOOKS',
    default: undefined,
    description:
      'Webhook bindings: a JSON array of { queue, url, secret, concurrency?, rate?: { max, per }, timeoutMs?, maxAttempts? } (not a flag: it holds secrets)',
  },
  {
    name: 'webhooksFile',
    flag: '--webhooks-file',
    value: '<path>',
    env: 'SANDGLASS_WEBHOOKS_FILE',
    default: undefined,
    description: 'Read the webhook bindings (JSON array) from this file instead',
  },
  {
    name: 'logLevel',
    flag: '--log-level',
    value: '<level>',
    env: 'LOG_LEVEL',
    default: 'info',
    description: 'fatal, error, warn, info, debug, trace or silent',
  },
  {
    name: 'logFormat',
    flag: '--log-format',
    value: '<format>',
    env: 'LOG_FORMAT',
    default: undefined,
    description: 'json (one JSON object a line) or pretty (readable lines); by default pretty on a terminal, JSON otherwise',
  },
  {
    name: 'onParentExit',
    flag: '--on-parent-exit',
    value: '<stop|keep>',
    env: 'SANDGLASS_ON_PARENT_EXIT',
    default: 'stop',
    description:
      'When the process that started serve exits: stop (as on SIGTERM; npx does not pass signals on) or keep running (started by nohup or a shell that exits)',
  },
];

/** A setting is wrong: the message says which and how to fix it. */
export class ConfigError extends SandglassError {
  constructor(message: string) {
    super('ERR_CONFIG', message);
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const MIN_TOKEN_LENGTH = 16;

/** Whether `host` is a loopback address or name (listening there reaches this machine only). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Reads `sandglass serve` flags from `argv` (without the command words) and settings from `env`. */
export function parseServeConfig(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): ServeConfig {
  const flagged = SERVE_OPTIONS.filter(option => option.flag !== undefined);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: Object.fromEntries(flagged.map(option => [(option.flag as string).slice(2), { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new ConfigError(`${(error as Error).message}. Run with --help for the settings`);
  }
  const byName: Partial<Record<ServeOptionName, string>> = {};
  for (const option of flagged) {
    const value = values[(option.flag as string).slice(2)];
    if (typeof value === 'string') byName[option.name] = value;
  }
  return resolveServeConfig(byName, env);
}

/** Settles the configuration from flag values (by option name) and the environment. */
export function resolveServeConfig(flags: Partial<Record<ServeOptionName, string>>, env: NodeJS.ProcessEnv = process.env): ServeConfig {
  const read = (name: ServeOptionName): string | undefined => {
    const option = SERVE_OPTIONS.find(candidate => candidate.name === name) as ServeOption;
    const value = flags[name] ?? env[option.env];
    return value === undefined || value === '' ? option.default : value;
  };
  const warnings: string[] = [];

  const port = Number(read('port'));
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new ConfigError(`Expected PORT / --port to be a port number 0-65535, got '${read('port')}'`);

  const tokenSources: TokenSources = { token: read('token'), tokenFile: read('tokenFile'), tokensFile: read('tokensFile') };
  const { token, tokens } = readTokens(tokenSources);
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH)
    warnings.push(`SANDGLASS_TOKEN has fewer than ${MIN_TOKEN_LENGTH} characters: use a long random one (openssl rand -hex 32)`);
  if (tokens !== undefined && tokens.length === 0)
    warnings.push('The tokens file has no tokens: every request but the health checks and the dashboard files is refused (401)');

  const host = read('host') as string;
  if (tokens === undefined && !isLoopback(host)) {
    throw new ConfigError(
      `Refusing to listen on ${host} without a token: anyone who can reach it could read and change every queue. Set SANDGLASS_TOKEN (or --token-file) or SANDGLASS_TOKENS (--tokens-file), or listen on 127.0.0.1`,
    );
  }

  const prefix = read('prefix') as string;
  if (!isQueueName(prefix))
    throw new ConfigError(
      `Expected SANDGLASS_PREFIX / --prefix to be ${QUEUE_NAME_RULE.description}, got '${String(prefix).slice(0, 100)}'`,
    );

  const logLevel = read('logLevel') as ServeConfig['logLevel'];
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`Expected LOG_LEVEL / --log-level to be one of ${LOG_LEVELS.join(', ')}, got '${logLevel}'`);

  const logFormat = read('logFormat');
  if (logFormat !== undefined && logFormat !== 'json' && logFormat !== 'pretty')
    throw new ConfigError(`Expected LOG_FORMAT / --log-format to be json or pretty, got '${logFormat}'`);

  const onParentExit = read('onParentExit');
  if (onParentExit !== 'stop' && onParentExit !== 'keep')
    throw new ConfigError(
      `Expected SANDGLASS_ON_PARENT_EXIT / --on-parent-exit to be stop or keep, got '${String(onParentExit).slice(0, 100)}'`,
    );

  const webhooksJson = readSecret(
    read('webhooks'),
    read('webhooksFile'),
    'SANDGLASS_WEBHOOKS',
    'SANDGLASS_WEBHOOKS_FILE / --webhooks-file',
  );
  let webhooks: WebhookBinding[];
  try {
    webhooks = parseWebhookBindings(webhooksJson);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }

  let redis: RedisSettings;
  try {
    const given: Partial<Record<RedisSettingName, string>> = {};
    for (const setting of REDIS_SETTINGS) if (flags[setting.name] !== undefined) given[setting.name] = flags[setting.name];
    redis = resolveRedisSettings(given, env);
  } catch (error) {
    throw error instanceof ValidationError ? new ConfigError(error.message) : error;
  }

  return {
    redis: redis.target,
    partitions: redis.partitions,
    port,
    host,
    token,
    tokens,
    tokenSources,
    prefix,
    dataDir: resolve(read('dataDir') as string),
    bodyLimit: parseBytes(read('bodyLimit') as string),
    webhooks,
    logLevel,
    logFormat,
    onParentExit,
    warnings,
  };
}

/** Where the tokens are: SANDGLASS_TOKEN's value, or the files. */
export interface TokenSources {
  token: string | undefined;
  tokenFile: string | undefined;
  tokensFile: string | undefined;
}

/**
 * Reads the single token and the tokens file (again, on SIGHUP), checked strictly: `tokens` holds
 * both (the single one as `admin`), undefined when neither is set. A ConfigError says what is wrong.
 */
export function readTokens(sources: TokenSources): { token: string | undefined; tokens: TokenEntry[] | undefined } {
  const token = readSecret(sources.token, sources.tokenFile, 'SANDGLASS_TOKEN', 'SANDGLASS_TOKEN_FILE / --token-file');
  if (token !== undefined && !TOKEN_CHARACTERS.test(token))
    throw new ConfigError('Expected SANDGLASS_TOKEN to be printable ASCII without spaces');
  if (sources.tokensFile === undefined) return { token, tokens: token === undefined ? undefined : combineEntries(token, []) };
  const source = `SANDGLASS_TOKENS / --tokens-file '${sources.tokensFile}'`;
  const text = readSecret(undefined, sources.tokensFile, 'SANDGLASS_TOKENS', 'SANDGLASS_TOKENS / --tokens-file') as string;
  try {
    return { token, tokens: combineEntries(token, parseTokenEntries(text, source), source) };
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

/** A value given directly or in a file (trailing newline dropped), not both. */
function readSecret(direct: string | undefined, file: string | undefined, directName: string, fileName: string): string | undefined {
  if (direct !== undefined && file !== undefined) throw new ConfigError(`Give ${directName} or ${fileName}, not both`);
  if (file === undefined) return direct;
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new ConfigError(`Cannot read ${fileName} '${file}': ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** '1048576', '512kb', '2mb' (binary units) to bytes, from 1 KiB to 64 MiB. */
export function parseBytes(text: string): number {
  const match = /^(\d+)\s*(b|kb|k|mb|m)?$/i.exec(text.trim());
  const unit = (match?.[2] ?? 'b').toLowerCase();
  const bytes = match ? Number(match[1]) * (unit.startsWith('m') ? 1024 * 1024 : unit.startsWith('k') ? 1024 : 1) : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1024 || bytes > 64 * 1024 * 1024) {
    throw new ConfigError(`Expected SANDGLASS_BODY_LIMIT / --body-limit to be from 1kb to 64mb (bytes, or '512kb', '2mb'), got '${text}'`);
  }
  return bytes;
}

/** The settings as help text: one line per flag or variable. */
export function serveHelp(): string {
  const rows = SERVE_OPTIONS.map(option => {
    const left = option.flag ? `${option.flag} ${option.value}` : `(env only)`;
    const fallback = option.default === undefined ? '' : ` (default: ${option.default})`;
    return `  ${left.padEnd(26)} ${option.env.padEnd(24)} ${option.description}${fallback}`;
  });
  return ['Settings (flag, environment variable; a flag wins over the variable):', ...rows].join('\n');
}
