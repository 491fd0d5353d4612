// Running whole commands (npm, bash, node scripts) the way a user types them, for the tests of the
// README's commands and of the installed package.
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Both, in the order they came (what a failure's message shows). */
  output: string;
}

/** Runs `command` to its end and collects its output (never rejects on a non-zero exit). */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let output = '';
    child.stdout.on('data', chunk => ((stdout += String(chunk)), (output += String(chunk))));
    child.stderr.on('data', chunk => ((stderr += String(chunk)), (output += String(chunk))));
    child.once('error', reject);
    child.once('close', code => resolve({ code, stdout, stderr, output }));
  });
}

/** The first `name` on the machine's PATH, with symlinks resolved. */
export function onPath(name: string): string | undefined {
  const found = (process.env.PATH ?? '')
    .split(delimiter)
    .map(dir => join(dir, name))
    .find(existsSync);
  return found && realpathSync(found);
}

/** npm's own script, to be run by this Node (so a PATH without tools still runs npm). */
export function npmCli(): string {
  const cli = process.env.npm_execpath?.endsWith('.js') ? process.env.npm_execpath : onPath('npm');
  if (!cli) throw new Error('npm not found on the PATH');
  return cli;
}

/** The process environment without the npm_* variables of an enclosing `npm test`. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('npm_')) env[key] = value;
  return { ...env, ...extra };
}
