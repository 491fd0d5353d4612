// `sandglass migrate bullmq`: the waiting jobs of a BullMQ queue into a sandglass queue, through the
// library's migrateFromBullMQ (idempotent: run it again after an interruption).
import type { Command } from 'commander';
import { ValidationError, migrateFromBullMQ, type MigrateResult } from '../index.js';
import type { Cli } from './context.js';
import { startMigrationProgress } from './progress.js';

interface MigrateFlags {
  to?: string;
  bullmqPrefix: string;
  bullmqRedis?: string;
  dryRun?: boolean;
  remove?: boolean;
}

export function registerMigrateCommands(program: Command, cli: Cli): void {
  const migrate = program.command('migrate').description('move jobs from another queue library into sandglass');
  migrate
    .command('bullmq <bullmq-queue>')
    .description('move the waiting jobs (delayed, waiting, paused, prioritized) of a BullMQ queue into a sandglass queue')
    .option('--to <queue>', 'the sandglass queue (default: the BullMQ queue name)')
    .option('--bullmq-prefix <prefix>', "BullMQ's key prefix", 'bull')
    .option('--bullmq-redis <url>', "BullMQ's Redis, when it is not sandglass's (default: the Redis every command uses)")
    .option('--dry-run', 'read and report only: nothing is written or deleted')
    .option('--remove', 'delete each moved job from BullMQ once sandglass holds it')
    .addHelpText(
      'after',
      `
Stop BullMQ's workers first. Each job keeps its BullMQ id, so running the command again adds
nothing twice ("already there") and finishes a run that stopped half-way. Active jobs, repeatable
jobs (recreate them with 'sandglass schedule set'), jobs of flows and jobs whose data is not JSON
stay in BullMQ and are listed with the reason. maxAttempts is the attempts BullMQ had left.
A job sandglass already ran is gone from it: without --remove, a later run adds it again.
See docs/migrating-from-bullmq.md.`,
    )
    .action(async (bullmqQueue: string, flags: MigrateFlags) => {
      if (flags.dryRun && flags.remove) throw new ValidationError('Give --dry-run or --remove, not both');
      const target = flags.to ?? bullmqQueue;
      // Started at the first page, which brings the count of jobs to read: the bar's end.
      let bar: ReturnType<typeof startMigrationProgress> | undefined;
      const result = await cli.withQueue(target, async queue => {
        try {
          return await migrateFromBullMQ({
            connection: cli.redis.client,
            queue,
            bullmqQueue,
            bullmqPrefix: flags.bullmqPrefix,
            ...(flags.bullmqRedis === undefined ? {} : { bullmqConnection: flags.bullmqRedis }),
            dryRun: flags.dryRun === true,
            remove: flags.remove === true,
            onProgress: state => {
              if (cli.json) return;
              bar ??= startMigrationProgress(state.total);
              bar.update(state);
            },
          });
        } finally {
          bar?.stop();
        }
      });
      cli.result(result, humanReport(result, bullmqQueue, target, flags.remove === true));
    });
}

/** The report: counts, then each skipped job with its reason; a dry run's sample. */
function humanReport(result: MigrateResult, bullmqQueue: string, target: string, remove: boolean): string[] {
  const seconds = (result.durationMs / 1000).toFixed(2);
  const skipped = result.skipped.length + result.skippedNotListed;
  const lines: string[] = [];
  if (result.dryRun) {
    lines.push(
      `dry run: would move ${result.dryRun.toMove} job(s) of BullMQ queue ${bullmqQueue} to ${target}, ${result.existing} already there, skip ${skipped}; nothing was written`,
    );
    for (const job of result.dryRun.sample) {
      const due = job.at === undefined ? 'now' : new Date(job.at).toISOString();
      lines.push(`  ${job.id} due ${due}, maxAttempts ${job.maxAttempts}: ${JSON.stringify(job.payload)}`);
    }
  } else {
    const rate = result.durationMs > 0 ? Math.round((result.moved * 1000) / result.durationMs) : result.moved;
    const removed = remove ? `, removed from BullMQ ${result.removed}` : '';
    lines.push(`moved ${result.moved}, already there ${result.existing}, skipped ${skipped}${removed}, in ${seconds} s (${rate} jobs/s)`);
  }
  if (skipped > 0) lines.push('skipped (left in BullMQ):');
  for (const { id, reason } of result.skipped) lines.push(`  ${id}: ${reason}`);
  if (result.skippedNotListed > 0) lines.push(`  ... and ${result.skippedNotListed} more`);
  return lines;
}
