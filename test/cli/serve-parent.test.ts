// `npx sandglass serve` stopped by SIGTERM to npx: npm does not pass the signal on (it ends its
// `sh -c` and leaves the command reparented to pid 1), so `serve` must notice that its parent died
// and stop, with its private redis-server. Run through the real `npx` from a folder where the
// package is installed (a linked bin that runs the sources, so that no stale dist/ is tested).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isAlive } from '../../src/deploy/data-folder.js';
import { cliPath } from '../helpers/cli.js';
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
