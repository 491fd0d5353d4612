// Model-based test: random sequences of operations run against the real queue on a real Redis and
// against a plain in-memory model; after every step the states must agree and the storage
// invariant must hold (every job in exactly one of due, active, dead, completed (kept by retention)
// or a wheel bucket, the wheel's index in step with its buckets: test/chaos/checker.ts). The
// queue's wheel has 1 s buckets, so that a job added or rescheduled for later waits in the wheel,
// and one retried later in `due`. The model runs twice: without retention, and keeping every
// completed job (`setRetention`), where a completed job stays visible as `completed`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NotFoundError, PullConsumer, Queue, type PulledJob } from '../../src/index.js';
import { partitionKeys } from '../../src/store/redis/keys.js';
import { checkInvariant, snapshot } from '../chaos/checker.js';
import { sleep, uniqueQueue, useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: true });
const MAX_ATTEMPTS = 2;
const IDS = ['a', 'b', 'c', 'd', 'e'];

type State = 'delayed' | 'ready' | 'active' | 'dead';
interface ModelJob {
  state: State;
  attempts: number;
  /** Set while active: the claim's token. */
  token?: string;
  /** The lease was forced to run out: reaped by the next claim. */
  expired?: boolean;
  /**
   * While waiting, its deadline (lua/includes/keys.lua, "Deadlines"): 'live' (an hour: never reached here),
   * 'passed' or 'drop' (1 ms after a due time in the past: the claim that takes it expires it).
   */
  deadline?: 'live' | 'passed' | 'drop';
  /** Dead because its deadline passed (reason 'expired'). */
  expiredDead?: boolean;
}
interface Model {
  jobs: Map<string, ModelJob>;
  /** Tokens of claims that lost their lease or were settled: they must be refused. */
  staleTokens: { id: string; token: string }[];
  /** Completed ids and the token that completed each (Redis remembers them longer than a run lasts). */
  completed: Map<string, string>;
  /** The queue keeps completed jobs (then `completed` ids are kept, with their attempts here). */
  retain: boolean;
  kept: Map<string, number>;
}
interface Real {
  name: string;
  queue: Queue<string>;
  consumer: PullConsumer<string>;
}

/** A delay that lands in the wheel (its bucket starts far more than one width from now). */
const FAR = 3_600_000;
/** The wheel's bucket width for the model's queue (the smallest it allows). */
const WHEEL_SLOT_MS = 1_000;

/** Jobs whose expired lease the next claim takes back, as claim.lua does. */
function reap(model: Model): void {
  for (const [id, job] of model.jobs) {
    if (job.state !== 'active' || !job.expired) continue;
    model.staleTokens.push({ id, token: job.token as string });
    job.state = job.attempts >= MAX_ATTEMPTS ? 'dead' : 'ready';
    delete job.token;
    delete job.expired;
  }
}

