// The test kit's examples (examples/testing, shown in docs/testing.md) run as a user's tests run:
// node:test in ESM and in CommonJS, and Vitest, each importing the package by its name
// (`sandglass/testing`, the built dist, as after `npm install sandglass`), with the app code under
// test making its own Queue and Worker on the environment's connection.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { stripVTControlCharacters } from 'node:util';

const root = new URL('../../', import.meta.url).pathname;
const examples = new URL('../../examples/testing/', import.meta.url).pathname;
const built = existsSync(new URL('../../dist/testing/index.js', import.meta.url));

function run(command: string, args: readonly string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Without NODE_TEST_CONTEXT: set by this file's own runner, it would make the child report to it.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(command, args, { cwd: root, env: { ...env, NODE_NO_WARNINGS: '1', NO_COLOR: '1' } });
    let output = '';
    child.stdout.on('data', chunk => (output += chunk));
    child.stderr.on('data', chunk => (output += chunk));
    child.on('error', reject);
    child.on('close', code => resolve({ code, output: stripVTControlCharacters(output) }));
  });
}

describe('the test kit from a test runner', () => {
  it('has a built package to import (npm test builds before it tests)', () => {
    assert.ok(built, 'dist/testing/index.js is missing: run `npm run build` first');
  });

  it('runs under node:test, in ESM and in CommonJS', { skip: !built && 'not built' }, async () => {
    const { code, output } = await run(process.execPath, ['--test', `${examples}node-test.test.mjs`, `${examples}node-test.test.cjs`]);
    assert.equal(code, 0, output);
    assert.match(output, /^# pass 3$/m, output);
    assert.match(output, /^# fail 0$/m, output);
  });

  it('runs under Vitest', { skip: !built && 'not built' }, async () => {
    const { code, output } = await run(process.execPath, [`${root}node_modules/vitest/vitest.mjs`, 'run', '--root', examples]);
    assert.equal(code, 0, output);
    assert.match(output, /Tests\s+2 passed \(2\)/, output);
  });
});
