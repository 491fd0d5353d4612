/**
 * sandglass: a delay queue on Redis. The public surface, listed explicitly.
 * @packageDocumentation
 */
export { Queue, listQueues, type QueueOptions, type JobPage, type ListOptions } from './queue.js';
export { PullConsumer, type PullConsumerOptions, type PulledJob } from './pull-consumer.js';
export { Worker, type WorkerOptions, type WorkerEvents, type Processor, type BatchProcessor } from './worker.js';
export type { TracingParent } from './telemetry-consumer.js';
export {
  SandglassError,
  type SandglassErrorCode,
  ValidationError,
  PayloadTooLargeError,
  NotFoundError,
  ConflictError,
  LeaseLostError,
  ConnectionError,
  RedisOutOfMemoryError,
  NotReplicatedError,
  RedisCommandError,
  ClosedError,
  UnrecoverableError,
  IncompatibleStorageError,
} from './errors.js';
export { parseDuration } from './duration.js';
export { MAX_DELAY_MS, DEFAULT_MAX_PAYLOAD_BYTES, QUEUE_NAME_RULE, isQueueName, assertInteger } from './validate.js';
export { defaultLogger } from './logger.js';
export type {
  AddOptions,
  AddSettings,
  DueOptions,
  Duration,
  DurationText,
  DurationUnit,
  When,
  BulkJob,
  BackoffOption,
  BackoffFunction,
  CancelResult,
  ConnectionOption,
  Job,
  JobInfo,
  JobState,
  Logger,
  QueueCounters,
  QueueStats,
  RescheduleResult,
  JobSchedule,
  ScheduleSpec,
  ScheduleInfo,
  ScheduleRules,
  UnscheduleResult,
  QueueLimits,
  LimitsInput,
  Retention,
  RetentionInput,
  ResultTooLarge,
} from './types.js';
