import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatDuration,
  formatEvery,
  formatJob,
  formatRelative,
  formatTable,
  formatWindow,
  oneLine,
  printable,
} from '../../src/cli/format.js';
import { parseLine } from '../../src/cli/import-lines.js';

describe('CLI human output', () => {
  it('shows durations as the dashboard does, two units at most, rounded down', () => {
    assert.equal(formatDuration(30 * 60_000 - 150), '29 min 59 s');
    assert.equal(formatDuration(90 * 60_000), '1 h 30 min');
    assert.equal(formatDuration(2 * 3_600_000 + 59_000), '2 h', 'no zero second unit');
    assert.equal(formatDuration(3 * 86_400_000 + 4 * 3_600_000), '3 d 4 h');
    assert.equal(formatDuration(1126 * 86_400_000 + 3 * 3_600_000 + 5), '1126 d 3 h', 'days the largest unit, not weeks');
    assert.equal(formatDuration(45_999), '45.9 s');
    assert.equal(formatDuration(350), '350 ms');
    assert.equal(formatDuration(-5_000), '5.0 s');
    assert.equal(formatWindow(1_000), 'second');
    assert.equal(formatWindow(60_000), 'minute');
    assert.equal(formatWindow(90_000), '1 min 30 s');
    assert.equal(formatEvery(90_000), '1m30s');
  });

  it('follows the same rule as the dashboard (dashboard/dom.js fmtDuration, fmtWindow; schedule-text.js fmtEvery)', async () => {
    // Plain browser modules; their functions touch no DOM, so Node imports them as they are.
    const dom = (await import(new URL('../../dashboard/dom.js', import.meta.url).href)) as {
      fmtDuration(ms: number): string;
      fmtWindow(ms: number): string;
    };
    const scheduleText = (await import(new URL('../../dashboard/schedule-text.js', import.meta.url).href)) as {
      fmtEvery(ms: number): string;
    };
    const samples = [0, 1, 999, 1_000, 1_049, 59_999, 60_000, 61_000, 3_599_999, 3_600_000, 5_400_000, 86_399_999, 86_400_000];
    for (let ms = 7; ms < 400 * 86_400_000; ms = Math.floor(ms * 1.37) + 11) samples.push(ms, -ms);
    for (const ms of samples) {
      assert.equal(formatDuration(ms), dom.fmtDuration(ms), `formatDuration(${ms})`);
      assert.equal(formatWindow(ms), dom.fmtWindow(ms), `formatWindow(${ms})`);
      if (ms > 0) assert.equal(formatEvery(ms), scheduleText.fmtEvery(ms), `formatEvery(${ms})`);
    }
  });

  it('says when something happens relative to now', () => {
    assert.equal(formatRelative(1_000 + 30 * 60_000 - 1, 1_000), 'in 29 min 59 s');
    assert.equal(formatRelative(1_000, 183_000), '3 min 2 s ago');
    assert.equal(formatRelative(5, 5), 'now');
  });

  it('aligns table columns, numbers to the right', () => {
    const table = formatTable(
      [{ header: 'QUEUE' }, { header: 'DELAYED', align: 'right' }],
      [
        ['orders', '12'],
        ['x', '1234567890'],
      ],
    );
    assert.equal(table, ['QUEUE      DELAYED', 'orders          12', 'x       1234567890'].join('\n'));
  });

  it('never passes terminal control characters through', () => {
    assert.equal(printable('a\u001b[31mb\u009bc\nd\te'), 'a?[31mb?c\nd\te');
    assert.equal(oneLine('line one\nline two\u001b', 12), 'line one ...');
    const job = formatJob(
      'q',
      { id: 'x', payload: 'p', state: 'dead', dueAt: 0, attempts: 1, deadAt: 0, lastError: 'Error: \u001b]0;pwned\u0007\n    at f' },
      60_000,
    );
    assert.ok(!job.includes('\u001b') && !job.includes('\u0007'), job);
    assert.match(job, /^state\s+dead \(died 1 min ago\)$/m);
    assert.match(job, /^last error\s+Error: \?\]0;pwned\?\n\s+at f$/m);
  });
});

