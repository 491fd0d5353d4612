// The README's commands on a machine without redis-server: they stop at once with the one command
// to run (scripts/setup.sh), and the library says the same in a typed error, never a stack trace.
// SANDGLASS_NO_INSTALL=1 is the non-installing mode (as root, the set-up would otherwise install).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { RedisServerNotFoundError, startLocalRedis } from '../src/local-redis.js';

const root = fileURLToPath(new URL('..', import.meta.url));
let bin: string;

/** The tools the scripts use, from the machine's PATH, without redis-server (which sits next to node on Debian). */
function pathWithoutRedis(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandglass-nopath-'));
  const where = (name: string) => (process.env.PATH ?? '').split(delimiter).map(d => join(d, name)).find(existsSync);
  for (const tool of ['node', 'sh', 'bash', 'env', 'id', 'dirname', 'sed']) {
    const found = where(tool);
    if (found) symlinkSync(realpathSync(found), join(dir, tool));
  }
  return dir;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', chunk => (stdout += String(chunk)));
    child.stderr.on('data', chunk => (stderr += String(chunk)));
    child.once('error', reject);
    child.once('close', code => resolve({ code, stdout, stderr }));
  });
}

/** The environment of a user with no redis-server, no REDIS_URL and installs turned off. */
function bareEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: bin, SANDGLASS_NO_INSTALL: '1' };
  delete env.REDIS_URL;
  for (const key of Object.keys(env)) if (key.startsWith('npm_')) delete env[key];
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
    const npmCli = (process.env.PATH ?? '').split(delimiter).map(d => join(d, 'npm')).find(existsSync);
    assert.ok(npmCli, 'npm on the PATH');
    const { code, stdout, stderr } = await run(process.execPath, [realpathSync(npmCli), 'start', '--silent'], bareEnv());
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
    for (const [purpose, forWhat] of [['test', 'npm test'], ['fast', 'npm run test:fast']]) {
      const { code, stdout, stderr } = await run('bash', ['scripts/setup.sh', purpose as string], env);
      assert.equal(code, 1, stdout + stderr);
      assert.equal(stdout, '');
      assert.equal(stderr, expectedSetupMessage(forWhat as string));
    }
  });

  it('the demo run without the set-up says what to install in one line, exit 1, no stack trace', async () => {
    const { code, stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'examples/order-timeout.ts'], bareEnv());
    assert.equal(code, 1, stdout + stderr);
    assert.equal(stdout, '');
    assert.equal(
      stderr,
      'sandglass demo: Could not run redis-server: not found or not executable. Install Redis >= 7.0 (on Debian: apt-get install -y redis-server), ' +
        'or pass the path of redis-server as the `command` option.\n',
    );
  });

  it('with everything installed the set-up is silent and succeeds', async () => {
    const { code, stdout, stderr } = await run('bash', ['scripts/setup.sh', 'fast'], process.env);
    assert.deepEqual({ code, stdout, stderr }, { code: 0, stdout: '', stderr: '' });
  });
});
