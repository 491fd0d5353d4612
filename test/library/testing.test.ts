// sandglass/testing (issue 22): a private real redis-server whose scripts read a virtual clock, so
// that a test of a 30-day reminder, a DST night, a backoff, a lease or a rate window takes no real
// time. Each scenario runs the real engine and says what a test of the user's would see.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createTestEnvironment, DrainTimeoutError, VirtualClockError, type TestEnvironment } from '../../src/testing/index.js';
import { librarySource } from '../../src/store/redis/scripts.js';
import type { Job } from '../../src/index.js';

const environments: TestEnvironment[] = [];
after(() => Promise.all(environments.map(env => env.close())));

async function environment(options: Parameters<typeof createTestEnvironment>[0] = {}): Promise<TestEnvironment> {
  const env = await createTestEnvironment(options);
  environments.push(env);
  return env;
}

const DAY = 86_400_000;
/** Far below what any scenario would take if it waited for its virtual time (minutes to a month). */
const REAL_TIME_BOUND_MS = 10_000;

describe('sandglass/testing', () => {
  it('runs a 30-day reminder when the clock reaches it, not a millisecond before', async () => {
    const started = Date.now();
    const env = await environment();
    const ran: { dueAt: number; at: number }[] = [];
    const queue = env.queue<{ member: string }>('reminders');
    env.worker<{ member: string }>('reminders', job => void ran.push({ dueAt: job.dueAt, at: env.clock.now() }));
    const id = await queue.add({ member: 'ada' }, { delay: '30d' });
    const dueAt = (await queue.get(id))?.dueAt as number;
    assert.ok(Math.abs(dueAt - (env.clock.now() + 30 * DAY)) < 1_000, 'due 30 days from the virtual now');
    await env.clock.advance(30 * DAY - 60_000);
    await env.drain();
    assert.equal(ran.length, 0, 'not run a minute before its due time');
    assert.equal((await queue.get(id))?.state, 'delayed');
    await env.clock.set(dueAt);
    await env.drain();
    assert.equal(ran.length, 1);
    assert.ok(ran[0]!.at >= dueAt, 'never early');
    assert.ok(Date.now() - started < REAL_TIME_BOUND_MS, `took ${Date.now() - started} ms of real time`);
  });

  it('ticks a Berlin cron schedule at 03:00 local across the night the clocks go forward', async () => {
    const env = await environment({ now: '2027-03-27T00:00:00Z' });
    const ticks: string[] = [];
    const queue = env.queue('nightly');
    env.worker('nightly', (job: Job<unknown>) => void ticks.push(new Date(job.dueAt).toISOString()));
    const schedule = await queue.schedule('report', { cron: '0 3 * * *', tz: 'Europe/Berlin' });
    assert.equal(new Date(schedule.nextAt as number).toISOString(), '2027-03-27T02:00:00.000Z', '03:00 CET is 02:00 UTC');
    for (const at of ['2027-03-27T02:00:00Z', '2027-03-28T00:59:00Z', '2027-03-28T01:00:00Z', '2027-03-29T01:00:00Z']) {
      await env.clock.set(at);
      await env.drain();
    }
    // 03:00 CEST, the first morning after 02:00 became 03:00, is 01:00 UTC: 23 hours after the last tick.
    assert.deepEqual(ticks, ['2027-03-27T02:00:00.000Z', '2027-03-28T01:00:00.000Z', '2027-03-29T01:00:00.000Z']);
  });

  it('retries with exponential backoff at the times the backoff gives, then dead-letters', async () => {
    const env = await environment();
    const attempts: { attempt: number; at: number }[] = [];
    const queue = env.queue('refund-check');
    env.worker(
      'refund-check',
      job => {
        attempts.push({ attempt: job.attempt, at: env.clock.now() });
        throw new Error('provider still pending');
      },
      { maxAttempts: 3, backoff: { type: 'exponential', delayMs: 60_000, jitter: 0 }, logger: quiet },
    );
    const id = await queue.add({ refund: 7 });
    await env.drain();
    assert.equal(attempts.length, 1);
    await env.clock.advance(59_000);
    await env.drain();
    assert.equal(attempts.length, 1, 'the first retry waits a full minute');
    await env.clock.advance(1_000);
    await env.drain();
    assert.equal(attempts.length, 2);
    await env.clock.advance(119_000);
    await env.drain();
    assert.equal(attempts.length, 2, 'the second retry waits two minutes');
    await env.clock.advance(1_000);
    await env.drain();
    assert.deepEqual(
      attempts.map(a => a.attempt),
      [1, 2, 3],
    );
    assert.ok(attempts[1]!.at - attempts[0]!.at >= 60_000 && attempts[2]!.at - attempts[1]!.at >= 120_000, 'never early');
    assert.equal((await queue.get(id))?.state, 'dead');
  });

  it('takes a job back when the clock passes the lease of a handler that hangs, and fences the late ack', async () => {
    const env = await environment();
    const queue = env.queue('leases');
    let release!: () => void;
    const hung = new Promise<void>(resolve => (release = resolve));
    const attempts: number[] = [];
    env.worker(
      'leases',
      async job => {
        attempts.push(job.attempt);
        if (job.attempt === 1) await hung;
      },
      { leaseMs: 30_000, logger: quiet },
    );
    await queue.add({ order: 1 });
    await waitFor(() => attempts.length === 1);
    await env.clock.advance('29s');
    await env.drain({ timeoutMs: 200 }).then(
      () => assert.fail('drain must not end while the handler holds its lease'),
      error => assert.ok(error instanceof DrainTimeoutError && /leases: 1 running/.test(error.message), String(error)),
    );
    await env.clock.advance('2s');
    await env.drain();
    assert.deepEqual(attempts, [1, 2], 'run again after the lease ran out');
    release();
    await waitFor(async () => (await queue.counters()).stale === 1);
    const counters = await queue.counters();
    assert.equal(counters.reaped, 1);
    assert.equal(counters.completed, 1, 'the late ack of the first attempt completes nothing');
  });

  it('holds jobs back by a rate limit window until the clock moves on', async () => {
    const env = await environment();
    const queue = env.queue('emails');
    await queue.setLimits({ rate: { max: 5, per: '1m' } });
    const starts: number[] = [];
    env.worker('emails', () => void starts.push(env.clock.now()), { logger: quiet });
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ payload: i })));
    const begin = env.clock.now();
    for (let step = 0; step < 30 && starts.length < 12; step++) {
      await env.drain();
      await env.clock.advance('20s');
    }
    assert.equal(starts.length, 12, 'every job ran within the virtual minutes given');
    for (const at of starts) {
      const inWindow = starts.filter(other => other > at - 60_000 && other <= at).length;
      assert.ok(inWindow <= 5, `${inWindow} starts in the minute up to ${at - begin} ms`);
    }
    assert.ok(starts.at(-1)! - begin >= 60_000, 'the 12 needed more than one window');
  });

  it('expires a job not started by its deadline, and ages completed jobs out of retention, on the virtual clock', async () => {
    const env = await environment();
    const queue = env.queue('deadlines');
    await queue.setRetention({ completed: { age: '1d' } });
    const ran: string[] = [];
    env.worker('deadlines', job => void ran.push(job.id), { logger: quiet });
    await queue.add({}, { id: 'kept', delay: '1m' });
    await env.clock.advance('1m');
    await env.drain();
    assert.deepEqual(ran, ['kept']);
    assert.equal((await queue.get('kept'))?.state, 'completed');
    // A deadline is checked when a worker claims: no worker serves this queue while the clock passes it.
    const late = env.queue('late-deadlines');
    await late.add({}, { id: 'too-late', delay: '1h', expireAfter: '5m' });
    await env.clock.advance('1h6m');
    env.worker('late-deadlines', job => void ran.push(job.id), { logger: quiet });
    await env.drain();
    assert.equal((await late.get('too-late'))?.state, 'dead', 'not started within 5 minutes of its due time');
    assert.equal((await late.counters()).expired, 1);
    await env.clock.advance('1d');
    await queue.add({}, { id: 'next' }); // a claim trims what retention no longer keeps
    await env.drain();
    assert.equal(await queue.get('kept'), null, 'a day later the completed job is gone');
    assert.deepEqual(ran, ['kept', 'next']);
  });

  it('keeps environments apart: moving one clock moves nothing in another', async () => {
    const [a, b] = await Promise.all([environment(), environment()]);
    const ranA: string[] = [];
    const ranB: string[] = [];
    a.worker('jobs', job => void ranA.push(job.id));
    b.worker('jobs', job => void ranB.push(job.id));
    await a.queue('jobs').add({}, { id: 'a', delay: '1h' });
    await b.queue('jobs').add({}, { id: 'b', delay: '1h' });
    await a.clock.advance('1h');
    await Promise.all([a.drain(), b.drain()]);
    assert.deepEqual([ranA, ranB], [['a'], []]);
  });

  it('moves forward only, and refuses what is not an instant or a duration', async () => {
    const env = await environment();
    await assert.rejects(env.clock.set(Date.now() - 60_000), /moves forward only/);
    await assert.rejects(env.clock.advance('soon' as never), /`advance`/);
    await assert.rejects(env.clock.set('next tuesday'), /Expected `set` to be a Date, epoch milliseconds or an ISO 8601 text/);
    await assert.rejects(createTestEnvironment({ nowish: 1 } as never), /Unknown option `nowish`/);
  });

  it('names what is still due when nothing can run it', async () => {
    const env = await environment();
    await env.queue('orphans').add({}, { id: 'nobody-runs-me' });
    await assert.rejects(env.drain({ timeoutMs: 100 }), (error: unknown) => {
      assert.ok(error instanceof DrainTimeoutError);
      assert.match(error.message, /orphans: 1 due and not claimed \(nobody-runs-me\)/);
      return true;
    });
  });

  it('refuses a server it did not start: after the port changes hands, nothing runs on the real clock', async () => {
    const env = await environment();
    const queue = env.queue('guarded');
    await queue.add({}, { id: 'before' });
    await env.server.stop();
    await env.server.restart(); // the same port, another server (a new run_id)
    await assert.rejects(queue.add({}, { id: 'after' }), (error: unknown) => {
      assert.ok(error instanceof VirtualClockError, String(error));
      assert.match(error.message, /not the server this test environment started/);
      return true;
    });
  });

  it('leaves the production library without a clock of its own', () => {
    const { name, source } = librarySource();
    assert.match(name, /^sandglass_[0-9a-f]{12}$/);
    assert.doesNotMatch(source, /setclock|virtualTime|clockOffsetMs/);
    assert.equal(source.split("rcall('TIME')").length - 1, 2, "the server's TIME, read in base.lua's two clock functions");
  });
});

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error('condition not met in time');
    await new Promise(resolve => setTimeout(resolve, 5));
  }
}
