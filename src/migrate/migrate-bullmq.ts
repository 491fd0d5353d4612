// migrateFromBullMQ: the waiting jobs of a BullMQ queue into a sandglass queue, page by page,
// idempotent by id (addBulk with 'keep'), and (with `remove`) each page deleted from BullMQ only
// once sandglass holds it. docs/migrating-from-bullmq.md.
import type { Cluster, Redis } from 'ioredis';
import { Queue } from '../client/queue.js';
import { openClient } from '../connection/connection.js';
import { ConnectionError, PayloadTooLargeError, RedisCommandError, SandglassError, ValidationError } from '../core/errors.js';
import type { BulkJob, ConnectionOption, Logger } from '../core/types.js';
import { assertJobId, isQueueName } from '../core/validate.js';
import { bullmqKeys, type BullMQKeys } from './bullmq-layout.js';
import { mapBullMQJob, type BullMQSource } from './bullmq-job.js';
import { idPages, listPager, zsetPager, type PageEntry, type Pager } from './bullmq-pages.js';
import { removeBullMQJobs } from './bullmq-remove.js';

/** Jobs per page read from BullMQ and per addBulk call: the library's own round-trip size. */
const PAGE = 500;
/** Skipped jobs listed one by one; beyond this only counted (`skippedNotListed`). */
const MAX_LISTED = 1_000;
/** Jobs a dry run shows as they would be added. */
const SAMPLE_SIZE = 5;

/** Options of {@link migrateFromBullMQ}. */
export interface MigrateFromBullMQOptions {
  /** The Redis of the sandglass queue; also BullMQ's unless `bullmqConnection` is given. */
  connection: ConnectionOption;
  /** The BullMQ queue's name. */
  bullmqQueue: string;
  /** The sandglass queue: its name (opened on `connection` with `prefix`), or a Queue you opened. */
  queue: string | Queue;
  /** sandglass key prefix when `queue` is a name. @default 'sg' */
  prefix?: string;
  /** BullMQ's key prefix. @default 'bull' */
  bullmqPrefix?: string;
  /** The Redis BullMQ is on, when it is not `connection`'s. */
  bullmqConnection?: ConnectionOption;
  /** Read and map only: nothing is written or deleted; the result counts what would move and shows a sample. */
  dryRun?: boolean;
  /** Delete each moved job from BullMQ once sandglass holds it (its page's addBulk resolved). @default false */
  remove?: boolean;
  /** Called after each page. */
  onProgress?: (progress: MigrateProgress) => void;
  /** Warnings of the sandglass queue this opens. */
  logger?: Logger;
}

/** How far a migration got, given to `onProgress` after each page. */
export interface MigrateProgress {
  /** The BullMQ list or ZSET being read. */
  readonly source: BullMQSource | 'active' | 'waiting-children';
  /** Jobs read so far. */
  readonly read: number;
  /** Jobs the BullMQ queue held when the migration began, in the lists and ZSETs it reads. */
  readonly total: number;
  readonly moved: number;
  readonly existing: number;
  readonly skipped: number;
}

/** A job left in BullMQ, and why. */
export interface SkippedJob {
  readonly id: string;
  readonly reason: string;
}

/** What {@link migrateFromBullMQ} did (or, with `dryRun`, would do). */
export interface MigrateResult {
  /** Jobs written to sandglass by this run. */
  moved: number;
  /** Jobs whose id sandglass held already (an earlier run moved them): nothing written. */
  existing: number;
  /** Jobs left in BullMQ, with reasons; the first 1,000. */
  skipped: SkippedJob[];
  /** Skipped jobs beyond the first 1,000 (counted, not listed). */
  skippedNotListed: number;
  /** Jobs deleted from BullMQ (`remove`). */
  removed: number;
  /**
   * Set for a dry run: how many jobs would be added, and the first few as they would be. The jobs
   * sandglass holds already (an earlier run moved them) are counted in `existing`, not here.
   */
  dryRun?: { toMove: number; sample: BulkJob<unknown>[] };
  durationMs: number;
}

/** The sources read, in this order: delayed jobs first, so that the soonest due are moved first. */
const SOURCES: readonly { source: BullMQSource; key: keyof BullMQKeys; type: 'zset' | 'list' }[] = [
  { source: 'delayed', key: 'delayed', type: 'zset' },
  { source: 'prioritized', key: 'prioritized', type: 'zset' },
  { source: 'wait', key: 'wait', type: 'list' },
  { source: 'paused', key: 'paused', type: 'list' },
];

