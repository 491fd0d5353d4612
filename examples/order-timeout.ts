// The classic delay-queue job: close an order if it is still unpaid when its timeout falls due.
// Twelve orders are placed with 1-4 s timeouts; a few get paid in time (their timeout is
// cancelled), one customer asks for more time (rescheduled), the rest time out and are closed.
//
//   npm start                      (starts a private redis-server for the demo)
//   REDIS_URL=redis://... npm start (uses your Redis)
import { Queue, Worker } from '../src/index.js';
import { RedisServerNotFoundError, startLocalRedis, type LocalRedis } from '../src/deploy/local-redis.js';

interface OrderTimeout {
  orderId: number;
}

const ORDERS = 12;
const started = Date.now();
const at = () => `${((Date.now() - started) / 1000).toFixed(3).padStart(6)}s`;

let server: LocalRedis | undefined;
const url = process.env.REDIS_URL ?? (server = await startDemoRedis()).url;
console.log(`${at()}  Redis at ${url}${server ? ' (private, started for this demo)' : ''}`);

const timeouts = new Queue<OrderTimeout>('order-timeout-demo', { connection: url });
await timeouts.purgeDead();
const open = new Set<number>();
const settled = new Map<number, string>();

const worker = new Worker<OrderTimeout>(
  'order-timeout-demo',
  async job => {
    const { orderId } = job.payload;
    const lateMs = Date.now() - job.dueAt;
    if (!open.has(orderId)) return; // paid in the meantime: nothing to do (idempotent handler)
    open.delete(orderId);
    settled.set(orderId, 'timed out');
    console.log(`${at()}  order ${orderId} unpaid at its deadline: closed, stock released (handler started ${lateMs} ms after due)`);
  },
  { connection: url, concurrency: 10 },
);
await worker.waitUntilReady();

for (let orderId = 1; orderId <= ORDERS; orderId++) {
  const delay = 1_000 + Math.round(Math.random() * 3_000);
  open.add(orderId);
  await timeouts.add({ orderId }, { id: `order:${orderId}`, delay });
  console.log(`${at()}  order ${orderId} placed; closes in ${delay} ms unless paid`);
}
// A producer retrying the same add (say, after a network blip) does not create a second timeout.
await timeouts.add({ orderId: 1 }, { id: 'order:1', delay: '1h' });

const stats = await timeouts.stats();
console.log(`${at()}  waiting: ${stats.delayed} delayed, ${stats.ready} ready, ${stats.active} active`);

async function pay(orderId: number): Promise<void> {
  const answer = await timeouts.cancel(`order:${orderId}`);
  if (answer === 'cancelled') {
    open.delete(orderId);
    settled.set(orderId, 'paid');
    console.log(`${at()}  order ${orderId} paid: timeout cancelled`);
  } else {
    console.log(`${at()}  order ${orderId} paid too late: timeout is ${answer}`);
  }
}

setTimeout(() => void pay(3), 500);
setTimeout(() => void pay(7), 700);
setTimeout(() => void pay(10), 900);
setTimeout(async () => {
  const answer = await timeouts.reschedule('order:5', { delay: '2s' });
  console.log(`${at()}  order 5 asked for more time: ${answer}, now closes in 2 s`);
}, 600);

while (settled.size < ORDERS) await new Promise(resolve => setTimeout(resolve, 50));

const paid = [...settled.values()].filter(result => result === 'paid').length;
console.log(`${at()}  done: ${paid} paid, ${ORDERS - paid} timed out; ${JSON.stringify(await timeouts.counters())}`);
await worker.close();
await timeouts.close();
await server?.stop();

/** The demo's private Redis; without redis-server, one line saying what to install instead of a stack trace. */
async function startDemoRedis(): Promise<LocalRedis> {
  try {
    return await startLocalRedis({ appendOnly: false });
  } catch (error) {
    if (!(error instanceof RedisServerNotFoundError)) throw error;
    console.error(`sandglass demo: ${error.message}`);
    process.exit(1);
  }
}