const operations = [
  fc
    .record({ id: fc.constantFrom(...IDS), due: fc.boolean(), deadline: fc.constantFrom(undefined, undefined, 'live', 'passed', 'drop') })
    .map(({ id, due, deadline }) => ({
      check: () => true,
      async run(model: Model, real: Real) {
        // A deadline that passed: due at epoch ms 1, to start within 1 ms of that.
        const passed = deadline === 'passed' || deadline === 'drop';
        const expiry =
          deadline === undefined
            ? {}
            : deadline === 'live'
              ? { expireAfter: '1h' as const }
              : { expireAfter: 1, onExpire: passed && deadline === 'drop' ? ('drop' as const) : ('dead' as const) };
        await real.queue.add(id, { id, ...(passed ? { at: 1 } : { delay: due ? 0 : FAR }), ...expiry });
        // A completed id is not added again (the add is taken for a resend of the first one).
        if (!model.jobs.has(id) && !model.completed.has(id)) {
          model.jobs.set(id, { state: due || passed ? 'ready' : 'delayed', attempts: 0, ...(deadline ? { deadline } : {}) });
        }
      },
      toString: () =>
        `add(${id}, ${deadline === 'passed' || deadline === 'drop' ? 'at 1' : due ? 'now' : 'later'}${deadline ? `, deadline ${deadline}` : ''})`,
    })),
  fc.constantFrom(...IDS).map(id => ({
    check: () => true,
    async run(model: Model, real: Real) {
      const answer = await real.queue.cancel(id);
      const job = model.jobs.get(id);
      const expected = !job ? 'not_found' : job.state === 'active' ? 'running' : 'cancelled';
      assert.equal(answer, expected, `cancel(${id})`);
      if (expected === 'cancelled') model.jobs.delete(id);
    },
    toString: () => `cancel(${id})`,
  })),
  fc.record({ id: fc.constantFrom(...IDS), due: fc.boolean() }).map(({ id, due }) => ({
    check: () => true,
    async run(model: Model, real: Real) {
      const answer = await real.queue.reschedule(id, { delay: due ? 0 : FAR });
      const job = model.jobs.get(id);
      const expected = !job ? 'not_found' : job.state === 'active' ? 'running' : 'rescheduled';
      assert.equal(answer, expected, `reschedule(${id})`);
      if (job && expected === 'rescheduled') {
        if (job.state === 'dead') {
          // Revived with a fresh set of attempts and no deadline.
          job.attempts = 0;
          delete job.expiredDead;
        }
        job.state = due ? 'ready' : 'delayed';
        // A deadline moves with the due time: 1 ms after now must have passed before the next claim.
        if (job.deadline !== undefined && job.deadline !== 'live') await sleep(5);
      }
    },
    toString: () => `reschedule(${id}, ${due ? 'now' : 'later'})`,
  })),
  fc.integer({ min: 1, max: 3 }).map(max => ({
    check: () => true,
    async run(model: Model, real: Real) {
      reap(model);
      const ready = [...model.jobs].filter(([, job]) => job.state === 'ready').map(([id]) => id);
      const claimed: PulledJob<string>[] = await real.consumer.claim({ max, leaseMs: 60_000 });
      // The jobs taken whose deadline passed were not delivered: dead-lettered or dropped.
      let expired = 0;
      for (const id of ready) {
        const job = model.jobs.get(id) as ModelJob;
        if (job.deadline !== 'passed' && job.deadline !== 'drop') continue;
        const info = await real.queue.get(id);
        if (info?.state === 'ready') continue; // not taken by this claim
        expired += 1;
        if (job.deadline === 'drop') {
          assert.equal(info, null, `${id} dropped on expiry`);
          model.jobs.delete(id);
        } else {
          assert.equal(info?.state, 'dead', `${id} dead on expiry`);
          job.state = 'dead';
          job.expiredDead = true;
          delete job.deadline;
        }
      }
      assert.equal(claimed.length + expired, Math.min(max, ready.length), `claim(${max}) with ready ${ready}`);
      for (const job of claimed) {
        const modelJob = model.jobs.get(job.id);
        assert.ok(modelJob && modelJob.state === 'ready', `claimed ${job.id}, which the model has as ${modelJob?.state}`);
        assert.ok(modelJob.deadline === undefined || modelJob.deadline === 'live', `claimed ${job.id}, whose deadline passed`);
        // Its first start: the deadline no longer applies.
        delete modelJob.deadline;
        modelJob.state = 'active';
        modelJob.attempts += 1;
        modelJob.token = job.token;
        assert.equal(job.attempt, modelJob.attempts);
      }
    },
    toString: () => `claim(${max})`,
  })),
  fc.record({ index: fc.nat(), ok: fc.boolean(), later: fc.boolean() }).map(({ index, ok, later }) => ({
    check: (model: Readonly<Model>) => [...model.jobs.values()].some(job => job.state === 'active' && !job.expired),
    async run(model: Model, real: Real) {
      const active = [...model.jobs].filter(([, job]) => job.state === 'active' && !job.expired);
      const [id, job] = active[index % active.length] as [string, ModelJob];
      const token = job.token as string;
      if (ok) {
        assert.equal(await real.consumer.ack(id, token, { result: `${id}:${token}` }), 'acked');
        model.jobs.delete(id);
        model.completed.set(id, token);
        if (model.retain) model.kept.set(id, job.attempts);
      } else {
        // A retry for later waits in `due` (only adds and reschedules go to the wheel).
        const { result } = await real.consumer.fail(id, token, { error: 'model says fail', retryDelayMs: later ? FAR : 0 });
        const dead = job.attempts >= MAX_ATTEMPTS;
        assert.equal(result, dead ? 'dead' : 'retried');
        job.state = dead ? 'dead' : later ? 'delayed' : 'ready';
        delete job.token;
      }
      model.staleTokens.push({ id, token });
    },
    toString: () => `${ok ? 'ack' : `fail${later ? '(later)' : ''}`}(active #${index})`,
  })),
  fc.nat().map(index => ({
    check: (model: Readonly<Model>) => [...model.jobs.values()].some(job => job.state === 'active' && !job.expired),
    async run(model: Model, real: Real) {
      const active = [...model.jobs].filter(([, job]) => job.state === 'active' && !job.expired);
      const [id, job] = active[index % active.length] as [string, ModelJob];
      // Time passes for this lease only: its deadline moves into the past.
      await redis.raw.zadd(`sg:{${real.name}:0}:active`, 'XX', 1, id);
      job.expired = true;
    },
    toString: () => `expireLease(active #${index})`,
  })),
  fc.nat().map(index => ({
    check: (model: Readonly<Model>) => model.staleTokens.length > 0,
    async run(model: Model, real: Real) {
      const { id, token } = model.staleTokens[index % model.staleTokens.length] as { id: string; token: string };
      // A token whose job still exists under another claim (or none) is refused, as is one whose job
      // another token completed; the token that completed it is told acked (a resend after a lost
      // reply); a job that is gone otherwise (cancelled) is not found.
      const completedBy = model.completed.get(id);
      const ack = real.consumer.ack(id, token);
      if (model.jobs.has(id) || (completedBy !== undefined && completedBy !== token))
        assert.equal(await ack, 'stale', `an old token for ${id}`);
      else if (completedBy === token) assert.equal(await ack, 'acked', `a resent ack for ${id}`);
      else await assert.rejects(ack, NotFoundError, `an old token for ${id}, cancelled since`);
      assert.equal((await real.consumer.extend(id, token)).result, 'stale');
    },
    toString: () => `staleAck(#${index})`,
  })),
  fc.constant({
    // Restarts are slow: only once there is something to lose.
    check: (model: Readonly<Model>) => model.jobs.size >= 3,
    async run(_model: Model, real: Real) {
      // kill -9 and restart on the same AOF: nothing acknowledged may change.
      await redis.server.kill('SIGKILL');
      await redis.server.restart();
      await real.queue.stats(); // reconnected
    },
    toString: () => 'restartRedis',
  }),
];

