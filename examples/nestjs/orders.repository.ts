import { Injectable } from '@nestjs/common';

/** An order as this example keeps it. */
export interface Order {
  readonly id: number;
  status: 'open' | 'paid' | 'closed';
}

/** Orders in memory: stands in for the application's database. */
@Injectable()
export class OrdersRepository {
  readonly #orders = new Map<number, Order>();
  #nextId = 1;

  create(): Order {
    const order: Order = { id: this.#nextId++, status: 'open' };
    this.#orders.set(order.id, order);
    return order;
  }

  find(id: number): Order | undefined {
    return this.#orders.get(id);
  }
}
