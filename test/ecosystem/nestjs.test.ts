// sandglass/nestjs in a real Nest application context (Test.createTestingModule), against a real
// private Redis: queues injected with @InjectQueue, @Processor classes discovered and run at
// bootstrap, @OnJobEvent methods, forRootAsync, the errors a wrong setup gets, and what closing
// the application leaves behind. The shutdown of a real NestFactory app in its own process, on
// SIGTERM, is in nestjs-shutdown.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Inject, Injectable, Module, Scope, type Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { Queue, type Job } from '../../src/index.js';
import { getQueueToken, InjectQueue, OnJobEvent, Processor, SandglassModule, SandglassWorkers } from '../../src/nestjs/index.js';
import { AppModule } from '../../examples/nestjs/app.module.js';
import { OrdersService } from '../../examples/nestjs/orders.service.js';
import { sleep, uniqueQueue, useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

interface Order {
  orderId: number;
}

/** What the processors of these tests saw, as a provider they inject by class token. */
@Injectable()
class Recorder {
  readonly processed: { id: string; payload: unknown; attempt: number }[] = [];
  readonly batches: number[] = [];
  readonly completed: { id: string; result: unknown }[] = [];
  readonly dead: { id: string; error: unknown }[] = [];
}

async function start(
  imports: NonNullable<Parameters<typeof Module>[0]['imports']>,
  providers: NonNullable<Parameters<typeof Module>[0]['providers']>,
): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports, providers }).compile();
  await moduleRef.init();
  return moduleRef;
}

/** Connections the private Redis has now (the fixture's raw client among them). */
async function clientCount(): Promise<number> {
  const list = (await redis.raw.client('LIST')) as string;
  return list.split('\n').filter(line => line.trim() !== '').length;
}

/** A processor of `queue` that records into Recorder and fails orders with a negative id. */
function ordersProcessor(queue: string, options: Parameters<typeof Processor>[1] = {}): Type<unknown> {
  @Processor(queue, options)
  class OrdersProcessor {
    constructor(@Inject(Recorder) private readonly recorder: Recorder) {}

    async process(job: Job<Order>): Promise<string> {
      if (job.payload.orderId < 0) throw new Error(`order ${job.payload.orderId} does not exist`);
      this.recorder.processed.push({ id: job.id, payload: job.payload, attempt: job.attempt });
      return `closed ${job.payload.orderId}`;
    }

    @OnJobEvent('completed')
    onCompleted(job: Job<Order>, result: unknown): void {
      this.recorder.completed.push({ id: job.id, result });
    }

    @OnJobEvent('dead')
    async onDead(job: Job<Order>, error: unknown): Promise<void> {
      this.recorder.dead.push({ id: job.id, error });
    }
  }
  return OrdersProcessor;
}

