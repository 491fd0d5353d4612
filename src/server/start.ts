/**
 * `sandglass serve`: starts the HTTP service from a {@link ServeConfig}, with a private
 * redis-server when no Redis URL is given, webhook delivery when bindings are configured, and a
 * graceful shutdown: stop accepting, end long polls, let requests and webhook deliveries in flight
 * finish (or hand their jobs back), close the queues, stop the private Redis.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import { closeWithin } from '../deploy/close-within.js';
import type { ConnectionOption } from '../index.js';
import type { OpenedRedis } from '../deploy/redis-target.js';
import { buildApp } from './app.js';
import { readTokens, type ServeConfig } from './config.js';
import { createLogger, toLibraryLogger } from './logger.js';
import { ManagedRedis } from './managed-redis.js';
import { NewQueues } from './new-queues.js';
import { TokenSet } from './tokens.js';
import { WebhookDelivery } from './webhooks.js';

/** A running service. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  readonly port: number;
  readonly app: FastifyInstance;
  /** The private redis-server, when the service started one. */
  readonly managedRedis: { readonly url: string; readonly pid: number; readonly dir: string } | undefined;
  /**
   * Settles (never rejects) when the service cannot go on: the private redis-server kept dying and
   * supervision gave up. The service has closed itself by then; the process should exit non-zero.
   */
  readonly failed: Promise<Error>;
  /**
   * Settles when the process that started the service died (only with `stopWithParent`): the
   * service has begun to shut down by then, as on SIGTERM.
   */
  readonly parentGone: Promise<void>;
  /** Graceful shutdown; safe to call more than once. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Default: a pino logger on stdout at `config.logLevel`, in `config.logFormat`. */
  logger?: PinoLogger;
  /** Shut down gracefully on SIGTERM and SIGINT, then exit the process. @default false */
  handleSignals?: boolean;
  /**
   * Shut down gracefully, as on SIGTERM, when the parent process dies. `npx` and `npm exec` do not
   * pass SIGTERM on to the command they run, so without this a stopped `npx sandglass serve` would
   * leave the service (and its private redis-server) running under pid 1. @default false
   */
  stopWithParent?: boolean;
  /**
   * Read the token files again on SIGHUP (the tokens file and --token-file): a good file replaces
   * the tokens at once, a bad one is logged and the tokens in use are kept. Only when a token comes
   * from a file. @default false (the CLI's `serve` turns it on)
   */
  reloadOnSighup?: boolean;
  /** How long webhook deliveries in flight may finish on shutdown before their jobs are handed back. @default 10000 */
  webhookCloseTimeoutMs?: number;
  /** Wait before restarting a private redis-server that died (doubled for each further death, at most 5 s). @default 500 */
  redisRestartDelayMs?: number;
}

/** How often a service started with `stopWithParent` checks that its parent still lives. */
const PARENT_WATCH_MS = 500;

