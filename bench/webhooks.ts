/**
 * Webhook delivery figures, on loopback: `npx tsx bench/webhooks.ts [--jobs 5000] [--concurrency 50]
 * [--spread-ms 5000]`.
 *
 * - drain: `jobs` jobs all due at the same instant; throughput = jobs / (last ack - due time).
 * - steady: `jobs` jobs due evenly over `spread-ms`; lateness = arrival at the receiver - due time.
 *
 * A private redis-server (no AOF, as in `npm run bench`), a WebhookDelivery in this process, and the
 * receiver in a worker thread (its own event loop, answering 204 at once), so the receiver's work
 * does not delay the deliveries it measures. Every phase is bounded by a 60 s deadline.
 */
import { availableParallelism, loadavg } from 'node:os';
import { Worker as Thread } from 'node:worker_threads';
import { Queue } from '../src/index.js';
import { startLocalRedis, type LocalRedis } from '../src/deploy/local-redis.js';
import { WebhookDelivery } from '../src/server/webhooks.js';
import { percentile, perSecond, sleep } from './stats.js';

const SECRET = 'bench-secret-0123456789abcdef';
const PHASE_DEADLINE_MS = 60_000;
/** Added this long before the first due time, so the adds are done before anything falls due. */
const LEAD_MS = 1_500;

// The receiver: records (arrival - dueAt) per request; sends the samples back when asked.
const RECEIVER = `
const { parentPort } = require('node:worker_threads');
const { createServer } = require('node:http');
let samples = [];
const server = createServer((req, res) => {
  const at = Date.now();
  const chunks = [];
  req.on('data', chunk => chunks.push(chunk));
  req.on('end', () => {
    samples.push(at - JSON.parse(Buffer.concat(chunks).toString()).dueAt);
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 30000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', message => {
  if (message === 'take') { parentPort.postMessage({ samples }); samples = []; }
});
`;

interface Options {
  jobs: number;
  concurrency: number;
  spreadMs: number;
}

function readOptions(argv: string[]): Options {
  const value = (flag: string, fallback: number, max: number): number => {
    const index = argv.indexOf(flag);
    const n = index === -1 ? fallback : Number(argv[index + 1]);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${flag} must be an integer from 1 to ${max}`);
    return n;
  };
  return {
    jobs: value('--jobs', 5_000, 100_000),
    concurrency: value('--concurrency', 50, 1_000),
    spreadMs: value('--spread-ms', 5_000, 60_000),
  };
}

class Receiver {
  readonly #thread = new Thread(RECEIVER, { eval: true });
  readonly port: Promise<number> = new Promise(resolve =>
    this.#thread.once('message', (message: { port: number }) => resolve(message.port)),
  );

  take(): Promise<number[]> {
    const samples = new Promise<number[]>(resolve =>
      this.#thread.once('message', (message: { samples: number[] }) => resolve(message.samples)),
    );
    this.#thread.postMessage('take');
    return samples;
  }

  stop(): Promise<number> {
    return this.#thread.terminate();
  }
}

interface PhaseResult {
  delivered: number;
  elapsedMs: number;
  arrivals: number[];
  sendLateness: number[];
}

/** Adds `jobs` jobs due from `LEAD_MS` from now over `spreadMs` (0: all at once), waits for every ack. */
async function runPhase(redis: LocalRedis, receiver: Receiver, name: string, options: Options, spreadMs: number): Promise<PhaseResult> {
  const url = `http://127.0.0.1:${await receiver.port}/hooks/${name}`;
  const queue = new Queue<{ n: number }>(name, { connection: redis.url });
  const delivery = new WebhookDelivery({
    connection: redis.url,
    bindings: [{ queue: name, url, secret: SECRET, concurrency: options.concurrency }],
  });
  const sendLateness: number[] = [];
  let lastAckAt = 0;
  delivery.on('delivered', (_queue, _job, latenessMs) => {
    sendLateness.push(latenessMs);
    lastAckAt = Date.now();
  });
  delivery.on('failed', (_queue, job, error) => console.error(`job ${job.id} failed: ${error.message}`));
  try {
    await delivery.start();
    const firstDueAt = Date.now() + LEAD_MS;
    const step = options.jobs > 1 ? spreadMs / (options.jobs - 1) : 0;
    for (let i = 0; i < options.jobs; i += 1_000) {
      const count = Math.min(1_000, options.jobs - i);
      await queue.addBulk(
        Array.from({ length: count }, (_, k) => ({ payload: { n: i + k }, at: Math.round(firstDueAt + (i + k) * step) })),
      );
    }
    if (Date.now() > firstDueAt) console.warn('warning: the adds took longer than the lead time; the first jobs are late from the start');
    const deadline = Date.now() + spreadMs + PHASE_DEADLINE_MS;
    while (sendLateness.length < options.jobs) {
      if (Date.now() > deadline) throw new Error(`only ${sendLateness.length} of ${options.jobs} jobs delivered before the deadline`);
      await sleep(20);
    }
    return { delivered: sendLateness.length, elapsedMs: lastAckAt - firstDueAt, arrivals: await receiver.take(), sendLateness };
  } finally {
    await delivery.close();
    await queue.close();
  }
}

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50)} ms, p99 ${percentile(sorted, 99)} ms, max ${sorted.at(-1)} ms`;
}

async function main(): Promise<void> {
  const options = readOptions(process.argv.slice(2));
  const redis = await startLocalRedis({ appendOnly: false });
  const receiver = new Receiver();
  try {
    const load = loadavg()
      .map(value => value.toFixed(2))
      .join(' ');
    console.log(
      `webhook delivery, loopback, ${options.jobs} jobs, concurrency ${options.concurrency}, Node ${process.version}, ${availableParallelism()} cores, load average ${load}`,
    );
    // Warm-up: connections, JIT, scripts loaded.
    await runPhase(redis, receiver, 'bench-warmup', { ...options, jobs: Math.min(500, options.jobs) }, 0);

    const drain = await runPhase(redis, receiver, 'bench-drain', options, 0);
    const rate = perSecond(drain.delivered, drain.elapsedMs);
    console.log(
      `drain:  ${drain.delivered} jobs due at once, all acked ${drain.elapsedMs} ms after their due time: ${Math.round(rate)} jobs/s`,
    );

    const steady = await runPhase(redis, receiver, 'bench-steady', options, options.spreadMs);
    const offered = perSecond(options.jobs, options.spreadMs);
    console.log(`steady: ${steady.delivered} jobs due over ${options.spreadMs} ms (${Math.round(offered)} jobs/s offered)`);
    console.log(`  lateness at the receiver (arrival - due): ${summary(steady.arrivals)}`);
    console.log(`  lateness at send (request start - due):   ${summary(steady.sendLateness)}`);
  } finally {
    await receiver.stop();
    await redis.stop();
  }
}

await main();
