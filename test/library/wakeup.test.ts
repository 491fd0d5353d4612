import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/**
 * Calls of EVALSHA and EVAL, the only commands a worker sends. (total_commands_processed also counts
 * the commands that run inside a script, which cost no round trip.)
 */
async function scriptCalls(): Promise<number> {
  const info = await redis.raw.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return calls('evalsha') + calls('eval') + calls('fcall');
}

describe('wake-ups instead of polling', () => {
  it('an idle worker sends at most one command per second', async () => {
    const name = uniqueQueue();
    const worker = redis.track(new Worker(name, () => undefined, { connection: redis.url }));
    await worker.waitUntilReady();
    await sleep(200);
    const before = await scriptCalls();
    await sleep(6_000);
    const sent = (await scriptCalls()) - before;
    assert.ok(sent <= 6, `an idle worker sent ${sent} commands in 6 s`);
  });

  it('a worker asleep until a far job is woken at once by an earlier one', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    const lateness: number[] = [];
    const worker = redis.track(
      new Worker(name, job => void lateness.push(Date.now() - job.dueAt), { connection: redis.url, safetyIntervalMs: 60_000 }),
    );
    await worker.waitUntilReady();
    await q.add('far', { delay: '1h' });
    await sleep(100);
    await q.add('near', { delay: 150 });
    await waitFor(() => lateness.length === 1, 2_000, 'the near job');
    // Not woken, the worker would sleep until the safety re-check (60 s here): a 1 s bound tells the
    // two apart even when a loaded machine stalls the process for a few hundred ms.
    assert.ok((lateness[0] as number) >= 0 && (lateness[0] as number) < 1_000, `${lateness[0]} ms late`);
  });

  it('a lost wake-up message delays a job by at most the safety interval', async () => {
    const name = uniqueQueue();
    let ranAt = 0;
    const worker = redis.track(new Worker(name, () => void (ranAt = Date.now()), { connection: redis.url, safetyIntervalMs: 500 }));
    await worker.waitUntilReady();
    await sleep(50);
    // Write a due job behind the library's back: no PUBLISH, so no wake-up is ever sent.
    const tag = `sg:{${name}:0}`;
    const writtenAt = Date.now();
    await redis.raw.hset(`${tag}:jobs`, 'sneaky', `0,0,${writtenAt},,\n"x"`);
    await redis.raw.zadd(`${tag}:due`, writtenAt, 'sneaky');
    await waitFor(() => ranAt > 0, 5_000, 'the job written without a wake-up');
    // Found by the 500 ms safety re-check; the bound leaves room for timer slack on a loaded machine
    // and still fails if only the default 5 s re-check (or nothing) found it.
    assert.ok(ranAt - writtenAt <= 2_000, `found after ${ranAt - writtenAt} ms`);
  });

  it('a worker whose pub/sub connection was killed looks again at once on reconnect', async () => {
    const name = uniqueQueue();
    const q = redis.track(new Queue(name, { connection: redis.url }));
    let runs = 0;
    const worker = redis.track(new Worker(name, () => void (runs += 1), { connection: redis.url, safetyIntervalMs: 60_000 }));
    await worker.waitUntilReady();
    await redis.raw.client('KILL', 'TYPE', 'pubsub');
    await q.add('during the outage');
    await waitFor(() => runs === 1, 3_000, 'the job added while the subscriber was down');
    // And wake-ups work again afterwards.
    await q.add('after', { delay: 100 });
    await waitFor(() => runs === 2, 3_000, 'the job added after the reconnect');
  });

  it('one process opens one command and one pub/sub connection however many queues it serves', async () => {
    const names = Array.from({ length: 100 }, () => uniqueQueue('many'));
    const before = (await redis.raw.client('LIST')) as string;
    const queues = names.map(name => redis.track(new Queue(name, { connection: redis.url })));
    const worker = redis.track(new Worker(names, () => undefined, { connection: redis.url }));
    await worker.waitUntilReady();
    await Promise.all(queues.map(q => q.add('x')));
    const after = (await redis.raw.client('LIST')) as string;
    assert.equal(after.trim().split('\n').length, before.trim().split('\n').length, 'no new connections: the file already shares one pair');
    await waitFor(async () => (await Promise.all(queues.map(q => q.stats()))).every(s => s.ready + s.active === 0), 5_000, 'all jobs');
  });
});
