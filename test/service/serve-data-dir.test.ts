// `sandglass serve` and its private redis-server, as real processes killed with real signals: one
// serve per data folder, no redis-server outliving its serve unnoticed, a dead redis-server restarted
// on the same AOF (readiness 503 meanwhile), an unreachable REDIS_URL said at start, and the CLI
// finding a running serve's Redis through the data folder.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { claimDataFolder, LOCK_FILE, processStartTime, readDataFolderOwner } from '../../src/deploy/data-folder.js';
import { ConflictError } from '../../src/index.js';
import { freePort, startLocalRedis } from '../../src/deploy/local-redis.js';
import { cliArgs } from '../helpers/cli.js';
import { useRedis, waitFor } from '../helpers/redis.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/http-serve.ts', import.meta.url));
const other = useRedis({ appendOnly: false });

const children = new Set<ChildProcess>();
const pidsToKill = new Set<number>();
const folders: string[] = [];
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const pid of pidsToKill) killQuietly(pid, 'SIGKILL');
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

function dataFolder(): string {
  const root = mkdtempSync(join(tmpdir(), 'sandglass-serve-dir-'));
  folders.push(root);
  return join(root, 'data');
}

/** Pids of the redis-servers working in `dir` (redis-server changes its working directory to --dir). */
function redisServersOn(dir: string): number[] {
  const pids: number[] = [];
  const real = realpathSync(dir);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(redis-server)') || !isAlive(Number(entry))) continue;
      if (readlinkSync(`/proc/${entry}/cwd`) === real) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

interface Serve {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `sandglass serve` (or the test fixture) as a real process, on a free port. */
function spawnServe(args: string[], env: Record<string, string> = {}, program: 'cli' | 'fixture' = 'cli'): Serve {
  // The CLI as npm test built it (or its sources through tsx: test/helpers/cli.ts); the fixture through tsx.
  const entry = program === 'cli' ? [...cliArgs, 'serve'] : ['--import', 'tsx', FIXTURE];
  const child = spawn(process.execPath, [...entry, '--port', '0', ...args], {
    env: { ...process.env, REDIS_URL: '', SANDGLASS_TOKEN: '', SANDGLASS_DATA_DIR: '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout?.on('data', chunk => (output += String(chunk)));
  child.stderr?.on('data', chunk => (output += String(chunk)));
  const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)));
  return { child, output: () => output, exited };
}

/** Waits for serve to listen; returns its URL and, given its data folder, its private redis-server's pid. */
async function listening(serve: Serve, dir?: string): Promise<{ url: string; redisPid: number }> {
  let gone = false;
  void serve.exited.then(() => (gone = true));
  await waitFor(() => gone || /listening on http:\/\/127\.0\.0\.1:\d+/.test(serve.output()), 30_000, 'serve to listen');
  assert.ok(!gone, `serve exited early: ${serve.output()}`);
  const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(serve.output())?.[1] as string;
  const redisPids = dir === undefined ? [] : redisServersOn(dir);
  if (dir !== undefined) assert.equal(redisPids.length, 1, `one redis-server on ${dir}: ${redisPids.join(', ')}`);
  for (const pid of redisPids) pidsToKill.add(pid);
  return { url, redisPid: redisPids[0] ?? 0 };
}

async function addJob(url: string, id: string): Promise<number> {
  const answer = await fetch(`${url}/v1/queues/kept/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ payload: id, id, delay: '1h' }),
  });
  return answer.status;
}

async function jobStatus(url: string, id: string): Promise<number> {
  return (await fetch(`${url}/v1/queues/kept/jobs/${id}`)).status;
}

async function stop(serve: Serve): Promise<number | null> {
  serve.child.kill('SIGTERM');
  return exitCode(serve);
}

/** The exit code, or a failure when the process is still running after `ms`. */
function exitCode(serve: Serve, ms = 30_000): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`still running after ${ms} ms: ${serve.output()}`)), ms)),
  );
  return Promise.race([serve.exited, late]).finally(() => clearTimeout(timer));
}

function isAlive(pid: number): boolean {
  const stat = readFileSafe(`/proc/${pid}/stat`);
  return stat !== '' && !/ Z /.test(stat.slice(stat.lastIndexOf(')')));
}

describe('the data folder lock', () => {
  it('is refused while its owner lives, and taken over from a dead owner or a reused pid', () => {
    const dir = dataFolder();
    mkdirSync(dir, { recursive: true });
    const record = (pid: number, startTime: string | null) =>
      JSON.stringify({ pid, startTime, host: hostname(), claimedAt: new Date().toISOString() });

    const claim = claimDataFolder(dir);
    assert.throws(
      () => claimDataFolder(dir),
      (error: unknown) => error instanceof ConflictError && /is in use by another sandglass serve \(pid \d+/.test(error.message),
    );
    claim.setRedis({ pid: 1, port: 6380, url: 'redis://127.0.0.1:6380' });
    assert.equal(readDataFolderOwner(dir)?.redis?.port, 6380);
    claim.release();
    assert.equal(readDataFolderOwner(dir), undefined);

    // A live pid (this process) that started at another time: the pid was reused, the owner is gone.
    writeFileSync(join(dir, LOCK_FILE), record(process.pid, `${processStartTime(process.pid)}-other`));
    assert.equal(readDataFolderOwner(dir), undefined);
    claimDataFolder(dir).release();

    // A pid that no longer exists.
    const dead = spawnSyncPid();
    writeFileSync(join(dir, LOCK_FILE), record(dead, '1'));
    claimDataFolder(dir).release();
  });
});

/** The pid of a process that has exited. */
function spawnSyncPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid as number;
}

describe('serve owns its data folder', { timeout: 120_000 }, () => {
  it('a second serve on the same data folder refuses at once with a clear message and exit 4; the first keeps working', async () => {
    const dir = dataFolder();
    const first = spawnServe(['--data-dir', dir]);
    const { url } = await listening(first, dir);
    const second = spawnServe(['--data-dir', dir]);
    assert.equal(await exitCode(second, 20_000), 4, second.output());
    assert.match(
      second.output(),
      new RegExp(
        `sandglass: The data folder ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by another sandglass serve \\(pid ${first.child.pid}`,
      ),
    );
    assert.equal(redisServersOn(dir).length, 1, 'one redis-server on the folder');
    assert.equal(await addJob(url, 'after-refusal'), 201, 'the first serve still works');
    assert.equal(await stop(first), 0);
    assert.deepEqual(redisServersOn(dir), []);
  });

  it('after kill -9 of serve its redis-server stops by itself, and the next serve has the data', async () => {
    const dir = dataFolder();
    const first = spawnServe(['--data-dir', dir]);
    const { url, redisPid } = await listening(first, dir);
    assert.equal(await addJob(url, 'before-kill'), 201);
    first.child.kill('SIGKILL');
    await first.exited;
    await waitFor(() => !isAlive(redisPid), 10_000, 'the orphaned redis-server to stop');

    const second = spawnServe(['--data-dir', dir]);
    const next = await listening(second, dir);
    assert.equal(await jobStatus(next.url, 'before-kill'), 200, 'the job added before the kill is kept');
    assert.deepEqual(redisServersOn(dir), [next.redisPid]);
    assert.equal(await stop(second), 0);
  });

  it('a redis-server left running by a killed serve is stopped cleanly by the next serve: never two on one folder', async () => {
    const dir = dataFolder();
    const first = spawnServe(['--data-dir', dir]);
    const { url, redisPid } = await listening(first, dir);
    assert.equal(await addJob(url, 'before-kill'), 201);
    // Kill serve together with the watcher that would stop its redis-server: the orphan keeps running.
    const watcher = readdirSync('/proc').find(
      entry => /^\d+$/.test(entry) && readFileSafe(`/proc/${entry}/cmdline`).includes(`sandglass-redis-watch\0${redisPid}`),
    );
    assert.ok(watcher, 'the redis-server has a watcher');
    process.kill(Number(watcher), 'SIGKILL');
    first.child.kill('SIGKILL');
    await first.exited;
    assert.deepEqual(redisServersOn(dir), [redisPid], 'the orphan still runs');

    const second = spawnServe(['--data-dir', dir]);
    const next = await listening(second, dir);
    assert.match(second.output(), new RegExp(`A redis-server \\(pid ${redisPid}\\) still runs on .*stopping it`));
    assert.ok(!isAlive(redisPid), 'the orphan is gone');
    assert.deepEqual(redisServersOn(dir), [next.redisPid], 'exactly one redis-server on the folder');
    assert.equal(await jobStatus(next.url, 'before-kill'), 200, 'the job added before the kill is kept');
    assert.equal(await stop(second), 0);
  });
});

describe('serve supervises its redis-server', { timeout: 120_000 }, () => {
  it('a redis-server killed with SIGKILL is logged, /readyz is 503 while it is down, it is restarted on the same AOF and /readyz is 200 again', async () => {
    const dir = dataFolder();
    const serve = spawnServe(['--data-dir', dir], { SANDGLASS_TEST_RESTART_DELAY_MS: '4000' }, 'fixture');
    const { url, redisPid } = await listening(serve, dir);
    assert.equal(await addJob(url, 'before-crash'), 201);
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    assert.equal((await fetch(`${url}/healthz`)).status, 200);

    process.kill(redisPid, 'SIGKILL');
    await waitFor(
      () => serve.output().includes(`The private redis-server (pid ${redisPid}) was killed by SIGKILL: restarting it`),
      10_000,
      'the death in the log',
    );
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal(((await ready.json()) as { error: { code: string } }).error.code, 'NOT_READY');
    const started = Date.now();
    const add = await fetch(`${url}/v1/queues/kept/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"payload":1}',
    });
    assert.deepEqual([add.status, ((await add.json()) as { error: { code: string } }).error.code], [503, 'REDIS_UNAVAILABLE']);
    assert.ok(Date.now() - started < 2_000, `answered in ${Date.now() - started} ms, not after a Redis timeout`);
    assert.equal((await fetch(`${url}/healthz`)).status, 200, '/healthz: the HTTP process is alive');

    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 20_000, '/readyz 200 after the restart');
    assert.match(serve.output(), /The private redis-server is running again \(pid \d+\), with its data from the AOF/);
    assert.equal(await jobStatus(url, 'before-crash'), 200, 'the job added before the crash is there');
    assert.equal(redisServersOn(dir).length, 1);
    assert.equal(await stop(serve), 0);
    assert.deepEqual(redisServersOn(dir), []);
  });

  it('gives up loudly after repeated deaths: a fatal log line and a non-zero exit', async () => {
    const dir = dataFolder();
    const serve = spawnServe(['--data-dir', dir], { SANDGLASS_TEST_RESTART_DELAY_MS: '20' }, 'fixture');
    let { redisPid } = await listening(serve, dir);
    const lastRestarted = () => Number([...serve.output().matchAll(/running again \(pid (\d+)\)/g)].at(-1)?.[1] ?? 0);
    for (let death = 1; death < 5; death++) {
      process.kill(redisPid, 'SIGKILL');
      await waitFor(() => lastRestarted() !== 0 && lastRestarted() !== redisPid, 20_000, `restart ${death}`);
      redisPid = lastRestarted();
      pidsToKill.add(redisPid);
    }
    process.kill(redisPid, 'SIGKILL');
    assert.equal(await exitCode(serve), 1, serve.output());
    assert.match(serve.output(), /"level":60.*The private redis-server died 5 times within 60 s/);
    assert.deepEqual(redisServersOn(dir), []);
  });
});

