import { Module } from '@nestjs/common';
import { SandglassModule } from '../../src/nestjs/index.js';
import { OrderTimeoutProcessor } from './order-timeout.processor.js';
import { OrdersController } from './orders.controller.js';
import { OrdersRepository } from './orders.repository.js';
import { OrdersService } from './orders.service.js';

@Module({
  imports: [SandglassModule.registerQueue({ name: 'order-timeout' })],
  controllers: [OrdersController],
  providers: [OrdersRepository, OrdersService, OrderTimeoutProcessor],
})
export class OrdersModule {}

@Module({
  imports: [
    // Read at bootstrap, not at import: the Redis of the environment the app starts in.
    SandglassModule.forRootAsync({
      useFactory: () => ({
        connection: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
        defaultWorkerOptions: { closeTimeoutMs: 10_000 },
      }),
    }),
    OrdersModule,
  ],
})
export class AppModule {}
