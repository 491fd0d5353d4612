import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { freePort } from '../../src/deploy/local-redis.js';
import { redactUrl } from '../../src/deploy/redact-url.js';
import { cliArgs, runCli, type CliRun } from '../helpers/cli.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

/** Runs the CLI against the test's Redis (or `redisUrl`); stdin gets `input` (or nothing) and is closed. */
function cli(args: string[], options: { input?: string; redisUrl?: string } = {}): Promise<CliRun> {
  return runCli(options.redisUrl ?? redis.url, args, options.input);
}

/** Runs the CLI with --json and parses stdout, which must be exactly one JSON document. */
async function json(
  args: string[],
  options: { input?: string; redisUrl?: string } = {},
): Promise<{ code: number; body: Record<string, unknown>; stderr: string }> {
  const run = await cli(['--json', ...args], options);
  assert.equal(run.stdout.trim().split('\n').length, 1, `one JSON line on stdout, got: ${run.stdout}`);
  return { code: run.code, body: JSON.parse(run.stdout) as Record<string, unknown>, stderr: run.stderr };
}

function openQueue(name: string): Queue {
  return redis.track(new Queue(name, { connection: redis.url }));
}

// A few commands at a time: each is a Node process, and the machine has 2 cores.
describe('sandglass CLI', { concurrency: 4 }, () => {
  it('adds, shows, cancels a job with exit codes a script can rely on', async () => {
    const name = uniqueQueue();
    const added = await cli(['--json', 'add', name, '{"orderId":42}', '--delay', '30m', '--id', 'order:42']);
    assert.equal(added.code, 0, added.stderr);
    assert.deepEqual(JSON.parse(added.stdout), { id: 'order:42' });
    const shown = await cli(['--json', 'get', name, 'order:42']);
    assert.equal(JSON.parse(shown.stdout).state, 'delayed');
    assert.deepEqual(JSON.parse(shown.stdout).payload, { orderId: 42 });
    assert.equal((await cli(['cancel', name, 'order:42'])).code, 0);
    assert.equal((await cli(['cancel', name, 'order:42'])).code, 3);
    assert.equal((await cli(['get', name, 'order:42'])).code, 3);
  });

  it('refuses bad input with exit code 2 and a clear message', async () => {
    const badJson = await cli(['add', uniqueQueue(), '{not json']);
    assert.equal(badJson.code, 2);
    assert.match(badJson.stderr, /not valid JSON/);
    const badDelay = await cli(['--json', 'add', uniqueQueue(), '1', '--delay', 'soon']);
    assert.equal(badDelay.code, 2);
    assert.equal(JSON.parse(badDelay.stdout).error.code, 'ERR_VALIDATION');
    const name = uniqueQueue();
    const overflow = await cli(['add', name, '{"amount":1e400}']);
    assert.equal(overflow.code, 2, overflow.stderr);
    assert.match(overflow.stderr, /payload\.amount is a number out of range/);
    assert.equal((await openQueue(name).stats()).ready, 0, 'not added with a null amount');
    // 30 digits: JSON.stringify writes the parsed double as 1.2345678901234568e+29, so only the text shows the change.
    const long = await cli(['add', name, '{"orderId":123456789012345678901234567890}']);
    assert.equal(long.code, 2, long.stderr);
    assert.match(long.stderr, /payload\.orderId is an integer beyond ±9007199254740991 .*send it as a string/);
    assert.equal((await openQueue(name).stats()).ready, 0, 'not added with a rounded order id');
  });

  it('add takes the payload from --file or stdin, with --at and --max-attempts', async () => {
    const name = uniqueQueue();
    const fromStdin = await json(['add', name, '--id', 'piped', '--max-attempts', '2'], { input: '{"from":"stdin"}\n' });
    assert.equal(fromStdin.code, 0, fromStdin.stderr);
    const at = Date.now() + 3_600_000;
    const fromFile = await json(['add', name, '--file', '-', '--id', 'dated', '--at', new Date(at).toISOString()], { input: '[1,2]' });
    assert.equal(fromFile.code, 0, fromFile.stderr);
    const queue = openQueue(name);
    const piped = await queue.get('piped');
    assert.deepEqual([piped?.payload, piped?.maxAttempts], [{ from: 'stdin' }, 2]);
    const dated = await queue.get('dated');
    assert.deepEqual(dated?.payload, [1, 2]);
    assert.ok(Math.abs((dated?.dueAt ?? 0) - at) <= 1, `due at ${at}, got ${dated?.dueAt}`);
  });

  it('get shows a job for a person, with its due time as a duration', async () => {
    const name = uniqueQueue();
    await cli(['add', name, '{"orderId":7}', '--delay', '30m', '--id', 'o7']);
    const shown = await cli(['get', name, 'o7']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^state\s+delayed \(due in 29 min \d+ s\)$/m);
    assert.match(shown.stdout, /"orderId": 7/);
  });

  it('reschedules a job, and answers 3 for an unknown one', async () => {
    const name = uniqueQueue();
    await cli(['add', name, '1', '--delay', '30m', '--id', 'r1']);
    const moved = await json(['reschedule', name, 'r1', '--delay', '2h']);
    assert.equal(moved.code, 0, moved.stderr);
    assert.deepEqual(moved.body, { id: 'r1', result: 'rescheduled' });
    const job = await openQueue(name).get('r1');
    assert.ok((job?.dueAt ?? 0) > Date.now() + 7_000_000);
    const missing = await json(['reschedule', name, 'nope', '--delay', '1m']);
    assert.equal(missing.code, 3);
    assert.deepEqual((missing.body.error as { code: string }).code, 'ERR_NOT_FOUND');
    assert.equal((await cli(['reschedule', name, 'r1'])).code, 2, 'no --delay or --at');
  });

  it('stats shows one queue with its totals, or every queue when no name is given', async () => {
    const name = uniqueQueue('stats');
    await cli(['add', name, '1', '--delay', '1m']);
    await cli(['add', name, '2']);
    const one = await json(['stats', name]);
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(one.body.stats, { delayed: 1, ready: 1, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    assert.equal((one.body.counters as { added: number }).added, 2);
    assert.equal(typeof one.body.nextDueAt, 'number');
    const all = await json(['stats']);
    const entry = (all.body.queues as { name: string; stats: unknown }[]).find(queue => queue.name === name);
    assert.deepEqual(entry?.stats, { delayed: 1, ready: 1, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    const table = await cli(['stats']);
    assert.match(table.stdout, /^QUEUE\s+DELAYED\s+READY\s+LIMITED\s+ACTIVE\s+DEAD\s+PAUSED$/m);
    assert.match(table.stdout, new RegExp(`^${name}\\s+1\\s+1\\s+0\\s+0\\s+0\\s+no$`, 'm'));
    // One queue's totals: a header per counter, in words (not `TICKSSKIPPED`).
    const totals = await cli(['stats', name]);
    assert.match(totals.stdout, /^ADDED\s+CLAIMED\s+.*\bTICKS\s+TICKS_SKIPPED\s+EXPIRED$/m);
  });

  it('ls lists jobs by state in pages, as JSON and as an aligned table', async () => {
    const name = uniqueQueue();
    for (const [id, delay] of [
      ['a', '10m'],
      ['b', '20m'],
      ['c', '30m'],
      ['now', '0'],
    ] as const) {
      await cli(['add', name, `{"id":"${id}"}`, '--id', id, '--delay', delay]);
    }
    const first = await json(['ls', name, '--state', 'delayed', '--limit', '1']);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(
      (first.body.jobs as { id: string }[]).map(job => job.id),
      ['a'],
    );
    const page = await json(['ls', name, '--state', 'delayed', '--limit', '2', '--cursor', first.body.nextCursor as string]);
    assert.equal(page.code, 0, page.stderr);
    assert.deepEqual([(page.body.jobs as { id: string }[]).map(job => job.id), page.body.nextCursor], [['b', 'c'], null]);
    const hint = await cli(['ls', name, '--state', 'delayed', '--limit', '1']);
    assert.match(
      hint.stdout,
      new RegExp(`^\\(more with: sandglass ls ${name} --state delayed --limit 1 --cursor ${first.body.nextCursor}\\)$`, 'm'),
    );
    assert.equal((await cli(['ls', name, '--offset', '1'])).code, 2, 'offset is gone: an unknown option');
    const ready = await json(['ls', name, '--state', 'ready']);
    assert.deepEqual(
      (ready.body.jobs as { id: string }[]).map(job => job.id),
      ['now'],
    );
    const table = await cli(['ls', name]);
    assert.match(table.stdout, /^ID\s+DUE\s+ATTEMPTS\s+PAYLOAD$/m);
    assert.match(table.stdout, /^a\s+in [1-9] min \d+ s\s+0\s+\{"id":"a"\}$/m);
    assert.equal((await cli(['ls', name, '--state', 'waiting'])).code, 2);
    assert.equal((await cli(['ls', name, '--limit', '5000'])).code, 2);
  });

  it('pauses and resumes a queue', async () => {
    const name = uniqueQueue();
    await cli(['add', name, '1', '--delay', '1h']);
    assert.deepEqual((await json(['pause', name])).body, { name, paused: true });
    assert.equal((await openQueue(name).stats()).paused, true);
    assert.deepEqual((await json(['resume', name])).body, { name, paused: false });
    assert.equal((await openQueue(name).stats()).paused, false);
  });

  it('refuses to pause a queue that does not exist (exit 3) unless --create, which lists it as paused', async () => {
    const name = uniqueQueue('typo');
    const refused = await cli(['pause', name]);
    assert.equal(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /does not exist.*add --create/);
    assert.equal((await cli(['resume', name])).code, 3);
    assert.equal((await openQueue(name).stats()).paused, false, 'no paused phantom');
    assert.deepEqual((await json(['pause', name, '--create'])).body, { name, paused: true });
    const all = await json(['stats']);
    assert.deepEqual((all.body.queues as { name: string; stats: { paused: boolean } }[]).find(q => q.name === name)?.stats.paused, true);
  });

  it('lists, retries and purges dead letters', async () => {
    const name = uniqueQueue();
    const queue = openQueue(name);
    await queue.addBulk([
      { payload: 1, id: 'd1', maxAttempts: 1 },
      { payload: 2, id: 'd2', maxAttempts: 1 },
    ]);
    const worker = new Worker(name, () => Promise.reject(new Error('boom')), { connection: redis.url });
    worker.on('error', () => undefined);
    await waitFor(async () => (await queue.stats()).dead === 2, 10_000, 'two dead letters');
    await worker.close();
    const listed = await json(['dead', 'ls', name]);
    assert.equal(listed.code, 0, listed.stderr);
    const jobs = listed.body.jobs as { id: string; lastError?: string }[];
    assert.deepEqual(jobs.map(job => job.id).sort(), ['d1', 'd2']);
    assert.match(jobs[0]?.lastError ?? '', /boom/);
    assert.match((await cli(['dead', 'ls', name])).stdout, /^d[12]\s+.+ ago\s+1\/1\s+Error: boom$/m);
    assert.deepEqual((await json(['dead', 'retry', name, 'd1'])).body, { moved: 1 });
    assert.equal((await json(['dead', 'retry', name, 'd1'])).code, 3, 'no longer dead');
    assert.equal((await cli(['dead', 'purge', name])).code, 2, 'purge needs --yes');
    assert.deepEqual((await json(['dead', 'purge', name, '--yes'])).body, { deleted: 1 });
    assert.deepEqual(await queue.stats(), { delayed: 0, ready: 1, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it('answers 4 when the job is running: cancel, reschedule, add --replace', async () => {
    const name = uniqueQueue();
    const queue = openQueue(name);
    await queue.add('payload', { id: 'busy' });
    let release: () => void = () => undefined;
    const held = new Promise<void>(resolve => (release = resolve));
    const worker = new Worker(name, () => held, { connection: redis.url });
    try {
      await waitFor(async () => (await queue.stats()).active === 1, 10_000, 'the job to run');
      const [cancel, reschedule, replace, active] = await Promise.all([
        json(['cancel', name, 'busy']),
        json(['reschedule', name, 'busy', '--delay', '1m']),
        json(['add', name, '2', '--id', 'busy', '--replace']),
        json(['ls', name, '--state', 'active']),
      ]);
      for (const run of [cancel, reschedule, replace]) {
        assert.equal(run.code, 4, run.stderr);
        assert.equal((run.body.error as { code: string }).code, 'ERR_CONFLICT');
      }
      const [job] = active.body.jobs as { id: string; leaseUntilAt?: number }[];
      assert.equal(job?.id, 'busy');
      assert.equal(typeof job?.leaseUntilAt, 'number');
    } finally {
      release();
      await worker.close();
    }
  });

  it('usage errors point to the help of the command they are about; a bad --redis and a purge without --yes are usage errors', async () => {
    const name = uniqueQueue();
    const missing = await cli(['dead', 'ls']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^\(see 'sandglass dead ls --help' for usage\)$/m);
    const unknownOption = await cli(['add', name, '1', '--dealy', '5s']);
    assert.equal(unknownOption.code, 2);
    assert.match(unknownOption.stderr, /^\(see 'sandglass add --help' for usage\)$/m);
    assert.match((await cli(['frobnicate'])).stderr, /^\(see 'sandglass --help' for usage\)$/m);
    const purge = await cli(['dead', 'purge', name]);
    assert.equal(purge.code, 2);
    assert.match(purge.stderr, /add --yes to do it\n\(see 'sandglass dead purge --help' for usage\)/);
    const purgeJson = await json(['dead', 'purge', name]);
    assert.deepEqual([purgeJson.code, (purgeJson.body.error as { code: string }).code], [2, 'ERR_USAGE']);
    for (const url of ['not a url', 'http://127.0.0.1:6379', 'redis://user:s3cret@bad host:6379']) {
      const run = await cli(['stats'], { redisUrl: url });
      assert.equal(run.code, 2, `${url}: ${run.stderr}`);
      assert.match(run.stderr, /--redis \(or REDIS_URL\) must be a URL such as redis:\/\/127\.0\.0\.1:6379/);
      assert.ok(!run.stderr.includes('s3cret'), 'the password is not printed');
      const asJson = await json(['stats'], { redisUrl: url });
      assert.deepEqual([asJson.code, (asJson.body.error as { code: string }).code], [2, 'ERR_USAGE']);
    }
  });

  it('never prints a Redis password: one redaction for the CLI and the service log', async () => {
    assert.equal(redactUrl('redis://app:s3cret@db.example.com:6380/2'), 'redis://app:***@db.example.com:6380/2');
    assert.equal(redactUrl('rediss://:s3cret@db.example.com:6380'), 'rediss://:***@db.example.com:6380');
    assert.equal(redactUrl('redis://127.0.0.1:6379/'), 'redis://127.0.0.1:6379');
    assert.equal(redactUrl('redis://:s3cret@bad host'), '(an invalid URL)');
    const port = await freePort();
    const run = await cli(['--connect-timeout', '1s', 'stats'], { redisUrl: `redis://:s3cret@127.0.0.1:${port}` });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`Cannot reach Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}`));
    assert.ok(!run.stderr.includes('s3cret'));
  });

  it('answers 2 for usage errors, in JSON too', async () => {
    const unknown = await json(['frobnicate']);
    assert.equal(unknown.code, 2);
    assert.deepEqual(unknown.body, { error: { code: 'ERR_USAGE', message: "unknown command 'frobnicate'" } });
    const missing = await cli(['get', uniqueQueue()]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing required argument 'id'/);
    const empty = await cli(['add', uniqueQueue()], { input: '' });
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /payload \(stdin\) is empty/);
    const badName = await json(['stats', 'no spaces allowed']);
    assert.equal(badName.code, 2);
    assert.equal((badName.body.error as { code: string }).code, 'ERR_VALIDATION');
  });

  it('bench runs a short bounded benchmark on a private Redis, and refuses a remote one', async () => {
    const run = await json(['bench', '--local', '--jobs', '500', '--rate', '200', '--duration', '500ms']);
    assert.equal(run.code, 0, run.stderr);
    const { enqueue, drain, lateness } = run.body as {
      enqueue: { jobsPerSecond: number };
      drain: { jobsPerSecond: number };
      lateness: { jobs: number; p99Ms: number };
    };
    assert.ok(enqueue.jobsPerSecond > 0 && drain.jobsPerSecond > 0);
    assert.ok(lateness.jobs > 0 && lateness.p99Ms >= 0);
    const remote = await cli(['bench'], { redisUrl: 'redis://192.0.2.1:6379' });
    assert.equal(remote.code, 2);
    assert.match(remote.stderr, /only against a Redis on this machine/);
  });

  it('documents the exit codes in --help, and serve lists its options', async () => {
    const help = await cli(['--help']);
    assert.equal(help.code, 0);
    for (const code of ['0  ok', '1  failure', '2  usage', '3  not found', '4  conflict', '5  partial import'])
      assert.ok(help.stdout.includes(code), code);
    const serve = await cli(['serve', '--help']);
    assert.equal(serve.code, 0);
    for (const setting of ['--port', '--host', '--data-dir', '--log-level', '--redis', 'SANDGLASS_TOKEN'])
      assert.ok(serve.stdout.includes(setting), setting);
  });

  it('serve starts the HTTP service on the given Redis and stops gracefully on SIGTERM', async () => {
    const child = spawn(process.execPath, [...cliArgs, '--redis', redis.url, 'serve', '--port', '0', '--log-level', 'info'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', chunk => (output += String(chunk)));
    child.stderr.on('data', chunk => (output += String(chunk)));
    const exited = new Promise<number | null>(resolve => child.on('close', code => resolve(code)));
    try {
      await waitFor(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(output), 30_000, 'the service to listen');
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1] as string;
      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 200);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, output);
  });
});

// Alone, so that the time measured is the CLI's, not a queue of other processes starting.
describe('sandglass CLI without Redis', () => {
  it('fails with exit 1 and says Redis is unreachable within seconds, not a hang', async () => {
    const closedPort = await freePort();
    const url = `redis://:secret@127.0.0.1:${closedPort}`;
    const [human, machine] = await Promise.all([cli(['stats', 'q'], { redisUrl: url }), json(['get', 'q', 'x'], { redisUrl: url })]);
    assert.equal(human.code, 1);
    assert.match(human.stderr, new RegExp(`Cannot reach Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${closedPort}`));
    assert.doesNotMatch(human.stderr, /secret/, 'the password is not printed');
    // About 5 s alone (ioredis gives up after 10 connection attempts); the bound leaves room for a
    // process start on a machine loaded by two test suites at once (10.2 s seen), far from a hang.
    assert.ok(human.ms < 15_000, `took ${human.ms} ms`);
    assert.equal(machine.code, 1);
    assert.equal((machine.body.error as { code: string }).code, 'ERR_CONNECTION');
  });
});
