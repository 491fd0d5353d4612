import { ValidationError } from './errors.js';
import type { Logger } from './types.js';

/**
 * The default logger says only what needs a human: warnings and errors become Node process
 * warnings (`process.on('warning')`, printed once to stderr); debug and info are dropped. The one
 * default of every role (Queue, Worker, PullConsumer, the service's WebhookDelivery).
 */
export const defaultLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: message => process.emitWarning(message, 'SandglassWarning'),
  error: message => process.emitWarning(message, 'SandglassError'),
};

/** The `logger` option checked (an object with the four methods), or the default. */
export function resolveLogger(logger: unknown): Logger {
  if (logger === undefined) return defaultLogger;
  const methods = ['debug', 'info', 'warn', 'error'] as const;
  if (
    typeof logger !== 'object' ||
    logger === null ||
    methods.some(method => typeof (logger as Record<string, unknown>)[method] !== 'function')
  ) {
    throw new ValidationError('Expected `logger` to have the methods debug, info, warn and error (pino and console do)');
  }
  return logger as Logger;
}