describe('import lines', () => {
  it('reads an envelope with payload, delay, at, id and maxAttempts', () => {
    assert.deepEqual(parseLine('{"payload":{"a":1},"delay":"30m","id":"x","maxAttempts":2}', 'envelope'), {
      job: { payload: { a: 1 }, delay: '30m', id: 'x', maxAttempts: 2 },
    });
    assert.deepEqual(parseLine('{"payload":1,"at":"2030-01-01T00:00:00Z"}', 'envelope'), {
      job: { payload: 1, at: new Date('2030-01-01T00:00:00Z') },
    });
    assert.deepEqual(
      parseLine('{"payload":null}', 'envelope', { delay: '5m' }),
      { job: { payload: null, delay: '5m' } },
      'the default applies',
    );
    assert.deepEqual(parseLine('{"payload":1,"delay":0}', 'envelope', { delay: '5m' }), { job: { payload: 1, delay: 0 } }, 'the line wins');
  });

  it("reads a line's group, judged by the library's group rule", () => {
    assert.deepEqual(parseLine('{"payload":1,"group":"shop 42/eu"}', 'envelope'), { job: { payload: 1, group: 'shop 42/eu' } });
    const reason = (text: string) => {
      const parsed = parseLine(text, 'envelope');
      return 'error' in parsed ? parsed.error : 'accepted';
    };
    assert.match(
      reason(`{"payload":1,"group":"${'g'.repeat(101)}"}`),
      /Expected `group` to be a group name of 1-100 characters without control characters/,
    );
    assert.match(
      reason('{"payload":1,"group":"bad\\u0007"}'),
      /Expected `group` to be a group name of 1-100 characters without control characters/,
    );
    assert.match(reason('{"payload":1,"group":""}'), /Expected `group` to be a group name of 1-100 characters without control characters/);
    assert.match(reason('{"payload":1,"group":7}'), /Expected `group` to be a group name of 1-100 characters without control characters/);
    assert.match(reason('{"groupe":"a"}'), /unknown field 'groupe'.*"group"\?/);
  });

  it('refuses what is not an envelope, with a reason', () => {
    const reason = (text: string) => {
      const parsed = parseLine(text, 'envelope');
      return 'error' in parsed ? parsed.error : 'accepted';
    };
    assert.match(reason('{"payload":1'), /not valid JSON/);
    assert.match(reason('{"orderId":1}'), /unknown field 'orderId'.*--bare/);
    assert.match(reason('{"payload":1,"__proto__":{}}'), /unknown field '__proto__'/);
    assert.match(reason('{"delay":"1m"}'), /missing "payload"/);
    assert.match(reason('"text"'), /expected an object/);
    assert.match(reason('{"payload":1,"delay":"soon"}'), /invalid "delay"/);
    assert.match(reason('{"payload":1,"delay":-1}'), /invalid "delay"/);
    assert.match(reason('{"payload":1,"at":"tomorrow"}'), /"at"/);
    assert.match(reason('{"payload":1,"delay":1,"at":1}'), /not both/);
    assert.match(reason('{"payload":1,"id":7}'), /"id" must be a string/);
    assert.match(reason('{"payload":1,"maxAttempts":1.5}'), /"maxAttempts" must be an integer/);
  });

  it('takes any JSON as a bare payload, and ignores blank lines', () => {
    assert.deepEqual(parseLine('{"orderId":1}', 'bare', { delay: 1000 }), { job: { payload: { orderId: 1 }, delay: 1000 } });
    assert.deepEqual(parseLine('   ', 'bare'), { blank: true });
    assert.match((parseLine('nope', 'bare') as { error: string }).error, /not valid JSON/);
  });
});
