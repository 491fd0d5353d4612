// A real local Redis Cluster for tests and benchmarks: every node a private redis-server on free
// ports (client port and cluster bus port). With 3 or more masters it is created by
// `redis-cli --cluster create` (masters with replicas, as in production); with fewer, redis-cli
// refuses, so the slots are assigned and the nodes introduced here (ADDSLOTSRANGE, MEET).
// Every step is bounded: a cluster that does not form fails with the step and the last state.
import { execFile } from 'node:child_process';
import { after, before } from 'node:test';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { freePort, startLocalRedis, type LocalRedis } from '../../src/deploy/local-redis.js';
import { partitionOf } from '../../src/store/placement.js';

const run = promisify(execFile);

/** Hash slots of a Redis Cluster. */
export const SLOTS = 16_384;

export interface ClusterNode extends LocalRedis {
  /** The cluster bus port (named with --cluster-port: port + 10000 may not exist above 55535). */
  readonly busPort: number;
}

export interface LocalClusterOptions {
  /** AOF on every node. @default true */
  appendOnly?: boolean;
  /** @default 'always' (as startLocalRedis) */
  fsync?: 'always' | 'everysec';
  /** Longest wait for any one step (cluster creation, state ok, a MIGRATE). @default 30000 */
  stepTimeoutMs?: number;
}

export interface LocalCluster {
  readonly nodes: ClusterNode[];
  /** Seed addresses for an ioredis Cluster client. */
  readonly seeds: { host: string; port: number }[];
  /** A new ioredis Cluster client (close it yourself). */
  connect(): Cluster;
  /** The hash slot of a key (CLUSTER KEYSLOT). */
  slotOf(key: string): Promise<number>;
  /** The node that serves a slot now, as the cluster itself says (CLUSTER SLOTS on a live node). */
  ownerOf(slot: number): Promise<ClusterNode>;
  /** The nodes that are masters now (owning at least one slot). */
  masters(): Promise<ClusterNode[]>;
  /** A plain (non-cluster) client to one node; close it yourself. */
  nodeClient(node: ClusterNode): Redis;
  /** Moves one slot and its keys from its owner to `to`, under load, as `redis-cli --cluster reshard` does. */
  migrateSlot(slot: number, to: ClusterNode, options?: MigrateOptions): Promise<MigrateReport>;
  stop(): Promise<void>;
}

export interface MigrateOptions {
  /** Keys per MIGRATE call (small batches leave the slot split between the two nodes for longer). @default 100 */
  batchKeys?: number;
  /** Pause between batches, to widen the window in which the slot is half moved. @default 0 */
  pauseMs?: number;
  /** Called after every batch. */
  onBatch?: (moved: number) => void | Promise<void>;
}

export interface MigrateReport {
  readonly slot: number;
  readonly from: number;
  readonly to: number;
  readonly keys: number;
  readonly batches: number;
  /** From SETSLOT MIGRATING to the last SETSLOT NODE: the window in which clients see ASK/TRYAGAIN. */
  readonly windowMs: number;
}

