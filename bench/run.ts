/**
 * `npm run bench [-- --quick]`: sandglass and BullMQ on the same workloads in the same run, each on
 * its own fresh private redis-server, judged against the bars of DESIGN.md section 6. Prints a
 * side-by-side table and writes every figure and the machine facts to a JSON file.
 */
import os from 'node:os';
import { resolve } from 'node:path';
import { figure, type Figure, type PhaseOutput } from './figures.js';
import { machineFacts } from './machine.js';
import { parseOptions, type BenchOptions, type PhaseName } from './options.js';
import { coldDrainPhase } from './phases/cold-drain.js';
import { drainPhase } from './phases/drain.js';
import { enqueuePhase } from './phases/enqueue.js';
import { groupsPhase } from './phases/groups.js';
import { idlePhase } from './phases/idle.js';
import { latenessPhase } from './phases/lateness.js';
import { scalePhase } from './phases/scale.js';
import { spreadMemoryPhase } from './phases/spread-memory.js';
import { printTable, writeJson, type PhaseError } from './report.js';
import { stopAllServers } from './servers.js';

type Phase = (options: BenchOptions, log: (message: string) => void) => Promise<PhaseOutput>;

const PHASES: Record<PhaseName, Phase> = {
  enqueue: enqueuePhase,
  'spread-memory': spreadMemoryPhase,
  'cold-drain': coldDrainPhase,
  drain: drainPhase,
  lateness: latenessPhase,
  idle: idlePhase,
  scale: scalePhase,
  groups: groupsPhase,
};

const startedAt = performance.now();

/** Progress goes to stderr, so that stdout holds only the table. */
function log(message: string): void {
  const seconds = ((performance.now() - startedAt) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[${seconds}s] ${message}\n`);
}

function onInterrupt(): void {
  log('interrupted: stopping the private Redis servers; no results written');
  void stopAllServers().finally(() => process.exit(130));
}

/** A crash outside main's try/finally (an event handler, a closed stdout) must not orphan servers. */
function onCrash(error: unknown): void {
  process.stderr.write(`bench crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  void stopAllServers().finally(() => process.exit(2));
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  process.once('SIGINT', onInterrupt);
  process.once('SIGTERM', onInterrupt);
  process.once('uncaughtException', onCrash);
  process.once('unhandledRejection', onCrash);
  try {
    const machine = await machineFacts();
    // The path sandglass's scripts take (src/store/redis/scripts.ts, ScriptPath): FCALL where Redis has Functions.
    const scripts =
      process.env.SANDGLASS_SCRIPTS === 'eval' ? 'EVALSHA (SANDGLASS_SCRIPTS=eval)' : 'Redis Functions (FCALL) where available';
    log(`Redis ${machine.redis}, Node ${machine.node}, ${machine.cpus} CPUs, ${options.quick ? 'quick' : 'full'} run, scripts: ${scripts}`);
    const figures: Figure[] = [];
    const errors: PhaseError[] = [];
    const details: Record<string, unknown> = { options: { ...options, phases: [...options.phases] } };
    const reports: string[] = [];
    for (const [name, phase] of Object.entries(PHASES) as [PhaseName, Phase][]) {
      if (!options.phases.has(name)) continue;
      log(`phase ${name}`);
      try {
        const output = await phase(options, log);
        figures.push(...output.figures);
        details[name] = output.details;
        if (output.report) reports.push('', ...output.report);
      } catch (error) {
        // One broken phase must not hide the others' figures, nor be hidden itself.
        const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
        log(`phase ${name} failed: ${message}`);
        errors.push({ phase: name, message: error instanceof Error ? error.message : String(error) });
        figures.push(
          figure({
            id: name,
            label: `${name} (failed, see errors)`,
            unit: '',
            sandglass: null,
            bullmq: null,
            bar: { text: 'not measured', check: () => false },
          }),
        );
      }
    }
    const results = {
      machine,
      mode: options.quick ? ('quick' as const) : ('full' as const),
      scripts,
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
      durationSeconds: (performance.now() - startedAt) / 1000,
      loadAverageAtEnd: os.loadavg()[0] ?? 0,
      figures,
      errors,
      details,
    };
    printTable(results);
    for (const line of reports) console.log(line);
    const out = resolve(options.outFile);
    writeJson(out, results);
    console.log(`\nJSON: ${out}`);
    return errors.length > 0 ? 1 : 0;
  } finally {
    await stopAllServers();
  }
}

main().then(
  code => process.exit(code),
  error => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);