describe('serve with an unreachable REDIS_URL', { timeout: 60_000 }, () => {
  it('says so in the log at start, answers /readyz 503, and is ready once Redis comes up', async () => {
    const port = await freePort();
    const serve = spawnServe([], { REDIS_URL: `redis://127.0.0.1:${port}` });
    const { url } = await listening(serve);
    await waitFor(() => serve.output().includes('Redis is not reachable at'), 15_000, 'the log line about Redis');
    assert.match(serve.output(), new RegExp(`Redis is not reachable at redis://127\\.0\\.0\\.1:${port}: /readyz answers 503 until it is`));
    assert.equal((await fetch(`${url}/readyz`)).status, 503);

    const redis = await startLocalRedis({ port, appendOnly: false });
    try {
      await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 20_000, '/readyz 200 once Redis is up');
      await waitFor(() => serve.output().includes('Redis answers now: ready'), 10_000, 'the log line saying Redis answers');
      assert.equal(await stop(serve), 0);
    } finally {
      await redis.stop();
    }
  });
});

describe('the CLI and a running serve', { timeout: 60_000 }, () => {
  it('without --redis or REDIS_URL, the CLI uses the private Redis of the serve running on --data-dir and says which Redis it uses', async () => {
    const dir = dataFolder();
    const serve = spawnServe(['--data-dir', dir]);
    const { url } = await listening(serve, dir);
    assert.equal(await addJob(url, 'seen-by-cli'), 201);
    const port = /"redis":"redis:\/\/127\.0\.0\.1:(\d+)"/.exec(serve.output())?.[1];
    assert.ok(port);

    const found = await runCli(['stats', '--data-dir', dir]);
    assert.equal(found.code, 0, found.stderr);
    assert.match(found.stdout, /kept/);
    assert.match(
      found.stderr,
      new RegExp(`Redis redis://127\\.0\\.0\\.1:${port} \\(private redis-server of sandglass serve pid ${serve.child.pid}`),
    );

    const flagged = await runCli(['stats', '--data-dir', dir, '--redis', other.url]);
    assert.equal(flagged.code, 0, flagged.stderr);
    assert.doesNotMatch(flagged.stdout, /kept/, '--redis wins over the data folder');
    assert.match(flagged.stderr, new RegExp(`Redis ${other.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(--redis\\)`));

    const machine = await runCli(['--json', 'stats', '--data-dir', dir]);
    assert.equal(machine.code, 0);
    assert.equal(machine.stderr, '', 'nothing on stderr with --json');
    assert.equal(await stop(serve), 0);
  });
});

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...cliArgs, ...args], {
    env: { ...process.env, REDIS_URL: '', SANDGLASS_DATA_DIR: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', chunk => (stdout += String(chunk)));
  child.stderr.on('data', chunk => (stderr += String(chunk)));
  return new Promise(resolve => child.once('close', code => resolve({ code, stdout, stderr })));
}
