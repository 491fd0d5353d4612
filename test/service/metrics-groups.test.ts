// The group metrics of the service (issue 20): per queue, the groups with work, those held back by
// their limits and those paused, read from Redis at scrape time (queue.groupTotals()); never a
// series per group (their names are the users', and unbounded).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PullConsumer, Queue } from '../../src/index.js';
import { useApp } from '../helpers/http.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

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

/** The three group gauges of one queue, from one scrape. */
async function scrape(queue: string): Promise<{ withWork?: number; held?: number; paused?: number; text: string }> {
  const answer = await api.call('GET', '/metrics');
  assert.equal(answer.status, 200, answer.text.slice(0, 300));
  const text = answer.text;
  return {
    withWork: value(text, 'sandglass_queue_groups', { queue }),
    held: value(text, 'sandglass_queue_groups_held', { queue }),
    paused: value(text, 'sandglass_queue_groups_paused', { queue }),
    text,
  };
}

describe('group metrics', () => {
  it('count the groups with work, held by their limits and paused, as queue.groupTotals() does', async () => {
    const name = uniqueQueue('group-metrics');
    const queue = redis.track(new Queue<number>(name, { connection: redis.url }));
    await queue.addBulk([
      { payload: 1, group: 'a' },
      { payload: 2, group: 'a' },
      { payload: 3, group: 'b' },
      { payload: 4, group: 'c', delay: '1h' },
    ]);
    const start = await scrape(name);
    assert.deepEqual([start.withWork, start.held, start.paused], [3, 0, 0], 'three groups with work, none held or paused');

    await queue.pauseGroup('b');
    const paused = await scrape(name);
    assert.deepEqual([paused.withWork, paused.held, paused.paused], [3, 0, 1], 'a paused group');

    // Group a may run one job at a time: with one claimed, its other ready job is held back.
    await queue.setGroupLimits({ concurrency: 1 }, { group: 'a' });
    const consumer = redis.track(new PullConsumer<number>(name, { connection: redis.url }));
    const claimed = await consumer.claim({ max: 10, waitMs: 5_000 });
    assert.deepEqual(
      claimed.map(job => job.group),
      ['a'],
      'one job of a; b is paused, c not due',
    );
    // Held from the claim that filled its concurrency on.
    const held = await scrape(name);
    assert.deepEqual(await consumer.claim({ max: 10 }), [], 'nothing more: a is at its concurrency');
    assert.deepEqual([held.withWork, held.held, held.paused], [3, 1, 1], 'a held group');
    assert.deepEqual(await queue.groupTotals(), { withWork: 3, held: 1, paused: 1 }, 'the gauges are the library totals');

    await queue.resumeGroup('b');
    await consumer.ack(claimed[0]?.id as string, claimed[0]?.token as string);
    const after = await scrape(name);
    assert.deepEqual([after.paused, after.held], [0, 0], 'resumed; a has no job active, so nothing holds it');

    assert.doesNotMatch(held.text, /^sandglass_queue_groups[a-z_]*\{[^}]*group=/m, 'no per-group label');
    assert.match(held.text, /# HELP sandglass_queue_groups_held .*concurrency limit/);
    assert.match(held.text, /# TYPE sandglass_queue_groups_paused gauge/);
  });

  it('a queue without groups has zeros', async () => {
    const name = uniqueQueue('group-metrics');
    const queue = redis.track(new Queue<number>(name, { connection: redis.url }));
    await queue.add(1);
    const plain = await scrape(name);
    assert.deepEqual([plain.withWork, plain.held, plain.paused], [0, 0, 0]);
  });
});