/** Starts the service; resolves once it listens. */
export async function startServer(config: ServeConfig, options: StartOptions = {}): Promise<RunningServer> {
  // Taken first, so that a parent that dies while the service starts is noticed too.
  const parent = process.ppid;
  const log = options.logger ?? createLogger({ level: config.logLevel, format: config.logFormat });
  for (const warning of config.warnings) log.warn(warning);
  if (config.tokens === undefined) {
    log.warn(
      `No SANDGLASS_TOKEN: the API is open without authentication, so it listens on ${config.host} (loopback) only and answers only loopback host names`,
    );
  }

  let redis: ManagedRedis | undefined;
  /** The one client of the service on the Redis it was given: the app, the webhooks and the pool share it. */
  let client: OpenedRedis | undefined;
  let webhooks: WebhookDelivery | undefined;
  let app: FastifyInstance | undefined;
  const tokens = config.tokens && new TokenSet(config.tokens);
  const watching = new AbortController();
  const cleanUp = async () => {
    watching.abort();
    await Promise.all([app?.close(), webhooks?.close()]);
    await redis?.stop();
    if (client) await closeWithin(client, 2_000);
  };
  try {
    let connection: ConnectionOption;
    if (config.redis === undefined) {
      redis = await ManagedRedis.start({ dataDir: config.dataDir, log, restartDelayMs: options.redisRestartDelayMs });
      log.info(
        { dataDir: config.dataDir, redisPid: redis.pid, redis: redis.url },
        `No REDIS_URL: started a private redis-server (AOF on) with its data in ${config.dataDir}; it stops when the service does`,
      );
      connection = redis.url;
    } else {
      client = config.redis.open();
      connection = client.client;
    }
    const libraryLog = toLibraryLogger(log);
    if (config.webhooks.length > 0) {
      // The bindings' workers would create a new queue with one partition: create it with the setting's count first.
      if (config.partitions !== undefined) {
        await new NewQueues({ connection, prefix: config.prefix, logger: libraryLog, partitions: config.partitions }).create(
          config.webhooks.map(binding => binding.queue),
        );
      }
      webhooks = new WebhookDelivery({
        connection,
        prefix: config.prefix,
        bindings: config.webhooks,
        logger: libraryLog,
        closeTimeoutMs: options.webhookCloseTimeoutMs,
      });
      webhooks.on('dead', (queue, job, error) =>
        log.warn({ queue, id: job.id, error: error.message }, 'webhook delivery gave up: the job is a dead letter'),
      );
      webhooks.on('error', error => log.error({ error: error.message }, 'webhook delivery: Redis call failed (retrying)'));
    }
    const managed = redis;
    app = await buildApp({
      connection,
      prefix: config.prefix,
      partitions: config.partitions,
      tokens,
      bodyLimit: config.bodyLimit,
      logger: log,
      webhooks,
      redisDown: managed && (() => managed.downReason()),
    });
    await webhooks?.start();
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await cleanUp().catch(() => undefined);
    throw error;
  }

  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  const redisLabel = redis ? `the private redis-server (${redis.url}, data in ${config.dataDir})` : (config.redis?.description as string);
  log.info(
    {
      url,
      dashboard: `${url}/`,
      redis: redis ? `private redis-server, pid ${redis.pid}, data in ${config.dataDir}` : config.redis?.description,
      redisMode: config.redis?.mode ?? 'single',
      ...(config.partitions === undefined ? {} : { partitions: config.partitions }),
      prefix: config.prefix,
      auth:
        config.tokens === undefined
          ? 'none (loopback only)'
          : `bearer tokens (${config.tokens.length}): ${config.tokens.map(entry => entry.name).join(', ')}`,
      webhooks: config.webhooks.map(
        binding =>
          `${binding.queue} -> ${new URL(binding.url).origin}${binding.rate ? ` (rate ${binding.rate.max}/${binding.rate.per})` : ''}`,
      ),
    },
    `sandglass serve listening on ${url}`,
  );
  void reportReadiness(app, log, redisLabel, watching.signal);

  let closing: Promise<void> | undefined;
  let parentWatch: NodeJS.Timeout | undefined;
  const close = () => {
    closing ??= (async () => {
      clearInterval(parentWatch);
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.off('SIGHUP', onHangUp);
      log.info('Shutting down: no new requests; finishing the ones in flight and webhook deliveries');
      await cleanUp();
      log.info('Stopped');
    })();
    return closing;
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      log.warn(`${signal} again: exiting without waiting`);
      process.exit(1);
    }
    log.info(`${signal} received`);
    closeAndExit();
  };
  const closeAndExit = () => {
    close().then(
      () => process.exit(0),
      error => {
        log.error({ error: (error as Error).message }, 'Shutdown failed');
        process.exit(1);
      },
    );
  };
  if (options.handleSignals) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  // Rotation without a restart: the files are read again and checked as strictly as at start.
  const onHangUp = () => {
    if (!tokens) return;
    try {
      const entries = readTokens(config.tokenSources).tokens ?? [];
      tokens.replace(entries);
      log.info({ tokenNames: entries.map(entry => entry.name) }, `tokens reloaded (${entries.length} tokens)`);
      if (entries.length === 0) log.warn('No tokens now: every request but the health checks and the dashboard files is refused (401)');
    } catch (error) {
      log.error(
        { error: (error as Error).message },
        `tokens not reloaded, the ${tokens.size} in use are kept: ${(error as Error).message}`,
      );
    }
  };
  const { tokenFile, tokensFile } = config.tokenSources;
  if (options.reloadOnSighup && tokens && (tokenFile !== undefined || tokensFile !== undefined)) process.on('SIGHUP', onHangUp);
  const parentGone = new Promise<void>(resolve => {
    if (!options.stopWithParent) return;
    // Polled: no event tells a process that its parent died. When it does, the process is
    // reparented (to pid 1 or a subreaper), so its ppid changes.
    parentWatch = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(parentWatch);
      log.info(`The parent process (pid ${parent}) is gone: shutting down as on SIGTERM`);
      resolve();
      // With handleSignals the service exits by itself; without, the caller closes on parentGone (close is idempotent).
      if (options.handleSignals && !closing) closeAndExit();
    }, PARENT_WATCH_MS);
    parentWatch.unref();
  });
  const failed = (redis?.failed ?? new Promise<never>(() => undefined)).then(async error => {
    await close().catch(() => undefined);
    if (options.handleSignals) process.exit(1);
    return error;
  });

  return {
    url,
    port,
    app,
    managedRedis: redis,
    failed,
    parentGone,
    close,
  };
}

/**
 * Says in the log whether Redis answers (what /readyz answers), once at start, and again once it
 * does: a service started while its Redis is unreachable must say so, not only "listening".
 */
async function reportReadiness(app: FastifyInstance, log: PinoLogger, redis: string, stop: AbortSignal): Promise<void> {
  let reported = false;
  while (!stop.aborted) {
    const answer = await app.inject({ method: 'GET', url: '/readyz' }).catch(() => undefined);
    if (stop.aborted || answer === undefined) return;
    if (answer.statusCode === 200) {
      if (reported) log.info({ redis }, `Redis answers now: ready (${redis})`);
      return;
    }
    if (!reported) {
      const reason = /"message":"([^"]*)"/.exec(answer.body)?.[1] ?? `status ${answer.statusCode}`;
      log.error({ redis, reason }, `Redis is not reachable at ${redis}: /readyz answers 503 until it is (${reason})`);
      reported = true;
    }
    await new Promise(resolve => setTimeout(resolve, 1_000).unref());
  }
}
