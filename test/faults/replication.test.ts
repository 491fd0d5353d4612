import assert from 'node:assert/strict';
import { snapshot } from '../chaos/checker.js';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { NotReplicatedError, Queue } from '../../src/index.js';
import { startLocalRedis, type LocalRedis } from '../../src/deploy/local-redis.js';
import { waitFor } from '../helpers/redis.js';

let primary: LocalRedis;
let replica: LocalRedis;

before(async () => {
  primary = await startLocalRedis({ appendOnly: false });
  replica = await startLocalRedis({ appendOnly: false, args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const probe = new Redis(replica.url);
  await waitFor(async () => (await probe.info('replication')).includes('master_link_status:up'), 10_000, 'the replica to sync');
  probe.disconnect();
});

after(async () => {
  await replica?.kill('SIGCONT').catch(() => undefined);
  await Promise.all([replica?.stop(), primary?.stop()]);
});

describe('waitForReplicas', () => {
  it('confirms an add on the replica before resolving, and says so when no replica answers in time', async () => {
    const queue = new Queue<string>('replicated', { connection: primary.url, waitForReplicas: { replicas: 1, timeoutMs: 500 } });
    try {
      const id = await queue.add('safe', { delay: '1h' });
      const onReplica = new Redis(replica.url);
      // Due in an hour, the job waits in the wheel (the far-future tier): read every state of the replica.
      const onReplicaSnapshot = await snapshot(onReplica, 'replicated').finally(() => onReplica.disconnect());
      assert.ok(
        [...onReplicaSnapshot.jobs, ...onReplicaSnapshot.wheel.buckets.keys()].includes(id),
        'the replica has the job when add resolves',
      );

      await replica.kill('SIGSTOP');
      const startedAt = Date.now();
      const error = await queue.add('unconfirmed', { id: 'late', delay: '1h' }).catch((e: unknown) => e);
      assert.ok(error instanceof NotReplicatedError, `got ${String(error)}`);
      assert.equal(error.code, 'ERR_NOT_REPLICATED');
      assert.equal(error.acknowledgedReplicas, 0);
      assert.deepEqual(error.ids, ['late']);
      assert.ok(Date.now() - startedAt >= 450, 'waited for the timeout');
      assert.equal((await queue.get('late'))?.state, 'delayed', 'the job is written on the primary');
      await replica.kill('SIGCONT');
      assert.equal(await queue.add('unconfirmed', { id: 'late', delay: '1h' }), 'late', 'adding it again is safe');
      assert.equal((await queue.stats()).delayed, 2);
    } finally {
      await queue.close();
    }
  });
});