describe('SandglassModule in a Nest application', () => {
  it('runs a job added through the @InjectQueue queue in the @Processor, which injects providers; completed and dead reach @OnJobEvent methods', async () => {
    const name = uniqueQueue('nest');

    @Injectable()
    class OrdersService {
      constructor(@InjectQueue(name) readonly timeouts: Queue<Order>) {}
      place(orderId: number): Promise<string> {
        return this.timeouts.add({ orderId }, { delay: 50, maxAttempts: 1 });
      }
    }

    const app = await start(
      [SandglassModule.forRoot({ connection: redis.url }), SandglassModule.registerQueue({ name })],
      [Recorder, OrdersService, ordersProcessor(name, { concurrency: 5 })],
    );
    try {
      const orders = app.get(OrdersService);
      assert.ok(orders.timeouts instanceof Queue);
      assert.equal(app.get(getQueueToken(name)), orders.timeouts, 'getQueueToken names the same Queue');
      const recorder = app.get(Recorder);
      const ok = await orders.place(42);
      const bad = await orders.place(-1);
      await waitFor(() => recorder.completed.length === 1 && recorder.dead.length === 1, 15_000, 'both jobs settled');
      assert.deepEqual(recorder.processed, [{ id: ok, payload: { orderId: 42 }, attempt: 1 }]);
      assert.deepEqual(recorder.completed, [{ id: ok, result: 'closed 42' }]);
      assert.equal(recorder.dead[0]?.id, bad);
      assert.ok(recorder.dead[0]?.error instanceof Error);
      assert.match((recorder.dead[0].error as Error).message, /order -1 does not exist/);
      await waitFor(async () => (await orders.timeouts.stats()).dead === 1, 5_000, 'the dead letter');
      const { delayed, ready, active, dead } = await orders.timeouts.stats();
      assert.deepEqual({ delayed, ready, active, dead }, { delayed: 0, ready: 0, active: 0, dead: 1 });
    } finally {
      await app.close();
    }
  });

  it('forRootAsync builds the options with a factory that injects a config provider from an imported module', async () => {
    const name = uniqueQueue('nest-async');
    class Config {
      constructor(private readonly values: Record<string, string>) {}
      get(key: string): string {
        const value = this.values[key];
        if (value === undefined) throw new Error(`no ${key}`);
        return value;
      }
    }
    @Module({
      providers: [{ provide: Config, useFactory: () => new Config({ REDIS_URL: redis.url, PREFIX: 'nestcfg' }) }],
      exports: [Config],
    })
    class ConfigModule {}

    const app = await start(
      [
        SandglassModule.forRootAsync({
          imports: [ConfigModule],
          inject: [Config],
          useFactory: async (config: Config) => ({ connection: config.get('REDIS_URL'), prefix: config.get('PREFIX') }),
        }),
        SandglassModule.registerQueue({ name }),
      ],
      [Recorder, ordersProcessor(name)],
    );
    try {
      const queue = app.get<Queue<Order>>(getQueueToken(name));
      const id = await queue.add({ orderId: 7 });
      const recorder = app.get(Recorder);
      await waitFor(() => recorder.completed.length === 1, 15_000, 'the job');
      assert.deepEqual(recorder.processed, [{ id, payload: { orderId: 7 }, attempt: 1 }]);
      assert.ok((await redis.raw.keys(`nestcfg:*${name}*`)).length > 0, 'the keys are under the prefix the factory gave');
      assert.deepEqual(await redis.raw.keys(`sg:*${name}*`), []);
    } finally {
      await app.close();
    }
  });

  it('processes jobs added before the application started once it boots; a batch processor gets arrays', async () => {
    const single = uniqueQueue('nest-early');
    const batched = uniqueQueue('nest-batch');
    const early = new Queue<Order>(single, { connection: redis.url });
    const earlyBatch = new Queue<Order>(batched, { connection: redis.url });
    const ids = [await early.add({ orderId: 1 }), await early.add({ orderId: 2 }, { delay: 300 })];
    await earlyBatch.addBulk([1, 2, 3, 4, 5].map(orderId => ({ payload: { orderId } })));
    await early.close();
    await earlyBatch.close();

    @Processor(batched, { batch: { size: 10 } })
    class BatchProcessor {
      constructor(@Inject(Recorder) private readonly recorder: Recorder) {}
      process(jobs: Job<Order>[]): void {
        this.recorder.batches.push(jobs.length);
      }
    }

    const app = await start([SandglassModule.forRoot({ connection: redis.url })], [Recorder, ordersProcessor(single), BatchProcessor]);
    try {
      await app.get(SandglassWorkers).waitUntilReady();
      assert.equal(app.get(SandglassWorkers).all().length, 2);
      assert.equal(app.get(SandglassWorkers).get(batched).length, 1);
      const recorder = app.get(Recorder);
      await waitFor(
        () => recorder.processed.length === 2 && recorder.batches.reduce((sum, n) => sum + n, 0) === 5,
        15_000,
        'the early jobs',
      );
      assert.deepEqual(recorder.processed.map(job => job.id).sort(), [...ids].sort());
      assert.ok(
        recorder.batches.some(size => size > 1),
        `batches ${recorder.batches.join(',')}`,
      );
    } finally {
      await app.close();
    }
  });

  it('leaves no connection open after app.close(): queues and workers on one shared connection, closed', async () => {
    const name = uniqueQueue('nest-close');
    const before = await clientCount();
    const app = await start(
      [SandglassModule.forRoot({ connection: redis.url }), SandglassModule.registerQueue({ name })],
      [Recorder, ordersProcessor(name)],
    );
    await app.get(SandglassWorkers).waitUntilReady();
    await app.get<Queue<Order>>(getQueueToken(name)).add({ orderId: 1 });
    await waitFor(() => app.get(Recorder).completed.length === 1, 15_000, 'the job');
    // One command connection and one pub/sub connection for the queue and the worker together.
    assert.equal(await clientCount(), before + 2);
    await app.close();
    await waitFor(async () => (await clientCount()) === before, 5_000, 'the connections to close');
  });

  it('does not close an ioredis instance the application passed in', async () => {
    const name = uniqueQueue('nest-owned');
    const client = new Redis(redis.url);
    try {
      const app = await start(
        [SandglassModule.forRoot({ connection: client }), SandglassModule.registerQueue({ name })],
        [Recorder, ordersProcessor(name)],
      );
      await app.get<Queue<Order>>(getQueueToken(name)).add({ orderId: 3 });
      await waitFor(() => app.get(Recorder).completed.length === 1, 15_000, 'the job');
      await app.close();
      assert.equal(client.status, 'ready');
      assert.equal(await client.ping(), 'PONG');
    } finally {
      client.disconnect();
    }
  });
});

