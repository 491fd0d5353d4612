import { Inject, Logger } from '@nestjs/common';
import type { Job } from '../../src/index.js';
import { OnJobEvent, Processor, type JobProcessor } from '../../src/nestjs/index.js';
import { OrdersRepository } from './orders.repository.js';
import type { OrderTimeout } from './orders.service.js';

/** Closes an order still unpaid when its timeout falls due. */
@Processor('order-timeout', { concurrency: 50, maxAttempts: 5 })
export class OrderTimeoutProcessor implements JobProcessor<OrderTimeout> {
  readonly #logger = new Logger(OrderTimeoutProcessor.name);

  constructor(@Inject(OrdersRepository) private readonly orders: OrdersRepository) {}

  async process(job: Job<OrderTimeout>): Promise<string> {
    const order = this.orders.find(job.payload.orderId);
    // Idempotent: a job delivered again after a crash finds the order closed already.
    if (!order || order.status !== 'open') return 'nothing to do';
    order.status = 'closed';
    this.#logger.log(`order ${order.id} unpaid at its deadline: closed, stock released`);
    return 'closed';
  }

  @OnJobEvent('dead')
  onDead(job: Job<OrderTimeout>, error: unknown): void {
    this.#logger.error(`order-timeout ${job.id} is dead after ${job.attempt} attempts: ${String(error)}`);
  }
}
