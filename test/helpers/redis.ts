// Test harness: every test file gets its own private redis-server on a free port, never the
// shared instance on 6379. Started before the file's tests, stopped by pid after them.
import { after, before } from 'node:test';
import { Redis } from 'ioredis';
import { startLocalRedis, type LocalRedis, type LocalRedisOptions } from '../../src/deploy/local-redis.js';

let counter = 0;

/** A queue name unique within the test run, so tests of one file never see each other's jobs. */
export function uniqueQueue(label = 'q'): string {
  counter += 1;
  return `${label}-${process.pid}-${counter}`;
}

export interface RedisFixture {
  /** The running server (set in `before`). */
  server: LocalRedis;
  /** URL of the server. */
  readonly url: string;
  /** A raw client for inspecting keys, closed in `after`. */
  readonly raw: Redis;
  /** Closes `item` after the file's tests, before the server stops. */
  track<T extends { close(): Promise<unknown> }>(item: T): T;
}

/** Starts a private redis-server for the current test file. */
export function useRedis(options: LocalRedisOptions = {}): RedisFixture {
  let raw: Redis | undefined;
  const tracked: { close(): Promise<unknown> }[] = [];
  const fixture = {
    track<T extends { close(): Promise<unknown> }>(item: T): T {
      tracked.push(item);
      return item;
    },
    server: undefined as unknown as LocalRedis,
    get url() {
      return fixture.server.url;
    },
    get raw() {
      if (!raw) {
        raw = new Redis(fixture.server.url, { maxRetriesPerRequest: null });
        raw.on('error', () => undefined);
      }
      return raw;
    },
  };
  before(async () => {
    fixture.server = await startLocalRedis(options);
  });
  after(async () => {
    await Promise.all(tracked.map(item => item.close()));
    raw?.disconnect();
    await fixture.server?.stop();
  });
  return fixture;
}

export function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(10);
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
}
