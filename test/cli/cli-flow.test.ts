// `sandglass limits`, `retention`, `add --expire-after --on-expire`, and what `stats`, `ls` and `get`
// show of flow control (issue 10), run as a child process against a private Redis; and the pure
// turning of flags into the library's LimitsInput / RetentionInput.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRate, toLimitsInput, toRetentionInput } from '../../src/cli/flow.js';
import { Queue, Worker } from '../../src/index.js';
import { runCli, runCliJson, type CliRun } from '../helpers/cli.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

function cli(args: string[]): Promise<CliRun> {
  return runCli(redis.url, args);
}

/** Runs the CLI with --json; stdout must be exactly one JSON document. */
function json(args: string[]): ReturnType<typeof runCliJson> {
  return runCliJson(redis.url, args);
}

function queue(name: string): Queue<unknown> {
  return redis.track(new Queue<unknown>(name, { connection: redis.url }));
}

// A few commands at a time: each is a Node process, and the machine has 2 cores.
describe('sandglass limits and retention', { concurrency: 3 }, () => {
  it('limits sets rate, concurrency and expire-after, shows them, and none clears one', async () => {
    const name = uniqueQueue('cli-flow');
    const set = await json(['limits', name, '--rate', '100/1s', '--concurrency', '5', '--expire-after', '1h']);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(set.body, { name, limits: { rate: { max: 100, per: 1_000 }, concurrency: 5, expireAfter: 3_600_000 } });
    assert.deepEqual(await queue(name).getLimits(), set.body.limits, 'stored with the queue');

    const shown = await cli(['limits', name]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^rate +100 per second$/m);
    assert.match(shown.stdout, /^concurrency +5$/m);
    assert.match(shown.stdout, /^expire after +1 h$/m);

    const cleared = await json(['limits', name, '--rate', 'none']);
    assert.deepEqual(cleared.body.limits, { concurrency: 5, expireAfter: 3_600_000 }, 'the flags left out keep their limits');
    const all = await json(['limits', name, '--concurrency', 'none', '--expire-after', 'none']);
    assert.deepEqual(all.body.limits, {});
    assert.match((await cli(['limits', name])).stdout, /^rate +none$/m);
  });

  it('limits refuses nonsense with the library message (exit 2) and writes nothing', async () => {
    const name = uniqueQueue('cli-flow');
    await queue(name).setLimits({ concurrency: 3 });
    const cases: [args: string[], message: RegExp][] = [
      [['--rate', '100'], /--rate as <max>\/<per>/],
      [['--rate', '0/1s'], /max/],
      [['--rate', 'lots/1s'], /max/],
      [['--rate', '10/a while'], /per/],
      [['--concurrency', '0'], /concurrency/],
      [['--concurrency', '-2'], /concurrency/],
      [['--concurrency', 'many'], /concurrency/],
      [['--expire-after', 'later'], /expireAfter/],
    ];
    for (const [args, message] of cases) {
      const run = await json(['limits', name, ...args]);
      assert.equal(run.code, 2, `${args.join(' ')}: ${JSON.stringify(run.body)}`);
      assert.match(run.body.error.message, message, args.join(' '));
    }
    assert.deepEqual(await queue(name).getLimits(), { concurrency: 3 });
    const human = await cli(['limits', name, '--concurrency', '0']);
    assert.equal(human.code, 2);
    assert.match(human.stderr, /^sandglass: .*concurrency/m);
  });

  it('retention keeps completed jobs by count and age, shows it, and --none keeps none again', async () => {
    const name = uniqueQueue('cli-flow');
    const shownBefore = await cli(['retention', name]);
    assert.equal(shownBefore.code, 0, shownBefore.stderr);
    assert.match(shownBefore.stdout, /^completed kept +none$/m);
    const set = await json(['retention', name, '--count', '1000', '--age', '1d', '--max-result-bytes', '4096']);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(set.body, { name, retention: { completed: { count: 1_000, age: 86_400_000 }, maxResultBytes: 4_096 } });
    assert.match((await cli(['retention', name])).stdout, /^completed kept +newest 1000, none older than 1 d$/m);
    const none = await json(['retention', name, '--none']);
    assert.deepEqual(none.body.retention, { maxResultBytes: 4_096 });
    const both = await json(['retention', name, '--none', '--count', '5']);
    assert.equal(both.code, 2);
    assert.match(both.body.error.message, /--none, or --count/);
    const bad = await json(['retention', name, '--count', '-5']);
    assert.equal(bad.code, 2);
    assert.match(bad.body.error.message, /count/);
  });

  it('add --expire-after --on-expire sets the deadline; get shows it; a job past it is dead with reason expired', async () => {
    const name = uniqueQueue('cli-flow');
    const added = await cli(['add', name, '{"n":1}', '--id', 'soon', '--delay', '1h', '--expire-after', '30m', '--on-expire', 'drop']);
    assert.equal(added.code, 0, added.stderr);
    const info = await queue(name).get('soon');
    assert.equal(info?.expiresAt, (info?.dueAt ?? 0) + 1_800_000);
    const shown = await cli(['get', name, 'soon']);
    assert.match(shown.stdout, /^expires at +\d{4}-\d\d-\d\dT[\d:.]+Z \(in 1 h 29 min/m);
    const listed = await cli(['ls', name, '--state', 'delayed']);
    assert.match(listed.stdout, /^ID\s+DUE\s+EXPIRES\s+ATTEMPTS\s+PAYLOAD$/m);

    const bad = await json(['add', name, '1', '--expire-after', 'whenever']);
    assert.equal(bad.code, 2);
    assert.match(bad.body.error.message, /expireAfter/);
    const badMode = await json(['add', name, '1', '--expire-after', '1s', '--on-expire', 'retry']);
    assert.equal(badMode.code, 2);
    assert.match(badMode.body.error.message, /onExpire/);

    assert.equal((await cli(['add', name, '2', '--id', 'late', '--expire-after', '100'])).code, 0);
    await sleep(300);
    const worker = redis.track(new Worker<unknown>(name, async () => undefined, { connection: redis.url }));
    await waitFor(async () => (await queue(name).get('late'))?.state === 'dead', 10_000, 'the late job to expire');
    await worker.close();
    const dead = await cli(['get', name, 'late']);
    assert.match(dead.stdout, /^state +dead \(expired, died/m);
    assert.match(dead.stdout, /^reason +expired: not started by its deadline$/m);
    assert.match((await cli(['ls', name, '--state', 'dead'])).stdout, /^late .*expired: not started within 100ms of its due time$/m);
    const stats = await json(['stats', name]);
    assert.equal(stats.body.counters.expired, 1);
  });

  it('stats shows limited beside ready, completed when the queue keeps them, and the limits; ls and get show kept results', async () => {
    const name = uniqueQueue('cli-flow');
    const q = queue(name);
    await q.setRetention({ completed: { count: 10 } });
    await q.add({ n: 1 }, { id: 'done' });
    const worker = redis.track(
      new Worker<unknown>(name, async () => ({ mailed: true, text: 'line\u001b[31m' }), { connection: redis.url }),
    );
    await waitFor(async () => (await q.get('done'))?.state === 'completed', 10_000, 'the job to complete');
    await worker.close();
    await q.setLimits({ rate: { max: 5, per: '1m' }, concurrency: 2 });

    const one = await cli(['stats', name]);
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /^QUEUE\s+DELAYED\s+READY\s+LIMITED\s+ACTIVE\s+DEAD\s+COMPLETED\s+PAUSED$/m);
    assert.match(one.stdout, new RegExp(`^${name}\\s+0\\s+0\\s+0\\s+0\\s+0\\s+1\\s+no$`, 'm'));
    assert.match(one.stdout, /^limits: rate 5 per minute, concurrency 2$/m);
    assert.match(one.stdout, /^completed kept: newest 10$/m);
    const asJson = await json(['stats', name]);
    assert.deepEqual([asJson.body.stats.limited, asJson.body.stats.completed], [0, 1]);
    assert.deepEqual(asJson.body.limits, { rate: { max: 5, per: 60_000 }, concurrency: 2 });

    const listed = await cli(['ls', name, '--state', 'completed']);
    assert.match(listed.stdout, /^ID\s+FINISHED\s+ATTEMPTS\s+RESULT$/m);
    assert.match(listed.stdout, /^done\s+.* ago\s+1\s+\{"mailed":true,"text":"line\\u001b\[31m"\}$/m);
    const got = await cli(['get', name, 'done']);
    assert.match(got.stdout, /^state +completed \(finished .* ago\)$/m);
    assert.match(got.stdout, /^finished at +\d{4}-/m);
    assert.match(got.stdout, /^result +\{\n +"mailed": true,/m);
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(got.stdout, /\u001b/, 'no terminal escape reaches the terminal');
  });
});

describe('flow flags', () => {
  it('become LimitsInput and RetentionInput as given, for the library to judge', () => {
    assert.deepEqual(parseRate('100/1s'), { max: 100, per: '1s' });
    assert.deepEqual(parseRate('100/s'), { max: 100, per: '1s' });
    assert.deepEqual(parseRate('5/250'), { max: 5, per: '250' });
    assert.throws(() => parseRate('100'), /<max>\/<per>/);
    assert.throws(() => parseRate('/1s'), /<max>\/<per>/);
    assert.throws(() => parseRate('100/'), /<max>\/<per>/);
    assert.equal(toLimitsInput({}), undefined);
    assert.deepEqual(toLimitsInput({ rate: 'none', concurrency: '3', expireAfter: '1h' }), {
      rate: null,
      concurrency: 3,
      expireAfter: '1h',
    });
    assert.deepEqual(toLimitsInput({ concurrency: 'lots' }), { concurrency: 'lots' }, 'not a number: passed on for the library to name');
    assert.equal(toRetentionInput({}), undefined);
    assert.deepEqual(toRetentionInput({ count: '10', age: '1d' }), { completed: { count: 10, age: '1d' } });
    assert.deepEqual(toRetentionInput({ none: true, maxResultBytes: '1024' }), { completed: null, maxResultBytes: 1_024 });
    assert.throws(() => toRetentionInput({ none: true, age: '1d' }), /not both/);
  });
});
