// `sandglass add --group`, `import` lines with a group, `groups`, `group-limits` and `group pause|resume`
// (issue 20), run as a child process against a private Redis; and the pure turning of flags into
// the library's GroupLimitsInput.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { formatGroupList, toGroupLimitsChange } from '../../src/cli/groups.js';
import { PullConsumer, Queue } from '../../src/index.js';
import { runCli, runCliJson, type CliRun } from '../helpers/cli.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const dir = mkdtempSync(join(tmpdir(), 'sandglass-cli-groups-'));

function cli(args: string[], input = ''): Promise<CliRun> {
  return runCli(redis.url, args, input);
}

/** Runs the CLI with --json; stdout must be exactly one JSON document. */
function json(args: string[]): ReturnType<typeof runCliJson> {
  return runCliJson(redis.url, args);
}

function queue(name: string): Queue<unknown> {
  return redis.track(new Queue<unknown>(name, { connection: redis.url }));
}

/** A group name a shell and a table must carry as it is: a space, '/', '+', '%' and non-ASCII. */
const AWKWARD = 'shop 42/eu+x%y-café';

// A few commands at a time: each is a Node process, and the machine has 2 cores.
describe('sandglass groups', { concurrency: 3 }, () => {
  it('add --group puts the job in the group; get shows it; a bad group is exit 2 with the library message', async () => {
    const name = uniqueQueue('cli-groups');
    const added = await cli(['add', name, '{"n":1}', '--id', 'g1', '--group', AWKWARD, '--delay', '1h']);
    assert.equal(added.code, 0, added.stderr);
    assert.equal((await queue(name).get('g1'))?.group, AWKWARD);
    const shown = await json(['get', name, 'g1']);
    assert.equal(shown.body.group, AWKWARD);

    for (const [group, message] of [
      ['g'.repeat(101), /group/],
      ['bad\u0007', /group/],
      ['', /group/],
    ] as const) {
      const bad = await json(['add', name, '1', '--group', group]);
      assert.equal(bad.code, 2, JSON.stringify(bad.body));
      assert.equal(bad.body.error.code, 'ERR_VALIDATION');
      assert.match(bad.body.error.message, message);
    }
    assert.equal((await queue(name).stats()).delayed, 1, 'nothing else was written');
  });

  it('schedule add --group makes every tick a job of the group; get shows it', async () => {
    const name = uniqueQueue('cli-groups');
    const added = await json(['schedule', 'add', name, 'nightly', '--every', '1h', '--group', AWKWARD]);
    assert.equal(added.code, 0, JSON.stringify(added.body));
    assert.equal(added.body.group, AWKWARD);
    assert.equal((await queue(name).getSchedule('nightly'))?.group, AWKWARD);
    const shown = await cli(['schedule', 'get', name, 'nightly']);
    assert.match(shown.stdout, new RegExp(`^group +${AWKWARD.replace(/[+.]/g, '\\$&')}$`, 'm'));
    const bad = await json(['schedule', 'add', name, 'other', '--every', '1h', '--group', 'bad\u0007']);
    assert.equal(bad.code, 2);
    assert.match(bad.body.error.message, /group/);
  });

  it('import reads a group field per line; a bad group skips its line alone', async () => {
    const name = uniqueQueue('cli-groups');
    const path = join(dir, 'groups.jsonl');
    writeFileSync(
      path,
      [
        JSON.stringify({ payload: 1, id: 'i1', group: 'shop-1', delay: '1h' }),
        JSON.stringify({ payload: 2, id: 'i2', group: 'x'.repeat(101) }),
        JSON.stringify({ payload: 3, id: 'i3', group: 7 }),
        JSON.stringify({ payload: 4, id: 'i4' }),
        '',
      ].join('\n'),
    );
    const run = await cli(['import', name, path]);
    assert.equal(run.code, 5, run.stderr);
    assert.match(run.stdout, /^imported 2, skipped 2/m);
    assert.match(run.stderr, /^line 2: .*group/m);
    assert.match(run.stderr, /^line 3: .*group/m);
    assert.equal((await queue(name).get('i1'))?.group, 'shop-1');
    assert.equal((await queue(name).get('i4'))?.group, undefined);
  });

  it('group-limits sets and shows the default of every group, and a group override; --clear removes it', async () => {
    const name = uniqueQueue('cli-groups');
    const none = await json(['group-limits', name]);
    assert.equal(none.code, 0, none.stderr);
    assert.deepEqual(none.body, { name, limits: { source: 'default' } });

    const set = await json(['group-limits', name, '--concurrency', '2', '--rate', '10/1s']);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(set.body, { name, limits: { concurrency: 2, rate: { max: 10, per: 1_000 }, source: 'default' } });
    assert.deepEqual(await queue(name).getGroupLimits(), set.body.limits, 'stored with the queue');

    const shown = await cli(['group-limits', name]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^group +\(the default of every group\)$/m);
    assert.match(shown.stdout, /^rate +10 per second$/m);
    assert.match(shown.stdout, /^concurrency +2$/m);

    const override = await json(['group-limits', name, '--group', AWKWARD, '--concurrency', '1']);
    assert.equal(override.code, 0, JSON.stringify(override.body));
    assert.equal(override.body.group, AWKWARD);
    assert.equal(override.body.limits.source, 'group');
    assert.equal(override.body.limits.concurrency, 1);
    assert.equal((await queue(name).getGroupLimits({ group: AWKWARD })).source, 'group');
    const human = await cli(['group-limits', name, '--group', AWKWARD]);
    assert.match(human.stdout, new RegExp(`^group +${AWKWARD.replace(/[+.]/g, '\\$&')}$`, 'm'));
    assert.match(human.stdout, /^source +the group's own override$/m);

    const cleared = await json(['group-limits', name, '--group', AWKWARD, '--clear']);
    assert.equal(cleared.code, 0, JSON.stringify(cleared.body));
    assert.equal(cleared.body.limits.source, 'default', 'the group follows the default again');
    assert.deepEqual(cleared.body.limits, set.body.limits);

    const rateNone = await json(['group-limits', name, '--rate', 'none']);
    assert.deepEqual(rateNone.body.limits, { concurrency: 2, source: 'default' }, 'a flag left out keeps its limit');
    const defaultCleared = await json(['group-limits', name, '--clear']);
    assert.deepEqual(defaultCleared.body.limits, { source: 'default' }, '--clear without --group clears the default');
  });

  it('group-limits refuses nonsense with the library message (exit 2) and writes nothing', async () => {
    const name = uniqueQueue('cli-groups');
    await queue(name).setGroupLimits({ concurrency: 3 });
    const cases: [args: string[], message: RegExp][] = [
      [['--concurrency', '0'], /concurrency/],
      [['--concurrency', 'many'], /concurrency/],
      [['--concurrency', '100001'], /concurrency/],
      [['--rate', '10'], /--rate as <max>\/<per>/],
      [['--rate', '0/1s'], /max/],
      [['--rate', '10/a while'], /per/],
      [['--clear', '--concurrency', '1'], /--clear, or --concurrency/],
      [['--group', 'g'.repeat(101), '--concurrency', '1'], /group/],
      [['--group', 'bad\u001b[31m', '--concurrency', '1'], /group/],
    ];
    for (const [args, message] of cases) {
      const run = await json(['group-limits', name, ...args]);
      assert.equal(run.code, 2, `${args.join(' ')}: ${JSON.stringify(run.body)}`);
      assert.match(run.body.error.message, message, args.join(' '));
    }
    assert.deepEqual(await queue(name).getGroupLimits(), { concurrency: 3, source: 'default' });
    const human = await cli(['group-limits', name, '--concurrency', '0']);
    assert.equal(human.code, 2);
    assert.match(human.stderr, /^sandglass: .*concurrency/m);
    const unknown = await cli(['group-limits', name, '--expire-after', '1h']);
    assert.equal(unknown.code, 2, 'groups have no default deadline: an unknown option');
  });

  it('group pause holds the group back, groups shows it in a table; group resume lets it go', async () => {
    const name = uniqueQueue('cli-groups');
    const q = queue(name);
    await q.addBulk([
      { payload: 1, group: 'busy' },
      { payload: 2, group: 'busy' },
      { payload: 3, group: AWKWARD, delay: '1h' },
    ]);
    const paused = await json(['group', 'pause', name, 'busy']);
    assert.equal(paused.code, 0, paused.stderr);
    assert.deepEqual(paused.body, { name, group: 'busy', paused: true });
    const consumer = redis.track(new PullConsumer<unknown>(name, { connection: redis.url }));
    assert.deepEqual(await consumer.claim({ max: 10 }), [], 'a paused group gives nothing');

    const table = await cli(['groups', name]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^GROUP\s+WAITING\s+READY\s+ACTIVE\s+LIMITED\s+PAUSED$/m);
    assert.match(table.stdout, /^busy\s+2\s+2\s+0\s+no\s+yes$/m);
    assert.match(table.stdout, new RegExp(`^${AWKWARD.replace(/[+.]/g, '\\$&')}\\s+1\\s+0\\s+0\\s+no\\s+no$`, 'm'));
    const lines = table.stdout.trim().split('\n');
    assert.ok(lines.indexOf(lines.find(line => line.startsWith('busy')) as string) === 1, 'busiest first');

    const listed = await json(['groups', name]);
    assert.deepEqual(
      listed.body.groups.map((info: { group: string; paused: boolean }) => [info.group, info.paused]),
      [
        ['busy', true],
        [AWKWARD, false],
      ],
    );
    const firstPage = await cli(['groups', name, '--limit', '1']);
    const more = /^\(more with: sandglass groups \S+ --limit 1 --cursor (\S+)\)$/m.exec(firstPage.stdout);
    assert.ok(more, firstPage.stdout);
    const second = await json(['groups', name, '--limit', '1', '--cursor', more[1] as string]);
    assert.deepEqual(
      second.body.groups.map((info: { group: string }) => info.group),
      [AWKWARD],
    );
    const badLimit = await json(['groups', name, '--limit', '0']);
    assert.equal(badLimit.code, 2, JSON.stringify(badLimit.body));
    assert.match(badLimit.body.error.message, /limit/);

    const resumed = await cli(['group', 'resume', name, 'busy']);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /^resumed group busy of /m);
    const claimed = [...(await consumer.claim({ max: 10 })), ...(await consumer.claim({ max: 10 }))];
    assert.equal(claimed.length, 2, 'resumed: its jobs are claimed');
    const bad = await json(['group', 'pause', name, 'x'.repeat(101)]);
    assert.equal(bad.code, 2);
    assert.match(bad.body.error.message, /group/);
  });
});

