// The storage conformance suites (test/conformance/) against the Redis implementation, through the
// entry the roles use (acquireConnection), on this file's private redis-server.
import { acquireConnection, type ConnectionLease } from '../../src/connection/connection.js';
import { limiterStorageContract } from '../conformance/limiter-storage.js';
import { partitionStorageContract } from '../conformance/partition-storage.js';
import { queueStorageContract } from '../conformance/queue-storage.js';
import type { StorageBackend } from '../conformance/fixtures.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const silent = { debug() {}, info() {}, warn() {}, error() {} };
let connection: ConnectionLease | undefined;
// Released after the file's tests, before the server stops.
redis.track({ close: async () => connection?.release() });

const backend: StorageBackend = {
  // Opened by the first case (the server runs by then).
  connection: () => (connection ??= acquireConnection(redis.url, silent)),
};

partitionStorageContract('Redis', backend);
limiterStorageContract('Redis', backend);
queueStorageContract('Redis', backend);
