// The CLI and `sandglass serve` on a Redis Cluster (3 masters, private redis-servers): every
// command through --cluster / REDIS_CLUSTER_NODES, --partitions creating partitioned queues, and
// the service's API, webhooks, metrics and dashboard on a partitioned queue.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { ConflictError, Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { useLocalCluster } from '../helpers/cluster.js';
import { uniqueQueue, waitFor } from '../helpers/redis.js';
import { request, sandglass, sandglassJson, startServe } from '../helpers/sandglass-process.js';

const cluster = useLocalCluster(3, 0, { appendOnly: false });
/** `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: what a user gives to --cluster. */
const nodes = (): string => cluster.seeds.map(seed => `${seed.host}:${seed.port}`).join(',');

/** The partition count stored with a queue: opening it with another count is a conflict. */
async function partitionCount(name: string, expected: number): Promise<void> {
  const right = new Queue(name, { connection: cluster.client, partitions: expected });
  const wrong = new Queue(name, { connection: cluster.client, partitions: expected === 1 ? 2 : 1 });
  try {
    await right.stats();
    await assert.rejects(wrong.stats(), ConflictError, `${name} has ${expected} partitions`);
  } finally {
    await Promise.all([right.close(), wrong.close()]);
  }
}

describe('the CLI on a Redis Cluster', { timeout: 300_000 }, () => {
  it('adds with --partitions 4 (a partitioned queue), imports, lists, shows stats, sets limits and schedules through --cluster', async () => {
    const name = uniqueQueue('cli');
    const added = await sandglass(['--cluster', nodes(), 'add', name, '{"n":0}', '--delay', '1h', '--id', 'first', '--partitions', '4']);
    assert.equal(added.code, 0, added.stderr);
    assert.equal(added.stdout.trim(), 'first');
    assert.match(added.stderr, /^sandglass: Redis cluster 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+ \(--cluster\)$/m);
    await partitionCount(name, 4);

    // The environment works the same; a queue that exists keeps its count whatever --partitions says.
    const env = { REDIS_CLUSTER_NODES: nodes(), SANDGLASS_PARTITIONS: '2' };
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ payload: { n: i + 1 }, id: `line-${i + 1}`, delay: '1h' })).join(
      '\n',
    );
    const imported = await sandglassJson(['import', name], env, `${lines}\n`);
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(imported.body.imported, 40);
    await partitionCount(name, 4);

    const stats = await sandglassJson(['stats', name], env);
    assert.equal(stats.code, 0, stats.stderr);
    assert.deepEqual(stats.body.stats, { delayed: 41, ready: 0, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    const all = await sandglassJson(['stats'], env);
    assert.equal(all.code, 0, all.stderr);
    assert.ok(
      (all.body.queues as { name: string }[]).some(queue => queue.name === name),
      'stats of every queue lists it',
    );
    const page = await sandglassJson(['ls', name, '--state', 'delayed', '--limit', '100'], env);
    assert.equal(page.code, 0, page.stderr);
    assert.equal(page.body.jobs.length, 41, 'the list merges the four partitions');
    const job = await sandglassJson(['get', name, 'line-7'], env);
    assert.deepEqual([job.code, job.body.state, job.body.payload], [0, 'delayed', { n: 7 }]);
    const human = await sandglass(['ls', name, '--limit', '2'], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stderr, /sandglass: Redis cluster .* \(REDIS_CLUSTER_NODES\)/);

    const again = await sandglass(['--cluster', nodes(), 'add', name, '{"n":41}', '--delay', '1h', '--partitions', '8']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /queue .* exists: it keeps its partition count \(--partitions applies to new queues\)/);
    await partitionCount(name, 4);

    // Limits and schedules live in the queue's partitions too.
    const limits = await sandglassJson(['limits', name, '--concurrency', '5'], env);
    assert.deepEqual([limits.code, limits.body.limits], [0, { concurrency: 5 }]);
    const schedule = await sandglassJson(['schedule', 'add', name, 'nightly', '--every', '1h'], env);
    assert.equal(schedule.code, 0, schedule.stderr);
    const schedules = await sandglassJson(['schedule', 'ls', name], env);
    assert.deepEqual(
      (schedules.body.schedules as { key: string }[]).map(info => info.key),
      ['nightly'],
    );

    // A queue created with the environment's count.
    const other = uniqueQueue('cli-env');
    assert.equal((await sandglass(['add', other, '1'], env)).code, 0);
    await partitionCount(other, 2);
  });

  it('lists, retries and purges dead letters of a partitioned queue', async () => {
    const name = uniqueQueue('dead');
    const ids = ['d1', 'd2', 'd3'];
    for (const id of ids) {
      const run = await sandglass(['--cluster', nodes(), '--partitions', '4', 'add', name, JSON.stringify({ id }), '--id', id]);
      assert.equal(run.code, 0, run.stderr);
    }
    await partitionCount(name, 4);
    const worker = new Worker(
      name,
      () => {
        throw new UnrecoverableError('no such order');
      },
      { connection: cluster.client },
    );
    const queue = new Queue(name, { connection: cluster.client });
    try {
      await waitFor(async () => (await queue.stats()).dead === 3, 15_000, 'three dead letters');
    } finally {
      await worker.close();
    }
    try {
      const dead = await sandglassJson(['--cluster', nodes(), 'dead', 'ls', name]);
      assert.equal(dead.code, 0, dead.stderr);
      assert.deepEqual((dead.body.jobs as { id: string }[]).map(job => job.id).sort(), ids);
      assert.match((dead.body.jobs as { lastError: string }[])[0]?.lastError ?? '', /no such order/);
      const retried = await sandglassJson(['--cluster', nodes(), 'dead', 'retry', name, 'd2']);
      assert.deepEqual([retried.code, retried.body], [0, { moved: 1 }]);
      const purged = await sandglassJson(['--cluster', nodes(), 'dead', 'purge', name, '--yes']);
      assert.deepEqual([purged.code, purged.body], [0, { deleted: 2 }]);
      assert.deepEqual(await queue.stats(), { delayed: 0, ready: 1, active: 0, dead: 0, paused: false, limited: 0, completed: 0 });
    } finally {
      await queue.close();
    }
  });

  it('says to use --cluster when --redis names a cluster node (instead of a raw MOVED)', async () => {
    // A master that does not own the slot of the queue registry, so that it answers MOVED.
    const owner = await cluster.ownerOf(await cluster.slotOf('sg:queues'));
    const other = (await cluster.masters()).find(node => node.port !== owner.port);
    assert.ok(other);
    const run = await sandglass(['--redis', other.url, 'stats']);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /is a node of a Redis Cluster \(it answered MOVED\): give the nodes with --cluster/);
  });
});

