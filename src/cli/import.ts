// `sandglass import`: JSON lines from a file or stdin into a queue, with addBulk in chunks of 500.
// Bad lines are reported with their numbers and skipped; the run goes on.
import { createReadStream, fstatSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { PayloadTooLargeError, ValidationError, type BulkJob, type Queue } from '../index.js';
import { EXIT, ExitCode, type Cli } from './context.js';
import { parseLine, type LineDefaults, type LineFormat } from './import-lines.js';
import { parseWhen } from './input.js';
import { startProgress } from './progress.js';

/** Jobs per addBulk call: the library's own round-trip size. */
const CHUNK = 500;
/** Bad lines reported one by one; beyond this only counted, so a wrong file does not flood the terminal. */
const MAX_REPORTED = 1_000;

interface Entry {
  readonly line: number;
  readonly job: BulkJob<unknown>;
}

export interface ImportSummary {
  imported: number;
  skipped: number;
  durationMs: number;
  jobsPerSecond: number;
  errors: { line: number; message: string }[];
  /** Bad lines beyond the first 1,000, counted in `skipped` but not listed. */
  errorsNotListed: number;
  interrupted: boolean;
}

export function registerImportCommand(program: Command, cli: Cli): void {
  program
    .command('import <queue> [file]')
    .description('add jobs from JSON lines (a file, or - / nothing for stdin); bad lines are reported and skipped (exit 5)')
    .option('--bare', 'each line is a payload, not { "payload", "delay"?, "at"?, "id"?, "maxAttempts"?, "group"? }')
    .option('--delay <duration>', 'due time of lines that give none: ms or a duration like 30m')
    .option('--at <time>', 'due time of lines that give none: ISO 8601 or epoch ms')
    .addHelpText(
      'after',
      `
Each line is one JSON document: by default { "payload": <any JSON>, "delay"?: ms | "30m",
"at"?: epoch ms | ISO 8601, "id"?: string, "maxAttempts"?: integer, "group"?: string }; with
--bare, the payload itself. Blank lines are ignored. A line whose id exists already is counted as
imported and changes nothing, so an import with ids can be run again safely after an interruption.`,
    )
    .action(async (name: string, file: string | undefined, flags: { bare?: boolean; delay?: string; at?: string }) => {
      const defaults: LineDefaults = parseWhen(flags);
      if (defaults.delay !== undefined && defaults.at !== undefined) throw new ValidationError('Give --delay or --at, not both');
      const input = await openInput(file);
      const summary = await cli.withQueue(name, queue => importLines(cli, queue, input, flags.bare ? 'bare' : 'envelope', defaults));
      const { imported, skipped, durationMs, jobsPerSecond } = summary;
      const human = `${summary.interrupted ? 'interrupted: ' : ''}imported ${imported}, skipped ${skipped}, in ${(durationMs / 1000).toFixed(2)} s (${jobsPerSecond} jobs/s)`;
      cli.result(summary, human);
      if (summary.interrupted) throw new ExitCode(130);
      if (skipped > 0) throw new ExitCode(EXIT.partial);
    });
}

interface Input {
  readonly stream: Readable;
  /** Bytes to read, when known (a regular file), for a progress bar with an end. */
  readonly sizeBytes: number | undefined;
}

async function openInput(file: string | undefined): Promise<Input> {
  if (file === undefined || file === '-') {
    if (file === undefined && process.stdin.isTTY) throw new ValidationError('Give a file, or pipe JSON lines to stdin');
    const info = statOfStdin();
    return { stream: process.stdin, sizeBytes: info?.isFile() ? info.size : undefined };
  }
  const info = await stat(file).catch((error: NodeJS.ErrnoException) => {
    throw new ValidationError(`Cannot read ${file}: ${error.code ?? error.message}`);
  });
  if (info.isDirectory()) throw new ValidationError(`Cannot read ${file}: it is a directory`);
  return { stream: createReadStream(file), sizeBytes: info.isFile() ? info.size : undefined };
}

function statOfStdin(): Stats | undefined {
  try {
    return fstatSync(0);
  } catch {
    return undefined;
  }
}

async function importLines(cli: Cli, queue: Queue, input: Input, format: LineFormat, defaults: LineDefaults): Promise<ImportSummary> {
  const startedAt = performance.now();
  const summary: ImportSummary = {
    imported: 0,
    skipped: 0,
    durationMs: 0,
    jobsPerSecond: 0,
    errors: [],
    errorsNotListed: 0,
    interrupted: false,
  };
  const progress = startProgress(input.sizeBytes);
  let bytesRead = 0;
  input.stream.on('data', (chunk: Buffer | string) => (bytesRead += chunk.length));
  const report = () => progress.update({ bytesRead, imported: summary.imported, skipped: summary.skipped });

  const skip = (line: number, message: string) => {
    summary.skipped += 1;
    if (summary.errors.length >= MAX_REPORTED) {
      summary.errorsNotListed += 1;
      return;
    }
    summary.errors.push({ line, message });
    // Under a progress bar, the bar owns the terminal: bad lines are listed when it is gone.
    if (!cli.json && !progress.isBar) cli.note(`line ${line}: ${message}`);
  };

  const lines = createInterface({ input: input.stream, crlfDelay: Infinity });
  // Ctrl-C: stop reading, send what was read, print the summary. A second Ctrl-C kills as usual.
  const onInterrupt = () => {
    summary.interrupted = true;
    lines.close();
  };
  process.once('SIGINT', onInterrupt);
  let lineNumber = 0;
  let chunk: Entry[] = [];
  try {
    for await (const raw of lines) {
      lineNumber += 1;
      const parsed = parseLine(lineNumber === 1 ? raw.replace(/^\uFEFF/, '') : raw, format, defaults);
      if ('error' in parsed) skip(lineNumber, parsed.error);
      else if ('job' in parsed) chunk.push({ line: lineNumber, job: parsed.job });
      if (chunk.length === CHUNK) {
        summary.imported += await addChunk(queue, chunk, skip);
        chunk = [];
        report();
      }
      if (summary.interrupted) break;
    }
    if (chunk.length > 0) summary.imported += await addChunk(queue, chunk, skip);
    report();
  } catch (error) {
    progress.stop();
    cli.note(`import stopped after line ${lineNumber}: ${summary.imported} job(s) were imported before the failure`);
    throw error;
  } finally {
    lines.close();
    process.removeListener('SIGINT', onInterrupt);
  }
  progress.stop();
  summary.errors.sort((a, b) => a.line - b.line);
  if (!cli.json && progress.isBar) summary.errors.forEach(({ line, message }) => cli.note(`line ${line}: ${message}`));
  if (!cli.json && summary.errorsNotListed > 0) cli.note(`... and ${summary.errorsNotListed} more bad line(s)`);
  summary.durationMs = Math.round(performance.now() - startedAt);
  summary.jobsPerSecond = summary.durationMs > 0 ? Math.round((summary.imported * 1000) / summary.durationMs) : summary.imported;
  return summary;
}

/**
 * Adds the chunk with one addBulk call. addBulk validates every entry before it writes any, so when
 * it refuses the chunk nothing was written: the chunk is halved until the entries the library
 * refuses stand alone, and those are skipped with the library's own message. The library stays the
 * one judge of what is valid (ids, sizes, ranges) at a cost of about 2 x log2(500) calls per bad line.
 *
 * @returns how many entries were added.
 */
async function addChunk(queue: Queue, entries: readonly Entry[], skip: (line: number, message: string) => void): Promise<number> {
  try {
    await queue.addBulk(entries.map(entry => entry.job));
    return entries.length;
  } catch (error) {
    if (!(error instanceof ValidationError || error instanceof PayloadTooLargeError)) throw error;
    if (entries.length === 1) {
      // The line number says which entry: the entry's own message, without addBulk's "In jobs[0]: ".
      const own = error.cause instanceof ValidationError ? error.cause : error;
      skip((entries[0] as Entry).line, own.message);
      return 0;
    }
    const middle = Math.ceil(entries.length / 2);
    return (await addChunk(queue, entries.slice(0, middle), skip)) + (await addChunk(queue, entries.slice(middle), skip));
  }
}
