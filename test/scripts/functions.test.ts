// The scripts as Redis Functions (one library, FCALL) and the EVALSHA fallback: which path a
// connection takes, how it recovers when the library is gone, and that the library's state does not
// outlive a call. The other script tests run on either path (SANDGLASS_SCRIPTS=eval forces EVALSHA).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { PARTITION_KEY_NAMES } from '../../src/store/redis/keys.js';
import { librarySource, scriptPath } from '../../src/store/redis/scripts.js';
import { startLocalRedis } from '../../src/deploy/local-redis.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';
import { addAndClaim } from '../helpers/scripts.js';

const redis = useRedis({ appendOnly: false });
const FORCED_EVAL = process.env.SANDGLASS_SCRIPTS === 'eval';

const clients: Redis[] = [];
after(() => clients.forEach(client => client.disconnect()));

/** A client of its own: the path is decided per client. */
function client(url = redis.url, options: { username?: string; password?: string } = {}): Redis {
  const made = new Redis(url, { maxRetriesPerRequest: null, ...options });
  made.on('error', () => undefined);
  clients.push(made);
  return made;
}

async function calls(raw: Redis): Promise<{ fcall: number; evalsha: number }> {
  const info = await raw.info('commandstats');
  const count = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return { fcall: count('fcall'), evalsha: count('evalsha') + count('eval') };
}

