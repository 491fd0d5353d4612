// The library package's `sandglass` bin (src/launcher.ts) without sandglass-server installed: it runs
// `npm exec sandglass-server@<its version>`. A stand-in for npm (npm_execpath names the npm script
// to run, as under `npx`) records what it was asked and behaves as told, so the exit codes, the
// signals and the hint are checked without a registry; package.test.ts runs the real npm offline.
// The launcher runs from its source, in a folder with no node_modules (tsx loaded by its path).
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

// Prints its arguments and the launcher's guard variable (once ready for a signal), then exits as FAKE_NPM says: a code, or
// `wait` (until SIGTERM, then exit 0), or `die` (kill itself with SIGTERM).
const fakeNpm = join(work, 'npm-cli.js');
writeFileSync(
  fakeNpm,
  `const how = process.env.FAKE_NPM;
if (how === 'wait') process.on('SIGTERM', () => { console.log('SIGTERM'); process.exit(0); });
console.log(JSON.stringify({ args: process.argv.slice(2), guard: process.env.SANDGLASS_LAUNCHER_EXEC }));
if (how === 'wait') setInterval(() => {}, 1000);
else if (how === 'die') process.kill(process.pid, 'SIGTERM');
else process.exit(Number(how));`,
);

function launch(how: string, args: string[], onStart?: (child: ReturnType<typeof spawn>) => void) {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), launcher, ...args], {
    cwd: work,
    env: cleanEnv({ npm_execpath: fakeNpm, FAKE_NPM: how, PATH: process.env.PATH }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', chunk => {
    stdout += String(chunk);
    if (stdout.includes('\n')) onStart?.(child);
  });
  child.stderr.on('data', chunk => (stderr += String(chunk)));
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(resolve =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
}

describe('the sandglass launcher, without sandglass-server installed', () => {
  it("runs npm exec for sandglass-server's own bin at the same version, with the arguments, and passes the exit code on", async () => {
    const run = await launch('3', ['get', 'q', 'x', '--json']);
    assert.equal(run.code, 3, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout.split('\n')[0] as string), {
      args: ['exec', '--yes', `--package=sandglass-server@${version}`, '--', 'sandglass-server', 'get', 'q', 'x', '--json'],
      guard: '1',
    });
    assert.equal(run.stderr, '', 'no hint for a code npm itself does not fail with');
  });

  it('after a failure of npm (exit 1) says what to install', async () => {
    const run = await launch('1', ['serve']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`npm install sandglass-server@${version.replaceAll('.', '\\.')}`));
  });

  it('forwards SIGTERM to the command and exits as it does; dies of the signal the command died of', async () => {
    let sent = false;
    const waited = await launch('wait', ['serve'], child => {
      if (!sent) child.kill('SIGTERM');
      sent = true;
    });
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(waited.stdout, /^SIGTERM$/m);
    const died = await launch('die', ['serve']);
    assert.equal(died.signal, 'SIGTERM');
  });
});
