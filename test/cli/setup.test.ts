// The README's commands on a machine without redis-server: they stop at once with the one command
// to run (scripts/setup.sh), and the library says the same in a typed error, never a stack trace.
// SANDGLASS_NO_INSTALL=1 is the non-installing mode (as root, the set-up would otherwise install).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { RedisServerNotFoundError, startLocalRedis } from '../../src/deploy/local-redis.js';
import { cleanEnv, npmCli, onPath, runCommand } from '../helpers/commands.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let bin: string;

/** The tools the scripts use, from the machine's PATH, without redis-server (which sits next to node on Debian). */
function pathWithoutRedis(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandglass-nopath-'));
  // python3 and javac too: npm test's set-up asks for them (the clients' tests), and this PATH lacks only Redis.
  for (const tool of ['node', 'sh', 'bash', 'env', 'id', 'dirname', 'sed', 'javac']) {
    const found = onPath(tool);
    if (found) symlinkSync(found, join(dir, tool));
  }
  // A python3 on the PATH may be a shim (pyenv's) that needs the rest of the PATH: link the interpreter.
  symlinkSync(execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim(), join(dir, 'python3'));
  return dir;
}

/** The environment of a user with no redis-server, no REDIS_URL and installs turned off. */
function bareEnv(): NodeJS.ProcessEnv {
  const env = cleanEnv({ PATH: bin, SANDGLASS_NO_INSTALL: '1' });
  delete env.REDIS_URL;
  return env;
}

/** What scripts/setup.sh prints for `purpose` when only redis-server is missing. */
function expectedSetupMessage(forWhat: string): string {
  if (!existsSync('/etc/debian_version')) return `sandglass: redis-server not found (needed by ${forWhat}).\n`;
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return (
    `sandglass: redis-server not found (needed by ${forWhat}).\n` +
    'Run this once, then try again:\n' +
    `  ${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends redis-server\n`
  );
}

const STACK_LINE = /^\s+at /m;

before(() => {
  bin = pathWithoutRedis();
});
after(() => rmSync(bin, { recursive: true, force: true }));

describe('set-up on a machine without redis-server', () => {
  it('startLocalRedis rejects with RedisServerNotFoundError naming the command, not a raw ENOENT', async () => {
    const command = join(tmpdir(), 'no-such-dir', 'redis-server');
    const error = await startLocalRedis({ command }).then(
      () => assert.fail('started'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof RedisServerNotFoundError, String(error));
    assert.equal(error.code, 'ERR_REDIS_SERVER_NOT_FOUND');
    assert.equal(error.command, command);
    assert.equal(
      error.message,
      `Could not run ${command}: not found or not executable. Install Redis >= 7.0 (on Debian: apt-get install -y redis-server), ` +
        'or pass the path of redis-server as the `command` option.',
    );
  });

  it('npm start stops at once with the one command to run, exit 1, no stack trace', async () => {
    const { code, stdout, stderr } = await runCommand(process.execPath, [npmCli(), 'start', '--silent'], { cwd: root, env: bareEnv() });
    assert.equal(code, 1, stdout + stderr);
    assert.equal(stderr, expectedSetupMessage('npm start'));
    assert.doesNotMatch(stdout + stderr, STACK_LINE);
  });

  it("npm test's and test:fast's set-up stop the same way before anything runs", async () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    // Run through the set-up itself: `npm test` here would start the whole suite inside this test.
    assert.match(scripts.test ?? '', /^bash scripts\/setup\.sh test && /);
    assert.match(scripts['test:fast'] ?? '', /^bash scripts\/setup\.sh fast && /);
    // A Chromium that is there, so the message is about redis-server only.
    const env = { ...bareEnv(), CHROMIUM_PATH: process.execPath };
    for (const [purpose, forWhat] of [
      ['test', 'npm test'],
      ['fast', 'npm run test:fast'],
    ]) {
      const { code, stdout, stderr } = await runCommand('bash', ['scripts/setup.sh', purpose as string], { cwd: root, env });
      assert.equal(code, 1, stdout + stderr);
      assert.equal(stdout, '');
      assert.equal(stderr, expectedSetupMessage(forWhat as string));
    }
  });

  it('the demo run without the set-up says what to install in one line, exit 1, no stack trace', async () => {
    const { code, stdout, stderr } = await runCommand(process.execPath, ['--import', 'tsx', 'examples/order-timeout.ts'], {
      cwd: root,
      env: bareEnv(),
    });
    assert.equal(code, 1, stdout + stderr);
    assert.equal(stdout, '');
    assert.equal(
      stderr,
      'sandglass demo: Could not run redis-server: not found or not executable. Install Redis >= 7.0 (on Debian: apt-get install -y redis-server), ' +
        'or pass the path of redis-server as the `command` option.\n',
    );
  });

  it("sandglass serve without redis-server gives the CLI's ways out (install it, or --redis <url>), not the library's `command` option", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sandglass-nodata-'));
    try {
      const { code, stdout, stderr } = await runCommand(
        process.execPath,
        ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', '0', '--data-dir', dataDir],
        { cwd: root, env: bareEnv() },
      );
      assert.equal(code, 1, stdout + stderr);
      assert.match(stderr, /Could not run redis-server: not found or not executable\./);
      assert.match(stderr, /apt-get install -y redis-server/);
      assert.match(stderr, /--redis <url>/);
      assert.doesNotMatch(stderr, /`command` option/);
      assert.doesNotMatch(stderr, STACK_LINE);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("the README's Quick start names every Debian package the set-up installs, and how long npm test takes", () => {
    const setup = readFileSync(join(root, 'scripts', 'setup.sh'), 'utf8');
    const packages = [...setup.matchAll(/missing\+=\(([^)]*)\)/g)].flatMap(match => (match[1] as string).split(/\s+/)).filter(Boolean);
    assert.deepEqual([...new Set(packages)].sort(), [
      'chromium',
      'fonts-dejavu-core',
      'fonts-liberation',
      'openjdk-17-jdk-headless',
      'python3',
      'redis-server',
    ]);
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## Example'));
    for (const name of packages) assert.ok(quickStart.includes(`\`${name}\``), `Quick start names ${name}`);
    assert.match(quickStart, /`npm test` takes about 7-10 minutes on 2 cores/);
    assert.match(quickStart, /as root/);
    assert.match(quickStart, /SANDGLASS_NO_INSTALL=1/);
  });

  it('with everything installed the set-up is silent and succeeds', async () => {
    const { code, stdout, stderr } = await runCommand('bash', ['scripts/setup.sh', 'fast'], { cwd: root });
    assert.deepEqual({ code, stdout, stderr }, { code: 0, stdout: '', stderr: '' });
  });
});
