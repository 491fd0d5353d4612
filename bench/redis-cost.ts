/**
 * Where Redis spends its CPU during a measurement: `CONFIG RESETSTAT` before, then per command the
 * calls and microseconds of `INFO commandstats`, and the server process's CPU (`INFO cpu`), divided
 * by the jobs delivered. Redis counts commands that run inside a Lua script twice: once under their
 * own name and once inside the script command's (EVALSHA) time; the process CPU also covers the
 * network I/O that no command is charged for. Command times are wall time (Redis measures around
 * each call): on a loaded machine a script descheduled mid-run counts the wait, so they can exceed
 * the process CPU; the process CPU is the figure to compare across runs.
 */
import type { Redis } from 'ioredis';
import { infoNumber, readInfo } from './servers.js';

export interface CommandCost {
  readonly calls: number;
  readonly usec: number;
}

export interface RedisCostMark {
  /** Server process CPU (user + system), microseconds, at the mark. */
  readonly cpuUsec: number;
}

export interface RedisCostPerJob {
  /** Redis process CPU per job (user + system, INFO cpu): everything, network I/O included. */
  readonly processUs: number;
  /** Time of the script commands (EVALSHA, EVAL, FCALL) per job: their inside commands included. */
  readonly scriptsUs: number;
  /** Per command: calls and microseconds per job, slowest first (commands inside scripts included). */
  readonly commands: Record<string, { readonly callsPerJob: number; readonly usPerJob: number }>;
}

const SCRIPT_COMMANDS = new Set(['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro']);

/** Resets the command statistics and notes the server's CPU: the start of a costed window. */
export async function markRedisCost(probe: Redis): Promise<RedisCostMark> {
  await probe.call('CONFIG', 'RESETSTAT');
  return { cpuUsec: cpuUsec(await readInfo(probe, 'cpu')) };
}

/** The cost since `mark`, per job; the probe's own INFO calls are left out. */
export async function redisCostSince(probe: Redis, mark: RedisCostMark, jobs: number): Promise<RedisCostPerJob> {
  const info = await readInfo(probe, 'cpu', 'commandstats');
  const stats = commandStats(info);
  stats.delete('info');
  stats.delete('config');
  const entries = [...stats].sort((a, b) => b[1].usec - a[1].usec);
  return {
    processUs: (cpuUsec(info) - mark.cpuUsec) / jobs,
    scriptsUs: entries.filter(([name]) => SCRIPT_COMMANDS.has(name)).reduce((sum, [, cost]) => sum + cost.usec, 0) / jobs,
    commands: Object.fromEntries(entries.map(([name, cost]) => [name, { callsPerJob: cost.calls / jobs, usPerJob: cost.usec / jobs }])),
  };
}

function cpuUsec(info: Map<string, string>): number {
  return (infoNumber(info, 'used_cpu_user') + infoNumber(info, 'used_cpu_sys')) * 1_000_000;
}

/** `cmdstat_<name>:calls=N,usec=M,...` lines as name -> { calls, usec }. */
export function commandStats(info: Map<string, string>): Map<string, CommandCost> {
  const stats = new Map<string, CommandCost>();
  for (const [field, value] of info) {
    const name = /^cmdstat_(.+)$/.exec(field)?.[1];
    const calls = /(?:^|,)calls=(\d+)/.exec(value)?.[1];
    const usec = /(?:^|,)usec=(\d+)/.exec(value)?.[1];
    if (name !== undefined && calls !== undefined && usec !== undefined) stats.set(name, { calls: Number(calls), usec: Number(usec) });
  }
  return stats;
}
