// The library package's `sandglass` bin (src/launcher.ts) without sandglass-server installed: it has
// `npm exec` fetch sandglass-server at its own version, then runs that CLI in its own process. A
// stand-in for npm (npm_execpath names the npm script to run, as under `npx`) records what it was
// asked and answers with a stand-in CLI, so the arguments, exit codes and signals are checked
// without a registry; package.test.ts runs the real npm offline. The launcher runs from its source,
// in a folder with no node_modules (tsx loaded by its path).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cleanEnv } from '../helpers/commands.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const launcher = join(root, 'src', 'launcher.ts');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const work = mkdtempSync(join(tmpdir(), 'sandglass-launcher-'));
after(() => rmSync(work, { recursive: true, force: true }));

// npm: records its arguments, then prints the stand-in CLI's path (FAKE_NPM=fail: exits 1, as
// offline or for an unknown version).
const fakeNpm = join(work, 'npm-cli.js');
const npmArgs = join(work, 'npm-args.json');
const fakeCli = join(work, 'cli.mjs');
writeFileSync(
  fakeNpm,
  `require('node:fs').writeFileSync(${JSON.stringify(npmArgs)}, JSON.stringify(process.argv.slice(2)));
if (process.env.FAKE_NPM === 'fail') { console.error('npm error code ENOTCACHED'); process.exit(1); }
process.stdout.write(${JSON.stringify(fakeCli)});`,
);
// The CLI: prints its arguments (once ready for a signal) and exits with FAKE_CLI, or with `wait`
// exits 0 on SIGTERM.
writeFileSync(
  fakeCli,
  `const how = process.env.FAKE_CLI;
if (how === 'wait') process.on('SIGTERM', () => { console.log('SIGTERM'); process.exit(0); });
console.log(JSON.stringify(process.argv.slice(2)));
if (how === 'wait') setInterval(() => {}, 1000); else process.exit(Number(how));`,
);

function launch(env: { FAKE_NPM?: string; FAKE_CLI?: string }, args: string[], onStart?: (child: ReturnType<typeof spawn>) => void) {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), launcher, ...args], {
    cwd: work,
    env: cleanEnv({ npm_execpath: fakeNpm, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', chunk => {
    stdout += String(chunk);
    if (stdout.includes('\n')) onStart?.(child);
  });
  child.stderr.on('data', chunk => (stderr += String(chunk)));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>(resolve =>
    child.on('close', code => resolve({ code, stdout, stderr })),
  );
}

describe('the sandglass launcher, without sandglass-server installed', () => {
  it('has npm exec fetch sandglass-server at the same version, runs its CLI with the arguments and exits with its code', async () => {
    const run = await launch({ FAKE_CLI: '3' }, ['get', 'q', 'x', '--json']);
    assert.equal(run.code, 3, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), ['get', 'q', 'x', '--json']);
    const asked = JSON.parse(readFileSync(npmArgs, 'utf8')) as string[];
    assert.deepEqual(asked.slice(0, 6), ['exec', '--yes', `--package=sandglass-server@${version}`, '--', 'node', '-e']);
    assert.equal(run.stderr, '');
  });

  it('says what to install when npm cannot fetch it', async () => {
    const run = await launch({ FAKE_NPM: 'fail' }, ['serve']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /ENOTCACHED/, "npm's own error is shown");
    assert.match(
      run.stderr,
      new RegExp(`npm could not fetch; install it beside sandglass: npm install sandglass-server@${version.replaceAll('.', '\\.')}`),
    );
  });

  it('runs the CLI in its own process: a SIGTERM to the launcher reaches the command itself', async () => {
    let sent = false;
    const run = await launch({ FAKE_CLI: 'wait' }, ['serve'], child => {
      if (!sent) child.kill('SIGTERM');
      sent = true;
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^SIGTERM$/m);
  });
});