describe('group flags', () => {
  it('become GroupLimitsInput as given, for the library to judge; --clear removes an override or clears the default', () => {
    assert.equal(toGroupLimitsChange({}), undefined);
    assert.equal(toGroupLimitsChange({ group: 'g' }), undefined, 'a group alone: show only');
    assert.deepEqual(toGroupLimitsChange({ concurrency: '1', rate: '10/1s' }), { concurrency: 1, rate: { max: 10, per: '1s' } });
    assert.deepEqual(toGroupLimitsChange({ concurrency: 'none', rate: 'none' }), { concurrency: null, rate: null });
    assert.deepEqual(
      toGroupLimitsChange({ concurrency: 'lots' }),
      { concurrency: 'lots' },
      'not a number: passed on for the library to name',
    );
    assert.equal(toGroupLimitsChange({ group: 'g', clear: true }), 'remove-override');
    assert.deepEqual(toGroupLimitsChange({ clear: true }), { concurrency: null, rate: null });
    assert.throws(() => toGroupLimitsChange({ clear: true, rate: '1/1s' }), /not both/);
  });

  it('a page of groups is a table; an empty one says so', () => {
    const row = { waiting: 3, ready: 1, active: 2, limited: true, paused: false };
    const text = formatGroupList({ groups: [{ group: 'a', ...row }], nextCursor: 'c1' }, {}, 'sandglass groups q --limit 1');
    assert.equal(
      text,
      [
        'GROUP  WAITING  READY  ACTIVE  LIMITED  PAUSED',
        'a            3      1       2  yes      no',
        '(more with: sandglass groups q --limit 1 --cursor c1)',
      ].join('\n'),
    );
    assert.equal(formatGroupList({ groups: [] }, {}, ''), '(no groups)');
    assert.equal(formatGroupList({ groups: [] }, { cursor: 'c1' }, ''), '(no more groups)');
  });
});