describe('sandglass serve on a Redis Cluster', { timeout: 300_000 }, () => {
  let receiver: Server;
  const delivered: unknown[] = [];

  before(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', chunk => (body += String(chunk)));
      req.on('end', () => {
        delivered.push(JSON.parse(body));
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve));
  });

  after(() => new Promise<void>(resolve => receiver.close(() => resolve())));

  it('answers the API, delivers webhooks and serves metrics and the dashboard on partitioned queues', async () => {
    const api = uniqueQueue('api');
    const hooked = uniqueQueue('hooked');
    const address = receiver.address() as { port: number };
    const webhooks = JSON.stringify([{ queue: hooked, url: `http://127.0.0.1:${address.port}/hook`, secret: 's'.repeat(32) }]);
    const serve = await startServe(['--cluster', nodes()], { SANDGLASS_PARTITIONS: '4', SANDGLASS_WEBHOOKS: webhooks });
    try {
      assert.match(serve.output(), /"redis":"cluster 127\.0\.0\.1:\d+,[^"]*","redisMode":"cluster","partitions":4/);
      // The binding's queue was created with the setting's count before its worker started.
      await partitionCount(hooked, 4);

      const added = await request(`${serve.url}/v1/queues/${api}/jobs`, {
        method: 'POST',
        body: { payload: { n: 1 }, id: 'a1', delay: '1h' },
      });
      assert.equal(added.status, 201, JSON.stringify(added.body));
      await partitionCount(api, 4);
      const bulk = await request(`${serve.url}/v1/queues/${api}/jobs:bulk`, {
        method: 'POST',
        body: { jobs: Array.from({ length: 20 }, (_, i) => ({ payload: i, delay: '1h' })) },
      });
      assert.equal(bulk.status, 201, JSON.stringify(bulk.body));

      const stats = await request(`${serve.url}/v1/queues/${api}`);
      assert.equal(stats.status, 200);
      assert.equal(stats.body.stats.delayed, 21);
      const list = await request(`${serve.url}/v1/queues/${api}/jobs?state=delayed&limit=100`);
      assert.equal(list.status, 200);
      assert.equal(list.body.jobs.length, 21);
      const queues = await request(`${serve.url}/v1/queues`);
      assert.ok((queues.body.queues as { name: string }[]).some(queue => queue.name === api));

      const hook = await request(`${serve.url}/v1/queues/${hooked}/jobs`, { method: 'POST', body: { payload: { order: 42 } } });
      assert.equal(hook.status, 201);
      await waitFor(() => delivered.length === 1, 15_000, 'the webhook delivery');
      assert.deepEqual((delivered[0] as { payload: unknown }).payload, { order: 42 });
      await waitFor(async () => (await request(`${serve.url}/v1/queues/${hooked}`)).body.counters.completed === 1, 10_000, 'the ack');

      const metrics = await request(`${serve.url}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(metrics.body as string, new RegExp(`sandglass_jobs_added_total\\{[^}]*queue="${api}"[^}]*\\} 21`));
      assert.match(metrics.body as string, new RegExp(`sandglass_jobs_completed_total\\{[^}]*queue="${hooked}"[^}]*\\} 1`));
      const page = await fetch(`${serve.url}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
      // What the dashboard's top bar shows: the cluster's seed nodes, never a password.
      const info = await request(`${serve.url}/v1/info`);
      assert.equal(info.body.redis.mode, 'cluster');
      assert.deepEqual([...(info.body.redis.nodes as string[])].sort(), nodes().split(',').sort());
      assert.equal((await request(`${serve.url}/readyz`)).status, 200);
    } finally {
      assert.equal(await serve.stop(), 0, serve.output());
    }
  });
});
