/**
 * Private redis-server processes for the bench, and reading their INFO. Every measurement gets a
 * fresh server, so neither library ever sees the other's keys, memory or command counts. Servers
 * still running are tracked so that an error or Ctrl-C can stop them all.
 */
import { Redis } from 'ioredis';
import { startLocalRedis, type LocalRedis } from '../src/deploy/local-redis.js';

const live = new Set<LocalRedis>();

/** Starts a private server without AOF (the bars are about CPU and memory, not fsync). */
export async function startServer(): Promise<LocalRedis> {
  const server = await startLocalRedis({ appendOnly: false });
  live.add(server);
  return server;
}

export async function stopServer(server: LocalRedis): Promise<void> {
  live.delete(server);
  await server.stop();
}

/** Stops whatever is still running (error paths and SIGINT). */
export async function stopAllServers(): Promise<void> {
  const servers = [...live];
  live.clear();
  await Promise.allSettled(servers.map(server => server.stop()));
}

/** A plain client for INFO and sanity reads; never used by either library. */
export function openProbe(server: LocalRedis): Redis {
  const probe = new Redis(server.url, { maxRetriesPerRequest: 1, lazyConnect: false });
  probe.on('error', () => undefined);
  return probe;
}

/** `INFO <sections>` as a map of field -> value. One INFO call, which Redis counts as one command. */
export async function readInfo(probe: Redis, ...sections: string[]): Promise<Map<string, string>> {
  const text = (await probe.call('INFO', ...sections)) as string;
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

export function infoNumber(info: Map<string, string>, field: string): number {
  const value = Number(info.get(field));
  if (!Number.isFinite(value)) throw new Error(`INFO has no numeric field ${field}`);
  return value;
}

export async function usedMemory(probe: Redis): Promise<number> {
  return infoNumber(await readInfo(probe, 'memory'), 'used_memory');
}

/** Calls per command name from `cmdstat_<name>:calls=N,...` lines. */
export function commandCalls(info: Map<string, string>): Map<string, number> {
  const calls = new Map<string, number>();
  for (const [field, value] of info) {
    const match = /^cmdstat_(.+)$/.exec(field);
    const count = /(?:^|,)calls=(\d+)/.exec(value);
    if (match && count) calls.set(match[1] as string, Number(count[1]));
  }
  return calls;
}
