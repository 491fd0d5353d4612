// The soak's verdict (bench/soak/ledger.ts) on hand-made events: pure functions, no Redis. The
// soak itself (`npm run soak`) is not part of npm test; this pins what it counts as lost, early
// and duplicated, so a soak that passes means what it says.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  busiestWindow,
  heapGrowth,
  judge,
  jobKey,
  Ledger,
  maxOverlap,
  memoryBack,
  parseLine,
  tickGaps,
  type Plan,
} from '../../bench/soak/ledger.js';
import { percentile } from '../../bench/stats.js';

const Q = 'soak-main';

function start(id: string, attempt: number, proc: string, localAt: number, dueAt = 1_000, redisAt = dueAt + 1) {
  return { kind: 'start' as const, queue: Q, id, attempt, dueAt, redisAt, localAt, proc };
}
function end(id: string, attempt: number, proc: string, localAt: number, ok: boolean) {
  return { kind: 'end' as const, queue: Q, id, attempt, localAt, ok, proc };
}
function outcome(kind: 'completed' | 'retry' | 'dead', id: string, attempt: number, proc: string) {
  return { kind, queue: Q, id, attempt, proc };
}
function ledgerOf(plans: Record<string, Plan>): Ledger {
  const ledger = new Ledger();
  for (const [id, plan] of Object.entries(plans)) ledger.expect(Q, id, plan);
  return ledger;
}

describe('soak ledger verdict', () => {
  test('a job that completed, a retried one and a planned dead letter pass', () => {
    const ledger = ledgerOf({ a: 'ok', b: 'once', c: 'always' });
    for (const event of [
      start('a', 1, 'A', 10),
      end('a', 1, 'A', 11, true),
      outcome('completed', 'a', 1, 'A'),
      start('b', 1, 'A', 10),
      end('b', 1, 'A', 11, false),
      outcome('retry', 'b', 1, 'A'),
      start('b', 2, 'B1', 20),
      end('b', 2, 'B1', 21, true),
      outcome('completed', 'b', 2, 'B1'),
      start('c', 1, 'A', 10),
      end('c', 1, 'A', 11, false),
      outcome('dead', 'c', 1, 'A'),
    ])
      ledger.record(event);
    const verdict = judge(ledger, new Set([jobKey(Q, 'c')]), 1000);
    assert.deepEqual(
      {
        lost: verdict.lost,
        early: verdict.early,
        dup: verdict.unexplainedDuplicates,
        wrong: verdict.wrongOutcome,
        completed: verdict.completed,
        dead: verdict.deadAsPlanned,
      },
      { lost: 0, early: 0, dup: 0, wrong: 0, completed: 2, dead: 1 },
    );
  });

  test('a job added and never completed nor dead is lost; a dead letter the plan did not ask for is wrong', () => {
    const ledger = ledgerOf({ never: 'ok', started: 'ok', died: 'once' });
    ledger.record(start('started', 1, 'A', 10));
    ledger.record(start('died', 1, 'A', 10));
    const verdict = judge(ledger, new Set([jobKey(Q, 'died')]), 1000);
    assert.equal(verdict.lost, 2);
    assert.equal(verdict.wrongOutcome, 1);
    assert.match(verdict.examples.lost.join('\n'), /soak-main\/never/);
  });

  test('a start before dueAt on the Redis clock is early, even by a fraction of a ms', () => {
    const ledger = ledgerOf({ a: 'ok' });
    ledger.record(start('a', 1, 'A', 10, 5_000, 4_999.999));
    ledger.record(end('a', 1, 'A', 11, true));
    assert.equal(judge(ledger, new Set(), 1000).early, 1);
  });

  test('a second start is allowed after its process was SIGKILLed, not otherwise, and never after a landed ack', () => {
    const ledger = ledgerOf({ killed: 'ok', twice: 'ok', acked: 'ok' });
    ledger.record(start('killed', 1, 'B1', 10));
    ledger.killed('B1', 50);
    ledger.record(start('killed', 2, 'A', 12_000));
    ledger.record(end('killed', 2, 'A', 12_001, true));
    ledger.record(start('twice', 1, 'A', 10));
    ledger.record(start('twice', 2, 'A', 12_000));
    ledger.record(end('twice', 2, 'A', 12_001, true));
    ledger.record(start('acked', 1, 'B2', 10));
    ledger.record(end('acked', 1, 'B2', 11, true));
    ledger.record(outcome('completed', 'acked', 1, 'B2'));
    ledger.killed('B2', 100);
    ledger.record(start('acked', 2, 'A', 12_000));
    const verdict = judge(ledger, new Set(), 1000);
    assert.equal(verdict.redeliveredAfterKill, 1);
    assert.equal(verdict.unexplainedDuplicates, 2);
  });

  test('tick gaps, handlers at once, the busiest window, p99', () => {
    assert.deepEqual(tickGaps([3000, 1000, 2000, 6000, 6000], 1000), [{ after: 3000, missing: 2 }]);
    const ledger = new Ledger();
    ledger.record(start('every-second@1000', 1, 'A', 10));
    ledger.record(end('every-second@1000', 1, 'A', 11, true));
    ledger.record(start('every-second@3000', 1, 'A', 10));
    ledger.record(end('every-second@3000', 1, 'A', 11, true));
    assert.equal(judge(ledger, new Set(), 1000).ticksMissing, 1);
    // Touching intervals (one ends in the ms the next starts) are not an overlap.
    assert.equal(
      maxOverlap([
        { from: 0, to: 10 },
        { from: 10, to: 20 },
        { from: 5, to: 15 },
      ]),
      2,
    );
    assert.equal(busiestWindow([0, 999, 1000, 1500, 1999], 1000), 3);
    assert.equal(
      percentile(
        Array.from({ length: 100 }, (_, i) => i + 1),
        99,
      ),
      99,
    );
    assert.equal(percentile([1, 2, 3], 99), 3);
  });

  test('memory and heap judgements', () => {
    assert.equal(memoryBack(1000, 1050, 0.05).ok, true);
    assert.equal(memoryBack(1000, 1051, 0.05).ok, false);
    assert.equal(memoryBack(1000, 900, 0.05).ok, true);
    const samples = [0, 60, 120, 180, 240].map((s, i) => ({ atMs: s * 1000, heapUsed: 100 + i * 5 }));
    assert.deepEqual(heapGrowth(samples, 120_000, 60_000), { from: 110, to: 120, growth: 120 / 110 - 1 });
    assert.equal(heapGrowth(samples.slice(0, 3), 120_000, 60_000), undefined);
  });

  test('the worker protocol lines parse; anything else is not an event', () => {
    assert.deepEqual(parseLine('start soak-main m-1 2 1000 1000.5 999', 'A'), start('m-1', 2, 'A', 999, 1000, 1000.5));
    assert.deepEqual(parseLine('end soak-main m-1 2 1001 fail', 'A'), end('m-1', 2, 'A', 1001, false));
    assert.deepEqual(parseLine('dead soak-main m-1 2', 'A'), outcome('dead', 'm-1', 2, 'A'));
    assert.equal(parseLine('[ioredis] something', 'A'), undefined);
    assert.equal(parseLine('start soak-main m-1', 'A'), undefined);
  });
});
