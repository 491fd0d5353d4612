// A schedule whose claiming process could not create its next tick (a Redis blip on the tend write
// after a stalled claim) is not stopped: the process retries, and once its retries are spent every
// later claim of the partition names the stalled schedule until one tends it (lua/includes/schedules.lua scheduleStall).
// Found by the real-process tests' work (test/faults/schedule-processes.test.ts): before the fix, one failed
// write left the schedule with no pending tick for good, while getSchedule showed a future nextAt.
// Real Redis, with failed calls injected into the storage layer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { PartitionStore } from '../../src/store/redis/partition-store.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/** Makes every `advance` write of a schedule fail while `failing()` holds; returns how many failed and the restore. */
function failAdvanceWrites(failing: (failed: number) => boolean): { failed: () => number; restore: () => void } {
  const original = PartitionStore.prototype.writeSchedule;
  let failed = 0;
  PartitionStore.prototype.writeSchedule = function (write) {
    if (write.op === 'advance' && failing(failed)) {
      failed += 1;
      return Promise.reject(new Error('injected: connection reset'));
    }
    return original.call(this, write);
  };
  return { failed: () => failed, restore: () => (PartitionStore.prototype.writeSchedule = original) };
}

for (const [label, failures] of [
  ['once (the claiming process retries)', 1],
  ['on every retry of the claiming process (a later claim names it again)', 4],
] as const) {
  test(
    `a schedule whose next tick could not be created after a stalled claim, its tend write failing ${label}, ticks again without an upsert`,
    { timeout: 30_000 },
    async () => {
      const queue = redis.track(new Queue(uniqueQueue('tend-failure'), { connection: redis.url }));
      const first = (await queue.schedule('k', { every: '1s' })).nextAt!;
      // No worker for 2.3 s: the tick at +0 waits, +1 s and +2 s pass; its claim stalls the chain and the
      // claiming process must create the next tick (tendSchedule).
      await sleep(2_300);
      const injected = failAdvanceWrites(failed => failed < failures);
      const started: number[] = [];
      try {
        // An idle worker claims every safetyIntervalMs: 1 s here, so that a later claim comes soon.
        const worker = redis.track(
          new Worker(queue.name, async job => void started.push(job.schedule!.tickAt - first), {
            connection: redis.url,
            safetyIntervalMs: 1_000,
          }),
        );
        worker.on('error', () => undefined); // the injected failures are reported; expected
        // The tick at +0 completes at once: no later claim of it could tend the schedule.
        await waitFor(() => started.length >= 3, 20_000, 'ticks after the failed writes').catch(() => undefined);
      } finally {
        injected.restore();
      }
      const stats = await queue.stats();
      assert.equal(injected.failed(), failures);
      assert.ok(
        started.length >= 3,
        `the schedule stopped: ticks run ${JSON.stringify(started)} (ms from the first), queue holds ${stats.delayed + stats.ready} jobs`,
      );
      assert.equal(started[0], 0);
      assert.ok(started[1]! >= 2_000 && started[1]! % 1_000 === 0, `then a caught-up tick (catchUp 'latest'): ${JSON.stringify(started)}`);
      assert.equal(started[2]! - started[1]!, 1_000, 'then the grid');
    },
  );
}
