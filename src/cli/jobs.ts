// One job at a time: add, get, cancel, reschedule.
import type { Command } from 'commander';
import {
  ConflictError,
  MAX_ATTEMPTS,
  NotFoundError,
  ValidationError,
  parseDuration,
  type AddOptions,
  type DueOptions,
  type Duration,
  type When,
} from '../index.js';
import type { Cli } from './context.js';
import { formatDuration, formatJob, formatRelative } from './format.js';
import { integerArgument, parseWhen, readPayload } from './input.js';

interface AddFlags {
  file?: string;
  delay?: string;
  at?: string;
  id?: string;
  maxAttempts?: number;
  replace?: boolean;
  expireAfter?: string;
  onExpire?: string;
  group?: string;
}

export function registerJobCommands(program: Command, cli: Cli): void {
  program
    .command('add <queue> [payload]')
    .description('add a job; prints its id. The payload is JSON: the argument, --file, or stdin when piped')
    .option('--file <path>', 'read the payload from a file (- for stdin)')
    .option('--delay <duration>', "due after this long: ms, or '30m', '1h30m', '5d' (default: now)")
    .option('--at <time>', 'due at this time: ISO 8601 or epoch ms')
    .option('--id <id>', 'your job id; adding an existing id changes nothing (idempotent)')
    .option(
      '--max-attempts <n>',
      'deliveries before the job is dead-lettered (default: the worker setting)',
      integerArgument(1, MAX_ATTEMPTS),
    )
    .option('--replace', 'if the id exists, replace its payload and due time (exit 4 when it is running)')
    .option(
      '--expire-after <duration>',
      "deadline: not run if not started by its due time plus this ('1h'; default: the queue's expire-after limit)",
    )
    .option('--on-expire <mode>', 'dead (dead-letter it with reason expired) or drop (delete it) (default: dead)')
    .option('--group <group>', "the job's group: it obeys the group's limits and pause, and groups take turns (default: none)")
    .action(async (name: string, payloadText: string | undefined, flags: AddFlags) => {
      const payload = await readPayload(payloadText, flags.file);
      const options: AddOptions = { ...(parseWhen(flags) as DueOptions), ...(flags.replace ? { ifExists: 'replace' } : {}) };
      if (flags.id !== undefined) options.id = flags.id;
      if (flags.maxAttempts !== undefined) options.maxAttempts = flags.maxAttempts;
      // Passed on as text: the library judges the duration and the mode (exit 2 with its message).
      if (flags.expireAfter !== undefined) options.expireAfter = flags.expireAfter as Duration;
      if (flags.onExpire !== undefined) options.onExpire = flags.onExpire as AddOptions['onExpire'];
      if (flags.group !== undefined) options.group = flags.group;
      const id = await cli.withQueue(name, queue => queue.add(payload, options));
      cli.result({ id }, id);
    });

  program
    .command('get <queue> <id>')
    .description(
      'show a job: state, due time, deadline, attempts, payload, last error or why it is dead; a completed job kept by the retention with its result (exit 3: not found)',
    )
    .action(async (name: string, id: string) => {
      const job = await cli.withQueue(name, queue => queue.get(id));
      if (!job) throw new NotFoundError(`No job '${id}' in queue '${name}': never added, or already completed or cancelled`);
      cli.result(job, formatJob(name, job, Date.now()));
    });

  program
    .command('cancel <queue> <id>')
    .description('cancel a waiting or dead job (exit 3: not found, 4: running)')
    .action(async (name: string, id: string) => {
      const result = await cli.withQueue(name, queue => queue.cancel(id));
      if (result === 'not_found')
        throw new NotFoundError(`No job '${id}' in queue '${name}': never added, or already completed or cancelled`);
      if (result === 'running')
        throw new ConflictError(`Job '${id}' is running and was not cancelled (a running job is never interrupted)`);
      cli.result({ id, result }, `cancelled ${id}`);
    });

  program
    .command('reschedule <queue> <id>')
    .description('move a waiting job to a new due time; revives a dead one (exit 3: not found, 4: running)')
    .option('--delay <duration>', "due after this long from now: ms, or '30m', '1h30m'")
    .option('--at <time>', 'due at this time: ISO 8601 or epoch ms')
    .action(async (name: string, id: string, flags: { delay?: string; at?: string }) => {
      if (flags.delay === undefined && flags.at === undefined) throw new ValidationError('Give the new due time with --delay or --at');
      const when = parseWhen(flags);
      const result = await cli.withQueue(name, queue => queue.reschedule(id, when as When));
      if (result === 'not_found')
        throw new NotFoundError(`No job '${id}' in queue '${name}': never added, or already completed or cancelled`);
      if (result === 'running') throw new ConflictError(`Job '${id}' is running and was not rescheduled`);
      cli.result({ id, result }, `rescheduled ${id}: due ${describeWhen(when)}`);
    });
}

function describeWhen(when: { delay?: number | string; at?: number | Date }): string {
  if (when.at !== undefined) return formatRelative(when.at instanceof Date ? when.at.getTime() : when.at, Date.now());
  const ms = typeof when.delay === 'string' ? parseDuration(when.delay) : (when.delay ?? 0);
  return ms === 0 ? 'now' : `in ${formatDuration(ms)}`;
}
