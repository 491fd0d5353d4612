// The flow control metrics of the service (issue 10): completed jobs kept by the retention in the
// jobs-by-state gauge, jobs held back by a limit in sandglass_queue_jobs_limited, and expired jobs in
// sandglass_jobs_expired_total, read from Redis at scrape time and compared with queue.stats().
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PullConsumer, Queue, Worker, type Job } from '../../src/index.js';
import { WebhookDelivery } from '../../src/server/webhooks.js';
import { useApp } from '../helpers/http.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const api = useApp(redis);

/** The one sample of `name` whose labels include `labels`, or undefined; fails on several. */
function value(text: string, name: string, labels: Record<string, string>): number | undefined {
  const found: number[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const [, key, v] of (match[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) have[key as string] = v as string;
    if (Object.entries(labels).every(([key, v]) => have[key] === v)) found.push(Number(match[3]));
  }
  assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)}: ${found.length} samples`);
  return found[0];
}

describe('flow control metrics', () => {
  it('export completed (kept) jobs by state, limited jobs, and expired jobs, as the queue counts them', async () => {
    const name = uniqueQueue('flow-metrics');
    const queue = redis.track(new Queue<number>(name, { connection: redis.url }));
    await queue.setRetention({ completed: { count: 100 } });
    await queue.addBulk([1, 2, 3].map(payload => ({ payload })));
    const worker = redis.track(new Worker<number>(name, async job => job.payload * 10, { connection: redis.url }));
    await waitFor(async () => (await queue.stats()).completed === 3, 10_000, 'three completed jobs kept');
    await worker.close();

    await queue.add(0, { id: 'late', expireAfter: 50 });
    await sleep(200);
    await queue.setLimits({ concurrency: 1 });
    await queue.addBulk([4, 5, 6].map(payload => ({ payload })));
    const consumer = redis.track(new PullConsumer<number>(name, { connection: redis.url }));
    const claimed = await consumer.claim({ max: 3, waitMs: 5_000 });
    assert.equal(claimed.length, 1, 'concurrency 1 lets one job out');

    const stats = await queue.stats();
    const counters = await queue.counters();
    assert.equal(counters.expired, 1, 'the late job expired when the claim reached it');
    assert.ok(stats.limited >= 1, `jobs held back by the limit: ${stats.limited}`);
    const text = (await api.call('GET', '/metrics')).text;
    assert.equal(value(text, 'sandglass_queue_jobs', { queue: name, state: 'completed' }), 3);
    assert.equal(value(text, 'sandglass_queue_jobs', { queue: name, state: 'ready' }), stats.ready);
    assert.equal(
      value(text, 'sandglass_queue_jobs', { queue: name, state: 'limited' }),
      undefined,
      'limited is part of ready: not a state of its own',
    );
    assert.equal(value(text, 'sandglass_queue_jobs_limited', { queue: name }), stats.limited);
    assert.equal(value(text, 'sandglass_jobs_expired_total', { queue: name }), 1);
    assert.match(text, /# HELP sandglass_queue_jobs_limited .*rate or concurrency limit/);
  });
});

describe('lateness a limit caused', () => {
  const webhooks = new WebhookDelivery({ connection: 'redis://127.0.0.1:1', bindings: [] });
  const service = useApp(redis, { webhooks });
  const delivered = (queue: string, job: Partial<Job<unknown>>, latenessMs: number, heldMs: number) =>
    webhooks.emit('delivered', queue, { id: 'j', payload: null, attempt: 1, dueAt: 0, ...job } as Job<unknown>, latenessMs, heldMs);

  it("is reported apart from sandglass's own lateness: the queue's limits (heldByLimit) and a binding's rate (heldMs)", async () => {
    const name = uniqueQueue('held');
    await service.start();
    delivered(name, {}, 3, 0);
    delivered(name, { heldByLimit: true }, 2_000, 0);
    delivered(name, {}, 5, 1_500);
    const text = (await service.call('GET', '/metrics')).text;
    assert.equal(value(text, 'sandglass_lateness_seconds_count', { queue: name, source: 'webhook' }), 1);
    assert.equal(value(text, 'sandglass_lateness_seconds_sum', { queue: name, source: 'webhook' }), 0.003);
    assert.equal(value(text, 'sandglass_limited_lateness_seconds_count', { queue: name, source: 'webhook' }), 2);
    assert.equal(
      value(text, 'sandglass_limited_lateness_seconds_sum', { queue: name, source: 'webhook' }),
      3.505,
      'start of the request minus due: claim lateness plus the binding hold',
    );
  });
});
