#!/usr/bin/env node
// The `sandglass` bin of the library package. The command line (and `serve`) lives in the
// sandglass-server package, so that `npm install sandglass` brings the library's dependencies only;
// this small launcher keeps `npx sandglass serve` working: it runs the CLI of a sandglass-server
// installed beside it, else has npm fetch that exact version (`npm exec`) and runs it. Node
// built-ins only, so the library package needs nothing more for it.
//
// Either way the CLI runs in this process, imported: signals, stdio and the exit code are the
// command's own. Running the CLI under `npm exec` instead goes through npm and a shell, and a SIGTERM
// sent to that chain (a supervisor stopping `serve`) ends npm and the shell but not the server, left
// running without a parent; npm is used here only to fetch the package.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const SERVER = 'sandglass-server';
const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const installHint = `install it beside sandglass: npm install ${SERVER}@${version}`;

/** The CLI entry of an installed sandglass-server: beside this package, else from the working folder. */
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
  return undefined;
}

// Run by `npm exec` once it has installed the package (in its cache) and put that install's
// node_modules/.bin on the PATH: prints where the package's CLI is.
const FIND_IN_PATH = `const { existsSync } = require('node:fs'); const { delimiter, join } = require('node:path');
const found = (process.env.PATH || '').split(delimiter).map(dir => join(dir, '..', ${JSON.stringify(SERVER)}, 'dist', 'cli.js')).find(existsSync);
if (!found) process.exit(1);
process.stdout.write(found);`;

/** Has npm fetch sandglass-server at this version; resolves to its CLI entry, undefined when npm could not. */
function fetchServer(): Promise<string | undefined> {
  // The npm running this command when there is one (`npx sandglass`), else the one on the PATH.
  const npmCli = process.env.npm_execpath?.endsWith('.js') ? process.env.npm_execpath : undefined;
  const [command, prefix] = npmCli ? [process.execPath, [npmCli]] : ['npm', []];
  const args = [...prefix, 'exec', '--yes', `--package=${SERVER}@${version}`, '--', 'node', '-e', FIND_IN_PATH];
  return new Promise(resolve => {
    // npm's progress and errors go to the terminal; its stdout is the path.
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'], shell: !npmCli && process.platform === 'win32' });
    let out = '';
    child.stdout.on('data', chunk => (out += String(chunk)));
    child.once('error', error => {
      process.stderr.write(`sandglass: could not run npm (${error.message})\n`);
      resolve(undefined);
    });
    child.once('close', code => resolve(code === 0 && out.trim() !== '' ? out.trim().split('\n').at(-1) : undefined));
  });
}

const server = installedServer() ?? (await fetchServer());
if (server === undefined) {
  process.stderr.write(`sandglass: the command line is in the ${SERVER} package, which npm could not fetch; ${installHint}\n`);
  process.exit(1);
}
// Its CLI reads process.argv (the arguments after this script) and exits by itself.
await import(pathToFileURL(server).href);
