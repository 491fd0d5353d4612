import type { Logger } from './types.js';

/**
 * The default logger says only what needs a human: warnings and errors become Node process
 * warnings (`process.on('warning')`, printed once to stderr); debug and info are dropped.
 */
export const defaultLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: message => process.emitWarning(message, 'SandglassWarning'),
  error: message => process.emitWarning(message, 'SandglassError'),
};
