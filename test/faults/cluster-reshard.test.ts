import assert from 'node:assert/strict';
import type { Cluster } from 'ioredis';
import { describe, it } from 'node:test';
import { ConnectionError, NotReplicatedError, Queue, Worker } from '../../src/index.js';
import { groupQueueKey, partitionKeys } from '../../src/store/redis/keys.js';
import { partitionOf } from '../../src/store/placement.js';
import { useLocalCluster, type ClusterNode, type MigrateReport } from '../helpers/cluster.js';
import { sleep, waitFor } from '../helpers/redis.js';

// Resharding moves a hash slot, and with it one partition, from one master to another while
// producers and workers use it. During the move Redis answers ASK (the key has moved), MOVED (the
// slot has moved) and, for every multi-key command whose keys are split between the two nodes or
// partly absent, TRYAGAIN. Every sandglass script names all seven keys of its partition and some
// (dead, errors) are usually absent, so a partition answers TRYAGAIN for the whole migration window.

const PARTITIONS = 6;
const LEASE_MS = 5_000;

// No replicas and no AOF: this file is about slots moving, not about durability; three servers
// leave the two cores to the load.
const cluster = useLocalCluster(3, 0, { appendOnly: false });

describe('resharding under load', () => {
  it('moves a partition to another master and back with producers and a worker running: 0 lost, 0 duplicates without a lease expiry, 0 early, queue empty', async () => {
    const outcome = await underLoad('reshard', cluster.client, async ({ slot, source, target, progressOnMoved }) => {
      // 1. A slow move: two keys per MIGRATE and a pause after each, so the partition stays split
      //    between the nodes for a while and clients meet ASK and TRYAGAIN many times.
      const reports = [await cluster.migrateSlot(slot, target, { batchKeys: 2, pauseMs: 100 })];
      assert.equal(await cluster.ownerOf(slot), target, 'the slot is served by the new master');
      await progressOnMoved('the moved partition to work on its new master');
      // 2. The same slot back as redis-cli does it (one batch, no pause): the usual window.
      reports.push(await cluster.migrateSlot(slot, source, { batchKeys: 100 }));
      await progressOnMoved('the partition to work again after moving back');
      // 3. Once more to the target, where the keys must end.
      reports.push(await cluster.migrateSlot(slot, target, { batchKeys: 3, pauseMs: 50 }));
      await progressOnMoved('the partition to work after the last move');
      return reports;
    });
    assert.ok(outcome.redirections.TRYAGAIN + outcome.redirections.ASK > 0, 'the clients did meet the migration (ASK or TRYAGAIN)');
    // Windows of a few hundred ms fit in ioredis's own TRYAGAIN retries: no caller saw an error.
    assert.equal(outcome.failedAdds, 0, 'no add failed');
  });

  it('a 3 s migration window: calls wait it out (TRYAGAIN retried by sandglass), nothing fails, nothing is lost', async () => {
    const longMove = async ({ slot, target, progressOnMoved }: MoveContext) => {
      // Two batches with 1.5 s after each: a 3 s window, as when a partition's jobs hash is large.
      const reports = [await cluster.migrateSlot(slot, target, { batchKeys: 3, pauseMs: 1_500 })];
      await progressOnMoved('the partition to work on its new master');
      return reports;
    };
    // ioredis alone gives up on TRYAGAIN after about 1 s ("Too many Cluster redirections"); sandglass
    // retries such calls for up to 5 s, so a default client rides through a 3 s window.
    const plain = await underLoad('long-default', cluster.client, longMove);
    assert.equal(plain.failedAdds, 0, 'no add failed during a 3 s window');
    assert.equal(plain.workerErrors, 0, 'the worker saw no error');
  });
});

