import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Queue } from '../../src/index.js';
import { runCli, type CliRun } from '../helpers/cli.js';
import { uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const dir = mkdtempSync(join(tmpdir(), 'sandglass-cli-import-'));

function cli(args: string[], input = ''): Promise<CliRun> {
  return runCli(redis.url, args, input);
}

function file(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

function openQueue(name: string): Queue {
  return redis.track(new Queue(name, { connection: redis.url }));
}

// Lines 1, 2, 6 and 10 are good; 3, 5, 7, 8 and 9 are bad; 4 is blank (ignored, not counted).
const MIXED = [
  '{"payload":{"orderId":1},"id":"o1","delay":"30m"}',
  '{"payload":{"orderId":2},"id":"o2","at":"2030-01-31T12:00:00Z","maxAttempts":3}',
  '{not json',
  '',
  '{"payload":3,"delay":"soon"}',
  '{"payload":null,"id":"o6","delay":60000}',
  '{"orderId":7}',
  '{"payload":8,"id":"bad\\u0001id"}',
  '[9]',
  '{"payload":"ten","id":"o10"}',
];

describe('sandglass import', { concurrency: 3 }, () => {
  it('imports the good lines of a file, reports the bad ones by line number, and exits 5', async () => {
    const name = uniqueQueue();
    const run = await cli(['import', name, file('mixed.jsonl', MIXED)]);
    assert.equal(run.code, 5, run.stderr);
    assert.match(run.stdout, /^imported 4, skipped 5, in \d+\.\d\d s \(\d+ jobs\/s\)$/m);
    for (const line of [3, 5, 7, 8, 9]) assert.match(run.stderr, new RegExp(`^line ${line}: `, 'm'), `line ${line} reported`);
    assert.match(run.stderr, /^line 3: not valid JSON/m);
    assert.match(run.stderr, /^line 5: invalid "delay" "soon"/m);
    assert.match(run.stderr, /^line 7: unknown field 'orderId'.*--bare/m);
    assert.match(run.stderr, /^line 8: Expected a job id/m);
    assert.ok(!run.stderr.includes('\u0001'), 'control characters are not printed');
    const queue = openQueue(name);
    assert.deepEqual(await queue.stats(), { delayed: 3, ready: 1, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    assert.equal((await queue.get('o2'))?.dueAt, Date.parse('2030-01-31T12:00:00Z'));
    assert.equal((await queue.get('o2'))?.maxAttempts, 3);
    assert.equal((await queue.get('o6'))?.payload, null);
  });

  it('reports the summary and every bad line in one JSON document with --json', async () => {
    const run = await cli(['--json', 'import', uniqueQueue(), file('mixed-json.jsonl', MIXED)]);
    assert.equal(run.code, 5, run.stderr);
    const summary = JSON.parse(run.stdout) as {
      imported: number;
      skipped: number;
      durationMs: number;
      jobsPerSecond: number;
      errors: { line: number; message: string }[];
    };
    assert.equal(summary.imported, 4);
    assert.equal(summary.skipped, 5);
    assert.deepEqual(
      summary.errors.map(error => error.line),
      [3, 5, 7, 8, 9],
    );
    assert.equal(typeof summary.durationMs, 'number');
    assert.equal(typeof summary.jobsPerSecond, 'number');
  });

  it('imports from stdin, and is idempotent with ids', async () => {
    const name = uniqueQueue();
    const lines = Array.from({ length: 30 }, (_, i) => JSON.stringify({ payload: { n: i }, id: `s${i}`, delay: '1h' })).join('\n');
    const first = await cli(['--json', 'import', name, '-'], lines);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual([JSON.parse(first.stdout).imported, JSON.parse(first.stdout).skipped], [30, 0]);
    const again = await cli(['import', name], lines);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(await openQueue(name).stats(), { delayed: 30, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
  });

  it('imports bare payloads with --bare and a default --delay', async () => {
    const name = uniqueQueue();
    const run = await cli(['import', name, '--bare', '--delay', '10m'], '{"orderId":1}\n2\n"three"\n');
    assert.equal(run.code, 0, run.stderr);
    const { jobs } = await openQueue(name).list('delayed');
    assert.deepEqual(
      jobs.map(job => job.payload),
      [{ orderId: 1 }, 2, 'three'],
    );
    assert.ok(jobs.every(job => job.dueAt > Date.now() + 9 * 60_000));
  });

  it('sends thousands of lines in chunks and isolates a bad line the library refuses in the middle of a chunk', async () => {
    const name = uniqueQueue();
    const lines = Array.from({ length: 2_000 }, (_, i) =>
      JSON.stringify({ payload: { n: i }, delay: '1h', maxAttempts: i === 1_234 ? 0 : 5 }),
    );
    const run = await cli(['--json', 'import', name, file('big.jsonl', lines)]);
    assert.equal(run.code, 5, run.stderr);
    const summary = JSON.parse(run.stdout) as { imported: number; skipped: number; errors: { line: number; message: string }[] };
    assert.deepEqual([summary.imported, summary.skipped], [1_999, 1]);
    assert.equal(summary.errors[0]?.line, 1_235);
    assert.match(summary.errors[0]?.message ?? '', /maxAttempts/);
    assert.equal((await openQueue(name).stats()).delayed, 1_999);
  });

  it('reports a number beyond the double range (1e400) as a bad line instead of importing it as null', async () => {
    const name = uniqueQueue();
    const lines = [
      '{"payload":{"amount":1e400},"id":"big"}',
      '{"payload":{"n":[1,-2E+999]}}',
      '{"payload":1,"delay":1e400}',
      `{"payload":${'9'.repeat(400)}}`,
      '{"payload":1e300,"id":"fine"}',
    ];
    const run = await cli(['import', name, file('overflow.jsonl', lines)]);
    assert.equal(run.code, 5, run.stderr);
    assert.match(run.stderr, /^line 1: payload\.amount is a number out of range \(beyond ±1\.7976931348623157e308\)$/m);
    assert.match(run.stderr, /^line 2: payload\.n\[1\] is a number out of range/m);
    assert.match(run.stderr, /^line 3: delay is a number out of range/m);
    assert.match(run.stderr, /^line 4: payload is a number out of range/m);
    const bare = await cli(['import', name, '--bare'], '{"x":1e400}\n');
    assert.equal(bare.code, 5, bare.stderr);
    assert.match(bare.stderr, /^line 1: payload\.x is a number out of range/m);
    const long = await cli(['import', name], '{"payload":{"ids":[1,123456789012345678901234567890]}}\n');
    assert.equal(long.code, 5, long.stderr);
    assert.match(long.stderr, /^line 1: payload\.ids\[1\] is an integer beyond ±9007199254740991/m);
    const queue = openQueue(name);
    assert.equal(await queue.get('big'), null);
    assert.equal((await queue.get('fine'))?.payload, 1e300);
    assert.equal((await queue.stats()).ready, 1, 'only the good line was imported');
  });

  it('refuses a missing file with exit 2 before writing anything', async () => {
    const run = await cli(['import', uniqueQueue(), join(dir, 'nope.jsonl')]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /Cannot read .*nope\.jsonl: ENOENT/);
  });
});
