/** Facts about the machine and software a run was measured on, for the JSON file. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { infoNumber, openProbe, readInfo, startServer, stopServer } from './servers.js';

export interface MachineFacts {
  readonly date: string;
  readonly node: string;
  readonly redis: string;
  readonly redisHz: number;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly totalMemoryMB: number;
  readonly platform: string;
  /** 1-minute load average at the start: other work on the machine disturbs the figures. */
  readonly loadAverageAtStart: number;
  readonly versions: { readonly sandglass: string; readonly bullmq: string; readonly ioredis: string };
  /** The library code measured: the commit, and the files of src/ that differed from it. */
  readonly git: { readonly commit: string; readonly uncommittedSrc: string[] };
}

/** Starts a throwaway server to read the Redis version the measurements will use. */
export async function machineFacts(): Promise<MachineFacts> {
  const server = await startServer();
  const probe = openProbe(server);
  try {
    const info = await readInfo(probe, 'server');
    const hz = (await probe.config('GET', 'hz')) as string[];
    return {
      date: new Date().toISOString(),
      node: process.version,
      redis: info.get('redis_version') ?? 'unknown',
      redisHz: Number(hz[1] ?? infoNumber(info, 'hz')),
      cpus: os.availableParallelism(),
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      totalMemoryMB: Math.round(os.totalmem() / 1_048_576),
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      loadAverageAtStart: os.loadavg()[0] ?? 0,
      versions: {
        sandglass: packageVersion('../package.json'),
        bullmq: packageVersion('../node_modules/bullmq/package.json'),
        ioredis: packageVersion('../node_modules/ioredis/package.json'),
      },
      git: gitState(),
    };
  } finally {
    probe.disconnect();
    await stopServer(server);
  }
}

function packageVersion(relative: string): string {
  try {
    return (JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function gitState(): MachineFacts['git'] {
  const cwd = fileURLToPath(new URL('..', import.meta.url));
  const git = (...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    // Porcelain lines are "XY path": the status columns may start with a space, so no trimming.
    const changed = git('status', '--porcelain', '--', 'src')
      .split('\n')
      .filter(line => line.length > 3);
    return { commit: git('rev-parse', 'HEAD').trim(), uncommittedSrc: changed.map(line => line.slice(3)) };
  } catch {
    return { commit: 'unknown (not a git checkout)', uncommittedSrc: [] };
  }
}
