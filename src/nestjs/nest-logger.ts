import { Logger as NestLogger } from '@nestjs/common';
import type { Logger } from '../index.js';

/**
 * sandglass's Logger over Nest's, so that queue and worker warnings go where the application's
 * own logs go (and obey `app.useLogger`). Nest's static Logger is resolved at each call, not here.
 */
export function nestLogger(context = 'Sandglass'): Logger {
  const logger = new NestLogger(context);
  return {
    debug: message => logger.debug(message),
    info: message => logger.log(message),
    warn: message => logger.warn(message),
    error: message => logger.error(message),
  };
}
