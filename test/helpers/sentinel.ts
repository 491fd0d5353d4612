// A real local Redis Sentinel setup for tests: one primary and N replicas (private redis-servers,
// AOF on, started with --replicaof), watched by three sentinels (`redis-server <conf> --sentinel`,
// each with its own writable config file in a temp folder). Everything listens on 127.0.0.1, on
// free ports, and is stopped by pid in stop().
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { freePort, startLocalRedis, type LocalRedis } from '../../src/deploy/local-redis.js';

export const MASTER_NAME = 'mymaster';

export interface SentinelProcess {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface LocalSentinelSetup {
  /** The server that was the primary at start (it may have been killed or demoted since). */
  readonly primary: LocalRedis;
  readonly replicas: LocalRedis[];
  readonly sentinels: SentinelProcess[];
  /** Addresses for ioredis' `sentinels` option. */
  readonly sentinelAddresses: { host: string; port: number }[];
  /** ioredis options that connect through the sentinels: `{ sentinels, name }` (plus `extra`). */
  options(extra?: RedisOptions): RedisOptions;
  /** The primary's address as the sentinels report it now. */
  masterAddress(): Promise<{ host: string; port: number }>;
  /** The server process that listens on `port`, if it is one of ours. */
  serverAt(port: number): LocalRedis | undefined;
  /** Stops every process (sentinels first), by pid. */
  stop(): Promise<void>;
}

export interface SentinelSetupOptions {
  /** @default 2 */
  replicas?: number;
  /** @default 1000 */
  downAfterMs?: number;
  /** @default 5000 */
  failoverTimeoutMs?: number;
}

export async function startLocalSentinels(options: SentinelSetupOptions = {}): Promise<LocalSentinelSetup> {
  const replicaCount = options.replicas ?? 2;
  const servers: LocalRedis[] = [];
  const sentinels: SentinelProcess[] = [];
  let dir: string | undefined;
  const stopAll = async () => {
    await Promise.all(sentinels.map(s => s.stop().catch(() => undefined)));
    await Promise.all(servers.map(s => s.stop().catch(() => undefined)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const primary = await startLocalRedis({ appendOnly: true });
    servers.push(primary);
    const replicas: LocalRedis[] = [];
    for (let i = 0; i < replicaCount; i++) {
      const replica = await startLocalRedis({ appendOnly: true, args: ['--replicaof', '127.0.0.1', String(primary.port)] });
      servers.push(replica);
      replicas.push(replica);
    }
    // Replicas first in sync, then the sentinels: a sentinel learns the replicas from its first INFO
    // of the primary (later ones come only every 10 s).
    await waitUntil(
      async () => {
        const info = await query(primary.port, ['INFO', 'replication']);
        return (String(info).match(/^slave\d+:.*state=online/gm) ?? []).length === replicaCount;
      },
      20_000,
      'the replicas to sync',
    );

    dir = mkdtempSync(join(tmpdir(), 'sandglass-sentinel-'));
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          'logfile ""',
          'loglevel warning',
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} ${options.downAfterMs ?? 1_000}`,
          `sentinel failover-timeout ${MASTER_NAME} ${options.failoverTimeoutMs ?? 5_000}`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      sentinels.push(await launchSentinel(conf, port));
    }
    // Each sentinel must know the replicas (to promote one) and the two other sentinels (to reach
    // the quorum and elect a leader); the latter arrive by hello messages every 2 s.
    await waitUntil(
      async () => {
        for (const sentinel of sentinels) {
          const replicasSeen = await query(sentinel.port, ['SENTINEL', 'REPLICAS', MASTER_NAME]);
          const sentinelsSeen = await query(sentinel.port, ['SENTINEL', 'SENTINELS', MASTER_NAME]);
          if (!Array.isArray(replicasSeen) || replicasSeen.length !== replicaCount) return false;
          if (!Array.isArray(sentinelsSeen) || sentinelsSeen.length !== 2) return false;
        }
        return true;
      },
      20_000,
      'the sentinels to see the replicas and each other',
    );

    const sentinelAddresses = sentinels.map(s => ({ host: '127.0.0.1', port: s.port }));
    return {
      primary,
      replicas,
      sentinels,
      sentinelAddresses,
      options: (extra = {}) => ({ sentinels: sentinelAddresses, name: MASTER_NAME, ...extra }),
      async masterAddress() {
        const reply = (await query(sentinels[0]!.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME])) as [string, string];
        return { host: reply[0], port: Number(reply[1]) };
      },
      serverAt: port => servers.find(server => server.port === port),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

async function launchSentinel(conf: string, port: number): Promise<SentinelProcess> {
  const child: ChildProcess = spawn('redis-server', [conf, '--sentinel'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', chunk => (stderr += String(chunk)));
  const exited = () =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>(resolve => child.once('exit', () => resolve()));
  const handle: SentinelProcess = {
    port,
    pid: child.pid as number,
    async stop() {
      const done = exited();
      child.kill('SIGTERM');
      await done;
    },
  };
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`redis-sentinel on port ${port} exited: ${stderr.trim()}`);
        return (await query(port, ['PING'])) === 'PONG';
      },
      10_000,
      `the sentinel on port ${port}`,
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return handle;
}

/** One command on a short-lived direct connection; undefined when the server does not answer. */
async function query(port: number, command: [string, ...string[]]): Promise<unknown> {
  const client = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(...command);
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
}
