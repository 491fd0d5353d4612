// The order-timeout example over HTTP in plain Node (examples/http/order-timeout.mjs), against a real
// `sandglass serve` with a token and its private redis-server: what the Python and Java clients'
// tests run in their languages. 20 orders, 7 paid: 13 closed exactly once, none before its due time.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../helpers/commands.js';
import { startServe, type Serve } from '../helpers/sandglass-process.js';

const TOKEN = 'node-http-example-token-0123456789';
const dataDir = mkdtempSync(join(tmpdir(), 'sandglass-node-http-'));
let serve: Serve;

before(async () => {
  serve = await startServe([], { SANDGLASS_TOKEN: TOKEN, SANDGLASS_DATA_DIR: dataDir });
});
after(async () => {
  await serve?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the order-timeout example over HTTP, in Node', () => {
  it('closes the 13 unpaid orders exactly once, none early, and never the 7 paid ones', async () => {
    const run = await runCommand(process.execPath, ['examples/http/order-timeout.mjs'], {
      cwd: process.cwd(),
      env: { ...process.env, SANDGLASS_URL: serve.url, SANDGLASS_TOKEN: TOKEN },
    });
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as {
      closed: number[];
      cancelled: number[];
      earliestMarginMs: number;
      duplicates: number;
    };
    const paid = [2, 5, 8, 11, 14, 17, 20];
    assert.deepEqual(summary.cancelled, paid);
    assert.deepEqual(
      summary.closed,
      Array.from({ length: 20 }, (_, index) => index + 1).filter(order => !paid.includes(order)),
    );
    assert.equal(summary.duplicates, 0);
    assert.ok(summary.earliestMarginMs >= 0, `a job was claimed ${-summary.earliestMarginMs} ms before its due time`);
    assert.doesNotMatch(serve.output(), new RegExp(TOKEN), 'the token is never logged');
  });
});
