// `sandglass schedule add|ls|get|pause|resume|rm` (issue 9), run as a child process against a
// private Redis, and the pure formatting of schedules (tables, the next ticks in the schedule's zone).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatInZone, formatSchedule, formatScheduleList, toScheduleSpec } from '../../src/cli/schedules.js';
import type { ScheduleInfo } from '../../src/index.js';
import { runCli, runCliJson, type CliRun } from '../helpers/cli.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/** Runs the CLI against the test's Redis; stdin is closed at once. */
function cli(args: string[]): Promise<CliRun> {
  return runCli(redis.url, args);
}

/** Runs the CLI with --json; stdout must be exactly one JSON document. */
function json(args: string[]): ReturnType<typeof runCliJson> {
  return runCliJson(redis.url, args);
}

/**
 * What Redis holds of `queue`: its keys and its entry in the queue registry. (Not a digest of the
 * whole data set: the tests of this file run side by side.)
 */
async function footprint(queue: string): Promise<string[]> {
  const keys = await redis.raw.keys(`*${queue}*`);
  if ((await redis.raw.sismember('sg:queues', queue)) === 1) keys.push('(registered in sg:queues)');
  return keys.sort();
}

const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

// A few commands at a time: each is a Node process, and the machine has 2 cores.
describe('sandglass schedule', { concurrency: 3 }, () => {
  it('add creates a schedule and prints it; the same add again changes nothing', async () => {
    const queue = uniqueQueue('cli-sched');
    const args = ['schedule', 'add', queue, 'refund-poll:42', '--every', '5m', '--payload', '{"refundId":42}', '--max-attempts', '3'];
    const added = await json(args);
    assert.equal(added.code, 0, added.stderr);
    assert.equal(added.body.key, 'refund-poll:42');
    assert.equal(added.body.every, 300_000);
    assert.equal(added.body.tz, 'UTC', 'UTC by default, never the machine zone');
    assert.deepEqual(added.body.payload, { refundId: 42 });
    assert.equal(added.body.maxAttempts, 3);
    assert.equal(added.body.upcoming.length, 5);
    const again = await json(args);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual([again.body.nextAt, again.body.runs], [added.body.nextAt, added.body.runs]);

    const human = await cli([
      'schedule',
      'add',
      queue,
      'refund-poll:42',
      '--every',
      '5m',
      '--payload',
      '{"refundId":42}',
      '--max-attempts',
      '3',
    ]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^key +refund-poll:42$/m);
    assert.match(human.stdout, /^schedule +every 5m$/m);
    // The first tick of an `every` grid anchored at the first upsert is due at once: 'due 1s ago'.
    assert.match(human.stdout, new RegExp(`^next run +${ISO.source} \\((in |due )`, 'm'));
    assert.match(human.stdout, /"refundId": 42/);
  });

  it('add passes every option through: cron, tz, start and end as ISO or epoch ms, limit, overlap, catch-up', async () => {
    const queue = uniqueQueue('cli-sched');
    const startAt = Date.now() + 86_400_000;
    const endAt = startAt + 30 * 86_400_000;
    const added = await json([
      'schedule',
      'add',
      queue,
      'daily-report',
      '--cron',
      '0 9 * * *',
      '--tz',
      'Europe/Berlin',
      '--payload',
      '"daily"',
      '--start-at',
      new Date(startAt).toISOString(),
      '--end-at',
      String(endAt),
      '--limit',
      '10',
      '--overlap',
      'skip',
      '--catch-up',
      'none',
    ]);
    assert.equal(added.code, 0, added.stderr);
    const info = added.body;
    assert.deepEqual(
      [info.cron, info.every, info.tz, info.payload, info.startAt, info.endAt, info.limit, info.overlap, info.catchUp],
      ['0 9 * * *', undefined, 'Europe/Berlin', 'daily', startAt, endAt, 10, 'skip', 'none'],
    );
    assert.ok(info.nextAt >= startAt, 'no tick before --start-at');
  });

  it('get shows the definition and the next 5 ticks in UTC and in the schedule zone; exit 3 when unknown', async () => {
    const queue = uniqueQueue('cli-sched');
    assert.equal((await cli(['schedule', 'add', queue, 'berlin', '--cron', '30 2 * * *', '--tz', 'Europe/Berlin'])).code, 0);
    const shown = await cli(['schedule', 'get', queue, 'berlin']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^schedule +cron 30 2 \* \* \*$/m);
    assert.match(shown.stdout, /^time zone +Europe\/Berlin$/m);
    assert.match(shown.stdout, /^state +active$/m);
    const upcoming = shown.stdout.split('\n').filter(line => / Europe\/Berlin \(\+0[12]:00\)$/.test(line));
    assert.equal(upcoming.length, 5, shown.stdout);
    for (const line of upcoming) assert.match(line, new RegExp(`${ISO.source}  \\d{4}-\\d\\d-\\d\\d (02:30|03:00):00 Europe/Berlin`), line);
    const asJson = await json(['schedule', 'get', queue, 'berlin']);
    assert.equal(asJson.body.key, 'berlin');

    const missing = await cli(['schedule', 'get', queue, 'nope']);
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /No schedule 'nope' in queue/);
    const missingJson = await json(['schedule', 'get', queue, 'nope']);
    assert.deepEqual([missingJson.code, missingJson.body.error.code], [3, 'ERR_NOT_FOUND']);
  });

  it('ls prints a table by key, with the next run, runs, skipped, paused and last run; --json the list', async () => {
    const queue = uniqueQueue('cli-sched');
    const empty = await cli(['schedule', 'ls', queue]);
    assert.equal(empty.code, 0, empty.stderr);
    assert.match(empty.stdout, /no schedules in queue/);
    assert.equal((await cli(['schedule', 'add', queue, 'b:every', '--every', '90s'])).code, 0);
    assert.equal((await cli(['schedule', 'add', queue, 'a:cron', '--cron', '0 9 * * 1-5', '--tz', 'America/New_York'])).code, 0);
    assert.equal((await cli(['schedule', 'pause', queue, 'b:every'])).code, 0);
    const table = await cli(['schedule', 'ls', queue]);
    assert.equal(table.code, 0, table.stderr);
    const [header, first, second] = table.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /^KEY +SCHEDULE +TZ +NEXT RUN +RUNS +SKIPPED +PAUSED +LAST RUN$/);
    assert.match(first ?? '', new RegExp(`^a:cron +cron 0 9 \\* \\* 1-5 +America/New_York +${ISO.source} +\\d+ +0 +no +-$`));
    assert.match(second ?? '', /^b:every +every 1m30s +UTC +- \(paused\) +\d+ +0 +yes +-$/);
    const listed = await json(['schedule', 'ls', queue]);
    assert.deepEqual(
      listed.body.schedules.map((info: { key: string }) => info.key),
      ['a:cron', 'b:every'],
    );
  });

  it('pause, resume and rm answer, and exit 3 for an unknown schedule', async () => {
    const queue = uniqueQueue('cli-sched');
    assert.equal((await cli(['schedule', 'add', queue, 'poll', '--every', '1m'])).code, 0);
    const paused = await json(['schedule', 'pause', queue, 'poll']);
    assert.deepEqual([paused.code, paused.body.paused, paused.body.nextAt], [0, true, null]);
    const resumedHuman = await cli(['schedule', 'resume', queue, 'poll']);
    assert.equal(resumedHuman.code, 0, resumedHuman.stderr);
    assert.match(resumedHuman.stdout, new RegExp(`resumed schedule poll: next run ${ISO.source}`));
    const removed = await json(['schedule', 'rm', queue, 'poll']);
    assert.deepEqual([removed.code, removed.body], [0, { key: 'poll', result: 'removed' }]);
    for (const action of ['rm', 'pause', 'resume', 'get']) {
      const run = await json(['schedule', action, queue, 'poll']);
      assert.deepEqual([action, run.code, run.body.error?.code], [action, 3, 'ERR_NOT_FOUND']);
    }
  });

  it('a bad schedule exits 2 with the library message and writes nothing', async () => {
    const queue = uniqueQueue('cli-sched');
    const cases: [name: string, args: string[], message: RegExp][] = [
      ['unknown tz', ['--cron', '0 9 * * *', '--tz', 'Mars/Olympus_Mons'], /Unknown time zone `tz`/],
      ['bad cron', ['--cron', '61 * * * *'], /Invalid `cron`/],
      ['cron and every', ['--cron', '* * * * *', '--every', '5m'], /either `cron` or `every`/],
      ['neither', [], /needs `cron`/],
      ['every 500ms', ['--every', '500ms'], /at least 1 s/],
      ['payload that is not JSON', ['--every', '5m', '--payload', '{nope'], /--payload is not valid JSON/],
      ['start that is not a date', ['--every', '5m', '--start-at', 'soonish'], /--start-at to be epoch milliseconds or an ISO 8601 date/],
      ['limit that is not a number', ['--every', '5m', '--limit', 'ten'], /`limit`.*'ten'/],
      ['overlap that is not a mode', ['--every', '5m', '--overlap', 'never'], /`overlap` to be 'allow' or 'skip'/],
      ['catch-up that is not a mode', ['--every', '5m', '--catch-up', 'some'], /`catchUp` to be 'none' or 'latest' or 'all'/],
    ];
    const runs = await Promise.all(cases.map(([, args]) => json(['schedule', 'add', queue, 'k', ...args])));
    cases.forEach(([name, , message], i) => {
      const run = runs[i]!;
      assert.deepEqual([name, run.code, run.body.error?.code], [name, 2, 'ERR_VALIDATION'], JSON.stringify(run.body));
      assert.match(run.body.error.message, message, name);
    });
    const long = await cli(['schedule', 'add', queue, 'k'.repeat(181), '--every', '5m']);
    assert.equal(long.code, 2);
    assert.match(long.stderr, /schedule key of 1-180 characters/);
    const unknownOption = await cli(['schedule', 'add', queue, 'k', '--every', '5m', '--jitter', '1']);
    assert.equal(unknownOption.code, 2);
    assert.match(unknownOption.stderr, /unknown option '--jitter'/);
    assert.deepEqual(await footprint(queue), [], 'nothing was written to Redis');
  });
});

