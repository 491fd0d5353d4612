import { Inject, Injectable, NotFoundException } from '@nestjs/common';
import type { Duration, Queue } from '../../src/index.js';
import { InjectQueue } from '../../src/nestjs/index.js';
import { OrdersRepository, type Order } from './orders.repository.js';

/** The payload of an `order-timeout` job. */
export interface OrderTimeout {
  orderId: number;
}

/** How long an order may stay unpaid (ORDER_TIMEOUT, e.g. '10s' for a demo). */
const timeout = (): Duration => (process.env.ORDER_TIMEOUT as Duration | undefined) ?? '30m';

@Injectable()
export class OrdersService {
  // Tokens named explicitly: the example does not rely on emitDecoratorMetadata.
  constructor(
    @Inject(OrdersRepository) private readonly orders: OrdersRepository,
    @InjectQueue('order-timeout') private readonly timeouts: Queue<OrderTimeout>,
  ) {}

  /** Places an order and its timeout; the job id is the order's, so a retried request adds it once. */
  async place(): Promise<Order> {
    const order = this.orders.create();
    await this.timeouts.add({ orderId: order.id }, { delay: timeout(), id: `order:${order.id}` });
    return order;
  }

  /** Pays an order: its timeout is cancelled (and the processor checks the status anyway). */
  async pay(id: number): Promise<Order> {
    const order = this.get(id);
    if (order.status === 'open') {
      order.status = 'paid';
      await this.timeouts.cancel(`order:${id}`);
    }
    return order;
  }

  get(id: number): Order {
    const order = this.orders.find(id);
    if (!order) throw new NotFoundException(`no order ${id}`);
    return order;
  }
}
