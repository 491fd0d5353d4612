import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { uniqueQueue, useRedis } from './helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const cliPath = new URL('../src/cli.ts', import.meta.url).pathname;

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise(resolve => {
    execFile(process.execPath, ['--import', 'tsx', cliPath, '--redis', redis.url, ...args], (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

describe('sandglass CLI', () => {
  it('adds, shows, cancels a job with exit codes a script can rely on', async () => {
    const name = uniqueQueue();
    const added = await cli('--json', 'add', name, '{"orderId":42}', '--delay', '30m', '--id', 'order:42');
    assert.equal(added.code, 0, added.stderr);
    assert.deepEqual(JSON.parse(added.stdout), { id: 'order:42' });
    const shown = await cli('--json', 'get', name, 'order:42');
    assert.equal(JSON.parse(shown.stdout).state, 'delayed');
    assert.deepEqual(JSON.parse(shown.stdout).payload, { orderId: 42 });
    assert.equal((await cli('cancel', name, 'order:42')).code, 0);
    assert.equal((await cli('cancel', name, 'order:42')).code, 3);
    assert.equal((await cli('get', name, 'order:42')).code, 3);
  });

  it('refuses bad input with exit code 2 and a clear message', async () => {
    const badJson = await cli('add', uniqueQueue(), '{not json');
    assert.equal(badJson.code, 2);
    assert.match(badJson.stderr, /not valid JSON/);
    const badDelay = await cli('--json', 'add', uniqueQueue(), '1', '--delay', 'soon');
    assert.equal(badDelay.code, 2);
    assert.equal(JSON.parse(badDelay.stdout).error.code, 'ERR_VALIDATION');
  });
});
