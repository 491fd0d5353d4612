// `sandglass serve`: the HTTP service and dashboard. The service lives in src/server and is loaded
// only when this command runs, so every other command works (and starts fast) without it. Its
// settings are declared once, in src/server/config.ts: they become this command's options when the
// command is dispatched, and the server's own resolver applies environment variables and defaults.
import { Option, type Command } from 'commander';
import { SandglassError, ValidationError } from '../index.js';
import { REDIS_SETTINGS } from '../deploy/redis-target.js';
// The token rules' one home; it needs node:crypto and the library only, unlike the rest of the server loaded below.
import { parseTokenEntry, SCOPES, TOKEN_CHARACTERS, tokenDigest } from '../server/tokens.js';

export function registerServeCommand(program: Command): void {
  const serve = program
    .command('serve')
    .description(
      'run the HTTP API and the dashboard; without --redis, --cluster or --sentinels (or their variables) it starts and manages a private redis-server',
    )
    .action(async (flags: Record<string, string | undefined>) => {
      const { resolveServeConfig, ConfigError } = await loadServer('config');
      const given: Record<string, string> = {};
      for (const [name, value] of Object.entries(flags)) if (typeof value === 'string') given[name] = value;
      // The Redis settings, --prefix and --data-dir are global options: take them only when given (else the server reads env and its defaults).
      for (const name of [...REDIS_SETTINGS.map(setting => setting.name), 'prefix', 'dataDir'] as const) {
        if (program.getOptionValueSource(name) === 'cli') given[name] = program.getOptionValue(name) as string;
      }
      let config;
      try {
        config = resolveServeConfig(given);
      } catch (error) {
        throw error instanceof ConfigError ? new ValidationError(error.message) : error;
      }
      const { startServer } = await loadServer('start');
      // `npx sandglass serve` and `npm exec` do not pass SIGTERM on: the death of the parent stops the service too
      // (unless --on-parent-exit keep: started by nohup or a shell that exits).
      const running = await startServer(config, { stopWithParent: config.onParentExit === 'stop', reloadOnSighup: true });
      // The service ends on a signal or when its parent dies, or by itself when it cannot go on (its private Redis keeps dying).
      const failure = await Promise.race([untilSignal(), running.parentGone.then(() => undefined), running.failed]);
      await running.close();
      if (failure) throw failure;
    });

  // Mirror the server's settings as options, only when `serve` is the command being run.
  program.hook('preSubcommand', async (_program, subcommand) => {
    if (subcommand !== serve) return;
    const { SERVE_OPTIONS } = await loadServer('config');
    const envOnly: string[] = [];
    for (const setting of SERVE_OPTIONS) {
      const fallback = setting.default === undefined ? '' : `, default: ${setting.default}`;
      if (setting.flag === undefined) {
        envOnly.push(`  ${setting.env.padEnd(24)} ${setting.description}`);
      } else if (!program.options.some(option => option.long === setting.flag)) {
        serve.addOption(new Option(`${setting.flag} ${setting.value}`, `${setting.description} (env: ${setting.env}${fallback})`));
      }
    }
    if (envOnly.length > 0)
      serve.addHelpText('after', `\nEnvironment only (secrets, which a flag would show in ps):\n${envOnly.join('\n')}`);
  });
}

/**
 * `sandglass token hash`: the SHA-256 of a token read from stdin (never an argument, which ps and
 * the shell history would keep), for an entry of the tokens file; with --name and --scopes, the whole entry.
 */
export function registerTokenCommand(program: Command): void {
  program
    .command('token')
    .description('API tokens of sandglass serve (SANDGLASS_TOKENS)')
    .command('hash')
    .description(
      "print the sha256 of the token given on stdin (one trailing newline dropped), for the tokens file; with --name and --scopes, the file's whole entry",
    )
    .option('--name <name>', "the token's name (in logs and 403 messages)")
    .option('--scopes <list>', `comma-separated: ${SCOPES.join(', ')}`)
    .option('--queues <list>', "comma-separated queue patterns, e.g. 'orders-*' (default: every queue)")
    .action(async (flags: { name?: string; scopes?: string; queues?: string }) => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      const token = Buffer.concat(chunks)
        .toString('utf8')
        .replace(/\r?\n$/, '');
      if (token === '') throw new ValidationError('Give the token on stdin, e.g. printf %s "$TOKEN" | sandglass token hash');
      if (!TOKEN_CHARACTERS.test(token)) throw new ValidationError('Expected the token to be printable ASCII without spaces');
      const sha256 = tokenDigest(token);
      if (flags.name === undefined && flags.scopes === undefined && flags.queues === undefined) {
        process.stdout.write(`${sha256}\n`);
        return;
      }
      if (flags.name === undefined || flags.scopes === undefined) throw new ValidationError('Give both --name and --scopes for an entry');
      const list = (text: string) =>
        text
          .split(',')
          .map(item => item.trim())
          .filter(item => item !== '');
      const queues = flags.queues === undefined ? undefined : list(flags.queues);
      const entry = { name: flags.name, sha256, scopes: list(flags.scopes), ...(queues ? { queues } : {}) };
      // The tokens file's own checks, so that an entry printed here is one serve accepts.
      try {
        parseTokenEntry(entry, 'entry');
      } catch (error) {
        throw new ValidationError((error as Error).message);
      }
      process.stdout.write(`${JSON.stringify(entry)}\n`);
    });
}

type ServerModules = { config: typeof import('../server/config.js'); start: typeof import('../server/start.js') };

async function loadServer<K extends keyof ServerModules>(name: K): Promise<ServerModules[K]> {
  try {
    return (await (name === 'config' ? import('../server/config.js') : import('../server/start.js'))) as ServerModules[K];
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(`server/${name}`)) {
      throw new SandglassError(
        'ERR_UNAVAILABLE',
        `'serve' is not available in this build: the HTTP service (src/server/${name}) is missing`,
      );
    }
    throw error;
  }
}

/** Resolves on the first SIGINT or SIGTERM, for a graceful shutdown; a second one exits at once. */
function untilSignal(): Promise<undefined> {
  return new Promise(resolve => {
    const first = () => {
      process.removeListener('SIGINT', first);
      process.removeListener('SIGTERM', first);
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve(undefined);
    };
    process.once('SIGINT', first);
    process.once('SIGTERM', first);
  });
}
