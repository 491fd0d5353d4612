/**
 * The service's structured logger (pino, JSON lines). Credentials are redacted wherever they could
 * appear in a logged object: the Authorization header, tokens and webhook secrets.
 */
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import type { Logger as LibraryLogger } from '../index.js';

/** Paths pino replaces with "[redacted]". */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'request.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  'secret',
  '*.token',
  '*.secret',
  'config.token',
  'config.webhooks[*].secret',
];

/** A pino logger for the service; `destination` defaults to stdout. */
export function createLogger(options: { level?: LevelWithSilent; destination?: DestinationStream } = {}): Logger {
  const settings = { name: 'sandglass', level: options.level ?? 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return options.destination ? pino(settings, options.destination) : pino(settings);
}

/** The library's logger interface (queues, consumers, webhook workers) over a pino or fastify logger. */
export function toLibraryLogger(log: {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}): LibraryLogger {
  return {
    debug: message => log.debug(message),
    info: message => log.info(message),
    warn: message => log.warn(message),
    error: message => log.error(message),
  };
}