export async function startLocalCluster(masters = 3, replicasPerMaster = 1, options: LocalClusterOptions = {}): Promise<LocalCluster> {
  if (!Number.isInteger(masters) || masters < 1) throw new Error(`masters must be an integer >= 1, got ${masters}`);
  if (masters < 3 && replicasPerMaster > 0)
    throw new Error('replicas need >= 3 masters (redis-cli --cluster create); start fewer masters without replicas');
  const stepTimeoutMs = options.stepTimeoutMs ?? 30_000;
  const nodes: ClusterNode[] = [];
  try {
    for (let i = 0; i < masters * (1 + replicasPerMaster); i++) {
      // Validity factor 0: a replica may take over however long ago it last heard its master
      // (a fresh test cluster's replicas may still be in their first sync when a test kills one).
      const busPort = await freePort();
      const server = await startLocalRedis({
        appendOnly: options.appendOnly ?? true,
        ...(options.fsync ? { fsync: options.fsync } : {}),
        // Announce 127.0.0.1: a node learns its own address only from a peer's MEET, so a node
        // alone in its cluster reports an empty address in CLUSTER SLOTS, and an ioredis Cluster
        // client then waits forever for a node it cannot name.
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          '2000',
          '--cluster-replica-validity-factor',
          '0',
          '--cluster-port',
          String(busPort),
          '--cluster-announce-ip',
          '127.0.0.1',
        ],
      });
      nodes.push(Object.assign(server, { busPort }));
    }
    if (masters >= 3) {
      await run(
        'redis-cli',
        [
          '--cluster',
          'create',
          ...nodes.map(node => `127.0.0.1:${node.port}`),
          '--cluster-replicas',
          String(replicasPerMaster),
          '--cluster-yes',
        ],
        {
          timeout: stepTimeoutMs,
          killSignal: 'SIGKILL',
        },
      ).catch(error => {
        throw new Error(`redis-cli --cluster create did not finish within ${stepTimeoutMs} ms: ${(error as Error).message}`);
      });
    } else {
      await assignAndMeet(nodes, stepTimeoutMs);
    }
    await waitForClusterOk(nodes, nodes.length, stepTimeoutMs);
  } catch (error) {
    await Promise.all(nodes.map(node => node.stop().catch(() => undefined)));
    throw error;
  }
  const seeds = nodes.map(node => ({ host: '127.0.0.1', port: node.port }));
  const withNode = async <T>(use: (client: Redis) => Promise<T>): Promise<T> => {
    // Any live node answers the cluster-wide questions (a killed one is skipped).
    let last: unknown;
    for (const node of nodes) {
      const client = plainClient(node.port);
      try {
        return await use(client);
      } catch (error) {
        last = error;
      } finally {
        client.disconnect();
      }
    }
    throw new Error(`no cluster node answered: ${String(last)}`);
  };
  const byPort = (port: number): ClusterNode => {
    const node = nodes.find(candidate => candidate.port === port);
    if (!node) throw new Error(`port ${port} is not a node of this cluster`);
    return node;
  };
  const cluster: LocalCluster = {
    nodes,
    seeds,
    connect: () => new Cluster(seeds, { redisOptions: { maxRetriesPerRequest: 10 } }),
    slotOf: key => withNode(async client => Number(await client.call('CLUSTER', 'KEYSLOT', key))),
    ownerOf: slot =>
      withNode(async client => {
        const shards = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
        const owner = shards.find(([from, to]) => slot >= from && slot <= to)?.[2];
        if (!owner) throw new Error(`slot ${slot} has no owner`);
        return byPort(Number(owner[1]));
      }),
    masters: () =>
      withNode(async client => {
        const shards = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
        return [...new Set(shards.map(shard => Number(shard[2][1])))].map(byPort);
      }),
    nodeClient: node => plainClient(node.port),
    migrateSlot: async (slot, to, migrate = {}) => migrateSlot(cluster, slot, to, migrate, stepTimeoutMs),
    stop: async () => {
      await Promise.all(nodes.map(node => node.stop().catch(() => undefined)));
    },
  };
  return cluster;
}

/** A test file's cluster: a {@link LocalCluster} (started in `before`) and one client to it. */
export interface ClusterFixture extends LocalCluster {
  /** A Cluster client for the file's tests, disconnected in `after`. */
  readonly client: Cluster;
}

/**
 * Starts a private Redis Cluster for the current test file, as `useRedis` starts a redis-server:
 * `startLocalCluster(masters, replicasPerMaster, options)` in `before`, a client to it, both closed
 * in `after`. The fixture is the cluster itself; use it inside tests and suites' hooks: Node 20 starts
 * a file's top-level `before` hooks without waiting for the one before, so another top-level hook may
 * find the cluster not started yet.
 */
export function useLocalCluster(masters = 3, replicasPerMaster = 1, options: LocalClusterOptions = {}): ClusterFixture {
  let cluster: LocalCluster | undefined;
  let client: Cluster | undefined;
  const started = (): LocalCluster => {
    if (!cluster) throw new Error('the cluster starts in before(): use it inside a test or a later hook');
    return cluster;
  };
  before(async () => {
    cluster = await startLocalCluster(masters, replicasPerMaster, options);
    client = cluster.connect();
  });
  after(async () => {
    client?.disconnect();
    await cluster?.stop();
  });
  return {
    get nodes() {
      return started().nodes;
    },
    get seeds() {
      return started().seeds;
    },
    get client() {
      started();
      return client as Cluster;
    },
    connect: () => started().connect(),
    slotOf: key => started().slotOf(key),
    ownerOf: slot => started().ownerOf(slot),
    masters: () => started().masters(),
    nodeClient: node => started().nodeClient(node),
    migrateSlot: (slot, to, migrate) => started().migrateSlot(slot, to, migrate),
    stop: () => started().stop(),
  };
}

function plainClient(port: number): Redis {
  // One retry and a connect timeout: a helper call on a dead node fails fast instead of hanging.
  const client = new Redis(port, '127.0.0.1', {
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: () => null,
    lazyConnect: false,
  });
  client.on('error', () => undefined);
  return client;
}

