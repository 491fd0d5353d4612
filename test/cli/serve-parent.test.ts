// `npx sandglass serve` stopped by SIGTERM to npx: npm does not pass the signal on (it ends its
// `sh -c` and leaves the command reparented to pid 1), so `serve` must notice that its parent died
// and stop, with its private redis-server. Run through the real `npx` from a folder where the
// package is installed (a linked bin that runs the sources, so that no stale dist/ is tested).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isAlive } from '../../src/deploy/data-folder.js';
import { cliArgs, cliPath } from '../helpers/cli.js';
import { waitFor } from '../helpers/redis.js';

const folder = mkdtempSync(join(tmpdir(), 'sandglass-npx-'));
after(() => rmSync(folder, { recursive: true, force: true }));

/** This process's environment without a Redis setting: serve starts its private redis-server. */
function environment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('REDIS_') || name.startsWith('SANDGLASS_')) delete env[name];
  return env;
}

describe('sandglass serve under npx', () => {
  it('stops, with its private redis-server, when npx is stopped by SIGTERM (npx does not pass it on)', async () => {
    writeFileSync(join(folder, 'package.json'), JSON.stringify({ name: 'npx-user', private: true }));
    mkdirSync(join(folder, 'node_modules', '.bin'), { recursive: true });
    const bin = join(folder, 'node_modules', '.bin', 'sandglass');
    writeFileSync(bin, `#!/bin/sh\nexec "${process.execPath}" --import "${import.meta.resolve('tsx')}" "${cliPath}" "$@"\n`);
    chmodSync(bin, 0o755);

    const npx = spawn('npx', ['--no-install', 'sandglass', 'serve', '--port', '0', '--data-dir', join(folder, 'data')], {
      cwd: folder,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...environment(), npm_config_update_notifier: 'false' },
    });
    let output = '';
    npx.stdout.on('data', chunk => (output += String(chunk)));
    npx.stderr.on('data', chunk => (output += String(chunk)));
    let servePid: number | undefined;
    let redisPid: number | undefined;
    try {
      await waitFor(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(output), 60_000, `serve to listen under npx: ${output}`);
      // The pids from serve's own log lines (its pino "pid" and the private server's "redisPid").
      servePid = Number(/"pid":(\d+)/.exec(output)?.[1]);
      redisPid = Number(/"redisPid":(\d+)/.exec(output)?.[1]);
      assert.ok(servePid > 0 && redisPid > 0, output);
      assert.notEqual(servePid, npx.pid, 'npx runs serve as a child of its own');

      npx.kill('SIGTERM');
      const pids = [servePid, redisPid];
      await waitFor(() => pids.every(pid => !isAlive(pid)), 5_000, `serve (pid ${servePid}) and redis-server (pid ${redisPid}) to stop`);
      assert.match(output, /parent process \(pid \d+\) is gone: shutting down/);
      assert.match(output, /"msg":"Stopped"/);
    } finally {
      npx.kill('SIGKILL');
      for (const pid of [servePid, redisPid]) if (pid && isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

/** The pids serve logs (its own and its private redis-server's), once its log says it listens. */
async function startedInBackground(log: string): Promise<{ servePid: number; redisPid: number; url: string }> {
  let text = '';
  await waitFor(
    () => /listening on http:\/\/127\.0\.0\.1:\d+/.test((text = readFileSync(log, { encoding: 'utf8', flag: 'a+' }))),
    60_000,
    `serve to listen: ${text}`,
  );
  const servePid = Number(/"pid":(\d+)/.exec(text)?.[1]);
  const redisPid = Number(/"redisPid":(\d+)/.exec(text)?.[1]);
  const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text)?.[1] as string;
  assert.ok(servePid > 0 && redisPid > 0, text);
  return { servePid, redisPid, url };
}

describe('sandglass serve started in the background by a shell that exits after it started', () => {
  // The shell waits until serve listens, then exits, as a login shell that started it with `&` or
  // nohup does when its user logs out. (A parent that is gone before serve starts cannot be told
  // from a service manager that is pid 1: serve then runs on whatever the setting.)
  const command = (data: string, log: string, extra: string) =>
    `"${process.execPath}" ${cliArgs.map(arg => `"${arg}"`).join(' ')} serve --port 0 --log-format json --data-dir "${data}" ${extra} > "${log}" 2>&1 &
    while ! grep -q listening "${log}" 2>/dev/null; do sleep 0.1; done`;

  it('stops with its redis-server by default: its parent is gone', async () => {
    const log = join(folder, 'default.log');
    const shell = spawn('sh', ['-c', command(join(folder, 'data-default'), log, '')], { env: environment(), stdio: 'ignore' });
    await new Promise(resolve => shell.once('exit', resolve));
    const { servePid, redisPid } = await startedInBackground(log);
    try {
      await waitFor(() => !isAlive(servePid) && !isAlive(redisPid), 10_000, 'serve and redis-server to stop');
      assert.match(readFileSync(log, 'utf8'), /parent process \(pid \d+\) is gone: shutting down/);
    } finally {
      for (const pid of [servePid, redisPid]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('with --on-parent-exit keep, runs on and answers until it gets a SIGTERM', async () => {
    const log = join(folder, 'keep.log');
    const shell = spawn('sh', ['-c', command(join(folder, 'data-keep'), log, '--on-parent-exit keep')], {
      env: environment(),
      stdio: 'ignore',
    });
    await new Promise(resolve => shell.once('exit', resolve));
    const { servePid, redisPid, url } = await startedInBackground(log);
    try {
      // The parent check runs every 500 ms: after 2 s a serve that was going to stop would have.
      await new Promise(resolve => setTimeout(resolve, 2_000));
      assert.ok(isAlive(servePid) && isAlive(redisPid), 'serve and its redis-server still run');
      const info = await fetch(`${url}/v1/info`);
      assert.equal(info.status, 200);
      process.kill(servePid, 'SIGTERM');
      await waitFor(() => !isAlive(servePid) && !isAlive(redisPid), 10_000, 'serve and redis-server to stop on SIGTERM');
      assert.doesNotMatch(readFileSync(log, 'utf8'), /parent process/);
    } finally {
      for (const pid of [servePid, redisPid]) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('refuses a value other than stop or keep, saying so', async () => {
    const run = spawn(
      process.execPath,
      [...cliArgs, 'serve', '--port', '0', '--on-parent-exit', 'never', '--data-dir', join(folder, 'data-bad')],
      {
        env: environment(),
      },
    );
    let stderr = '';
    run.stderr.on('data', chunk => (stderr += String(chunk)));
    const code = await new Promise(resolve => run.once('exit', resolve));
    assert.notEqual(code, 0);
    assert.match(stderr, /--on-parent-exit to be stop or keep, got 'never'/);
  });
});