/** Every operation is followed by the full comparison of model and Redis. */
// Settling is listed three times: it only applies when a job is active, and would be rare otherwise.
const weighted = [...operations, operations[4], operations[4]] as typeof operations;
const commands = weighted.map(arbitrary =>
  arbitrary.map(operation => ({
    check: operation.check,
    run: async (model: Model, real: Real) => {
      if (process.env.MODEL_TRACE) console.log('op', operation.toString());
      await operation.run(model, real);
      await assertAgrees(model, real);
    },
    toString: operation.toString,
  })),
);

async function assertAgrees(model: Model, real: Real): Promise<void> {
  const counts = { delayed: 0, ready: 0, active: 0, dead: 0 };
  for (const [id, job] of model.jobs) {
    counts[job.state] += 1;
    const info = await real.queue.get(id);
    assert.equal(info?.state, job.state, `state of ${id}`);
    assert.equal(info?.attempts, job.attempts, `attempts of ${id}`);
    const waiting = job.state === 'delayed' || job.state === 'ready';
    assert.equal(info?.expiresAt !== undefined, waiting && job.deadline !== undefined, `deadline of ${id}`);
    assert.equal(info?.reason, job.state === 'dead' ? (job.expiredDead ? 'expired' : 'failed') : undefined, `reason of ${id}`);
  }
  for (const [id, attempts] of model.kept) {
    const info = await real.queue.get(id);
    assert.equal(info?.state, 'completed', `state of ${id}`);
    assert.equal(info?.attempts, attempts, `attempts of ${id}`);
    assert.equal(info?.result, `${id}:${model.completed.get(id)}`, `result of ${id}`);
  }
  for (const id of IDS)
    if (!model.jobs.has(id) && !model.kept.has(id)) assert.equal(await real.queue.get(id), null, `${id} should not exist`);
  assert.deepEqual(await real.queue.stats(), { ...counts, paused: false, limited: 0, completed: model.kept.size });
  // The lists by state hold the same jobs (wheel jobs among the delayed ones).
  for (const state of ['delayed', 'ready', 'active', 'dead'] as const) {
    const listed = (await real.queue.list(state, { limit: 1_000 })).jobs.map(job => job.id).sort();
    assert.deepEqual(
      listed,
      [...model.jobs]
        .filter(([, job]) => job.state === state)
        .map(([id]) => id)
        .sort(),
      `list('${state}')`,
    );
  }
  assert.deepEqual(
    (await real.queue.list('completed', { limit: 1_000 })).jobs.map(job => job.id).sort(),
    [...model.kept.keys()].sort(),
    "list('completed')",
  );
  // Storage invariant: every job in exactly one of due, active, dead, a wheel bucket; its record
  // where its state keeps it; the wheel's index in step with its buckets.
  const invariant = checkInvariant(await snapshot(redis.raw, real.name));
  assert.ok(invariant.ok, `storage invariant: ${JSON.stringify(invariant)}`);
}

