/**
 * sandglass for NestJS: `SandglassModule` (forRoot, forRootAsync, registerQueue), `@InjectQueue`,
 * `@Processor` classes whose Workers start at application bootstrap and close on shutdown, and
 * `@OnJobEvent` methods. Nest's packages are optional peer dependencies of sandglass: only this
 * entry point (`sandglass/nestjs`) imports them.
 * @packageDocumentation
 */
export { SandglassModule } from './sandglass.module.js';
export {
  Processor,
  OnJobEvent,
  InjectQueue,
  type JobEventName,
  type ProcessorMetadata,
  type JobProcessor,
  type BatchJobProcessor,
} from './decorators.js';
export { SandglassWorkers } from './workers.js';
export { getQueueToken, SANDGLASS_MODULE_OPTIONS } from './tokens.js';
export { nestLogger } from './nest-logger.js';
export type {
  SandglassModuleOptions,
  SandglassModuleAsyncOptions,
  RegisterQueueOptions,
  ProcessorOptions,
  QueueDefaults,
} from './options.js';