describe('schedule formatting', () => {
  const base: ScheduleInfo<unknown> = {
    key: 'daily',
    cron: '30 2 * * *',
    tz: 'Europe/Berlin',
    payload: { kind: 'daily' },
    paused: false,
    nextAt: Date.UTC(2027, 2, 28, 1, 0),
    // The March 2027 change: 02:30 does not exist on the 28th and fires at 03:00 (01:00 UTC).
    upcoming: [Date.UTC(2027, 2, 28, 1, 0), Date.UTC(2027, 2, 29, 0, 30), Date.UTC(2027, 2, 30, 0, 30)],
    lastTickAt: null,
    runs: 2,
    skipped: 1,
    limit: 10,
    overlap: 'skip',
    catchUp: 'latest',
    lastRun: { id: 'daily@1806200000000', tickAt: 1_806_200_000_000, state: 'done' },
  };

  it('shows an instant in the schedule zone with its offset, across DST changes', () => {
    assert.equal(formatInZone(Date.UTC(2027, 2, 28, 1, 0), 'Europe/Berlin'), '2027-03-28 03:00:00 Europe/Berlin (+02:00)');
    assert.equal(formatInZone(Date.UTC(2027, 2, 27, 1, 30), 'Europe/Berlin'), '2027-03-27 02:30:00 Europe/Berlin (+01:00)');
    // October 31st 2027: 02:30 happens twice; the offset tells them apart.
    assert.equal(formatInZone(Date.UTC(2027, 9, 31, 0, 30), 'Europe/Berlin'), '2027-10-31 02:30:00 Europe/Berlin (+02:00)');
    assert.equal(formatInZone(Date.UTC(2027, 9, 31, 1, 30), 'Europe/Berlin'), '2027-10-31 02:30:00 Europe/Berlin (+01:00)');
    assert.equal(formatInZone(Date.UTC(2027, 0, 1, 0, 0), 'UTC'), '2027-01-01 00:00:00 UTC (+00:00)');
    assert.equal(
      formatInZone(Date.UTC(2027, 0, 1, 5, 0, 0), 'America/New_York'),
      '2027-01-01 00:00:00 America/New_York (-05:00)',
      'midnight is 00, not 24',
    );
    assert.equal(formatInZone(Date.UTC(2027, 0, 1, 0, 0, 0), 'Asia/Kolkata'), '2027-01-01 05:30:00 Asia/Kolkata (+05:30)');
  });

  it('formats one schedule with its upcoming ticks, and a list as a table', () => {
    const text = formatSchedule('reports', base, Date.UTC(2027, 2, 27, 12, 0));
    assert.match(text, /^schedule +cron 30 2 \* \* \*$/m);
    assert.match(text, /^next run +2027-03-28T01:00:00\.000Z \(in 13 h\)$/m);
    assert.match(text, /^upcoming +2027-03-28T01:00:00\.000Z {2}2027-03-28 03:00:00 Europe\/Berlin \(\+02:00\)$/m);
    assert.match(text, /^ +2027-03-29T00:30:00\.000Z {2}2027-03-29 02:30:00 Europe\/Berlin \(\+02:00\)$/m);
    assert.match(text, /^runs +2 of 10$/m);
    assert.match(text, /^last run +daily@1806200000000 \(done\)/m);
    assert.match(text, /^overlap +skip$/m);
    const ended = formatSchedule('reports', { ...base, nextAt: null, upcoming: [], lastRun: null }, 0);
    assert.match(ended, /^state +ended$/m);
    assert.match(ended, /^next run +none \(ended\)$/m);
    assert.doesNotMatch(ended, /^upcoming/m);
    assert.match(ended, /^last run +none yet$/m);
    const table = formatScheduleList('reports', [
      base,
      { ...base, key: 'poll', cron: undefined, every: 300_000, tz: 'UTC', paused: true, nextAt: null, upcoming: [], lastRun: null },
    ]);
    assert.deepEqual(table.split('\n'), [
      'KEY    SCHEDULE         TZ             NEXT RUN                  RUNS  SKIPPED  PAUSED  LAST RUN',
      'daily  cron 30 2 * * *  Europe/Berlin  2027-03-28T01:00:00.000Z     2        1  no      done',
      'poll   every 5m         UTC            - (paused)                   2        1  yes     -',
    ]);
    assert.equal(formatScheduleList('reports', []), "(no schedules in queue 'reports')");
  });

  it('turns flags into the spec types and judges nothing', () => {
    assert.deepEqual(toScheduleSpec({}), {}, 'unset flags stay absent: the library defaults apply');
    const spec = toScheduleSpec({
      every: '1500',
      limit: '3',
      maxAttempts: '2.5',
      overlap: 'whatever',
      startAt: '1800000000000',
      endAt: '2030-01-01T00:00:00Z',
      payload: '[1]',
    });
    assert.deepEqual(spec, {
      every: '1500',
      limit: 3,
      maxAttempts: 2.5,
      overlap: 'whatever',
      startAt: 1_800_000_000_000,
      endAt: new Date('2030-01-01T00:00:00Z'),
      payload: [1],
    });
    assert.equal(toScheduleSpec({ limit: 'ten' }).limit, 'ten', 'the library names `limit` and the value');
  });
});
