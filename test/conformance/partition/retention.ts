// The contract of a partition's retention of completed jobs (src/store/partition-storage.ts
// retention, ack's `results`, ClaimResult.maxResultBytes): the stored form is src/flow/retention.ts's.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { claim, claimed, job, lease, type OpenPartition } from '../fixtures.js';
import { encodeRetention } from '../../../src/flow/retention.js';

/** Keeps the newest `count` completed jobs, results up to `maxResultBytes`. */
function keep(count: number, maxResultBytes = 100): string {
  return encodeRetention({ completed: { count }, maxResultBytes }, 1);
}

export function retention(open: OpenPartition): void {
  it('retention stores the form given and answers it; "" leaves it as it is', async () => {
    const store = await open();
    assert.deepEqual(await store.retention('', 0), { retain: '', removed: 0 }, 'none stored');
    assert.deepEqual(await store.retention(keep(5), 0), { retain: keep(5), removed: 0 });
    assert.deepEqual(await store.retention('', 0), { retain: keep(5), removed: 0 });
  });

  it('while it keeps completed jobs, claims say so and acks keep each job with its result', async () => {
    const store = await open();
    await store.add([job('plain')], 'keep');
    assert.equal((await claim(store, 1)).maxResultBytes, 0, 'keeps none');
    await store.retention(keep(5), 0);
    await store.add([job('kept')], 'keep');
    const taken = await claim(store, 1);
    assert.equal(taken.maxResultBytes, 100);
    const held = taken.jobs[0];
    assert.ok(held);
    const { now } = await store.stats();
    assert.deepEqual(await store.ack([lease(held)], ['{"ok":1}']), { stale: [], notFound: [] });
    const snapshot = await store.get('kept');
    assert.deepEqual([snapshot?.state, snapshot?.resultJson, snapshot?.job.payloadJson], ['completed', '{"ok":1}', '{"id":"kept"}']);
    assert.ok((snapshot?.finishedAt as number) >= now);
    assert.equal((await store.stats()).completed, 1);
    assert.deepEqual(
      (await store.add([job('kept')], 'keep')).statuses,
      ['completed-recently'],
      'a kept job is not added again by a keep-add',
    );
  });

  it('acks keep the newest `count`; a result over maxResultBytes is kept as the marker', async () => {
    const store = await open();
    await store.retention(keep(2, 10), 0);
    for (const id of ['c1', 'c2', 'c3']) {
      const [held] = await claimed(store, [id]);
      assert.ok(held);
      await store.ack([held], [id === 'c3' ? JSON.stringify('x'.repeat(50)) : '1']);
      await new Promise(resolve => setTimeout(resolve, 2));
    }
    const page = await store.listJobs('completed', undefined, 10);
    assert.deepEqual(
      page.entries.map(entry => entry.job.id),
      ['c3', 'c2'],
      'most recent first, the oldest trimmed',
    );
    assert.deepEqual(JSON.parse(page.entries[0]?.resultJson as string), { resultTooLarge: true, bytes: 52 });
    assert.equal(await store.get('c1'), null);
  });

  it('a lower retention trims the kept jobs beyond it, at most `limit` per call; keeping none removes them all', async () => {
    const store = await open();
    await store.retention(keep(10), 0);
    for (const held of await claimed(store, ['k1', 'k2', 'k3', 'k4'])) await store.ack([held], ['1']);
    assert.deepEqual(await store.retention(keep(1), 2), { retain: keep(1), removed: 2 });
    assert.deepEqual(await store.retention('', 2), { retain: keep(1), removed: 1 });
    assert.equal((await store.stats()).completed, 1);
    const none = encodeRetention({ maxResultBytes: 100 }, 1);
    assert.deepEqual(await store.retention(none, 10), { retain: none, removed: 1 });
    assert.equal((await store.stats()).completed, 0);
  });
}
