// The schedule metrics of `sandglass serve`: a real service (startServer) on a private Redis, with a
// webhook binding whose Worker runs the ticks against a real HTTP receiver. Schedules are made with
// the library, as an application would; /metrics is scraped and compared with what Redis and the
// receiver say.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Queue, type Job, type ScheduleInfo } from '../../src/index.js';
import { resolveServeConfig } from '../../src/server/config.js';
import { createLogger } from '../../src/server/logger.js';
import { startServer, type RunningServer } from '../../src/server/start.js';
import { WebhookDelivery } from '../../src/server/webhooks.js';
import { useApp } from '../helpers/http.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const SECRET = 'schedule-metrics-secret-0123';
/** How long the receiver holds a tick of the `slow` schedule: longer than its interval, so `overlap: 'skip'` skips. */
const SLOW_MS = 2_500;

interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of one metric in a Prometheus text exposition. */
function samples(text: string, name: string): Sample[] {
  const found: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[key as string] = value as string;
    found.push({ labels, value: Number(match[3]) });
  }
  return found;
}

/** The one sample of `name` whose labels include `labels`; fails when there is not exactly one. */
function value(text: string, name: string, labels: Record<string, string>): number {
  const matching = samples(text, name).filter(sample => Object.entries(labels).every(([key, v]) => sample.labels[key] === v));
  assert.equal(matching.length, 1, `${name} ${JSON.stringify(labels)}: ${matching.length} samples`);
  return (matching[0] as Sample).value;
}

interface Delivery {
  id: string;
  key: string | undefined;
  tickAt: number | undefined;
  attempt: number;
  /** When the request arrived (this machine's clock, which is also the Redis server's). */
  at: number;
}

/** A webhook receiver that answers 204, after SLOW_MS for ticks of the `slow` schedule. */
async function startReceiver(): Promise<{ server: Server; url: string; deliveries: Delivery[]; answered: () => number }> {
  const deliveries: Delivery[] = [];
  let answered = 0;
  const server = createServer((request, response) => {
    const at = Date.now();
    let body = '';
    request.on('data', chunk => (body += chunk));
    request.on('end', () => {
      const job = JSON.parse(body) as { id: string; attempt: number; schedule?: { key: string; tickAt: number } };
      deliveries.push({ id: job.id, key: job.schedule?.key, tickAt: job.schedule?.tickAt, attempt: job.attempt, at });
      setTimeout(
        () => {
          answered += 1;
          response.writeHead(204).end();
        },
        job.schedule?.key === 'slow' ? SLOW_MS : 0,
      );
    });
  });
  await new Promise<void>(listening => server.listen(0, '127.0.0.1', listening));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries, answered: () => answered };
}

/** What the metrics must say about a queue's schedules, counted here from `listSchedules()`. */
function expected(list: ScheduleInfo[]): { active: number; paused: number; ended: number; runs: number; skipped: number } {
  return {
    active: list.filter(s => !s.paused && s.nextAt !== null).length,
    paused: list.filter(s => s.paused).length,
    ended: list.filter(s => !s.paused && s.nextAt === null).length,
    runs: list.reduce((sum, s) => sum + s.runs, 0),
    skipped: list.reduce((sum, s) => sum + s.skipped, 0),
  };
}

function scheduleMetrics(text: string, queue: string): ReturnType<typeof expected> {
  return {
    active: value(text, 'sandglass_schedules', { queue, state: 'active' }),
    paused: value(text, 'sandglass_schedules', { queue, state: 'paused' }),
    ended: value(text, 'sandglass_schedules', { queue, state: 'ended' }),
    runs: value(text, 'sandglass_schedule_runs_total', { queue }),
    skipped: value(text, 'sandglass_schedule_skipped_total', { queue }),
  };
}

