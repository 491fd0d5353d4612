/** The injection token of the options given to `SandglassModule.forRoot` (or made by `forRootAsync`). */
export const SANDGLASS_MODULE_OPTIONS = Symbol('sandglass:module-options');

/** Metadata key of `@Processor` on a class. */
export const PROCESSOR_METADATA = 'sandglass:processor';

/** Metadata key of `@OnJobEvent` on a method. */
export const ON_JOB_EVENT_METADATA = 'sandglass:on-job-event';

/**
 * The injection token of the Queue that `SandglassModule.registerQueue({ name })` provides: for
 * custom providers and for overriding the queue in tests (`overrideProvider(getQueueToken('x'))`).
 * @example
 * { provide: ReportsService, useFactory: (queue: Queue) => new ReportsService(queue), inject: [getQueueToken('reports')] }
 */
export function getQueueToken(name: string): string {
  return `sandglass:queue:${name}`;
}