/**
 * Moves the waiting jobs of BullMQ queue `bullmqQueue` (delayed, waiting, paused, prioritized) into
 * a sandglass queue: each with the BullMQ job id as its id, its data as payload, its due time (a
 * delayed job's, else now), its remaining attempts as `maxAttempts` and its fixed or exponential
 * backoff. Reads in pages of 500 and adds each page with `addBulk(jobs, 'keep')`: a second run adds
 * nothing twice, and a run that stopped half-way is finished by running it again. Stop BullMQ's
 * workers first; jobs they hold (active), repeatable jobs, jobs of flows and jobs whose data is not
 * JSON are skipped with a reason. A moved job that sandglass already ran (and does not keep) is
 * gone from sandglass: without `remove`, a later run adds it again. See docs/migrating-from-bullmq.md.
 *
 * @throws {ValidationError} bad options.
 * @throws {ConnectionError} Redis cannot be reached.
 * @example
 * const { moved, existing, skipped } = await migrateFromBullMQ({ connection: 'redis://127.0.0.1:6379', bullmqQueue: 'emails', queue: 'emails' });
 */
export async function migrateFromBullMQ(options: MigrateFromBullMQOptions): Promise<MigrateResult> {
  const startedAt = performance.now();
  const { bullmqQueue, dryRun = false, remove = false, onProgress } = assertOptions(options);
  const keys = bullmqKeys(options.bullmqPrefix ?? 'bull', bullmqQueue);
  const owned = typeof options.queue === 'string';
  const queue =
    typeof options.queue === 'string'
      ? new Queue(options.queue, {
          connection: options.connection,
          ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
          ...(options.logger === undefined ? {} : { logger: options.logger }),
        })
      : options.queue;
  const source = options.bullmqConnection ?? options.connection;
  const ownClient = !isClient(source);
  const client = isClient(source) ? source : openBullMQClient(source);
  const result: MigrateResult = { moved: 0, existing: 0, skipped: [], skippedNotListed: 0, removed: 0, durationMs: 0 };
  const plan = dryRun ? { toMove: 0, sample: [] as BulkJob<unknown>[] } : undefined;
  let read = 0;
  let skippedCount = 0;
  const skip = (id: string, reason: string) => {
    skippedCount += 1;
    if (result.skipped.length < MAX_LISTED) result.skipped.push({ id, reason });
    else result.skippedNotListed += 1;
  };
  let total = 0;
  const report = (from: MigrateProgress['source']) =>
    onProgress?.({ source: from, read, total, moved: result.moved, existing: result.existing, skipped: skippedCount });
  try {
    if (onProgress) total = await countJobs(client, keys);
    for (const { source: from, key, type } of SOURCES) {
      const pager: Pager = type === 'zset' ? zsetPager(client, keys.base, keys[key], PAGE) : listPager(client, keys.base, keys[key], PAGE);
      let next = pager.next();
      for (let page = await next; page.length > 0; page = await next) {
        read += page.length;
        const jobs: { entry: PageEntry; job: BulkJob<unknown> }[] = [];
        for (const entry of page) {
          const mapped = mapBullMQJob(entry.id, entry.fields, from, entry.score);
          if ('skip' in mapped) skip(entry.id, mapped.skip);
          else if (!isJobId(entry.id)) skip(entry.id, `its id is not a sandglass job id (1-200 characters, no control characters)`);
          else jobs.push({ entry, job: mapped.job });
        }
        if (plan) {
          // What an earlier run moved is counted as there, as the real run would find it (a read: the target is not created).
          const found = await Promise.all(jobs.map(({ job }) => queue.get(job.id as string)));
          const fresh = jobs.filter((_, i) => found[i] === null);
          result.existing += jobs.length - fresh.length;
          plan.toMove += fresh.length;
          for (const { job } of fresh.slice(0, SAMPLE_SIZE - plan.sample.length)) plan.sample.push(job);
          pager.advance(page);
          next = pager.next();
        } else if (!remove) {
          // Nothing is deleted: where the next page starts is known now, so it is read while this
          // one is written.
          pager.advance(page);
          next = pager.next();
          next.catch(() => undefined); // awaited by the loop, unless the write below fails first
          await addPage(queue, jobs, skip, result);
        } else {
          // The next page starts after what stays: known once this page's moved jobs are deleted,
          // and they are deleted only once sandglass holds them.
          const held = await addPage(queue, jobs, skip, result);
          const ids = held.map(entry => entry.id);
          await removeBullMQJobs(client, keys, ids);
          result.removed += ids.length;
          const gone = new Set(ids);
          pager.advance(page.filter(entry => !gone.has(entry.id)));
          next = pager.next();
        }
        report(from);
      }
    }
    // What is left alone: jobs a BullMQ worker holds, and flow parents waiting for children.
    for (const [from, key, type, reason] of [
      [
        'active',
        keys.active,
        'list',
        'active: a BullMQ worker holds it; left alone (run the migration again once it finished or went back to wait)',
      ],
      ['waiting-children', keys.waitingChildren, 'zset', 'a flow parent waiting for its children: sandglass has no flows'],
    ] as const) {
      for await (const ids of idPages(client, key, type, PAGE)) {
        read += ids.length;
        for (const id of ids) skip(id, reason);
        report(from);
      }
    }
  } catch (error) {
    throw typedError(error, keys.base);
  } finally {
    if (owned) await queue.close();
    if (ownClient) await client.quit().catch(() => client.disconnect());
  }
  if (plan) result.dryRun = plan;
  result.durationMs = Math.round(performance.now() - startedAt);
  return result;
}