describe('scripts as Redis Functions', () => {
  it('a connection loads the library once and calls its functions (EVALSHA when told by SANDGLASS_SCRIPTS=eval)', async () => {
    const raw = client();
    const before = await calls(redis.raw);
    await addAndClaim(new PartitionStore(raw, 'sg', uniqueQueue('fn'), 0), 'a');
    await addAndClaim(new PartitionStore(raw, 'sg', uniqueQueue('fn'), 0), 'b');
    const spent = await calls(redis.raw);
    const libraries = (await redis.raw.call('FUNCTION', 'LIST', 'LIBRARYNAME', librarySource().name)) as unknown[];
    if (FORCED_EVAL) {
      assert.equal(await scriptPath(raw), 'eval');
      assert.equal(spent.fcall - before.fcall, 0);
      assert.ok(spent.evalsha - before.evalsha >= 4, `${spent.evalsha - before.evalsha} EVALSHA and EVAL calls`);
    } else {
      assert.equal(await scriptPath(raw), 'functions');
      assert.equal(libraries.length, 1, 'the library is loaded');
      assert.equal(spent.fcall - before.fcall, 4);
      assert.equal(spent.evalsha - before.evalsha, 0);
    }
  });

  it("a call's state is its own: far jobs of two queues in a row go to each queue's own wheel", async () => {
    // The wheel's and groups' key tags are per-call state of the library (includes/wheel.lua): a
    // second call that kept the first call's would write into the first queue's keys.
    const raw = client();
    const stores = [new PartitionStore(raw, 'sg', uniqueQueue('tag'), 0), new PartitionStore(raw, 'sg', uniqueQueue('tag'), 0)];
    for (const [i, store] of stores.entries()) {
      const added = await store.add(
        [{ id: `far-${i}`, due: { delayMs: 30 * 86_400_000 }, maxAttempts: '', backoff: '', payloadJson: '{}' }],
        'keep',
      );
      assert.deepEqual(added.statuses, ['added']);
    }
    for (const [i, store] of stores.entries()) {
      const tag = store.keys.due.slice(0, -4);
      const buckets = await redis.raw.keys(`${tag}:wheel:*`);
      assert.ok(buckets.length >= 2, `queue ${i} has its wheel bucket and index shard (${buckets.join(', ')})`);
      assert.notEqual(await store.get(`far-${i}`), null, `queue ${i} finds its job`);
      assert.equal(await stores[1 - i]?.get(`far-${i}`), null, 'the other queue does not have it');
    }
  });

  it('FUNCTION FLUSH between calls: the next call loads the library again and works', async () => {
    const raw = client();
    const store = new PartitionStore(raw, 'sg', uniqueQueue('flush'), 0);
    await addAndClaim(store, 'a');
    await redis.raw.call('FUNCTION', 'FLUSH');
    await addAndClaim(store, 'b');
    await redis.raw.call('FUNCTION', 'FLUSH');
    await addAndClaim(store, 'c');
    assert.equal(await scriptPath(raw), FORCED_EVAL ? 'eval' : 'functions');
  });

  it('a user whose ACL refuses FUNCTION falls back to EVALSHA and works', async () => {
    await redis.raw.call('ACL', 'SETUSER', 'nofunctions', 'on', '>secret', '~*', '&*', '+@all', '-function');
    const raw = client(redis.url, { username: 'nofunctions', password: 'secret' });
    const before = await calls(redis.raw);
    const store = new PartitionStore(raw, 'sg', uniqueQueue('acl'), 0);
    await addAndClaim(store, 'a');
    await addAndClaim(store, 'b');
    assert.equal(await scriptPath(raw), 'eval');
    const spent = await calls(redis.raw);
    assert.equal(spent.fcall - before.fcall, 0);
    assert.ok(spent.evalsha - before.evalsha >= 4, `${spent.evalsha - before.evalsha} EVALSHA and EVAL calls`);
  });

  it('FCALL refused by ACL after the load was allowed: EVALSHA from then on', async () => {
    await redis.raw.call('ACL', 'SETUSER', 'nofcall', 'on', '>secret', '~*', '&*', '+@all', '-fcall', '-fcall_ro');
    const raw = client(redis.url, { username: 'nofcall', password: 'secret' });
    const store = new PartitionStore(raw, 'sg', uniqueQueue('acl'), 0);
    await addAndClaim(store, 'a');
    await addAndClaim(store, 'b');
    assert.equal(await scriptPath(raw), 'eval');
  });

  it('a restarted redis-server without persistence: the next calls load the library again', async () => {
    const server = await startLocalRedis({ appendOnly: false });
    try {
      const raw = client(server.url);
      const store = new PartitionStore(raw, 'sg', uniqueQueue('restart'), 0);
      await addAndClaim(store, 'a');
      await server.stop();
      await server.restart(); // an empty Redis: no library, no scripts, no keys
      assert.deepEqual(await client(server.url).call('FUNCTION', 'LIST'), []);
      await addAndClaim(store, 'b');
      assert.equal(await scriptPath(raw), FORCED_EVAL ? 'eval' : 'functions');
    } finally {
      await server.stop();
    }
  });

  it('another version of the library on the same Redis: both load and both work', async () => {
    const { name, source } = librarySource();
    const other = 'sandglass_000000000000';
    await redis.raw.call('FUNCTION', 'LOAD', source.replaceAll(name, other));
    const raw = client();
    await addAndClaim(new PartitionStore(raw, 'sg', uniqueQueue('two'), 0), 'a');
    const store = new PartitionStore(redis.raw, 'sg', uniqueQueue('two'), 0);
    const keys = PARTITION_KEY_NAMES.map(key => store.keys[key]);
    await addAndClaim(store, 'mine');
    // The other version's getJob reads the job this version's add wrote and claim took.
    const theirs = (await redis.raw.fcall(`${other}_getJob`, keys.length, ...keys, store.keys.wakeChannel, 'mine')) as unknown[];
    assert.equal(theirs[0], 'active');
    const names = ((await redis.raw.call('FUNCTION', 'LIST')) as unknown[][]).map(library => library[1]);
    assert.ok(names.includes(other), 'the other version is still there');
    if (!FORCED_EVAL) assert.ok(names.includes(name), 'and this one beside it');
    await addAndClaim(new PartitionStore(raw, 'sg', uniqueQueue('two'), 0), 'b');
  });
});
