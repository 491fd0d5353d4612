// A real local Redis Cluster for tests: N masters with one replica each, every node a private
// redis-server on free ports (client port and cluster bus port), created with redis-cli.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { freePort, startLocalRedis, type LocalRedis } from '../../src/local-redis.js';

const run = promisify(execFile);

export interface LocalCluster {
  readonly nodes: LocalRedis[];
  /** Seed addresses for an ioredis Cluster client. */
  readonly seeds: { host: string; port: number }[];
  /** A new ioredis Cluster client (close it yourself). */
  connect(): Cluster;
  stop(): Promise<void>;
}

export async function startLocalCluster(masters = 3, replicasPerMaster = 1): Promise<LocalCluster> {
  const nodes: LocalRedis[] = [];
  try {
    for (let i = 0; i < masters * (1 + replicasPerMaster); i++) {
      // The bus port is usually port + 10000, which may not exist above 55535: name it.
      // Validity factor 0: a replica may take over however long ago it last heard its master
      // (a fresh test cluster's replicas may still be in their first sync when a test kills one).
      const busPort = await freePort();
      nodes.push(
        await startLocalRedis({
          appendOnly: true,
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000', '--cluster-replica-validity-factor', '0', '--cluster-port', String(busPort)],
        }),
      );
    }
    await run('redis-cli', [
      '--cluster', 'create',
      ...nodes.map(node => `127.0.0.1:${node.port}`),
      '--cluster-replicas', String(replicasPerMaster),
      '--cluster-yes',
    ]);
    await waitForClusterOk(nodes);
  } catch (error) {
    await Promise.all(nodes.map(node => node.stop().catch(() => undefined)));
    throw error;
  }
  const seeds = nodes.map(node => ({ host: '127.0.0.1', port: node.port }));
  return {
    nodes,
    seeds,
    connect: () => new Cluster(seeds, { redisOptions: { maxRetriesPerRequest: 10 } }),
    stop: async () => {
      await Promise.all(nodes.map(node => node.stop().catch(() => undefined)));
    },
  };
}

async function waitForClusterOk(nodes: LocalRedis[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (const node of nodes) {
    const client = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      for (;;) {
        const info = String(await client.call('CLUSTER', 'INFO'));
        if (info.includes('cluster_state:ok')) break;
        if (Date.now() > deadline) throw new Error(`cluster did not reach state ok: ${info}`);
        await new Promise(resolve => setTimeout(resolve, 100));
      }
    } finally {
      client.disconnect();
    }
  }
}
