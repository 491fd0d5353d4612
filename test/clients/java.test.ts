// The Java client (clients/java) against a real `sandglass serve` on a private redis-server: its
// sources are compiled with javac into a temporary folder, its own test runner runs (unit tests,
// then the producer and consumer tests against the service), then the order-timeout example runs
// and its summary is checked. Without a JDK 17 (javac) this fails: it is not skipped.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand, type CommandResult } from '../helpers/commands.js';
import { startServe, type Serve } from '../helpers/sandglass-process.js';

const root = resolve(import.meta.dirname, '..', '..');
const client = join(root, 'clients', 'java');
const work = mkdtempSync(join(tmpdir(), 'sandglass-java-'));
const classes = join(work, 'classes');
const token = randomBytes(24).toString('hex');
let serve: Serve | undefined;

/** Every .java file under `dir`. */
function javaFiles(dir: string): string[] {
  return readdirSync(dir).flatMap(name => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return javaFiles(path);
    return name.endsWith('.java') ? [path] : [];
  });
}

/** Runs `java <args>` with the service's URL and token; its exit code and output. */
function java(args: readonly string[]): Promise<CommandResult> {
  return runCommand('java', ['-cp', classes, ...args], {
    cwd: client,
    env: { ...process.env, SANDGLASS_URL: serve?.url ?? '', SANDGLASS_TOKEN: token },
  });
}

before(async () => {
  const version = spawnSync('javac', ['-version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0)
    throw new Error(`javac is not installed (JDK 17 needed to test clients/java): ${version.error?.message ?? version.stderr}`);
  const compiled = spawnSync(
    'javac',
    [
      '-Xlint:all',
      '--release',
      '17',
      '-encoding',
      'UTF-8',
      '-d',
      classes,
      ...javaFiles(join(client, 'src')),
      ...javaFiles(join(client, 'examples')),
    ],
    { encoding: 'utf8' },
  );
  assert.equal(compiled.status, 0, `javac failed:\n${compiled.stdout}${compiled.stderr}`);
  serve = await startServe(['--data-dir', join(work, 'data')], { SANDGLASS_TOKEN: token });
});

after(async () => {
  await serve?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('the Java client against sandglass serve', { timeout: 85_000 }, () => {
  it('passes its own tests: JSON, path encoding, webhook vectors, errors, producer and consumer routes, the consumer loop', async () => {
    const run = await java(['dev.sandglass.client.TestMain', 'all']);
    assert.equal(run.code, 0, `the Java tests failed:\n${run.output}`);
    assert.match(run.output, /^\d+ passed, 0 failed$/m, run.output);
  });

  it('runs the order-timeout example: 13 orders closed once each, the 7 paid ones never, none early', async () => {
    const run = await java(['OrderTimeout']);
    assert.equal(run.code, 0, `OrderTimeout failed:\n${run.output}`);
    const summary = JSON.parse(run.output.trim().split('\n').at(-1) as string) as {
      queue: string;
      ok: boolean;
      closed: string[];
      cancelled: string[];
      closedMoreThanOnce: string[];
      cancelledButClosed: string[];
      earliestStartMarginMs: number;
    };
    const paid = [1, 4, 7, 10, 13, 16, 19].map(n => `order:${n}`);
    const unpaid = Array.from({ length: 20 }, (_, i) => `order:${i + 1}`).filter(id => !paid.includes(id));
    assert.deepEqual([...summary.cancelled].sort(), [...paid].sort());
    // Every close is listed: a duplicate would show twice.
    assert.deepEqual([...summary.closed].sort(), [...unpaid].sort(), run.output);
    assert.deepEqual(summary.closedMoreThanOnce, []);
    assert.deepEqual(summary.cancelledButClosed, []);
    assert.ok(summary.earliestStartMarginMs >= 0, `a job started before its due time: ${run.output}`);
    assert.equal(summary.ok, true);

    // The service's own counts agree: 20 added, 13 deliveries (a second one would count again), 13 acked.
    const response = await fetch(`${serve?.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const metrics = await response.text();
    const count = (name: string) => Number(new RegExp(`^sandglass_${name}\\{queue="${summary.queue}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    assert.deepEqual(
      { added: count('jobs_added_total'), delivered: count('jobs_delivered_total'), completed: count('jobs_completed_total') },
      { added: 20, delivered: 13, completed: 13 },
    );
  });
});