/** Rejects with `what` after `ms`: every wait in this file is bounded. */
async function bounded<T>(what: string, ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A cluster of 1 or 2 masters without redis-cli: each node takes a contiguous range of slots and a
 * distinct config epoch, then node 0 meets the others. `CLUSTER MEET ip port [bus-port]` takes the
 * CLIENT port; the bus port is port + 10000 unless given. Our bus ports are free ports named with
 * --cluster-port, so MEET without the third argument opens a handshake to a port nobody listens on:
 * the handshake never completes, the node stays unknown, and cluster_state never becomes ok.
 */
async function assignAndMeet(nodes: ClusterNode[], stepTimeoutMs: number): Promise<void> {
  const clients = nodes.map(node => plainClient(node.port));
  try {
    await bounded(
      'CLUSTER ADDSLOTSRANGE / SET-CONFIG-EPOCH',
      stepTimeoutMs,
      Promise.all(
        clients.map(async (client, i) => {
          const from = Math.floor((SLOTS * i) / nodes.length);
          const to = Math.floor((SLOTS * (i + 1)) / nodes.length) - 1;
          await client.call('CLUSTER', 'ADDSLOTSRANGE', from, to);
          // Distinct epochs up front: otherwise the nodes start equal (0) and settle it by collision.
          await client.call('CLUSTER', 'SET-CONFIG-EPOCH', i + 1);
        }),
      ),
    );
    const [first] = clients;
    for (const node of nodes.slice(1)) {
      await bounded('CLUSTER MEET', stepTimeoutMs, first!.call('CLUSTER', 'MEET', '127.0.0.1', node.port, node.busPort));
    }
  } finally {
    for (const client of clients) client.disconnect();
  }
}

/** Waits until every node reports cluster_state:ok and knows all `expected` nodes as connected. */
export async function waitForClusterOk(nodes: ReadonlyArray<{ port: number }>, expected = nodes.length, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const node of nodes) {
    const client = plainClient(node.port);
    try {
      for (;;) {
        const info = String(await bounded(`CLUSTER INFO on ${node.port}`, timeoutMs, client.call('CLUSTER', 'INFO')));
        const known = Number(/cluster_known_nodes:(\d+)/.exec(info)?.[1] ?? 0);
        const assigned = Number(/cluster_slots_assigned:(\d+)/.exec(info)?.[1] ?? 0);
        if (info.includes('cluster_state:ok') && known >= expected && assigned === SLOTS) break;
        if (Date.now() > deadline) {
          const links = String(await client.call('CLUSTER', 'NODES').catch(() => '?'));
          throw new Error(
            `cluster node ${node.port} did not reach state ok with ${expected} nodes within ${timeoutMs} ms:\n${info.trim()}\n${links.trim()}`,
          );
        }
        await new Promise(resolve => setTimeout(resolve, 100));
      }
    } finally {
      client.disconnect();
    }
  }
}

/**
 * The documented slot migration (what `redis-cli --cluster reshard` runs): SETSLOT IMPORTING on the
 * target, MIGRATING on the source, MIGRATE the slot's keys in batches, then SETSLOT NODE on the
 * target first, the source next, then every other master. While it runs, a client that asks the
 * source for a key already moved gets ASK; a multi-key command (every sandglass script) whose keys
 * are split between the nodes, or partly absent, gets TRYAGAIN.
 */
async function migrateSlot(
  cluster: LocalCluster,
  slot: number,
  to: ClusterNode,
  options: MigrateOptions,
  stepTimeoutMs: number,
): Promise<MigrateReport> {
  const from = await cluster.ownerOf(slot);
  if (from === to) throw new Error(`slot ${slot} is already on ${to.port}`);
  const source = plainClient(from.port);
  const target = plainClient(to.port);
  const batchKeys = options.batchKeys ?? 100;
  try {
    const id = async (client: Redis) => String(await bounded('CLUSTER MYID', stepTimeoutMs, client.call('CLUSTER', 'MYID')));
    const [sourceId, targetId] = [await id(source), await id(target)];
    const startedAt = Date.now();
    await bounded('SETSLOT IMPORTING', stepTimeoutMs, target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId));
    await bounded('SETSLOT MIGRATING', stepTimeoutMs, source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId));
    let keys = 0;
    let batches = 0;
    for (;;) {
      const batch = (await bounded('GETKEYSINSLOT', stepTimeoutMs, source.call('CLUSTER', 'GETKEYSINSLOT', slot, batchKeys))) as string[];
      if (batch.length === 0) break;
      // MIGRATE moves the batch atomically; REPLACE is not used: a key on both sides would be a bug.
      await bounded('MIGRATE', stepTimeoutMs, source.call('MIGRATE', '127.0.0.1', to.port, '', 0, stepTimeoutMs, 'KEYS', ...batch));
      keys += batch.length;
      batches += 1;
      await options.onBatch?.(keys);
      if (options.pauseMs) await new Promise(resolve => setTimeout(resolve, options.pauseMs));
    }
    await bounded('SETSLOT NODE (target)', stepTimeoutMs, target.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId));
    await bounded('SETSLOT NODE (source)', stepTimeoutMs, source.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId));
    const windowMs = Date.now() - startedAt;
    for (const other of await cluster.masters()) {
      if (other === from || other === to) continue;
      const client = plainClient(other.port);
      try {
        await bounded('SETSLOT NODE (other master)', stepTimeoutMs, client.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId));
      } finally {
        client.disconnect();
      }
    }
    return { slot, from: from.port, to: to.port, keys, batches, windowMs };
  } finally {
    source.disconnect();
    target.disconnect();
  }
}

/** A job id that a queue of `count` partitions places in `partition` (ids go by their hash), unique per `n`. */
export function idIn(partition: number, count: number, n: number): string {
  for (let salt = 0; ; salt++) {
    const id = `job-${n}-${salt}`;
    if (partitionOf(id, count) === partition) return id;
  }
}
