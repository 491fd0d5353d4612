// The groups bench's measures (bench/groups/ledger.ts) on hand-made handler runs: pure functions,
// no Redis. The bench itself (`npm run bench -- --only=groups`) is not part of npm test; this pins
// what it counts as an equal share, at once, in a window and in order, so its figures mean what
// their labels say.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  busiestWindow,
  busiestWindowTimes,
  equalShares,
  mergeRuns,
  mostAtOnce,
  orderOf,
  type HandlerRun,
} from '../../bench/groups/ledger.js';

function run(id: string, group: string, startUs: number, endUs: number | null = startUs + 10): HandlerRun {
  return { id, group, startUs, endUs };
}

describe('groups bench ledger', () => {
  test('the equal share leaves out a group that ran out inside the window, from the total and the count', () => {
    const runs = [
      ...Array.from({ length: 30 }, (_, k) => run(`a${k}`, 'a', k)),
      ...Array.from({ length: 20 }, (_, k) => run(`b${k}`, 'b', k)),
      ...Array.from({ length: 5 }, (_, k) => run(`c${k}`, 'c', k)),
      run('a-late', 'a', 1_000),
    ];
    const shares = equalShares(
      runs,
      new Map([
        ['a', 100],
        ['b', 100],
        ['c', 5],
      ]),
      0,
      1_000,
    );
    const of = (group: string) => shares.find(share => share.group === group);
    // Equal share (30 + 20) / 2 = 25: c's 5 starts were its whole backlog, so it is not judged.
    assert.deepEqual(of('a'), { group: 'a', backlog: 100, starts: 30, hadWorkThroughout: true, ofEqualShare: 1.2 });
    assert.equal(of('b')?.ofEqualShare, 0.8);
    assert.deepEqual(of('c'), { group: 'c', backlog: 5, starts: 5, hadWorkThroughout: false, ofEqualShare: null });
  });

  test('a group that started nothing in the window but had work gets a share of 0', () => {
    const shares = equalShares(
      [run('a', 'a', 0)],
      new Map([
        ['a', 10],
        ['b', 10],
      ]),
      0,
      100,
    );
    assert.deepEqual(
      shares.map(share => share.ofEqualShare),
      [2, 0],
    );
  });

  test('most at once: an end and a start in the same microsecond do not overlap; a run not ended stays running', () => {
    assert.equal(mostAtOnce([run('1', 'g', 0, 10), run('2', 'g', 10, 20)]), 1);
    assert.equal(mostAtOnce([run('1', 'g', 0, 10), run('2', 'g', 9, 20)]), 2);
    assert.equal(mostAtOnce([run('1', 'g', 0, null), run('2', 'g', 1_000, 1_001), run('3', 'g', 2_000, 2_001)]), 2);
  });

  test('the busiest window is half-open: times a whole window apart are in different windows', () => {
    assert.equal(busiestWindow([0, 1, 2, 1_000, 1_001], 1_000), 3);
    assert.equal(busiestWindow([0, 500, 999, 1_000], 1_000), 3);
    assert.deepEqual(busiestWindowTimes([5, 1_005, 10, 1_006, 1_007], 1_000), [10, 1_005, 1_006, 1_007]);
    assert.deepEqual(busiestWindowTimes([], 1_000), []);
  });

  test('order: runs by start must be the due order, each after the one before ended; a tie is not proof of order', () => {
    const ids = ['o-0', 'o-1', 'o-2'];
    assert.deepEqual(orderOf([run('o-0', 'g', 0, 5), run('o-1', 'g', 5, 9), run('o-2', 'g', 9, 12)], ids), {
      inOrder: true,
      noOverlap: true,
    });
    const swapped = orderOf([run('o-0', 'g', 0, 5), run('o-2', 'g', 6, 9), run('o-1', 'g', 10, 12)], ids);
    assert.equal(swapped.inOrder, false);
    assert.equal(swapped.noOverlap, true);
    assert.equal(swapped.firstOutOfOrder, 'position 1: o-2, expected o-1');
    assert.deepEqual(orderOf([run('o-0', 'g', 0, 5), run('o-1', 'g', 4, 9), run('o-2', 'g', 9, 12)], ids), {
      inOrder: true,
      noOverlap: false,
    });
    assert.equal(orderOf([run('o-0', 'g', 0, 5), run('o-1', 'g', 5, 9), run('o-2', 'g', 5, 12)], ids).inOrder, false);
    assert.equal(orderOf([run('o-0', 'g', 0, 5), run('o-1', 'g', 5, 9)], ids).inOrder, false, 'a job that never ran');
  });

  test('merged runs are ordered by start and name their process', () => {
    const merged = mergeRuns([
      { runs: [run('a', 'g', 5), run('b', 'g', 20)], payloadChars: 0, errors: 0 },
      { runs: [run('c', 'g', 10)], payloadChars: 0, errors: 0 },
    ]);
    assert.deepEqual(
      merged.map(r => [r.id, r.process]),
      [
        ['a', 0],
        ['c', 1],
        ['b', 0],
      ],
    );
  });
});