describe('schedule metrics of sandglass serve', () => {
  const bound = uniqueQueue('ticks');
  const idle = uniqueQueue('plain');
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let server: RunningServer;
  let queue: Queue;

  const scrape = async () => {
    const answer = await fetch(`${server.url}/metrics`);
    assert.equal(answer.status, 200);
    return answer.text();
  };

  before(async () => {
    receiver = await startReceiver();
    const binding = { queue: bound, url: receiver.url, secret: SECRET };
    server = await startServer(resolveServeConfig({ port: '0', redis: redis.url }, { SANDGLASS_WEBHOOKS: JSON.stringify([binding]) }), {
      logger: createLogger({ level: 'silent' }),
    });
    queue = new Queue(bound, { connection: redis.url });
  });

  after(async () => {
    await queue?.close();
    await server?.close();
    receiver?.server.close();
  });

  it('counts schedules by state, tick jobs created and ticks skipped from Redis; times the ticks its webhooks started from their tick time', async t => {
    await queue.schedule('fast', { every: '1s', payload: { k: 'fast' } });
    await queue.schedule('slow', { every: '1s', overlap: 'skip' });
    await queue.schedule('once', { every: '1s', limit: 1 });
    await queue.schedule('later', { cron: '0 9 * * *', tz: 'Europe/Berlin' });
    await queue.pauseSchedule('later');
    await queue.add({ plain: true });
    const plain = new Queue(idle, { connection: redis.url });
    await plain.add({ n: 1 }, { delay: '1h' });
    await plain.close();

    const ticksOf = (key: string) => receiver.deliveries.filter(delivery => delivery.key === key);
    await waitFor(() => ticksOf('fast').length >= 3, 15_000, 'three ticks of `fast` delivered');
    await waitFor(async () => ((await queue.getSchedule('slow'))?.skipped ?? 0) >= 1, 15_000, '`slow` to skip a tick');
    await waitFor(async () => (await queue.getSchedule('once'))?.nextAt === null, 15_000, '`once` to end');

    // While ticks run: every state shows, and the queue without schedules shows zeros.
    let text = await scrape();
    const running = scheduleMetrics(text, bound);
    assert.deepEqual([running.active, running.paused, running.ended], [2, 1, 1]);
    assert.ok(running.runs >= 5 && running.skipped >= 1, JSON.stringify(running));
    assert.deepEqual(scheduleMetrics(text, idle), { active: 0, paused: 0, ended: 0, runs: 0, skipped: 0 });
    assert.match(text, /# TYPE sandglass_schedules gauge/);
    assert.match(text, /# TYPE sandglass_schedule_runs_total counter/);
    assert.match(text, /# TYPE sandglass_schedule_skipped_total counter/);
    assert.match(text, /# TYPE sandglass_schedule_tick_lateness_seconds histogram/);

    // Paused, the schedules stop creating ticks and the counters hold still. They are the queue's
    // running totals in Redis (queue.counters()), not sums over the schedules: a pause that removes a
    // pending tick lowers its schedule's runs but not the count of tick jobs created.
    await queue.pauseSchedule('fast');
    await queue.pauseSchedule('slow');
    await waitFor(
      async () => {
        const stats = await queue.stats();
        return stats.active + stats.ready + stats.delayed === 0;
      },
      15_000,
      'the last ticks to finish',
    );
    const list = await queue.listSchedules();
    assert.deepEqual(
      list.map(s => s.key),
      ['fast', 'later', 'once', 'slow'],
    );
    text = await scrape();
    const paused = scheduleMetrics(text, bound);
    const sums = expected(list);
    assert.deepEqual([paused.active, paused.paused, paused.ended], [0, 3, 1]);
    const counters = await queue.counters();
    assert.deepEqual([paused.runs, paused.skipped], [counters.ticks, counters.ticksSkipped]);
    assert.ok(
      paused.runs >= running.runs && paused.runs >= sums.runs,
      `runs: ${running.runs} at the last scrape, ${sums.runs} summed now, ${paused.runs} counted`,
    );
    assert.equal(paused.skipped, sums.skipped);

    // Lateness: one observation per tick whose first delivery succeeded; none for the plain job.
    const firstTicks = receiver.deliveries.filter(delivery => delivery.tickAt !== undefined && delivery.attempt === 1);
    await waitFor(() => receiver.answered() === receiver.deliveries.length, 10_000, 'every answer sent');
    const observed = async () =>
      value(await scrape(), 'sandglass_schedule_tick_lateness_seconds_count', { queue: bound, source: 'webhook' });
    await waitFor(async () => (await observed()) === firstTicks.length, 10_000, `${firstTicks.length} tick lateness observations`);
    text = await scrape();
    assert.equal(
      value(text, 'sandglass_lateness_seconds_count', { queue: bound, source: 'webhook' }),
      receiver.deliveries.length,
      'every delivery, the plain job too',
    );
    assert.equal(receiver.deliveries.filter(delivery => delivery.tickAt === undefined).length, 1, 'one plain job');
    for (const tick of firstTicks)
      assert.ok(tick.at >= (tick.tickAt as number), `tick ${tick.id} arrived ${(tick.tickAt as number) - tick.at} ms early`);
    // The receiver sees a request a little after the service sent it: the sums agree to within that.
    const receiverSum = firstTicks.reduce((sum, tick) => sum + (tick.at - (tick.tickAt as number)) / 1000, 0);
    const metricSum = value(text, 'sandglass_schedule_tick_lateness_seconds_sum', { queue: bound, source: 'webhook' });
    assert.ok(
      metricSum <= receiverSum + 0.001 && metricSum >= receiverSum - 0.1 * firstTicks.length,
      `metric ${metricSum} s, receiver ${receiverSum} s`,
    );
    assert.equal(
      value(text, 'sandglass_schedule_tick_lateness_seconds_bucket', { queue: bound, source: 'webhook', le: '+Inf' }),
      firstTicks.length,
    );
    t.diagnostic(
      `${sums.runs} runs, ${sums.skipped} skipped; ${firstTicks.length} ticks timed, mean lateness ${((metricSum / firstTicks.length) * 1000).toFixed(1)} ms`,
    );

    // Removing schedules takes their runs and skips out of the sums, not out of the counters. A
    // resumed schedule creates its next tick: one more tick job.
    await queue.unschedule('once');
    await queue.unschedule('slow');
    const removed = expected(await queue.listSchedules());
    assert.ok(removed.runs < sums.runs && removed.skipped < sums.skipped, JSON.stringify({ sums, removed }));
    assert.deepEqual(scheduleMetrics(await scrape(), bound), {
      active: 0,
      paused: 2,
      ended: 0,
      runs: paused.runs,
      skipped: paused.skipped,
    });
    await queue.resumeSchedule('later');
    assert.deepEqual(scheduleMetrics(await scrape(), bound), {
      active: 1,
      paused: 1,
      ended: 0,
      runs: paused.runs + 1,
      skipped: paused.skipped,
    });
    assert.equal(samples(text, 'sandglass_schedule_tick_lateness_seconds_count').filter(sample => sample.labels.queue === idle).length, 0);
  });
});

describe('tick lateness as the service observes it', () => {
  const webhooks = new WebhookDelivery({ connection: 'redis://127.0.0.1:1', bindings: [] });
  const api = useApp(redis, { webhooks });

  /** A delivered job as a binding's Worker reports it. */
  const delivered = (queue: string, job: Partial<Job<unknown>>, latenessMs: number) =>
    webhooks.emit('delivered', queue, { id: 'j', payload: null, attempt: 1, ...job } as Job<unknown>, latenessMs, 0);

  it('counts from the tick time (a catch-up tick falls due after it), and leaves out retries and plain jobs', async () => {
    const queue = uniqueQueue('observed');
    await api.start();
    const tickAt = 1_700_000_000_000;
    delivered(queue, { id: `k@${tickAt}`, dueAt: tickAt, schedule: { key: 'k', tickAt } }, 40);
    delivered(queue, { id: `k@${tickAt + 60_000}`, dueAt: tickAt + 65_000, schedule: { key: 'k', tickAt: tickAt + 60_000 } }, 20);
    delivered(
      queue,
      { id: `k@${tickAt + 120_000}`, dueAt: tickAt + 130_000, attempt: 2, schedule: { key: 'k', tickAt: tickAt + 120_000 } },
      30,
    );
    delivered(queue, { id: 'plain', dueAt: tickAt }, 50);
    const text = (await api.call('GET', '/metrics')).text;
    const labels = { queue, source: 'webhook' };
    assert.equal(value(text, 'sandglass_schedule_tick_lateness_seconds_count', labels), 2);
    assert.ok(Math.abs(value(text, 'sandglass_schedule_tick_lateness_seconds_sum', labels) - (0.04 + 5.02)) < 1e-9);
    assert.equal(value(text, 'sandglass_schedule_tick_lateness_seconds_bucket', { ...labels, le: '0.05' }), 1);
    assert.equal(value(text, 'sandglass_schedule_tick_lateness_seconds_bucket', { ...labels, le: '10' }), 2);
    assert.equal(value(text, 'sandglass_lateness_seconds_count', labels), 4, 'every delivery counts as a delivery');
  });
});
