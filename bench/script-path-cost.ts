// Redis CPU per call of the scripts as EVALSHA and as FCALL (the Functions library), on a private
// redis-server: a claim of 50, an ack of 50, a bulk add of 1,000 and a single add. Each sample is one
// call's `usec` in INFO commandstats (evalsha or fcall), the paths alternated call by call; medians.
// Run: npx tsx bench/script-path-cost.ts [rounds]
import { Redis } from 'ioredis';
import { startLocalRedis } from '../src/deploy/local-redis.js';
import { PartitionStore } from '../src/store/redis/partition-store.js';
import { scriptPath } from '../src/store/redis/scripts.js';

const ROUNDS = Number(process.argv[2] ?? 40);
type Path = 'evalsha' | 'fcall';

async function usec(raw: Redis, command: Path): Promise<number> {
  const info = await raw.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=\\d+,usec=(\\d+)`).exec(info)?.[1] ?? 0);
}

function jobs(count: number, prefix: string, delayMs = 0) {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i}`,
    due: { delayMs },
    maxAttempts: '',
    backoff: '',
    payloadJson: '{"n":1}',
  }));
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

const server = await startLocalRedis({ appendOnly: false });
const raw = new Redis(server.url);
try {
  // One client per path: the path is decided per client, when it first runs a script.
  process.env.SANDGLASS_SCRIPTS = 'eval';
  const evalClient = new Redis(server.url);
  const evalStore = new PartitionStore(evalClient, 'sg', 'cost-eval', 0);
  await evalStore.add(jobs(1, 'warm'), 'keep');
  delete process.env.SANDGLASS_SCRIPTS;
  const fnClient = new Redis(server.url);
  const fnStore = new PartitionStore(fnClient, 'sg', 'cost-fn', 0);
  await fnStore.add(jobs(1, 'warm'), 'keep');
  if ((await scriptPath(evalClient)) !== 'eval' || (await scriptPath(fnClient)) !== 'functions') throw new Error('paths not as asked');

  const samples: Record<string, Record<Path, number[]>> = {};
  const record = (op: string, path: Path, value: number) => {
    samples[op] ??= { evalsha: [], fcall: [] };
    samples[op][path].push(value);
  };
  const measure = async (op: string, path: Path, call: () => Promise<unknown>) => {
    const before = await usec(raw, path);
    const result = await call();
    record(op, path, (await usec(raw, path)) - before);
    return result;
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [path, store] of (round % 2 === 0
      ? [
          ['evalsha', evalStore],
          ['fcall', fnStore],
        ]
      : [
          ['fcall', fnStore],
          ['evalsha', evalStore],
        ]) as [Path, PartitionStore][]) {
      await measure('add x1', path, () => store.add(jobs(1, `one-${round}`, 3_600_000), 'keep'));
      await measure('add x1000 (bulk)', path, () => store.add(jobs(1000, `bulk-${round}`, 3_600_000), 'keep'));
      await store.add(jobs(50, `now-${round}`), 'keep');
      const claimed = (await measure('claim 50', path, () =>
        store.claim(50, 60_000, 0, 3, { claimId: `c-${path}-${round}`, answeredClaimId: undefined }),
      )) as Awaited<ReturnType<PartitionStore['claim']>>;
      if (claimed.jobs.length !== 50) throw new Error(`claimed ${claimed.jobs.length}`);
      await measure('ack 50', path, () => store.ack(claimed.jobs.map(job => ({ id: job.id, token: job.token }))));
    }
  }
  console.log(
    `Redis ${(await raw.info('server')).match(/redis_version:(\S+)/)?.[1]}, ${ROUNDS} rounds, median µs per call (commandstats usec)`,
  );
  console.log('operation          evalsha   fcall   fcall/evalsha');
  for (const [op, byPath] of Object.entries(samples)) {
    const e = median(byPath.evalsha);
    const f = median(byPath.fcall);
    console.log(`${op.padEnd(18)} ${String(e).padStart(7)} ${String(f).padStart(7)}   ${(f / e).toFixed(2)}`);
  }
  evalClient.disconnect();
  fnClient.disconnect();
} finally {
  raw.disconnect();
  await server.stop();
}