describe('an add that waits for replicas (waitForReplicas)', () => {
  it('waits out a migration window (TRYAGAIN) like any other call instead of failing', async () => {
    const name = 'replicated-move';
    const slot = await cluster.slotOf(partitionKeys('sg', name, 0).due);
    const source = await cluster.ownerOf(slot);
    const to = (await cluster.masters()).find(node => node !== source) as ClusterNode;
    const plain = new Queue<string>(name, { connection: cluster.client });
    // This cluster has no replicas: WAIT answers 0 and the add throws NotReplicatedError, which says
    // the script ran. A TRYAGAIN that was not waited out would be a ConnectionError instead.
    const waiting = new Queue<string>(name, { connection: cluster.client, waitForReplicas: { replicas: 1, timeoutMs: 50 } });
    try {
      // Give the partition its keys (a migration window needs keys on both sides), learn the layout.
      // Due in 30 s, the jobs go to `due` and `jobs` (not the wheel, whose bucket and index keys
      // would lengthen this window of two keys per 1.5 s beyond the calls' patience).
      await plain.addBulk(Array.from({ length: 6 }, (_, i) => ({ payload: 'earlier', id: `earlier-${i}`, delay: '30s' })));
      assert.ok((await waiting.add('first', { id: 'first', delay: '30s' }).catch((e: unknown) => e)) instanceof NotReplicatedError);
      const tryAgainBefore = await tryAgainCount();
      let during: Promise<unknown> | undefined;
      // Two keys per MIGRATE and 1.5 s after each: the partition's keys stay split for seconds.
      const report = await cluster.migrateSlot(slot, to, {
        batchKeys: 2,
        pauseMs: 1_500,
        onBatch: () => {
          during ??= waiting.add('during', { id: 'during', delay: '30s' }).catch((e: unknown) => e);
        },
      });
      const outcome = await during;
      const tryAgain = (await tryAgainCount()) - tryAgainBefore;
      console.log(
        `waitForReplicas add during a ${report.windowMs} ms migration window: ${String(outcome)}; servers answered TRYAGAIN ${tryAgain} times`,
      );
      assert.ok(tryAgain > 0, 'the add met the migration (TRYAGAIN)');
      assert.ok(!(outcome instanceof ConnectionError), `the migration was not waited out: ${String(outcome)}`);
      assert.ok(outcome instanceof NotReplicatedError, `got ${String(outcome)}`);
      assert.equal((await plain.get('during'))?.state, 'delayed', 'the job is written');
    } finally {
      await waiting.close();
      await plain.close();
    }
  });
});

