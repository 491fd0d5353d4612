/**
 * HTTP add throughput, on loopback: `npx tsx bench/http.ts [--connections 32] [--seconds 5] [--bulk 100]`.
 *
 * The service (buildApp) runs in this process on a private redis-server; the load comes from a
 * child process (keep-alive http.Agent with `connections` sockets), each socket sending the next
 * request as soon as the previous answer arrives. The load has its own process so that this
 * process's CPU time (process.cpuUsage) is the service's alone: it is reported per request, with
 * the redis-server's (INFO cpu), as those hold on a loaded machine where req/s does not. Phases:
 * - add: `POST /v1/queues/{q}/jobs`, one job per request, Redis without AOF (as `npm run bench`);
 * - add, AOF: the same against a redis-server with AOF and fsync always (what the zero-config
 *   `sandglass serve` starts);
 * - bulk: `POST /v1/queues/{q}/jobs:bulk` with `bulk` jobs per request, no AOF.
 * Every phase is bounded by `seconds`; answers other than 201 are counted as errors. `--phases`
 * (comma-separated: add, aof, bulk) runs some of them.
 */
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { startLocalRedis } from '../src/deploy/local-redis.js';
import { buildApp } from '../src/server/app.js';
import { percentile } from './stats.js';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '5' },
    bulk: { type: 'string', default: '100' },
    phases: { type: 'string', default: 'add,aof,bulk' },
  },
});
const CONNECTIONS = Number(values.connections);
const SECONDS = Number(values.seconds);
const BULK = Number(values.bulk);
const PHASES = new Set(values.phases.split(','));

// The load generator: `connections` loops of request -> answer -> next request, for `ms`.
const LOAD = `
const http = require('node:http');
const { port, path, body, connections, ms } = JSON.parse(process.argv[1]);
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
  process.stdout.write(JSON.stringify({ latencies, statuses, elapsedMs: Date.now() - started }));
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
  /** CPU time of this process (the service) and of the redis-server, µs per request. */
  serviceCpuUs: number;
  redisCpuUs: number;
  /** Script calls (FCALL and EVALSHA) Redis ran per request. */
  scriptCalls: number;
}

/** Script calls (FCALL, or EVALSHA on the fallback) Redis has run so far. */
async function scriptCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  const calls = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('fcall') + calls('evalsha');
}

/** The redis-server's CPU time so far (user + sys), µs. */
async function redisCpu(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** Runs LOAD in a child process; its answers. */
function load(workerData: object): Promise<{ latencies: number[]; statuses: Record<string, number>; elapsedMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', LOAD, JSON.stringify(workerData)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (out += text));
    child.once('error', reject);
    child.once('exit', code => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load exited with ${code}`))));
  });
}

async function phase(name: string, appendOnly: boolean, path: string, body: string, jobsPerRequest: number): Promise<PhaseResult> {
  const redis = await startLocalRedis({ appendOnly });
  const app = await buildApp({ connection: redis.url });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  try {
    // Warm up (scripts loaded, JIT) with a second of the same load before measuring.
    await load({ port, path, body, connections: CONNECTIONS, ms: 1000 });
    const probe = new Redis(redis.url);
    const [redisBefore, callsBefore] = [await redisCpu(probe), await scriptCalls(probe)];
    const before = process.cpuUsage();
    const result = await load({ port, path, body, connections: CONNECTIONS, ms: SECONDS * 1000 });
    const used = process.cpuUsage(before);
    const redisUsed = (await redisCpu(probe)) - redisBefore;
    const calls = (await scriptCalls(probe)) - callsBefore;
    probe.disconnect();
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
      serviceCpuUs: (used.user + used.system) / result.latencies.length,
      redisCpuUs: redisUsed / result.latencies.length,
      scriptCalls: calls / result.latencies.length,
    };
  } finally {
    await app.close();
    await redis.stop();
  }
}

const single = JSON.stringify({ payload: { orderId: 42, note: 'close the order if unpaid' }, delay: '30m' });
const bulk = JSON.stringify({ jobs: Array.from({ length: BULK }, (_, i) => ({ payload: { orderId: i }, delay: '30m' })) });
const results: PhaseResult[] = [];
if (PHASES.has('add')) results.push(await phase('add, 1 job per request, no AOF', false, '/v1/queues/bench/jobs', single, 1));
if (PHASES.has('aof')) results.push(await phase('add, 1 job per request, AOF fsync always', true, '/v1/queues/bench/jobs', single, 1));
if (PHASES.has('bulk')) {
  results.push(await phase(`bulk add, ${BULK} jobs per request, no AOF`, false, '/v1/queues/bench/jobs:bulk', bulk, BULK));
}

console.log(
  `HTTP add throughput: ${CONNECTIONS} keep-alive connections, ${SECONDS} s per phase, ${availableParallelism()} CPUs, load ${loadavg()[0]?.toFixed(2)}`,
);
for (const r of results) {
  const seconds = r.elapsedMs / 1000;
  console.log(
    `  ${r.name.padEnd(44)} ${String(Math.round(r.requests / seconds)).padStart(7)} req/s ${String(Math.round(r.jobs / seconds)).padStart(8)} jobs/s   latency p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms   CPU/request: service ${Math.round(r.serviceCpuUs)} µs, redis ${Math.round(r.redisCpuUs)} µs   script calls/request ${r.scriptCalls.toFixed(2)}   answers ${JSON.stringify(r.statuses)}`,
  );
}
