// A lost claim reply on a Redis Cluster: the master of one partition of a limited queue is frozen
// (SIGSTOP) while that partition's claim travels, for longer than the worker's call timeout and
// shorter than cluster-node-timeout (no failover, the cluster stays ok). The limiter's grant came
// from partition 0's master, which stays up; the claim waits in the frozen node's socket, the worker
// gives up on it (and on its resends, queued behind it), and on SIGCONT the node runs the claim
// after all: it takes the jobs, and nobody is listening for its reply.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import { Queue } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { idIn, useLocalCluster, type ClusterNode } from '../helpers/cluster.js';
import { mostOverlapping, recordingWorker } from '../helpers/limits.js';
import { claimRun, monitorCommands } from '../helpers/monitor.js';
import { sleep, waitFor } from '../helpers/redis.js';

const PARTITIONS = 6;
/** The worker's call timeout; the cluster's node timeout is 2,000 ms (test/helpers/cluster.ts). */
const CALL_TIMEOUT_MS = 300;
const LEASE_MS = 6_000;

const cluster = useLocalCluster(3, 0, { appendOnly: false });

describe('lost claim replies: a Cluster master frozen past the call timeout', () => {
  it('a limited queue over 6 partitions: the jobs of the claim the frozen master ran after the worker gave up start within 2 s of SIGCONT, as the same attempt; concurrency 2 is never exceeded', async t => {
    const name = 'frozen';
    const ownerOf = async (partition: number): Promise<ClusterNode> =>
      cluster.ownerOf(await cluster.slotOf(partitionKeys('sg', name, partition).due));
    const owners = await Promise.all(Array.from({ length: PARTITIONS }, (_, partition) => ownerOf(partition)));
    // The frozen master holds partition `p` and not partition 0 (where the limiter lives).
    const p = owners.findIndex(owner => owner !== owners[0]);
    assert.ok(p > 0, 'some partition lives on another master than partition 0');
    const frozen = owners[p] as ClusterNode;
    const elsewhere = owners.flatMap((owner, partition) => (owner === frozen ? [] : [partition]));

    // The worker's own client, with a short call timeout; the Queue's has the default one.
    const workerClient = new Cluster(cluster.seeds, { redisOptions: { commandTimeout: CALL_TIMEOUT_MS, maxRetriesPerRequest: 10 } });
    workerClient.on('error', () => undefined);
    let continued = true;
    const resume = async () => {
      if (continued) return;
      continued = true;
      await frozen.kill('SIGCONT');
    };
    const queue = new Queue<string>(name, { connection: cluster.client, partitions: PARTITIONS });
    // Closed in reverse order, whatever fails; the frozen master continued first.
    const owned: { close(): unknown }[] = [{ close: () => workerClient.disconnect() }, queue];
    t.after(async () => {
      await resume();
      for (const item of owned.reverse()) await item.close();
    });
    const { worker, runs, errors } = recordingWorker(name, {
      connection: workerClient,
      concurrency: 4,
      leaseMs: LEASE_MS,
      maxAttempts: 1,
      partitions: PARTITIONS,
    });
    owned.push(worker);
    // Every claim of partition p the frozen master runs, when it runs it (a frozen node runs
    // nothing; MONITOR reports a command at its execution).
    const claimsRun: { at: number; memo: string }[] = [];
    owned.push(
      await monitorCommands(frozen.port, (at, line) => {
        const memo = claimRun(line, name, p);
        if (memo) claimsRun.push({ at, memo });
      }),
    );
    await queue.setLimits({ concurrency: 2 });
    await worker.waitUntilReady();
    // Warm-up: the worker has learned that the queue is limited, and claims through the limiter.
    await queue.add('warm-up', { id: idIn(elsewhere[0] as number, PARTITIONS, 0) });
    await waitFor(() => runs.length === 1, 5_000, 'the warm-up job');
    await sleep(100);

    // Two jobs of partition p due together (one claim takes both), and four elsewhere due a little
    // later, while the lost claim's grant holds both slots: they must wait for them.
    const at = Date.now() + 400;
    const lostIds = [idIn(p, PARTITIONS, 1), idIn(p, PARTITIONS, 2)];
    for (const id of lostIds) await queue.add(id, { id, at });
    const otherIds = elsewhere.slice(0, 4).map((partition, n) => idIn(partition, PARTITIONS, 10 + n));
    for (const id of otherIds) await queue.add(id, { id, at: at + 400 });
    // Frozen before the jobs fall due: the claim that takes them is the first call to reach it.
    const untilDue = at - 100 - Date.now();
    if (untilDue > 0) await sleep(untilDue);
    continued = false;
    await frozen.kill('SIGSTOP');
    const frozenAt = Date.now();
    const timedOut = () => errors.filter(message => message.startsWith('claim:')).length;
    let gaveUpAt = 0;
    let answeredAt = 0;
    try {
      await waitFor(() => timedOut() >= 1, 1_000, 'the worker to give up on the claim');
      gaveUpAt = Date.now();
      // Frozen a while longer (a resend times out too), well short of the node timeout.
      await sleep(250);
      assert.equal(runs.length, 1, 'nothing started while the master was frozen');
    } finally {
      answeredAt = Date.now();
      await resume();
    }
    t.diagnostic(`frozen for ${answeredAt - frozenAt} ms; errors: ${JSON.stringify([...new Set(errors)])}`);

    await waitFor(() => runs.length === 1 + lostIds.length + otherIds.length, 6_000, 'every job to run');
    const [heldClaim] = claimsRun.filter(claim => claim.at >= frozenAt);
    assert.ok(heldClaim, 'the frozen master ran the held claim');
    assert.ok(heldClaim.at >= gaveUpAt, `the claim ran ${Math.round(heldClaim.at - gaveUpAt)} ms after the worker gave up on it`);
    assert.ok(claimsRun.filter(claim => claim.memo === heldClaim.memo).length >= 2, 'it was resent under the same claim id');
    const lost = runs.filter(run => lostIds.includes(run.id));
    assert.equal(lost.length, 2);
    assert.deepEqual(
      lost.map(run => run.attempt),
      [1, 1],
      'the lost reply cost no attempt',
    );
    const lastMs = Math.max(...lost.map(run => run.start)) - answeredAt;
    assert.ok(lastMs < 2_000, `the last started ${lastMs} ms after SIGCONT`);
    assert.deepEqual(
      runs.map(run => run.attempt),
      runs.map(() => 1),
    );
    const most = mostOverlapping(runs.map(run => [run.start, run.end]));
    assert.ok(most <= 2, `${most} handlers at once under concurrency 2`);
    await waitFor(async () => (await queue.stats()).active === 0, 3_000, 'the acks');
    assert.equal((await queue.stats()).dead, 0);
    t.diagnostic(
      `claim ran ${Math.round(heldClaim.at - gaveUpAt)} ms after the worker gave up; last job started ${lastMs} ms after SIGCONT; ${most} handlers at once`,
    );
  });
});
