// Dead letters: list, retry, purge.
import type { Command } from 'commander';
import { MAX_LIST_LIMIT, NotFoundError } from '../index.js';
import { EXIT, type Cli } from './context.js';
import { integerArgument } from './input.js';
import { formatJobList } from './queues.js';

export function registerDeadCommands(program: Command, cli: Cli): void {
  const dead = program.command('dead').description('dead letters: jobs out of attempts (ls, retry, purge)');

  dead
    .command('ls <queue>')
    .description('list dead letters, newest first, with their last error')
    .option('--limit <n>', `how many (1-${MAX_LIST_LIMIT})`, integerArgument(1, MAX_LIST_LIMIT), 20)
    .option('--cursor <cursor>', 'start after the page that printed this cursor (its nextCursor)')
    .action(async (name: string, flags: { limit: number; cursor?: string }) => {
      const page = await cli.withQueue(name, queue => queue.listDead({ limit: flags.limit, cursor: flags.cursor }));
      cli.result(page, formatJobList(page, { state: 'dead', ...flags }, Date.now(), `sandglass dead ls ${name} --limit ${flags.limit}`));
    });

  dead
    .command('retry <queue> [ids...]')
    .description('run dead letters again now, with fresh attempts: the given ids, or all (exit 3: none of the ids is dead)')
    .action(async (name: string, ids: string[]) => {
      const moved = await cli.withQueue(name, queue => queue.retryDead(ids.length > 0 ? ids : undefined));
      if (ids.length > 0 && moved === 0) throw new NotFoundError(`None of the ${ids.length} id(s) is a dead letter of queue '${name}'`);
      const human =
        ids.length > 0 && moved < ids.length
          ? `moved ${moved} of ${ids.length} back (the others are not dead letters)`
          : `moved ${moved} back`;
      cli.result({ moved }, human);
    });

  dead
    .command('purge <queue>')
    .description('delete all dead letters of the queue, for good (needs --yes)')
    .option('--yes', 'yes, delete them')
    .action(async (name: string, flags: { yes?: boolean }, command: Command) => {
      // A usage error (exit 2, ERR_USAGE, followed by the command's help hint), like a missing argument.
      if (!flags.yes)
        command.error(`error: 'dead purge' deletes every dead letter of '${name}' for good; add --yes to do it`, {
          exitCode: EXIT.usage,
          code: 'sandglass.confirm',
        });
      const deleted = await cli.withQueue(name, queue => queue.purgeDead());
      cli.result({ deleted }, `deleted ${deleted} dead letter(s)`);
    });
}
