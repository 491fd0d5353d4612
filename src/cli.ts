#!/usr/bin/env node
// The `sandglass` command: operate queues from a shell. It uses the library's public API only.
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { Queue, SandglassError, ValidationError } from './index.js';

/** Exit codes a script can rely on. */
const EXIT = { ok: 0, failure: 1, usage: 2, notFound: 3, conflict: 4 } as const;

const program = new Command('sandglass')
  .description('Operate sandglass delay queues on Redis.')
  .addOption(new Option('--redis <url>', 'Redis URL').env('REDIS_URL').default('redis://127.0.0.1:6379'))
  .addOption(new Option('--prefix <prefix>', 'key prefix').env('SANDGLASS_PREFIX').default('sg'))
  .option('--json', 'print machine-readable JSON')
  .showHelpAfterError();

interface GlobalOptions {
  redis: string;
  prefix: string;
  json?: boolean;
}

async function withQueue(name: string, run: (queue: Queue, options: GlobalOptions) => Promise<number>): Promise<void> {
  const options = program.opts<GlobalOptions>();
  const queue = new Queue(name, { connection: options.redis, prefix: options.prefix });
  try {
    process.exitCode = await run(queue, options);
  } finally {
    await queue.close();
  }
}

function print(options: GlobalOptions, value: unknown, human: string): void {
  console.log(options.json ? JSON.stringify(value) : human);
}

function parsePayload(text: string | undefined, file: string | undefined): unknown {
  const source = file !== undefined ? readFileSync(file === '-' ? 0 : file, 'utf8') : text;
  if (source === undefined) throw new ValidationError('Give the payload as an argument, or --file <path> (- for stdin)');
  try {
    return JSON.parse(source);
  } catch (error) {
    throw new ValidationError(`The payload is not valid JSON: ${(error as Error).message}`);
  }
}

/** `--delay 1500` is milliseconds, `--delay 30m` a duration; `--at` is epoch ms or ISO 8601. */
function parseWhen(opts: { delay?: string; at?: string }): { delay?: number | string; at?: number | Date } {
  const isInteger = (text: string) => /^\d+$/.test(text);
  return {
    delay: opts.delay === undefined ? undefined : isInteger(opts.delay) ? Number(opts.delay) : opts.delay,
    at: opts.at === undefined ? undefined : isInteger(opts.at) ? Number(opts.at) : new Date(opts.at),
  };
}

program
  .command('add <queue> [payload]')
  .description('add a job; the payload is JSON')
  .option('--file <path>', 'read the payload from a file (- for stdin)')
  .option('--delay <duration>', "delay: ms or '30m', '1h30m'")
  .option('--at <time>', 'due time: ISO 8601 or epoch ms')
  .option('--id <id>', 'job id (idempotent)')
  .action((name: string, payload: string | undefined, opts: { file?: string; delay?: string; at?: string; id?: string }) =>
    withQueue(name, async (queue, options) => {
      const id = await queue.add(parsePayload(payload, opts.file), { ...parseWhen(opts), id: opts.id });
      print(options, { id }, id);
      return EXIT.ok;
    }),
  );

program
  .command('get <queue> <id>')
  .description('show a job')
  .action((name: string, id: string) =>
    withQueue(name, async (queue, options) => {
      const job = await queue.get(id);
      if (!job) {
        print(options, null, `not found: ${id}`);
        return EXIT.notFound;
      }
      print(options, job, JSON.stringify(job, null, 2));
      return EXIT.ok;
    }),
  );

program
  .command('cancel <queue> <id>')
  .description('cancel a waiting job (exit 3: not found, 4: running)')
  .action((name: string, id: string) =>
    withQueue(name, async (queue, options) => {
      const result = await queue.cancel(id);
      print(options, { result }, result);
      return result === 'cancelled' ? EXIT.ok : result === 'running' ? EXIT.conflict : EXIT.notFound;
    }),
  );

program
  .command('reschedule <queue> <id>')
  .description('move a waiting job to a new due time (exit 3: not found, 4: running)')
  .option('--delay <duration>', "delay: ms or '30m'")
  .option('--at <time>', 'due time: ISO 8601 or epoch ms')
  .action((name: string, id: string, opts: { delay?: string; at?: string }) =>
    withQueue(name, async (queue, options) => {
      const result = await queue.reschedule(id, parseWhen(opts));
      print(options, { result }, result);
      return result === 'rescheduled' ? EXIT.ok : result === 'running' ? EXIT.conflict : EXIT.notFound;
    }),
  );

program
  .command('stats <queue>')
  .description('job counts by state and running totals')
  .action((name: string) =>
    withQueue(name, async (queue, options) => {
      const [stats, counters] = await Promise.all([queue.stats(), queue.counters()]);
      const human = Object.entries({ ...stats, ...counters }).map(([key, value]) => `${key.padEnd(10)} ${value}`).join('\n');
      print(options, { ...stats, counters }, human);
      return EXIT.ok;
    }),
  );

const dead = program.command('dead').description('dead letters');
dead
  .command('ls <queue>')
  .option('--limit <n>', 'how many', '20')
  .action((name: string, opts: { limit: string }) =>
    withQueue(name, async (queue, options) => {
      const jobs = await queue.listDead({ limit: Number(opts.limit) });
      const human = jobs.map(job => `${job.id}  died ${new Date(job.deadAt ?? 0).toISOString()}  ${(job.lastError ?? '').split('\n')[0]}`).join('\n');
      print(options, jobs, human || '(no dead letters)');
      return EXIT.ok;
    }),
  );
dead
  .command('retry <queue> [ids...]')
  .description('run dead letters again (all when no ids are given)')
  .action((name: string, ids: string[]) =>
    withQueue(name, async (queue, options) => {
      const moved = await queue.retryDead(ids.length > 0 ? ids : undefined);
      print(options, { moved }, `${moved} moved back`);
      return EXIT.ok;
    }),
  );
dead
  .command('purge <queue>')
  .description('delete all dead letters')
  .action((name: string) =>
    withQueue(name, async (queue, options) => {
      const deleted = await queue.purgeDead();
      print(options, { deleted }, `${deleted} deleted`);
      return EXIT.ok;
    }),
  );

try {
  await program.parseAsync();
} catch (error) {
  const code = error instanceof SandglassError ? error.code : 'ERR_UNEXPECTED';
  const message = error instanceof Error ? error.message : String(error);
  if (program.opts<GlobalOptions>().json) console.log(JSON.stringify({ error: { code, message } }));
  else console.error(`sandglass: ${message}`);
  process.exitCode = error instanceof ValidationError ? EXIT.usage : EXIT.failure;
}
