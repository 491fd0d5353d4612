// The Python client (clients/python) against a real `sandglass serve` with a token, on its own private
// redis-server (no REDIS_URL: serve starts one in a temporary data folder, never the machine's 6379):
// its unittest suite, then the order-timeout example, whose closes are checked here as well.
// Python >= 3.9 must be on PATH as `python3`: without it this file fails (a client left untested in
// CI is not a pass).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand, type CommandResult } from '../helpers/commands.js';
import { startServe, type Serve } from '../helpers/sandglass-process.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const CLIENT = join(ROOT, 'clients', 'python');
const TOKEN = randomBytes(24).toString('hex');

/** Runs `python3 <args>` in the repository with the service's URL and token; its exit code and output (stdout and stderr). */
function python(args: readonly string[], env: Record<string, string>): Promise<CommandResult> {
  return runCommand('python3', args, {
    cwd: ROOT,
    // No __pycache__ written into the checkout; output as it comes, for a failure's log.
    env: { ...process.env, PYTHONPATH: join(CLIENT, 'src'), PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1', ...env },
  });
}

/** Fails with a clear message when `python3` is missing or older than 3.9. */
function requirePython(): void {
  const probe = spawnSync('python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0)
    assert.fail(
      `python3 is needed to test the Python client (clients/python) and was not found or did not run: ${probe.error?.message ?? probe.stderr}`,
    );
  const [major, minor] = probe.stdout.trim().split('.').map(Number);
  assert.ok(
    (major ?? 0) > 3 || ((major ?? 0) === 3 && (minor ?? 0) >= 9),
    `The Python client needs Python >= 3.9; python3 is ${probe.stdout.trim()}`,
  );
}

interface Timing {
  addedAt: number;
  delayMs: number;
  dueAt: number;
  claimedAt: number;
  startedAt: number;
}

describe('Python client (clients/python) against sandglass serve', () => {
  let serve: Serve | undefined;
  let dataDir: string | undefined;
  let env: Record<string, string>;

  before(async () => {
    requirePython();
    dataDir = mkdtempSync(join(tmpdir(), 'sandglass-python-'));
    serve = await startServe([], { SANDGLASS_TOKEN: TOKEN, SANDGLASS_DATA_DIR: join(dataDir, 'data') });
    env = { SANDGLASS_URL: serve.url, SANDGLASS_TOKEN: TOKEN };
  });

  after(async () => {
    // Stopped even when a test failed: a running serve (and its redis-server) would keep this process alive.
    try {
      if (serve) assert.equal(await serve.stop(), 0, serve.output());
    } finally {
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('passes its unittest suite, none of it skipped', async () => {
    const run = await python(['-m', 'unittest', 'discover', '-s', 'clients/python/tests', '-v'], env);
    assert.equal(run.code, 0, `python3 -m unittest failed:\n${run.output}`);
    assert.match(run.output, /^OK$/m, run.output);
    assert.doesNotMatch(run.output, /skipped/i, `some Python tests were skipped:\n${run.output}`);
    const ran = Number(/^Ran (\d+) tests?/m.exec(run.output)?.[1]);
    assert.ok(ran >= 30, `expected the whole suite to run, got ${ran} tests:\n${run.output}`);
  });

  it('runs the order-timeout example: 13 orders closed exactly once, never early; the 7 paid ones never run', async () => {
    const run = await python(['clients/python/examples/order_timeout.py'], env);
    assert.equal(run.code, 0, `the example failed:\n${run.output}`);
    const summary = JSON.parse(run.output.trim().split('\n').at(-1) as string) as {
      closed: string[];
      cancelled: string[];
      closes: Record<string, number>;
      deliveries: Record<string, number>;
      earliestStartMarginMs: number;
      early: string[];
      timings: Record<string, Timing>;
    };
    const ids = (numbers: number[]) => numbers.map(n => `order:${n}`);
    const paid = [2, 5, 8, 11, 14, 17, 20];
    assert.deepEqual(summary.cancelled, ids(paid));
    assert.deepEqual(summary.closed, ids(Array.from({ length: 20 }, (_, i) => i + 1).filter(n => !paid.includes(n))));
    for (const id of summary.closed) {
      assert.equal(summary.closes[id], 1, `${id} closed ${summary.closes[id]} times`);
      assert.equal(summary.deliveries[id], 1, `${id} delivered ${summary.deliveries[id]} times`);
      const timing = summary.timings[id] as Timing;
      // Never early, exactly: the service and this machine share the clock (a private local redis-server).
      assert.ok(timing.dueAt >= timing.addedAt + timing.delayMs, `${id} was due before its delay: ${JSON.stringify(timing)}`);
      assert.ok(timing.claimedAt >= timing.dueAt, `${id} was claimed early: ${JSON.stringify(timing)}`);
      assert.ok(timing.startedAt >= timing.dueAt, `${id} started early: ${JSON.stringify(timing)}`);
    }
    for (const id of summary.cancelled) {
      assert.equal(summary.deliveries[id], undefined, `the paid ${id} ran`);
      assert.equal(summary.timings[id], undefined, `the paid ${id} ran`);
    }
    assert.deepEqual(summary.early, []);
    assert.ok(summary.earliestStartMarginMs >= 0, run.output);
  });
});
