/**
 * migrateFromBullMQ's rate: a private Redis, `jobs` delayed BullMQ jobs (delays 1 min..1 day, a
 * small JSON payload) added with BullMQ's own addBulk; a dry run, then moved three times: into a new
 * sandglass queue (and a dry run after it), again (every job already there), and into another queue
 * with `remove`. Prints one JSON line.
 * Usage: npx tsx bench/migrate.ts [jobs=100000]
 */
import { Queue as BullQueue } from 'bullmq';
import { migrateFromBullMQ, type MigrateResult } from '../src/index.js';
import { startServer, stopServer } from './servers.js';

const jobs = Number(process.argv[2] ?? 100_000);
const FILL_CHUNK = 1_000;

const server = await startServer();
const url = new URL(server.url);
const bq = new BullQueue('legacy', { connection: { host: url.hostname, port: Number(url.port) } });
try {
  const fillStarted = performance.now();
  for (let done = 0; done < jobs; done += FILL_CHUNK) {
    const size = Math.min(FILL_CHUNK, jobs - done);
    await bq.addBulk(
      Array.from({ length: size }, (_, i) => ({
        name: 'email',
        data: { to: `user${done + i}@example.com`, template: 'welcome' },
        opts: { delay: 60_000 + (((done + i) * 7919) % 86_400_000), attempts: 3, backoff: { type: 'exponential', delay: 1_000 } },
      })),
    );
  }
  const fillMs = performance.now() - fillStarted;

  const timed = async (label: string, run: () => Promise<MigrateResult>) => {
    const started = performance.now();
    const result = await run();
    const ms = performance.now() - started;
    return {
      label,
      ms: Math.round(ms),
      jobsPerSecond: Math.round((jobs * 1000) / ms),
      moved: result.moved,
      existing: result.existing,
      removed: result.removed,
    };
  };
  const dry = await timed('dry run', () =>
    migrateFromBullMQ({ connection: server.url, bullmqQueue: 'legacy', queue: 'emails', dryRun: true }),
  );
  const first = await timed('move', () => migrateFromBullMQ({ connection: server.url, bullmqQueue: 'legacy', queue: 'emails' }));
  const dryAgain = await timed('dry run (all there)', () =>
    migrateFromBullMQ({ connection: server.url, bullmqQueue: 'legacy', queue: 'emails', dryRun: true }),
  );
  const again = await timed('re-run (all there)', () =>
    migrateFromBullMQ({ connection: server.url, bullmqQueue: 'legacy', queue: 'emails' }),
  );
  const removing = await timed('move with remove', () =>
    migrateFromBullMQ({ connection: server.url, bullmqQueue: 'legacy', queue: 'emails-2', remove: true }),
  );
  console.log(
    JSON.stringify({ jobs, bullmqFillJobsPerSecond: Math.round((jobs * 1000) / fillMs), runs: [dry, first, dryAgain, again, removing] }),
  );
} finally {
  await bq.close();
  await stopServer(server);
}