/**
 * Adds a page with one call; when the library refuses it (a payload too large, say), nothing of it
 * was written: it is halved until the refused jobs stand alone, and those are skipped with the
 * library's message (as `sandglass import` does).
 * @returns the entries sandglass now holds (added or existing).
 */
async function addPage(
  queue: Queue,
  jobs: readonly { entry: PageEntry; job: BulkJob<unknown> }[],
  skip: (id: string, reason: string) => void,
  result: MigrateResult,
): Promise<PageEntry[]> {
  if (jobs.length === 0) return [];
  try {
    const tally = await queue.addBulkTallied(
      jobs.map(item => item.job),
      'keep',
    );
    result.moved += tally.written;
    result.existing += tally.existing;
    return jobs.map(item => item.entry);
  } catch (error) {
    if (!(error instanceof ValidationError || error instanceof PayloadTooLargeError)) throw error;
    if (jobs.length === 1) {
      skip((jobs[0] as { entry: PageEntry }).entry.id, `sandglass refused it: ${error.message}`);
      return [];
    }
    const middle = Math.ceil(jobs.length / 2);
    return [...(await addPage(queue, jobs.slice(0, middle), skip, result)), ...(await addPage(queue, jobs.slice(middle), skip, result))];
  }
}

function assertOptions(options: MigrateFromBullMQOptions): MigrateFromBullMQOptions {
  if (typeof options !== 'object' || options === null) throw new ValidationError('migrateFromBullMQ: expected an options object');
  if (!options.connection)
    throw new ValidationError('migrateFromBullMQ: expected `connection`: a Redis URL, ioredis options or an ioredis instance');
  if (typeof options.bullmqQueue !== 'string' || options.bullmqQueue.length === 0) {
    throw new ValidationError('migrateFromBullMQ: expected `bullmqQueue`: the name of the BullMQ queue');
  }
  if (typeof options.queue === 'string' ? !isQueueName(options.queue) : !(options.queue instanceof Queue)) {
    throw new ValidationError('migrateFromBullMQ: expected `queue`: a sandglass queue name or a Queue');
  }
  if (options.bullmqPrefix !== undefined && (typeof options.bullmqPrefix !== 'string' || options.bullmqPrefix.length === 0)) {
    throw new ValidationError('migrateFromBullMQ: expected `bullmqPrefix` to be a non-empty string');
  }
  for (const flag of ['dryRun', 'remove'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') {
      throw new ValidationError(`migrateFromBullMQ: expected \`${flag}\` to be a boolean, got ${typeof options[flag]}`);
    }
  }
  if (options.dryRun && options.remove) throw new ValidationError('migrateFromBullMQ: `dryRun` and `remove` exclude each other');
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') {
    throw new ValidationError('migrateFromBullMQ: expected `onProgress` to be a function');
  }
  return options;
}

/** The jobs of the lists and ZSETs a migration reads, for a progress bar with an end. */
async function countJobs(client: Redis | Cluster, keys: BullMQKeys): Promise<number> {
  const counts = await Promise.all([
    client.zcard(keys.delayed),
    client.zcard(keys.prioritized),
    client.llen(keys.wait),
    client.llen(keys.paused),
    client.llen(keys.active),
    client.zcard(keys.waitingChildren),
  ]);
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * An error of the BullMQ side (sandglass's own are typed already) as a typed error: Redis's answer
 * (ioredis's ReplyError: a wrong type at a BullMQ key, a refused script) or, else, the connection.
 */
function typedError(error: unknown, base: string): unknown {
  if (error instanceof SandglassError || !(error instanceof Error)) return error;
  const message = `Reading the BullMQ jobs at ${base}*: ${error.message}`;
  return error.name === 'ReplyError' ? new RedisCommandError(message, { cause: error }) : new ConnectionError(message, { cause: error });
}

function isJobId(id: string): boolean {
  try {
    assertJobId(id);
    return true;
  } catch {
    return false;
  }
}

function isClient(option: ConnectionOption): option is Redis | Cluster {
  return (
    typeof option === 'object' && typeof (option as Redis).duplicate === 'function' && typeof (option as Redis).pipeline === 'function'
  );
}

/** A client for BullMQ's Redis given by URL or options; closed by the migration. */
function openBullMQClient(option: string | Exclude<ConnectionOption, Redis | Cluster | string>): Redis | Cluster {
  const client =
    typeof option === 'string' ? openClient({ kind: 'url', url: option, options: {} }) : openClient({ kind: 'options', options: option });
  // Errors reach the caller through the commands; without a listener ioredis prints each reconnect.
  client.on('error', () => undefined);
  return client;
}
