// Groups (issue 20): `groups` (the page of a queue's groups with their counts), `group-limits` (the
// default limits of every group, or one group's override) and `group pause|resume`. As for `limits`,
// flags are only turned into the types of GroupLimitsInput here; the library judges every group name
// and limit, and its ValidationError is the usage error (exit 2) the user sees.
import type { Command } from 'commander';
import { MAX_LIST_LIMIT, ValidationError, type GroupInfo, type GroupLimitsInfo, type GroupLimitsInput, type GroupPage } from '../index.js';
import type { Cli } from './context.js';
import { describeLimits, keyValues, toLimitsInput } from './flow.js';
import { formatTable, type Column } from './format.js';
import { integerArgument } from './input.js';

interface GroupLimitsFlags {
  group?: string;
  rate?: string;
  concurrency?: string;
  clear?: boolean;
}

const GROUP_COLUMNS: Column[] = [
  { header: 'GROUP' },
  { header: 'WAITING', align: 'right' },
  { header: 'READY', align: 'right' },
  { header: 'ACTIVE', align: 'right' },
  { header: 'LIMITED' },
  { header: 'PAUSED' },
];

export function registerGroupCommands(program: Command, cli: Cli): void {
  program
    .command('groups <queue>')
    .description(
      'list the groups of a queue with waiting or running jobs, busiest (most jobs) first: waiting, ready and active jobs, held by a limit, paused',
    )
    .option('--limit <n>', `how many (1-${MAX_LIST_LIMIT})`, integerArgument(1, MAX_LIST_LIMIT), 50)
    .option('--cursor <cursor>', 'start after the page that printed this cursor (its nextCursor)')
    .action(async (name: string, flags: { limit: number; cursor?: string }) => {
      const page = await cli.withQueue(name, queue => queue.listGroups({ limit: flags.limit, cursor: flags.cursor }));
      cli.result(page, formatGroupList(page, flags, `sandglass groups ${name} --limit ${flags.limit}`));
    });

  program
    .command('group-limits <queue>')
    .description(
      "show the limits of the queue's groups: the default of every group, or with --group the limits in force for that group; with flags, change them (a flag left out keeps its limit; 'none' clears it)",
    )
    .option(
      '--group <group>',
      "one group's own limits (an override of the default; the first one starts from the default) instead of the default of every group",
    )
    .option(
      '--concurrency <n>',
      'at most <n> jobs of one group active at once, over every process (1: one at a time, in order); none clears it',
    )
    .option('--rate <max/per>', "at most <max> job starts of one group in any sliding window of <per>: '10/1s', '100/1m'; none clears it")
    .option('--clear', "with --group: remove the group's override (it follows the default again); without: clear the default")
    .action(async (name: string, flags: GroupLimitsFlags) => {
      const change = toGroupLimitsChange(flags);
      const group = flags.group;
      const scope = group === undefined ? {} : { group };
      const limits = await cli.withQueue(name, async queue => {
        if (change === 'remove-override') await queue.clearGroupLimits({ group: group as string });
        else if (change !== undefined) await queue.setGroupLimits(change, scope);
        // The limits in force afterwards, with where they come from: the same answer with or without flags.
        return queue.getGroupLimits(scope);
      });
      cli.result({ name, ...scope, limits }, formatGroupLimits(name, group, limits));
    });

  const groupCommand = program.command('group').description('one group of a queue: pause and resume its jobs');

  groupCommand
    .command('pause <queue> <group>')
    .description("stop workers from claiming the group's jobs (running jobs carry on; the other groups go on)")
    .action(async (name: string, group: string) => {
      await cli.withQueue(name, queue => queue.pauseGroup(group));
      cli.result({ name, group, paused: true }, `paused group ${group} of ${name}: its jobs wait until the group is resumed`);
    });

  groupCommand
    .command('resume <queue> <group>')
    .description("let workers claim the group's jobs again")
    .action(async (name: string, group: string) => {
      await cli.withQueue(name, queue => queue.resumeGroup(group));
      cli.result({ name, group, paused: false }, `resumed group ${group} of ${name}`);
    });
}

/**
 * What `group-limits` flags ask for: a change of limits, the removal of a group's override
 * (`--clear --group`), or undefined (show only). `--clear` without `--group` clears the default.
 */
export function toGroupLimitsChange(flags: GroupLimitsFlags): GroupLimitsInput | 'remove-override' | undefined {
  const input: GroupLimitsInput | undefined = toLimitsInput({ rate: flags.rate, concurrency: flags.concurrency });
  if (!flags.clear) return input;
  if (input !== undefined) throw new ValidationError('Give --clear, or --concurrency / --rate, not both');
  return flags.group === undefined ? { concurrency: null, rate: null } : 'remove-override';
}

export function formatGroupLimits(queue: string, group: string | undefined, limits: GroupLimitsInfo): string {
  const shown = describeLimits(limits);
  return keyValues([
    ['queue', queue],
    ['group', group ?? '(the default of every group)'],
    ['rate', shown.rate],
    ['concurrency', shown.concurrency],
    ['source', limits.source === 'group' ? "the group's own override" : 'the default of every group'],
  ]);
}

/** The groups as a table; a full page ends with the command for the next. */
export function formatGroupList(page: GroupPage, flags: { cursor?: string }, command: string): string {
  if (page.groups.length === 0) return flags.cursor === undefined ? '(no groups)' : '(no more groups)';
  const lines = [formatTable(GROUP_COLUMNS, page.groups.map(groupRow))];
  if (page.nextCursor !== undefined) lines.push(`(more with: ${command} --cursor ${page.nextCursor})`);
  return lines.join('\n');
}

function groupRow(info: GroupInfo): string[] {
  return [
    info.group,
    String(info.waiting),
    String(info.ready),
    String(info.active),
    info.limited ? 'yes' : 'no',
    info.paused ? 'yes' : 'no',
  ];
}
