import { acquireConnection } from '../connection/connection.js';
import { resolveSharedOptions } from '../core/role-options.js';
import type { ConnectionOption, Logger } from '../core/types.js';

/**
 * Names of the queues that were ever added to under `prefix` (default 'sg'), sorted.
 *
 * @example
 * const names = await listQueues({ connection: 'redis://127.0.0.1:6379' });
 */
export async function listQueues(options: { connection: ConnectionOption; prefix?: string; logger?: Logger }): Promise<string[]> {
  const { connection: option, prefix, logger } = resolveSharedOptions('listQueues', options, ['connection', 'prefix', 'logger']);
  const connection = acquireConnection(option, logger);
  try {
    return await connection.listQueues(prefix);
  } finally {
    await connection.release();
  }
}
