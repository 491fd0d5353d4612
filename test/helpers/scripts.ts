// Helpers of the tests of how scripts are run (test/scripts/functions.test.ts and its Cluster twin).
import assert from 'node:assert/strict';
import type { PartitionStore } from '../../src/store/redis/partition-store.js';

/** Adds one job due now and takes it: two calls that must both work. */
export async function addAndClaim(store: PartitionStore, id: string): Promise<void> {
  const added = await store.add([{ id, due: { delayMs: 0 }, maxAttempts: '', backoff: '', payloadJson: '{}' }], 'keep');
  assert.deepEqual(added.statuses, ['added']);
  const claimed = await store.claim(10, 30_000, 10, 3, { claimId: `c-${id}`, answeredClaimId: undefined });
  assert.deepEqual(
    claimed.jobs.map(job => job.id),
    [id],
  );
}
