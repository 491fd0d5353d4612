import { Controller, Get, Inject, Param, ParseIntPipe, Post } from '@nestjs/common';
import type { Order } from './orders.repository.js';
import { OrdersService } from './orders.service.js';

@Controller('orders')
export class OrdersController {
  constructor(@Inject(OrdersService) private readonly orders: OrdersService) {}

  @Post()
  place(): Promise<Order> {
    return this.orders.place();
  }

  @Post(':id/pay')
  pay(@Param('id', ParseIntPipe) id: number): Promise<Order> {
    return this.orders.pay(id);
  }

  @Get(':id')
  get(@Param('id', ParseIntPipe) id: number): Order {
    return this.orders.get(id);
  }
}
