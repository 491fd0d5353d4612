// The scripts as Redis Functions on a Cluster: the library is loaded on every master, FCALL is routed
// by its first key to the partition's owner, and a master that lost the library (FUNCTION FLUSH) gets
// it again from the next call that reaches it. With SANDGLASS_SCRIPTS=eval the same calls use EVALSHA.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { librarySource, scriptPath } from '../../src/store/redis/scripts.js';
import { useLocalCluster } from '../helpers/cluster.js';
import { addAndClaim } from '../helpers/scripts.js';

const cluster = useLocalCluster(3, 0, { appendOnly: false });
const FORCED_EVAL = process.env.SANDGLASS_SCRIPTS === 'eval';

describe('scripts as Redis Functions on a Cluster', () => {
  it('every master gets the library, each partition is served by its owner, a flushed master recovers', async () => {
    const client = cluster.connect();
    try {
      const masters = await cluster.masters();
      // Partitions on every master: 12 of them spread over the 3 masters' slots.
      const stores = Array.from({ length: 12 }, (_, p) => new PartitionStore(client, 'sg', 'fn-cluster', p));
      const owners = new Set<number>();
      for (const store of stores) owners.add((await cluster.ownerOf(await cluster.slotOf(store.keys.due))).port);
      assert.equal(owners.size, masters.length, 'the partitions live on every master');

      for (const [p, store] of stores.entries()) await addAndClaim(store, `a-${p}`);
      assert.equal(await scriptPath(client), FORCED_EVAL ? 'eval' : 'functions');
      for (const master of masters) {
        const node = cluster.nodeClient(master);
        try {
          const info = await node.info('commandstats');
          const fcalls = Number(/cmdstat_fcall:calls=(\d+)/.exec(info)?.[1] ?? 0);
          const libraries = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', librarySource().name)) as unknown[];
          if (FORCED_EVAL) assert.equal(fcalls, 0);
          else {
            assert.ok(fcalls > 0, `master ${master.port} served FCALLs`);
            assert.equal(libraries.length, 1, `master ${master.port} has the library`);
          }
          await node.call('FUNCTION', 'FLUSH');
        } finally {
          node.disconnect();
        }
      }
      // Every master lost the library: each partition's next call loads it again and works.
      for (const [p, store] of stores.entries()) await addAndClaim(store, `b-${p}`);
      assert.equal(await scriptPath(client), FORCED_EVAL ? 'eval' : 'functions');
    } finally {
      client.disconnect();
    }
  });
});
