// What a claim of a partition with groups costs in Redis (issue 20, "bounded work"): the commands
// a claim runs grow with the batch and the groups it serves, never with the number of groups with
// waiting jobs or the jobs of one group. Counted from Redis's own command statistics (the commands a
// script runs are counted one by one), so the figures are exact, whatever the machine's load.
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { describe, it } from 'node:test';
import { newClaimId } from '../../src/core/ids.js';
import type { EncodedJob } from '../../src/store/partition-storage.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/** Commands Redis ran so far, the script calls themselves and the statistics reads left out. */
async function commandsRun(raw: Redis): Promise<number> {
  const info = await raw.info('commandstats');
  let total = 0;
  for (const [, name, calls] of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
    if (!['evalsha', 'eval', 'fcall', 'function', 'info', 'script'].includes(name as string)) total += Number(calls);
  }
  return total;
}

function job(id: string, group: string | undefined, atMs: number): EncodedJob {
  return { id, due: { atMs }, maxAttempts: '', backoff: '', payloadJson: '{}', group };
}

async function partitionWith(groups: number, jobsPerGroup: number): Promise<PartitionStore> {
  const store = new PartitionStore(redis.raw, 'sg', uniqueQueue('groups-cost'), 0);
  const at = Date.now() - 60_000;
  const all: EncodedJob[] = [];
  for (let g = 0; g < groups; g++) for (let n = 0; n < jobsPerGroup; n++) all.push(job(`g${g}-${n}`, `group-${g}`, at + n));
  for (let i = 0; i < all.length; i += 1_000) await store.add(all.slice(i, i + 1_000), 'keep');
  return store;
}

/** The commands one claim of `limit` jobs runs (after a first claim that turned the waiting groups into turns). */
async function claimCost(store: PartitionStore, limit: number): Promise<{ commands: number; claimed: number }> {
  const claim = () => store.claim(limit, 30_000, 100, 3, { claimId: newClaimId(), answeredClaimId: undefined }, false);
  await claim();
  const before = await commandsRun(redis.raw);
  const result = await claim();
  return { commands: (await commandsRun(redis.raw)) - before, claimed: result.jobs.length };
}

describe('a claim of a partition with groups', () => {
  it('runs as many commands with 100,000 groups of waiting jobs as with 100, and with 10,000 jobs in one group as with 10', async t => {
    // A claim of 12 serves 3 groups (a turn is up to 4 jobs; these groups have one each).
    const few = await claimCost(await partitionWith(100, 1), 12);
    const many = await claimCost(await partitionWith(100_000, 1), 12);
    assert.equal(few.claimed, 3);
    assert.equal(many.claimed, 3);
    // The same work but the promotion of waiting groups (bounded per call): a few commands apart at most.
    assert.ok(many.commands <= few.commands + 5, `100 groups: ${few.commands} commands, 100,000 groups: ${many.commands}`);

    t.diagnostic(`a claim of 12 (3 groups served): ${few.commands} commands with 100 groups, ${many.commands} with 100,000`);
    const shallow = await claimCost(await partitionWith(1, 10), 5);
    const deep = await claimCost(await partitionWith(1, 10_000), 5);
    assert.equal(deep.claimed, 5);
    t.diagnostic(`a claim of 5 from one group: ${shallow.commands} commands with 10 jobs, ${deep.commands} with 10,000`);
    assert.ok(deep.commands <= shallow.commands + 2, `a group of 10: ${shallow.commands} commands, of 10,000: ${deep.commands}`);
  });
});
