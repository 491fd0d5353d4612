/**
 * sandglass: a delay queue on Redis. The public surface, listed explicitly.
 * @packageDocumentation
 */
export { Queue, type QueueOptions, type JobPage, type ListOptions } from './client/queue.js';
export { listQueues } from './client/list-queues.js';
/**
 * Moving the waiting jobs of a BullMQ queue into a sandglass queue: idempotent by job id (run it
 * again after an interruption), optionally deleting each moved job from BullMQ. See
 * docs/migrating-from-bullmq.md.
 */
export {
  migrateFromBullMQ,
  type MigrateFromBullMQOptions,
  type MigrateProgress,
  type MigrateResult,
  type SkippedJob,
} from './migrate/migrate-bullmq.js';
export { PullConsumer, MAX_CLAIM_WAIT_MS, CLAIM_TOKEN_PATTERN, type PullConsumerOptions, type PulledJob } from './worker/pull-consumer.js';
export { Worker, type WorkerOptions, type WorkerEvents, type Processor, type BatchProcessor } from './worker/worker.js';
export { MAX_CLAIM } from './worker/worker-options.js';
export { MIN_LEASE_MS, MAX_LEASE_MS } from './core/role-options.js';
export type { TracingParent } from './telemetry/consumer.js';
export { deliveryTraceparent, requestTraceparent } from './telemetry/telemetry.js';
export { resolveRate } from './flow/limits.js';
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
  VirtualClockError,
} from './core/errors.js';
export { parseDuration } from './core/duration.js';
export {
  MAX_DELAY_MS,
  DEFAULT_MAX_PAYLOAD_BYTES,
  MAX_ATTEMPTS,
  MAX_LIST_LIMIT,
  MAX_ERROR_LENGTH,
  QUEUE_NAME_RULE,
  JOB_ID_RULE,
  GROUP_RULE,
  MAX_GROUP_LENGTH,
  assertGroup,
  isQueueName,
  assertInteger,
  describe as describeValue,
} from './core/validate.js';
export { defaultLogger } from './core/logger.js';
export {
  JOB_STATES,
  DURATION_UNITS,
  SCHEDULE_OVERLAPS,
  SCHEDULE_CATCH_UPS,
  SCHEDULE_RUN_STATES,
  IF_EXISTS_VALUES,
  ON_EXPIRE_VALUES,
} from './core/types.js';
export { MIN_EVERY_MS, MAX_SCHEDULE_KEY_LENGTH } from './schedules/spec.js';
export type {
  AddOptions,
  AddSettings,
  IfExists,
  OnExpire,
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
  ScheduleOverlap,
  ScheduleCatchUp,
  ScheduleRunState,
  UnscheduleResult,
  QueueLimits,
  LimitsInput,
  ByIdOptions,
  GroupInfo,
  GroupLimits,
  GroupLimitsInfo,
  GroupLimitsInput,
  GroupPage,
  GroupTotals,
  Retention,
  RetentionInput,
  ResultTooLarge,
} from './core/types.js';