/** Runs random command sequences against a fresh queue each, keeping completed jobs or not. */
async function checkModel(retain: boolean, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'large' }), async cmds => {
      const name = uniqueQueue('model');
      const real: Real = {
        name,
        queue: new Queue<string>(name, { connection: redis.url }),
        consumer: new PullConsumer<string>(name, { connection: redis.url, maxAttempts: MAX_ATTEMPTS }),
      };
      const model: Model = { jobs: new Map(), staleTokens: [], completed: new Map(), retain, kept: new Map() };
      // Before the first add: the wheel's width is read from meta by every script.
      await redis.raw.hset(partitionKeys('sg', name, 0).meta, 'wheelSlotMs', WHEEL_SLOT_MS);
      if (retain) await real.queue.setRetention({ completed: { count: 100 } });
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
      } finally {
        await real.consumer.close();
        await real.queue.close();
      }
    }),
    { numRuns },
  );
}

describe('model-based', () => {
  it('random add / cancel / reschedule / claim / ack / fail / lease expiry / restart agree with a simple model', async () => {
    await checkModel(false, 50);
  });

  it('the same with completed jobs kept (setRetention): they stay visible as completed, and the model still agrees', async () => {
    await checkModel(true, 25);
  });

  it('an old token of a job now waiting in the wheel is stale, not unknown (found by the model above)', async () => {
    const name = uniqueQueue('model');
    await redis.raw.hset(partitionKeys('sg', name, 0).meta, 'wheelSlotMs', WHEEL_SLOT_MS);
    const queue = redis.track(new Queue<string>(name, { connection: redis.url }));
    const consumer = redis.track(new PullConsumer<string>(name, { connection: redis.url, maxAttempts: MAX_ATTEMPTS }));
    await queue.add('c', { id: 'c' });
    const [job] = await consumer.claim({ max: 1, leaseMs: 60_000 });
    assert.ok(job);
    assert.equal((await consumer.fail(job.id, job.token, { error: 'x', retryDelayMs: 0 })).result, 'retried');
    assert.equal(await queue.reschedule('c', { delay: FAR }), 'rescheduled');
    assert.ok(
      checkInvariant(await snapshot(redis.raw, name)).jobs === 1 && (await redis.raw.hexists(partitionKeys('sg', name, 0).jobs, 'c')) === 0,
      'c waits in the wheel',
    );
    assert.equal(await consumer.ack(job.id, job.token), 'stale');
  });
});
