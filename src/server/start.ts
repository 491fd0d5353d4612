/**
 * `sandglass serve`: starts the HTTP service from a {@link ServeConfig}, with a private
 * redis-server when no Redis URL is given, webhook delivery when bindings are configured, and a
 * graceful shutdown: stop accepting, end long polls, let requests and webhook deliveries in flight
 * finish (or hand their jobs back), close the queues, stop the private Redis.
 */
import { mkdirSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import { startLocalRedis, type LocalRedis } from '../local-redis.js';
import { redactUrl } from '../redact-url.js';
import { buildApp } from './app.js';
import type { ServeConfig } from './config.js';
import { createLogger, toLibraryLogger } from './logger.js';
import { WebhookDelivery } from './webhooks.js';

/** A running service. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  readonly port: number;
  readonly app: FastifyInstance;
  /** The private redis-server, when the service started one. */
  readonly managedRedis: { readonly url: string; readonly pid: number; readonly dir: string } | undefined;
  /** Graceful shutdown; safe to call more than once. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Default: a pino logger on stdout at `config.logLevel`. */
  logger?: PinoLogger;
  /** Shut down gracefully on SIGTERM and SIGINT, then exit the process. @default false */
  handleSignals?: boolean;
  /** How long webhook deliveries in flight may finish on shutdown before their jobs are handed back. @default 10000 */
  webhookCloseTimeoutMs?: number;
}

/** Starts the service; resolves once it listens. */
export async function startServer(config: ServeConfig, options: StartOptions = {}): Promise<RunningServer> {
  const log = options.logger ?? createLogger({ level: config.logLevel });
  for (const warning of config.warnings) log.warn(warning);
  if (config.token === undefined) {
    log.warn(`No SANDGLASS_TOKEN: the API is open without authentication, so it listens on ${config.host} (loopback) only and answers only loopback host names`);
  }

  let redis: LocalRedis | undefined;
  let webhooks: WebhookDelivery | undefined;
  let app: FastifyInstance | undefined;
  const cleanUp = async () => {
    await Promise.all([app?.close(), webhooks?.close()]);
    await redis?.stop();
  };
  try {
    if (config.redisUrl === undefined) {
      mkdirSync(config.dataDir, { recursive: true });
      redis = await startLocalRedis({ dir: config.dataDir, appendOnly: true });
      log.info({ dataDir: config.dataDir, pid: redis.pid, redis: redis.url }, `No REDIS_URL: started a private redis-server (AOF on) with its data in ${config.dataDir}; it stops when the service does`);
    }
    const connection = redis?.url ?? (config.redisUrl as string);
    const libraryLog = toLibraryLogger(log);
    if (config.webhooks.length > 0) {
      webhooks = new WebhookDelivery({ connection, prefix: config.prefix, bindings: config.webhooks, logger: libraryLog, closeTimeoutMs: options.webhookCloseTimeoutMs });
      webhooks.on('dead', (queue, job, error) => log.warn({ queue, id: job.id, error: error.message }, 'webhook delivery gave up: the job is a dead letter'));
      webhooks.on('error', error => log.error({ error: error.message }, 'webhook delivery: Redis call failed (retrying)'));
    }
    app = await buildApp({ connection, prefix: config.prefix, token: config.token, bodyLimit: config.bodyLimit, logger: log, webhooks });
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
  log.info(
    {
      url,
      redis: redis ? `private redis-server, pid ${redis.pid}, data in ${config.dataDir}` : redactUrl(config.redisUrl as string),
      prefix: config.prefix,
      auth: config.token === undefined ? 'none (loopback only)' : 'bearer token',
      webhooks: config.webhooks.map(binding => `${binding.queue} -> ${new URL(binding.url).origin}`),
    },
    `sandglass serve listening on ${url}`,
  );

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
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

  return {
    url,
    port,
    app,
    managedRedis: redis ? { url: redis.url, pid: redis.pid, dir: config.dataDir } : undefined,
    close,
  };
}
