/**
 * HTTP add throughput, on loopback: `npx tsx bench/http.ts [--connections 32] [--seconds 5] [--bulk 100]`.
 *
 * The service (buildApp) runs in this process on a private redis-server; the load comes from a
 * worker thread (its own event loop, keep-alive http.Agent with `connections` sockets), each socket
 * sending the next request as soon as the previous answer arrives. Phases:
 * - add: `POST /v1/queues/{q}/jobs`, one job per request, Redis without AOF (as `npm run bench`);
 * - add, AOF: the same against a redis-server with AOF and fsync always (what the zero-config
 *   `sandglass serve` starts);
 * - bulk: `POST /v1/queues/{q}/jobs:bulk` with `bulk` jobs per request, no AOF.
 * Every phase is bounded by `seconds`; answers other than 201 are counted as errors.
 */
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Worker as Thread } from 'node:worker_threads';
import { startLocalRedis } from '../src/deploy/local-redis.js';
import { buildApp } from '../src/server/app.js';
import { percentile } from './stats.js';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '5' },
    bulk: { type: 'string', default: '100' },
  },
});
const CONNECTIONS = Number(values.connections);
const SECONDS = Number(values.seconds);
const BULK = Number(values.bulk);

// The load generator: `connections` loops of request -> answer -> next request, for `ms`.
const LOAD = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { port, path, body, connections, ms } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const latencies = [];
const statuses = {};
const deadline = Date.now() + ms;
function once() {
  return new Promise(resolve => {
    const started = process.hrtime.bigint();
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => {
      res.resume();
      res.on('end', () => {
        latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
        statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1;
        resolve();
      });
    });
    req.on('error', error => { statuses[error.code || 'error'] = (statuses[error.code || 'error'] || 0) + 1; resolve(); });
    req.end(body);
  });
}
async function loop() { while (Date.now() < deadline) await once(); }
const started = Date.now();
Promise.all(Array.from({ length: connections }, loop)).then(() => {
  agent.destroy();
  parentPort.postMessage({ latencies, statuses, elapsedMs: Date.now() - started });
});
`;

interface PhaseResult {
  name: string;
  requests: number;
  jobs: number;
  elapsedMs: number;
  statuses: Record<string, number>;
  p50: number;
  p99: number;
}

async function phase(name: string, appendOnly: boolean, path: string, body: string, jobsPerRequest: number): Promise<PhaseResult> {
  const redis = await startLocalRedis({ appendOnly });
  const app = await buildApp({ connection: redis.url });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  try {
    // Warm up (scripts loaded, JIT) before measuring.
    await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const result = await new Promise<{ latencies: number[]; statuses: Record<string, number>; elapsedMs: number }>((resolve, reject) => {
      const thread = new Thread(LOAD, { eval: true, workerData: { port, path, body, connections: CONNECTIONS, ms: SECONDS * 1000 } });
      thread.once('message', resolve);
      thread.once('error', reject);
    });
    const sorted = [...result.latencies].sort((a, b) => a - b);
    const ok = result.statuses['201'] ?? 0;
    return {
      name,
      requests: result.latencies.length,
      jobs: ok * jobsPerRequest,
      elapsedMs: result.elapsedMs,
      statuses: result.statuses,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
    };
  } finally {
    await app.close();
    await redis.stop();
  }
}

const single = JSON.stringify({ payload: { orderId: 42, note: 'close the order if unpaid' }, delay: '30m' });
const bulk = JSON.stringify({ jobs: Array.from({ length: BULK }, (_, i) => ({ payload: { orderId: i }, delay: '30m' })) });
const results = [
  await phase('add, 1 job per request, no AOF', false, '/v1/queues/bench/jobs', single, 1),
  await phase('add, 1 job per request, AOF fsync always', true, '/v1/queues/bench/jobs', single, 1),
  await phase(`bulk add, ${BULK} jobs per request, no AOF`, false, '/v1/queues/bench/jobs:bulk', bulk, BULK),
];

console.log(
  `HTTP add throughput: ${CONNECTIONS} keep-alive connections, ${SECONDS} s per phase, ${availableParallelism()} CPUs, load ${loadavg()[0]?.toFixed(2)}`,
);
for (const r of results) {
  const seconds = r.elapsedMs / 1000;
  console.log(
    `  ${r.name.padEnd(44)} ${String(Math.round(r.requests / seconds)).padStart(7)} req/s ${String(Math.round(r.jobs / seconds)).padStart(8)} jobs/s   latency p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms   answers ${JSON.stringify(r.statuses)}`,
  );
}
