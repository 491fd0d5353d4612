// A real NestFactory application (Express, enableShutdownHooks) in its own process: what SIGTERM
// does to a running job. The workers close first, then the queues; the process must end by itself
// (exit code 0: nothing left open, see test/fixtures/nest-app.ts) and no job may be lost.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const FIXTURE = fileURLToPath(new URL('../fixtures/nest-app.ts', import.meta.url));
/** How long a shutdown may take on a loaded machine; the handlers' own bounds are far below it. */
const EXIT_BOUND_MS = 25_000;

interface App {
  readonly child: ChildProcess;
  readonly port: number;
  /** Lines printed so far. */
  readonly lines: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

const children: ChildProcess[] = [];
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

async function startApp(queue: string, env: Record<string, string>): Promise<App> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, SG_URL: redis.url, SG_QUEUE: queue, ...env };
  delete childEnv.NODE_OPTIONS;
  delete childEnv.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  let stderr = '';
  let partial = '';
  child.stdout?.on('data', chunk => {
    const text = partial + String(chunk);
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.on('data', chunk => (stderr = (stderr + String(chunk)).slice(-20_000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(resolve =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(() => gone || lines.some(line => line.startsWith('ready ')), 60_000, 'the Nest app to listen');
  const ready = lines.find(line => line.startsWith('ready '));
  if (!ready) throw new Error(`the Nest app exited before it was ready: ${stderr}`);
  return { child, port: Number(ready.split(' ')[1]), lines, exited, stderr: () => stderr };
}

async function placeOrder(app: App, orderId: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${app.port}/orders/${orderId}`, { method: 'POST' });
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as { id: string }).id;
}

/** Sends SIGTERM and returns how the process ended and how long it took. */
async function terminate(app: App): Promise<{ code: number | null; signal: NodeJS.Signals | null; tookMs: number }> {
  const startedAt = Date.now();
  app.child.kill('SIGTERM');
  const timeout = new Promise<never>((_, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the app did not exit within ${EXIT_BOUND_MS} ms of SIGTERM; stderr: ${app.stderr()}`)),
      EXIT_BOUND_MS,
    );
    void app.exited.then(() => clearTimeout(timer));
  });
  const ended = await Promise.race([app.exited, timeout]);
  return { ...ended, tookMs: Date.now() - startedAt };
}

describe('a NestFactory app with enableShutdownHooks, on SIGTERM', () => {
  it('hands back a job that outlasts closeTimeoutMs and exits by itself with code 0; a second app runs the job', async () => {
    const name = uniqueQueue('nest-sigterm');
    const queue = new Queue<{ orderId: number }>(name, { connection: redis.url });
    try {
      const first = await startApp(name, { SG_MODE: 'hold', SG_CLOSE_TIMEOUT_MS: '500' });
      const id = await placeOrder(first, 1);
      await waitFor(() => first.lines.includes(`start ${id} 1`), 20_000, 'the handler to start');
      const ended = await terminate(first);
      assert.deepEqual({ code: ended.code, signal: ended.signal }, { code: 0, signal: null }, `stderr: ${first.stderr()}`);
      // Handed back, not left to its 30 s lease: due again at once.
      const { delayed, ready, active, dead } = await queue.stats();
      assert.deepEqual({ delayed, ready, active, dead }, { delayed: 0, ready: 1, active: 0, dead: 0 });
      assert.equal((await queue.get(id))?.state, 'ready');

      const second = await startApp(name, { SG_MODE: 'work', SG_WORK_MS: '0' });
      await waitFor(() => second.lines.some(line => line.startsWith(`done ${id} `)), 20_000, 'the second app to run the job');
      assert.deepEqual(
        await terminate(second).then(({ code, signal }) => ({ code, signal })),
        { code: 0, signal: null },
        `stderr: ${second.stderr()}`,
      );
      assert.equal(await queue.get(id), null, 'completed and removed');
    } finally {
      await queue.close();
    }
  });

  it('lets a job that ends within closeTimeoutMs complete before the process exits (code 0)', async () => {
    const name = uniqueQueue('nest-sigterm');
    const queue = new Queue<{ orderId: number }>(name, { connection: redis.url });
    try {
      const app = await startApp(name, { SG_MODE: 'work', SG_WORK_MS: '1500', SG_CLOSE_TIMEOUT_MS: '20000' });
      const id = await placeOrder(app, 2);
      await waitFor(() => app.lines.includes(`start ${id} 1`), 20_000, 'the handler to start');
      const ended = await terminate(app);
      assert.deepEqual({ code: ended.code, signal: ended.signal }, { code: 0, signal: null }, `stderr: ${app.stderr()}`);
      assert.ok(app.lines.includes(`done ${id} 1`), `the job completed before the exit: ${app.lines.join(' | ')}`);
      assert.ok(ended.tookMs >= 1_000, `the exit waited for the handler (${ended.tookMs} ms)`);
      assert.equal(await queue.get(id), null);
      const { delayed, ready, active, dead } = await queue.stats();
      assert.deepEqual({ delayed, ready, active, dead }, { delayed: 0, ready: 0, active: 0, dead: 0 });
    } finally {
      await queue.close();
    }
  });
});
