#!/usr/bin/env node
// The `sandglass` bin of the library package. The command line (and `serve`) lives in the
// sandglass-server package, so that `npm install sandglass` brings the library's dependencies only;
// this small launcher keeps `npx sandglass serve` working: it runs an installed sandglass-server's
// CLI in this process, else that exact version through `npm exec`. Node built-ins only, so the
// library package needs nothing more for it.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const SERVER = 'sandglass-server';
// Set for the `npm exec` child: a launcher that finds it set was started by another launcher, so it
// must not start `npm exec` again (a PATH where its own bin comes first would otherwise loop).
const LAUNCHED = 'SANDGLASS_LAUNCHER_EXEC';

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** The CLI entry of an installed sandglass-server: beside this package, from the working folder, or on the PATH. */
function installedServer(): string | undefined {
  // An app's node_modules (sandglass and sandglass-server side by side), then the folder the command
  // runs in (a global sandglass with a local server).
  for (const base of [import.meta.url, pathToFileURL(join(process.cwd(), 'package.json')).href]) {
    try {
      return createRequire(base).resolve(`${SERVER}/cli`);
    } catch {
      // Not there: try the next place.
    }
  }
  // The folder `npm exec` installed it in, whose node_modules/.bin it put on the PATH.
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir.endsWith(join('node_modules', '.bin'))) continue;
    const cli = join(dirname(dir), SERVER, 'dist', 'cli.js');
    if (existsSync(cli)) return cli;
  }
  return undefined;
}

const installHint = `install it beside sandglass: npm install ${SERVER}@${version}`;
const server = installedServer();
if (server !== undefined) {
  // Its CLI reads process.argv (the arguments after this script) and exits by itself.
  await import(pathToFileURL(server).href);
} else if (process.env[LAUNCHED] !== undefined) {
  process.stderr.write(`sandglass: the command line is in the ${SERVER} package, not found after npm exec; ${installHint}\n`);
  process.exit(1);
} else {
  runThroughNpm(process.argv.slice(2));
}

function runThroughNpm(args: string[]): void {
  // The npm running this command when there is one (`npx sandglass`), else the one on the PATH.
  const npmCli = process.env.npm_execpath?.endsWith('.js') ? process.env.npm_execpath : undefined;
  const [command, prefix] = npmCli ? [process.execPath, [npmCli]] : ['npm', []];
  // The package's own-name bin, `sandglass-server`: `sandglass` could be this launcher again.
  const child = spawn(command, [...prefix, 'exec', '--yes', `--package=${SERVER}@${version}`, '--', SERVER, ...args], {
    stdio: 'inherit',
    env: { ...process.env, [LAUNCHED]: '1' },
    shell: !npmCli && process.platform === 'win32',
  });
  // A signal sent to this process alone (a supervisor's SIGTERM) goes on to the child. Ctrl-C in a
  // terminal reaches the whole foreground group, the child included: forwarding it too would be a
  // second SIGINT, which `serve` takes as "exit without waiting".
  const forward = (signal: NodeJS.Signals) => {
    if (signal === 'SIGINT' && process.stdin.isTTY) return;
    child.kill(signal);
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) process.on(signal, forward);
  child.once('error', error => {
    process.stderr.write(`sandglass: could not run npm to fetch ${SERVER}@${version} (${error.message}); ${installHint}\n`);
    process.exit(127);
  });
  child.once('exit', (code, signal) => {
    for (const name of signals) process.off(name, forward);
    if (signal !== null) {
      // Die of the same signal, so the caller sees what the child saw.
      process.kill(process.pid, signal);
      return;
    }
    // npm's own failures (offline, not in the registry) exit 1, as does a command that cannot reach
    // Redis: the hint says which case it is for.
    if (code === 1)
      process.stderr.write(
        `sandglass: ran ${SERVER}@${version} through npm exec (it is not installed here); if npm could not fetch it, ${installHint}\n`,
      );
    process.exit(code ?? 1);
  });
}
