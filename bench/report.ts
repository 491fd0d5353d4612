/** The side-by-side table on stdout and the JSON file. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Figure } from './figures.js';
import { formatRatio, formatValue } from './format.js';
import type { MachineFacts } from './machine.js';

export interface PhaseError {
  readonly phase: string;
  readonly message: string;
}

export interface Results {
  readonly machine: MachineFacts;
  readonly mode: 'quick' | 'full';
  readonly command: string;
  readonly durationSeconds: number;
  readonly loadAverageAtEnd: number;
  readonly figures: Figure[];
  readonly errors: PhaseError[];
  readonly details: Record<string, unknown>;
}

const HEADERS = ['figure', 'unit', 'sandglass', 'BullMQ', 'ratio', 'bar', 'met?'];

export function printTable(results: Results): void {
  const rows = results.figures.map(f => [
    f.label,
    f.unit,
    formatValue(f.sandglass),
    formatValue(f.bullmq),
    formatRatio(f.ratio),
    f.bar ?? '(info)',
    metText(f),
  ]);
  const widths = HEADERS.map((header, column) => Math.max(header.length, ...rows.map(row => (row[column] as string).length)));
  // Text columns left-aligned, numbers right-aligned.
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i >= 2 && i <= 4 ? cell.padStart(widths[i] as number) : cell.padEnd(widths[i] as number))).join(' | ');
  const m = results.machine;
  console.log(
    `\nsandglass ${m.versions.sandglass} vs BullMQ ${m.versions.bullmq} (ioredis ${m.versions.ioredis}), Redis ${m.redis} (hz ${m.redisHz}), Node ${m.node}, ${m.cpus} CPUs, ${results.mode} run, ${Math.round(results.durationSeconds)} s, load average ${m.loadAverageAtStart.toFixed(2)} -> ${results.loadAverageAtEnd.toFixed(2)}`,
  );
  const dirty = m.git.uncommittedSrc.length > 0 ? ` + uncommitted changes to ${m.git.uncommittedSrc.join(', ')}` : '';
  console.log(`library code: commit ${m.git.commit.slice(0, 12)}${dirty}`);
  console.log(line(HEADERS));
  console.log(widths.map(w => '-'.repeat(w)).join('-|-'));
  for (const row of rows) console.log(line(row));
  const notes = results.figures.filter(f => f.note);
  if (notes.length > 0) console.log(`\nnotes:\n${notes.map(f => `  ${f.label.trim()}: ${f.note}`).join('\n')}`);
  const missed = results.figures.filter(f => f.met === false);
  console.log(
    missed.length === 0
      ? '\nAll bars met.'
      : `\nBARS NOT MET (${missed.length}):\n${missed.map(f => `  ${f.label.trim()}: sandglass ${formatValue(f.sandglass)} ${f.unit}, BullMQ ${formatValue(f.bullmq)}, ratio ${formatRatio(f.ratio)}; bar ${f.bar}`).join('\n')}`,
  );
  if (results.errors.length > 0) console.log(`\nERRORS:\n${results.errors.map(e => `  ${e.phase}: ${e.message}`).join('\n')}`);
}

function metText(f: Figure): string {
  if (f.met === null) return '';
  return f.met ? 'yes' : f.sandglass === null ? 'ERROR' : 'NO';
}

export function writeJson(path: string, results: Results): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
}