describe('the example app (examples/nestjs)', () => {
  it('closes an order left unpaid at its timeout and leaves a paid one alone', async () => {
    process.env.REDIS_URL = redis.url;
    process.env.ORDER_TIMEOUT = '300ms';
    const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app.useLogger(false);
    await app.init();
    try {
      const orders = app.get(OrdersService);
      const unpaid = await orders.place();
      const paid = await orders.place();
      await orders.pay(paid.id);
      await waitFor(() => orders.get(unpaid.id).status === 'closed', 15_000, 'the unpaid order to close');
      await sleep(300);
      assert.equal(orders.get(paid.id).status, 'paid');
      const queue = app.get<Queue>(getQueueToken('order-timeout'));
      assert.equal(await queue.get(`order:${paid.id}`), null, 'its timeout was cancelled');
    } finally {
      await app.close();
      delete process.env.REDIS_URL;
      delete process.env.ORDER_TIMEOUT;
    }
  });
});

describe('SandglassModule refuses a wrong setup at bootstrap, with a message that says what to fix', () => {
  it('a @Processor without a process() method', async () => {
    @Processor(uniqueQueue('nest-bad'))
    class NoProcess {}
    const moduleRef = await Test.createTestingModule({
      imports: [SandglassModule.forRoot({ connection: redis.url })],
      providers: [NoProcess],
    }).compile();
    await assert.rejects(moduleRef.init(), /@Processor NoProcess has no process\(\) method/);
    await moduleRef.close();
  });

  it('registerQueue without forRoot', async () => {
    await assert.rejects(
      Test.createTestingModule({ imports: [SandglassModule.registerQueue({ name: uniqueQueue('nest-bad') })] }).compile(),
      /registerQueue\('nest-bad-[0-9-]+'\): no SandglassModule\.forRoot\(\)/,
    );
  });

  it('forRoot without a connection', async () => {
    await assert.rejects(
      Test.createTestingModule({ imports: [SandglassModule.forRoot({} as never)] }).compile(),
      /SandglassModule\.forRoot: expected `connection`/,
    );
  });

  it('forRoot imported twice (every processor would run twice)', async () => {
    @Module({ imports: [SandglassModule.forRoot({ connection: redis.url, prefix: 'other' })] })
    class SecondRoot {}
    const moduleRef = await Test.createTestingModule({
      imports: [SandglassModule.forRoot({ connection: redis.url }), SecondRoot],
      providers: [Recorder, ordersProcessor(uniqueQueue('nest-twice'))],
    }).compile();
    await assert.rejects(moduleRef.init(), /is already run by another SandglassModule\.forRoot/);
    await moduleRef.close();
  });

  it('a request-scoped @Processor', async () => {
    @Processor(uniqueQueue('nest-bad'))
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      process(): void {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [SandglassModule.forRoot({ connection: redis.url })],
      providers: [PerRequest],
    }).compile();
    await assert.rejects(moduleRef.init(), /@Processor PerRequest: a processor must be a singleton provider/);
    await moduleRef.close();
  });

  it('bad worker options name the processor, and the workers already started are closed (no connection left)', async () => {
    const before = await clientCount();
    @Processor(uniqueQueue('nest-bad'), { concurrency: 0 })
    class ZeroConcurrency {
      process(): void {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [SandglassModule.forRoot({ connection: redis.url })],
      providers: [Recorder, ordersProcessor(uniqueQueue('nest-fine')), ZeroConcurrency],
    }).compile();
    await assert.rejects(moduleRef.init(), /@Processor ZeroConcurrency: Expected `concurrency` to be an integer/);
    await moduleRef.close();
    await waitFor(async () => (await clientCount()) === before, 5_000, 'the connections to close');
    // The worker closed while it was still starting: nothing it was starting may connect later.
    await sleep(500);
    assert.equal(await clientCount(), before, 'no connection opened after the close');
  });
});
