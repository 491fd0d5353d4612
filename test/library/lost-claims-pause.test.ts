// A lost claim reply made by Redis itself: `CLIENT PAUSE ... WRITE` holds the claim's EVALSHA
// past the worker's call timeout, the worker gives up on it (and on its resends, queued behind it
// on the same connection), and when the pause ends Redis runs the held claim after all: it takes
// the jobs and writes its memo, and nobody is listening for its reply. The fault proxy only times
// the pause: it holds the claim's request until CLIENT PAUSE is in force, so the pause lands
// between the limiter's grant (answered) and the claim (held), every time.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { Queue } from '../../src/index.js';
import { holdRequest, startFaultProxy } from '../chaos/proxy.js';
import { mostOverlapping, recordingWorker } from '../helpers/limits.js';
import { claimRun, monitorCommands } from '../helpers/monitor.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/** A claim call names its memo key, `<prefix>:{<queue>:<p>}:claim:<claim id>`; no other call does. */
const CLAIM_CALL = '}:claim:';
const CALL_TIMEOUT_MS = 300;
const LEASE_MS = 6_000;

/** The limiter's acquire call (lua/limiter.lua): its op is an argument of its own. */
const ACQUIRE_CALL = '\r\nacquire\r\n';

/**
 * Holds `held` (the claim, or the limiter's acquire before it) behind CLIENT PAUSE past the call
 * timeout, so that Redis runs it after the worker gave up; then checks that both jobs due start
 * within 2 s of the pause ending, as attempt 1, under the queue's concurrency 2.
 */
async function lostReplyUnderPause(t: TestContext, held: 'claim' | 'acquire'): Promise<void> {
  const proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: redis.server.port } });
  // Closed in reverse order, whatever fails (the worker and the monitor before the proxy).
  const owned: { close(): unknown }[] = [proxy];
  t.after(async () => {
    await redis.raw.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    proxy.setMode('pass');
    for (const item of owned.reverse()) await item.close();
  });
  const name = uniqueQueue('paused');
  const queue = new Queue<string>(name, { connection: redis.url });
  owned.push(queue);
  const { worker, runs, errors } = recordingWorker(name, {
    connection: { host: '127.0.0.1', port: proxy.port, commandTimeout: CALL_TIMEOUT_MS },
    concurrency: 4,
    leaseMs: LEASE_MS,
    maxAttempts: 1,
  });
  owned.push(worker);
  // Every claim Redis runs, when it runs it (MONITOR reports a held command at its execution).
  const claimsRun: { at: number; memo: string }[] = [];
  owned.push(
    await monitorCommands(redis.server.port, (at, line) => {
      const memo = claimRun(line, name, 0);
      if (memo) claimsRun.push({ at, memo });
    }),
  );
  await queue.setLimits({ concurrency: 2 });
  await worker.waitUntilReady();
  // Warm-up: the worker has learned that the queue is limited, and claims through the limiter.
  await queue.add('warm-up');
  await waitFor(() => runs.length === 1, 5_000, 'the warm-up job');
  await sleep(100);

  let pauseSentAt = 0;
  let pausedAt = 0;
  proxy.setMode(
    holdRequest(held === 'claim' ? CLAIM_CALL : ACQUIRE_CALL, async () => {
      pauseSentAt = Date.now();
      // Long enough never to end by itself within the test; UNPAUSE below ends it.
      await redis.raw.call('CLIENT', 'PAUSE', 20_000, 'WRITE');
      pausedAt = Date.now();
    }),
  );
  // Due together, so that one claim takes both.
  const at = Date.now() + 300;
  const ids = [await queue.add('a', { at }), await queue.add('b', { at })];
  await waitFor(() => pausedAt > 0, 5_000, 'the claim to reach a paused Redis');
  const timedOut = () =>
    errors.filter(message => message.startsWith(held === 'claim' ? 'claim:' : 'limiter:') && message.includes('did not answer')).length;
  await waitFor(() => timedOut() >= 1, 3_000, `the worker to give up on the ${held}`);
  const gaveUpAt = Date.now();
  // Paused a while longer: the resends time out too, queued behind the held claim.
  await sleep(CALL_TIMEOUT_MS + 200);
  assert.equal(runs.length, 1, 'nothing started during the pause');
  assert.equal(await redis.raw.zcard(`sg:{${name}:0}:active`), 0, 'the held claim has not run yet');
  const answeredAt = Date.now();
  await redis.raw.call('CLIENT', 'UNPAUSE');

  await waitFor(() => runs.length === 3, 4_000, `both jobs due after the lost ${held} reply to run`);
  const [heldClaim] = claimsRun.filter(claim => claim.at >= pauseSentAt);
  assert.ok(heldClaim, 'Redis ran the claim');
  if (held === 'claim') {
    assert.ok(heldClaim.at >= gaveUpAt, `the claim ran ${Math.round(heldClaim.at - gaveUpAt)} ms after the worker gave up on it`);
    assert.ok(claimsRun.filter(claim => claim.memo === heldClaim.memo).length >= 2, 'it was resent under the same claim id');
  }
  const lost = runs.slice(1);
  assert.deepEqual(lost.map(run => run.id).sort(), [...ids].sort());
  assert.deepEqual(
    lost.map(run => run.attempt),
    [1, 1],
    'the lost reply cost no attempt',
  );
  const lastMs = Math.max(...lost.map(run => run.start)) - answeredAt;
  assert.ok(lastMs < 2_000, `the last started ${lastMs} ms after Redis answered again`);
  assert.ok(mostOverlapping(runs.map(run => [run.start, run.end])) <= 2, 'concurrency 2 held');
  await waitFor(async () => (await queue.stats()).active === 0, 2_000, 'the acks');
  assert.equal((await queue.stats()).dead, 0);
  t.diagnostic(
    `claim ran ${Math.round(heldClaim.at - gaveUpAt)} ms after the worker gave up (${timedOut()} ${held} calls timed out); last job started ${lastMs} ms after the pause ended (lease ${LEASE_MS} ms)`,
  );
}

describe('lost claim replies: Redis paused (CLIENT PAUSE WRITE) past the call timeout', () => {
  it('a limited queue: both jobs of the claim Redis ran after the worker gave up start within 2 s of the pause ending, as the same attempt (maxAttempts 1)', async t => {
    await lostReplyUnderPause(t, 'claim');
  });

  it("a limited queue: the tokens of an acquire Redis ran after the worker gave up are the resent claim's, so both jobs start within 2 s of the pause ending, not a lease later", async t => {
    await lostReplyUnderPause(t, 'acquire');
  });
});
