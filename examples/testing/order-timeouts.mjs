// The code under test: an app's own order timeouts, a Queue and a Worker on the connection it is
// given. In production the connection is your Redis; in the tests beside this file it is the test
// environment's, whose clock the test moves.
import { Queue, Worker } from 'sandglass';

/** Closes each order that is still unpaid 30 minutes after `scheduleTimeout(orderId)`. */
export function orderTimeouts({ connection, orders }) {
  const queue = new Queue('order-timeout', { connection });
  const worker = new Worker(
    'order-timeout',
    async job => {
      if (!(await orders.isPaid(job.payload.orderId))) await orders.close(job.payload.orderId);
    },
    { connection },
  );
  return {
    scheduleTimeout: orderId => queue.add({ orderId }, { id: `order:${orderId}`, delay: '30m' }),
    async close() {
      await worker.close();
      await queue.close();
    },
  };
}
