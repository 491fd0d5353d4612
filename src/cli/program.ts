// The `sandglass` program: global options, the command groups, and how errors become exit codes.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { DURATION_UNITS } from '../index.js';
import { registerBenchCommand } from './bench.js';
import { DEFAULT_DATA_DIR } from '../deploy/data-folder.js';
import { REDIS_SECRETS, REDIS_SETTINGS } from '../deploy/redis-target.js';
import { Cli, DEFAULT_REDIS_URL, EXIT, ExitCode, RedisSettingsError, describeError, exitCodeOf } from './context.js';
import { registerDeadCommands } from './dead.js';
import { registerFlowCommands } from './flow.js';
import { registerGroupCommands } from './groups.js';
import { registerImportCommand } from './import.js';
import { printable } from './format.js';
import { durationArgument } from './input.js';
import { registerJobCommands } from './jobs.js';
import { registerMigrateCommands } from './migrate.js';
import { registerQueueCommands } from './queues.js';
import { registerScheduleCommands } from './schedules.js';
import { registerServeCommand, registerTokenCommand } from './serve.js';

const EPILOG = `
Environment: each option's variable is listed beside it; a flag wins over its variable.
Credentials (environment only): ${REDIS_SECRETS.map(secret => secret.env).join(', ')}.
Redis: --redis <url>, --cluster <nodes> or --sentinels <nodes> --sentinel-name <name> (or their
variables; one of them), else the private Redis of a sandglass serve running on the data folder,
else ${DEFAULT_REDIS_URL}. Human output says which on stderr, password hidden.

Exit codes:
    0  ok
    1  failure: Redis unreachable (after --connect-timeout at most), a Redis error
    2  usage or validation: unknown option, bad JSON, bad delay, id or group, bad schedule, limit or retention; nothing was written
    3  not found: get, cancel, reschedule, dead retry <ids>; pause (without --create), resume of an unknown queue;
       schedule get, pause, resume, rm of an unknown schedule
    4  conflict: the job is running (cancel, reschedule, add --replace); serve: data folder in use
    5  partial import: some lines were skipped
  130  import interrupted by Ctrl-C (after printing how far it got)

With --json, stdout holds one JSON document: the result, or {"error":{"code","message"}}.
Durations: milliseconds, or units ${DURATION_UNITS.join(' ')} combined ('30m', '1h30m', '5d').`;

function version(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

export function createProgram(): { program: Command; cli: Cli } {
  const program = new Command('sandglass');
  const cli = new Cli(program);
  // Settings first: subcommands copy them when they are created.
  program
    .description('Operate sandglass delay queues on Redis.')
    .version(version(), '-V, --version')
    .addOption(
      new Option(
        '--data-dir <path>',
        `data folder of a running sandglass serve, whose private Redis is used without --redis / REDIS_URL (default: ${DEFAULT_DATA_DIR})`,
      ).env('SANDGLASS_DATA_DIR'),
    )
    .addOption(new Option('--prefix <prefix>', 'key prefix').env('SANDGLASS_PREFIX').default('sg'))
    .option('--json', 'print one JSON document on stdout, errors included')
    .addOption(
      new Option('--connect-timeout <duration>', 'give up on an unreachable Redis after this long')
        .argParser(durationArgument(100, 600_000))
        .default(5_000, '5s'),
    )
    .exitOverride()
    .configureOutput({ writeErr: text => void (cli.json || process.stderr.write(text)) })
    .configureHelp({ showGlobalOptions: true })
    .addHelpText('after', EPILOG);
  // Where Redis is (redis-target.ts, shared with serve). The variables are read there: commander's
  // .env() only shows them in the help, and values it took from them are ignored.
  for (const setting of REDIS_SETTINGS) {
    const fallback =
      setting.name === 'redis'
        ? ` (default: the private Redis of a sandglass serve running on --data-dir, else ${DEFAULT_REDIS_URL}; serve: starts a private redis-server)`
        : '';
    program.addOption(new Option(`${setting.flag} ${setting.value}`, `${setting.description}${fallback}`).env(setting.env));
  }
  registerJobCommands(program, cli);
  registerQueueCommands(program, cli);
  registerDeadCommands(program, cli);
  registerScheduleCommands(program, cli);
  registerFlowCommands(program, cli);
  registerGroupCommands(program, cli);
  registerImportCommand(program, cli);
  registerMigrateCommands(program, cli);
  registerBenchCommand(program, cli);
  registerServeCommand(program);
  registerTokenCommand(program);
  pointToOwnHelp(program, ['sandglass']);
  return { program, cli };
}

/** A usage error is followed by the help of the command it is about: `(see 'sandglass dead purge --help')`. */
function pointToOwnHelp(command: Command, path: readonly string[]): void {
  command.showHelpAfterError(`(see '${path.join(' ')} --help' for usage)`);
  for (const sub of command.commands) pointToOwnHelp(sub, [...path, sub.name()]);
}

/** Runs the command line and returns the exit code; everything is printed by then. */
export async function run(argv: readonly string[]): Promise<number> {
  const { program, cli } = createProgram();
  try {
    await program.parseAsync(argv);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof ExitCode) return error.code;
    if (error instanceof RedisSettingsError) {
      // A usage error like commander's own: ERR_USAGE, exit 2, the help hint.
      if (cli.json) process.stdout.write(`${JSON.stringify({ error: { code: 'ERR_USAGE', message: error.message } })}\n`);
      else process.stderr.write(`sandglass: ${printable(error.message)}\n(see 'sandglass --help' for usage)\n`);
      return EXIT.usage;
    }
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return EXIT.ok; // --help, --version
      const message = error.code === 'commander.help' ? 'Missing command; see sandglass --help' : error.message.replace(/^error: /, '');
      if (cli.json) process.stdout.write(`${JSON.stringify({ error: { code: 'ERR_USAGE', message } })}\n`);
      else if (error.code === 'commander.help') process.stderr.write(`${message}\n`);
      return EXIT.usage;
    }
    const described = describeError(error);
    if (cli.json) process.stdout.write(`${JSON.stringify({ error: described })}\n`);
    else process.stderr.write(`sandglass: ${printable(described.message)}\n`);
    return exitCodeOf(error);
  } finally {
    await cli.close();
  }
}
