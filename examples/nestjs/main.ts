// sandglass in a NestJS application: orders that close themselves when unpaid at their timeout.
//
//   REDIS_URL=redis://127.0.0.1:6379 ORDER_TIMEOUT=10s npx tsx examples/nestjs/main.ts
//   curl -X POST localhost:3000/orders            -> { "id": 1, "status": "open" }
//   curl -X POST localhost:3000/orders/1/pay      (within 10 s: the timeout is cancelled)
//   curl localhost:3000/orders/1                  (after 10 s unpaid: "closed")
//
// Ctrl-C (SIGINT) or SIGTERM: the workers stop taking jobs, running ones get closeTimeoutMs to
// finish (then go back to the queue for the next instance), the queues close, the process exits.
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule);
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 3000));
