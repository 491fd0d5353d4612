import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Queue, ValidationError, type ConnectionOption, type Logger } from '../index.js';
import { nestLogger } from './nest-logger.js';
import type { RegisterQueueOptions, SandglassModuleOptions } from './options.js';
import { SANDGLASS_MODULE_OPTIONS } from './tokens.js';

/** Where a queue's jobs are: a worker must read the keys its queue writes. */
export interface QueuePlace {
  readonly connection: ConnectionOption;
  readonly prefix: string | undefined;
}

/**
 * The application's Queues, one per registered name, opened when Nest first injects them and closed
 * at `onApplicationShutdown`: after the HTTP server stopped and the workers closed, so that requests
 * and handlers still running during shutdown can add jobs.
 * @internal
 */
@Injectable()
export class QueueRegistry implements OnApplicationShutdown {
  readonly options: SandglassModuleOptions;
  readonly logger: Logger;
  readonly #queues = new Map<string, { entry: RegisterQueueOptions; queue: Queue<unknown> }>();

  constructor(@Inject(SANDGLASS_MODULE_OPTIONS) options: SandglassModuleOptions) {
    if (typeof options !== 'object' || options === null || !options.connection) {
      throw new ValidationError('SandglassModule.forRoot: expected `connection`: a Redis URL, ioredis options or an ioredis instance');
    }
    this.options = options;
    this.logger = options.logger ?? nestLogger();
  }

  /**
   * The Queue of a `registerQueue` entry. The same name registered by two modules gets one Queue
   * when both entries say the same; entries that differ would make two queues that disagree on
   * where the jobs are, so that is refused.
   */
  open(entry: RegisterQueueOptions): Queue<unknown> {
    const known = this.#queues.get(entry.name);
    if (known) {
      if (!sameEntry(known.entry, entry)) {
        throw new ValidationError(`SandglassModule.registerQueue: queue '${entry.name}' is registered twice with different options`);
      }
      return known.queue;
    }
    const { name, connection, prefix, ...own } = entry;
    const queue = new Queue<unknown>(name, {
      ...this.options.defaultQueueOptions,
      ...own,
      connection: connection ?? this.options.connection,
      prefix: prefix ?? this.options.prefix,
      logger: this.logger,
    });
    this.#queues.set(name, { entry, queue });
    return queue;
  }

  /** The connection and prefix of a queue: its `registerQueue` entry's, else `forRoot`'s. */
  placeOf(name: string): QueuePlace {
    const entry = this.#queues.get(name)?.entry;
    return { connection: entry?.connection ?? this.options.connection, prefix: entry?.prefix ?? this.options.prefix };
  }

  async onApplicationShutdown(): Promise<void> {
    const queues = [...this.#queues.values()];
    this.#queues.clear();
    await Promise.all(queues.map(({ queue }) => queue.close()));
  }
}

function sameEntry(a: RegisterQueueOptions, b: RegisterQueueOptions): boolean {
  const { connection: connectionA, ...restA } = a;
  const { connection: connectionB, ...restB } = b;
  return connectionA === connectionB && JSON.stringify(restA) === JSON.stringify(restB);
}
