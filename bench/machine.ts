/** Facts about the machine and software a run was measured on, for the JSON file. */
import { readFileSync } from 'node:fs';
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
      versions: { sandglass: packageVersion('../package.json'), bullmq: packageVersion('../node_modules/bullmq/package.json'), ioredis: packageVersion('../node_modules/ioredis/package.json') },
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
