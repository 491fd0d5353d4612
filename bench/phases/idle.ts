/**
 * Figure 5: Redis commands per second caused by an idle worker. One job waits a day away (nothing
 * is due); the worker starts and settles, then `total_commands_processed` is read at both ends of
 * the window. Redis counts commands run inside Lua scripts too, so a script call that runs six
 * commands counts seven. The probe's own INFO is subtracted: the opening one falls inside the
 * window, the closing one is counted only after it replies.
 */
import type { Redis } from 'ioredis';
import { FAR_FUTURE_MS, LIBRARIES, type LibraryName } from '../drivers/types.js';
import { BARS, figure, type PhaseOutput } from '../figures.js';
import type { BenchOptions } from '../options.js';
import { commandCalls, infoNumber, readInfo } from '../servers.js';
import { withSession } from '../session.js';
import { sleep } from '../stats.js';

const OWN_INFO_CALLS = 1;

interface IdleSample {
  readonly commandsPerSecond: number;
  readonly commands: number;
  readonly windowMs: number;
  /** Calls per command name in the window (our INFO removed). */
  readonly breakdown: Record<string, number>;
}

export async function idlePhase(options: BenchOptions, log: (message: string) => void): Promise<PhaseOutput> {
  const results = {} as Record<LibraryName, IdleSample>;
  for (const library of LIBRARIES) {
    results[library] = await measureIdle(library, options);
    log(`idle ${library}: ${results[library].commandsPerSecond.toFixed(2)} commands/s ${JSON.stringify(results[library].breakdown)}`);
  }
  return {
    figures: [
      figure({
        id: 'idle',
        label: `idle worker, nothing due, ${options.idleWindowMs / 1000} s window`,
        unit: 'commands/s',
        sandglass: results.sandglass.commandsPerSecond,
        bullmq: results.bullmq.commandsPerSecond,
        bar: BARS.atMost(1, '<= 1 command/s'),
        note: 'INFO total_commands_processed, which counts commands inside Lua scripts',
      }),
    ],
    details: { windowMs: options.idleWindowMs, settleMs: options.idleSettleMs, results },
  };
}

async function measureIdle(library: LibraryName, options: BenchOptions): Promise<IdleSample> {
  return withSession(library, async ({ driver, probe }) => {
    await driver.addJobs('idle', 1, FAR_FUTURE_MS, 1);
    const worker = await driver.startWorker('idle', {
      concurrency: options.concurrency,
      onCompleted: () => undefined,
      onError: () => undefined,
    });
    try {
      await sleep(options.idleSettleMs); // connection handshakes, script loads, first claim
      const before = await snapshot(probe);
      const started = performance.now();
      await sleep(options.idleWindowMs);
      const after = await snapshot(probe);
      const windowMs = performance.now() - started;
      const commands = after.total - before.total - OWN_INFO_CALLS;
      return { commandsPerSecond: (commands * 1000) / windowMs, commands, windowMs, breakdown: diff(before.calls, after.calls) };
    } finally {
      await worker.close();
    }
  });
}

async function snapshot(probe: Redis): Promise<{ total: number; calls: Map<string, number> }> {
  const info = await readInfo(probe, 'stats', 'commandstats');
  return { total: infoNumber(info, 'total_commands_processed'), calls: commandCalls(info) };
}

function diff(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, calls] of after) {
    const delta = calls - (before.get(name) ?? 0) - (name === 'info' ? OWN_INFO_CALLS : 0);
    if (delta > 0) out[name] = delta;
  }
  return out;
}
