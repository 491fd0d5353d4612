/**
 * A sandglass worker in its own cold Node process that notes when each handler ran, for the groups
 * phase (bench/phases/groups.ts): fairness, group limits and order are read from these notes.
 *
 *   node --import tsx bench/groups/worker-process.ts <redis url> <queue> <concurrency> <handler ms> <ledger file>
 *
 * The handler reads the payload (`pad.length`), then waits <handler ms> (0: returns at once).
 * Times are CLOCK_MONOTONIC microseconds (process.hrtime): one clock for every process on the
 * machine, so the ledgers of several processes and the parent's own readings line up, and no
 * wall-clock step can reorder them. Prints `ready` when the worker listens and `first-start <us>`
 * at its first handler start; on a line `stop` on stdin (or stdin's end) it closes the worker
 * (a prefetched job goes back to Redis unstarted), writes the ledger (GroupLedger, JSON) and exits.
 */
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Payload } from '../drivers/types.js';
import { monotonicUs, type GroupLedger } from './ledger.js';

async function main(argv: readonly string[]): Promise<void> {
  const [url, queue, concurrencyText, handlerMsText, ledgerFile] = argv;
  const concurrency = Number(concurrencyText);
  const handlerMs = Number(handlerMsText);
  if (!url || !queue || !(concurrency > 0) || !(handlerMs >= 0) || !ledgerFile) {
    throw new Error('usage: bench/groups/worker-process.ts <redis url> <queue> <concurrency> <handler ms> <ledger file>');
  }
  const { Worker } = await import('../../src/index.js');
  // Preallocated by index, so a run that has not ended yet keeps its place.
  const ids: string[] = [];
  const groups: string[] = [];
  const starts: number[] = [];
  const ends: (number | null)[] = [];
  let payloadChars = 0;
  let errors = 0;
  let firstError: string | undefined;
  const worker = new Worker<Payload>(
    queue,
    async job => {
      const run = starts.length;
      starts.push(monotonicUs());
      ends.push(null);
      ids.push(job.id);
      groups.push(job.group ?? '');
      if (run === 0) process.stdout.write(`first-start ${starts[0]}\n`);
      payloadChars += job.payload.pad.length;
      if (handlerMs > 0) await new Promise(resolve => setTimeout(resolve, handlerMs));
      ends[run] = monotonicUs();
    },
    { connection: url, concurrency },
  );
  worker.on('error', error => {
    errors += 1;
    firstError ??= error.message;
  });
  await worker.waitUntilReady();
  process.stdout.write('ready\n');

  await new Promise<void>(resolve => {
    const lines = createInterface({ input: process.stdin });
    lines.on('line', line => {
      if (line.trim() === 'stop') resolve();
    });
    lines.once('close', () => resolve());
  });
  await worker.close();
  const ledger: GroupLedger = {
    runs: starts.map((startUs, k) => ({ id: ids[k] as string, group: groups[k] as string, startUs, endUs: ends[k] ?? null })),
    payloadChars,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
  };
  writeFileSync(ledgerFile, JSON.stringify(ledger));
}

main(process.argv.slice(2)).then(
  // process.exit, not a natural end: the library's timers must not keep the parent waiting.
  () => process.exit(0),
  error => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