describe('wheel promotion across a slot migration', () => {
  it('a replace-add stopped midway by a migration leaves a copy in the old bucket: with buckets being promoted throughout, 0 lost, 0 delivered twice', async () => {
    const name = 'wheel-move';
    const keys = partitionKeys('sg', name, 0);
    const slot = await cluster.slotOf(keys.due);
    const source = await cluster.ownerOf(slot);
    const target = (await cluster.masters()).find(node => node !== source) as ClusterNode;
    const W = 1_000;
    const queue = new Queue<string>(name, { connection: cluster.client, partitions: 1 });
    const deliveries = new Map<string, string[]>();
    const worker = new Worker<string>(name, job => void deliveries.set(job.id, [...(deliveries.get(job.id) ?? []), job.payload]), {
      connection: cluster.client,
      partitions: 1,
      leaseMs: LEASE_MS,
      concurrency: 10,
    });
    let stale = 0;
    worker.on('stale', () => (stale += 1));
    worker.on('error', () => undefined); // claims wait out the window (TRYAGAIN), some past their patience
    try {
      await queue.stats(); // creates the queue (its `meta`)
      // One-second buckets: promotions go on all the time; a few fillers keep them going around the move.
      await cluster.client.hset(keys.meta, 'wheelSlotMs', W);
      const now = Number((await cluster.client.time())[0]) * 1_000;
      const fillers = Array.from({ length: 20 }, (_, i) => ({ payload: 'filler', id: `f${i}`, at: now + 2_000 + i * 300 }));
      await queue.addBulk(fillers);
      // `m` waits in bucket A (due in 12 s); a job due in 8 s makes bucket B exist (the fillers'
      // buckets end before it).
      await queue.add('old', { id: 'm', at: now + 12_000 });
      await queue.add('b', { id: 'b', at: now + 8_000 });
      // A queue in full use has all its keys: then its scripts run on the exporting node during a
      // migration (a script naming a missing key waits the migration out: TRYAGAIN). Give it each:
      // a dead job, a job active under a long lease, a parked job in `due`, the other hashes.
      const record = '0,0,,,\n"x"';
      await cluster.client.zadd(keys.dead, now, 'dead-1');
      await cluster.client.hset(keys.jobs, 'dead-1', `1,0,${now},1,\n"x"`, 'held', record, 'parked', record);
      await cluster.client.hset(keys.errors, 'dead-1', 'boom');
      await cluster.client.zadd(keys.active, now + 600_000, 'held');
      await cluster.client.hset(keys.leases, 'held', `999999,${now}`);
      await cluster.client.zadd(keys.due, now + 86_400_000, 'parked');
      // The group keys (README, "Groups"): a parked job of a group and one of its jobs held, as the scripts write them.
      const grouped = '0,0,,,\n\x1fparked-group\n"x"';
      await cluster.client.hset(keys.jobs, 'gparked', grouped, 'gheld', grouped);
      await cluster.client.zadd(groupQueueKey('sg', name, 0, 'parked-group'), now + 86_400_000, 'gparked');
      await cluster.client.zadd(keys.groupDue, now + 86_400_000, 'gparked');
      await cluster.client.zadd(keys.groups, now + 86_400_000, 'parked-group');
      await cluster.client.zadd(keys.active, now + 600_000, 'gheld');
      await cluster.client.hset(keys.leases, 'gheld', `999998,${now},parked-group`);
      await cluster.client.zadd(keys.groupJobs, 2, 'parked-group');
      await cluster.client.hset(keys.groupActive, 'parked-group', '1');
      await cluster.client.hset(keys.groupState, 'p:paused-one', '1');
      await cluster.client.hset(keys.schedules, '~', '');
      await cluster.client.hset(keys.expiry, '~', '1');
      await cluster.client.zadd(keys.completed, now, '~');
      await cluster.client.hset(keys.results, '~', '');
      await worker.waitUntilReady();
      await waitFor(() => deliveries.size > 0, 10_000, 'promotions to begin');

      const sourceClient = cluster.nodeClient(source);
      const targetClient = cluster.nodeClient(target);
      let addError: unknown;
      try {
        const [sourceId, targetId] = [
          String(await sourceClient.call('CLUSTER', 'MYID')),
          String(await targetClient.call('CLUSTER', 'MYID')),
        ];
        // (Acks rotate the `done` buckets: each must exist at this moment.)
        for (const done of [keys.done0, keys.done1, keys.done2]) await sourceClient.hset(done, '~', '0');
        await targetClient.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId);
        await sourceClient.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId);
        // Replace m, due in 8 s (bucket B), with c due in 10.5 s: c's bucket C does not exist, so its
        // first write fails on the exporting node (ASK) after m is in B, before m leaves A.
        addError = await queue
          .addBulk(
            [
              { payload: 'new', id: 'm', at: now + 8_000 },
              { payload: 'c', id: 'c', at: now + 10_500 },
            ],
            'replace',
          )
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        const moving = (await sourceClient.call('CLUSTER', 'GETKEYSINSLOT', slot, 1_000)) as string[];
        await sourceClient.call('MIGRATE', '127.0.0.1', target.port, '', 0, 10_000, 'KEYS', ...moving);
        for (const node of await cluster.masters()) {
          const raw = cluster.nodeClient(node);
          try {
            await raw.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
          } finally {
            raw.disconnect();
          }
        }
      } finally {
        sourceClient.disconnect();
        targetClient.disconnect();
      }
      assert.ok(addError, 'the add was stopped midway by the migration');
      // m is in B as replaced and still in A: the stopped add had not removed its old place.
      let copies = 0;
      for (const n of await cluster.client.zrange(keys.wheel, 0, -1)) {
        copies += (await cluster.client.lrange(`${keys.wheel}:${n}`, 0, -1)).filter(entry => entry.startsWith('m\n')).length;
      }
      assert.equal(copies, 2, `m has two bucket entries (${String(addError)})`);
      // The caller sends the failed add again, now on the new owner.
      await queue.addBulk(
        [
          { payload: 'new', id: 'm', at: now + 8_000 },
          { payload: 'c', id: 'c', at: now + 10_500 },
        ],
        'replace',
      );
      const expected = [...fillers.map(job => job.id), 'm', 'b', 'c'];
      await waitFor(() => expected.every(id => deliveries.has(id)), 20_000, 'every job to run');
      // m's old copy (bucket A, due at now + 12 s) is promoted after its new self ran.
      await waitFor(
        async () => (await cluster.client.zcard(keys.wheel)) === 0 && Number((await cluster.client.time())[0]) * 1_000 > now + 13_000,
        20_000,
        'bucket A to be promoted',
      );
      await waitFor(async () => (await queue.stats()).ready === 0, 10_000, 'nothing left ready');
      await sleep(500); // a second delivery of m, if any, has time to start
      const { reaped } = await queue.counters();
      const twice = [...deliveries].filter(([, payloads]) => payloads.length > 1);
      console.log(
        `wheel promotion across a migration: ${deliveries.size} jobs run, delivered twice: ${JSON.stringify(twice)}, ${reaped} lease expiries, ${stale} stale`,
      );
      assert.equal(expected.filter(id => !deliveries.has(id)).length, 0, 'no job lost');
      assert.deepEqual(deliveries.get('m'), ['new'], 'm runs once, as replaced');
      assert.deepEqual(twice, [], 'no job delivered twice');
      assert.equal(await cluster.ownerOf(slot), target);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

async function tryAgainCount(): Promise<number> {
  return (await errorStats()).TRYAGAIN;
}

interface MoveContext {
  readonly slot: number;
  readonly source: ClusterNode;
  readonly target: ClusterNode;
  /** Waits until 200 more jobs of the moved partition have run. */
  progressOnMoved(what: string): Promise<void>;
}

interface Outcome {
  readonly failedAdds: number;
  readonly workerErrors: number;
  /** Error replies the servers sent while the load ran (INFO errorstats deltas). */
  readonly redirections: { ASK: number; MOVED: number; TRYAGAIN: number };
}

/**
 * Runs two producers and a worker on a 6-partition queue, calls `moves` once the load runs (it
 * moves partition 0's slot), stops the producers and checks the ledger: every acknowledged add ran,
 * nothing ran twice unless a lease expired, nothing ran early, the queue is empty, and partition 0's
 * keys are on the master that owns its slot now, and only there.
 */
async function underLoad(name: string, connection: Cluster, moves: (context: MoveContext) => Promise<MigrateReport[]>): Promise<Outcome> {
  const moved = 0;
  const slot = await cluster.slotOf(partitionKeys('sg', name, moved).due);
  const source = await cluster.ownerOf(slot);
  const target = (await cluster.masters()).find(node => node !== source) as ClusterNode;
  const errorsBefore = await errorStats();

  const queue = new Queue<number>(name, { connection, partitions: PARTITIONS });
  const deliveries = new Map<number, number>();
  let early = 0;
  let doneInMoved = 0;
  const worker = new Worker<number>(
    name,
    job => {
      if (Date.now() < job.dueAt) early += 1;
      deliveries.set(job.payload, (deliveries.get(job.payload) ?? 0) + 1);
      if (partitionOf(job.id, PARTITIONS) === moved) doneInMoved += 1;
    },
    { connection, concurrency: 50, partitions: PARTITIONS, leaseMs: LEASE_MS },
  );
  let workerErrors = 0;
  let stale = 0;
  worker.on('error', () => (workerErrors += 1));
  worker.on('stale', () => (stale += 1));

  // Each add has its own id, so an add that failed during the move is retried with the same id and
  // cannot create a second job (an add whose reply was lost may well have been applied).
  const acknowledged = new Set<number>();
  let failedAdds = 0;
  let next = 0;
  let adding = true;
  const produce = async () => {
    while (adding) {
      const i = next++;
      for (;;) {
        try {
          await queue.add(i, { id: `job-${i}`, delay: i % 300 });
          acknowledged.add(i);
          break;
        } catch {
          failedAdds += 1;
          await sleep(20);
        }
      }
    }
  };
  const producers = [produce(), produce()];
  try {
    await worker.waitUntilReady();
    await waitFor(() => deliveries.size > 1_000, 30_000, 'load before the move');
    const progressOnMoved = async (what: string) => {
      const from = doneInMoved;
      await waitFor(() => doneInMoved > from + 200, 15_000, what);
    };
    const reports = await moves({ slot, source, target, progressOnMoved });

    adding = false;
    await Promise.all(producers);
    await waitFor(() => [...acknowledged].every(i => deliveries.has(i)), 20_000, 'every acknowledged job to run');
    await waitFor(
      async () => {
        const stats = await queue.stats();
        return stats.delayed + stats.ready + stats.active === 0;
      },
      10_000,
      'the queue to be empty',
    );

    const lost = [...acknowledged].filter(i => !deliveries.has(i)).length;
    const duplicates = [...deliveries.values()].reduce((sum, count) => sum + count - 1, 0);
    const unknown = [...deliveries.keys()].filter(i => !acknowledged.has(i)).length;
    const { reaped } = await queue.counters();
    const errorsAfter = await errorStats();
    const redirections = {
      ASK: errorsAfter.ASK - errorsBefore.ASK,
      MOVED: errorsAfter.MOVED - errorsBefore.MOVED,
      TRYAGAIN: errorsAfter.TRYAGAIN - errorsBefore.TRYAGAIN,
    };
    const windows = reports.map(report => `${report.keys} keys in ${report.batches} batch(es), window ${report.windowMs} ms`).join('; ');
    console.log(
      `${name}: ${acknowledged.size} adds acknowledged (${failedAdds} add calls failed and were retried with the same id), ` +
        `${deliveries.size} run, ${lost} lost, ${duplicates} duplicates, ${reaped} lease expiries, ${stale} stale acks, ${early} early, ` +
        `${workerErrors} worker errors; servers answered ASK ${redirections.ASK}, MOVED ${redirections.MOVED}, TRYAGAIN ${redirections.TRYAGAIN}; moves: ${windows}`,
    );
    assert.equal(lost, 0, 'no acknowledged job is lost');
    assert.ok(unknown <= failedAdds, 'a job nobody saw acknowledged can only come from a failed add that was applied');
    assert.ok(duplicates <= reaped, `${duplicates} duplicates but only ${reaped} lease expiries`);
    assert.equal(early, 0, 'no job ran before its due time');
    assert.deepEqual(await queue.stats(), { delayed: 0, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });

    // The partition's keys are on the master that owns the slot now, and nowhere else.
    const owner = await cluster.ownerOf(slot);
    for (const node of await cluster.masters()) {
      const raw = cluster.nodeClient(node);
      try {
        const count = Number(await raw.call('CLUSTER', 'COUNTKEYSINSLOT', slot));
        if (node === owner) assert.ok(count > 0, 'the partition has keys on its new master');
        else assert.equal(count, 0, `master ${node.port} kept keys of the moved slot`);
        if (node === owner)
          assert.equal(await raw.exists(partitionKeys('sg', name, moved).counters), 1, "the partition's counters moved with it");
      } finally {
        raw.disconnect();
      }
    }
    assert.equal(owner, reports.at(-1)?.to === target.port ? target : source, 'the slot ends where the last move put it');
    return { failedAdds, workerErrors, redirections };
  } finally {
    adding = false;
    await Promise.all(producers);
    await worker.close();
    await queue.close();
  }
}

/** ASK, MOVED and TRYAGAIN replies sent by all nodes so far (INFO errorstats). */
async function errorStats(): Promise<{ ASK: number; MOVED: number; TRYAGAIN: number }> {
  const total = { ASK: 0, MOVED: 0, TRYAGAIN: 0 };
  for (const node of cluster.nodes) {
    const raw = cluster.nodeClient(node);
    try {
      const info = await raw.info('errorstats');
      for (const kind of ['ASK', 'MOVED', 'TRYAGAIN'] as const)
        total[kind] += Number(new RegExp(`errorstat_${kind}:count=(\\d+)`).exec(info)?.[1] ?? 0);
    } finally {
      raw.disconnect();
    }
  }
  return total;
}
