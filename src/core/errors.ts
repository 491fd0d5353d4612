/**
 * The stable codes of {@link SandglassError}, one per subclass. A union, so that a mapping over the
 * codes (the HTTP API's status per error, the CLI's exit code) is checked for exhaustiveness by the
 * compiler: a new code fails to compile until every mapping says what it means.
 */
export type SandglassErrorCode =
  | 'ERR_VALIDATION'
  | 'ERR_PAYLOAD_TOO_LARGE'
  | 'ERR_NOT_FOUND'
  | 'ERR_CONFLICT'
  | 'ERR_LEASE_LOST'
  | 'ERR_CONNECTION'
  | 'ERR_REDIS_OOM'
  | 'ERR_NOT_REPLICATED'
  | 'ERR_REDIS'
  /** A queue is stored in a format newer than this sandglass knows (IncompatibleStorageError). */
  | 'ERR_INCOMPATIBLE_STORAGE'
  | 'ERR_CLOSED'
  | 'ERR_UNRECOVERABLE'
  /** The test kit's virtual clock cannot run on this server (VirtualClockError). */
  | 'ERR_VIRTUAL_CLOCK'
  /** A setting of `sandglass serve` is wrong (the service's ConfigError). */
  | 'ERR_CONFIG'
  /** A webhook delivery attempt failed (the service's WebhookError). */
  | 'ERR_WEBHOOK'
  /** A part of sandglass is missing from this build (e.g. the service's modules). */
  | 'ERR_UNAVAILABLE'
  /** `startLocalRedis` could not run redis-server (not installed, or not executable). */
  | 'ERR_REDIS_SERVER_NOT_FOUND'
  /** An HTTP API refusal that carries its own status and API code (the service's HttpError). */
  | 'ERR_HTTP';

/**
 * Every error sandglass throws is a {@link SandglassError} with a stable `code`, so callers (and the
 * HTTP layer) can branch on the kind of failure without parsing messages.
 */
export class SandglassError extends Error {
  /** A stable, machine-readable code such as `ERR_VALIDATION`. */
  readonly code: SandglassErrorCode;

  constructor(code: SandglassErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** An argument or option is invalid. Nothing was written to Redis. */
export class ValidationError extends SandglassError {
  /** `cause`: for a refused entry of a bulk call, the entry's own ValidationError (its message without "In jobs[i]: "). */
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_VALIDATION', message, options);
  }
}

/** A payload's JSON is larger than the queue's `maxPayloadBytes`. Nothing was written to Redis. */
export class PayloadTooLargeError extends SandglassError {
  /** Size of the serialized payload in bytes. */
  readonly sizeBytes: number;
  /** The configured limit in bytes. */
  readonly limitBytes: number;

  constructor(sizeBytes: number, limitBytes: number) {
    super('ERR_PAYLOAD_TOO_LARGE', `Payload is ${sizeBytes} bytes of JSON, over the limit of ${limitBytes} bytes`);
    this.sizeBytes = sizeBytes;
    this.limitBytes = limitBytes;
  }
}

/** The job does not exist (never added, or already completed or cancelled); or, on pause/resume, the queue. */
export class NotFoundError extends SandglassError {
  constructor(message: string) {
    super('ERR_NOT_FOUND', message);
  }
}

/** The operation conflicts with the job's current state, e.g. replacing a job that is running. */
export class ConflictError extends SandglassError {
  constructor(message: string) {
    super('ERR_CONFLICT', message);
  }
}

/**
 * The worker no longer holds the job's lease: it expired (the worker was too slow or frozen) and the
 * job was handed to another worker, or the worker is closing. Used as the reason of `job.signal`.
 */
export class LeaseLostError extends SandglassError {
  constructor(message: string) {
    super('ERR_LEASE_LOST', message);
  }
}

/** Redis could not be reached, the connection dropped, or Redis is busy. The call may be retried. */
export class ConnectionError extends SandglassError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CONNECTION', message, options);
  }
}

/** Redis refused a write because `maxmemory` is reached. Nothing was written. */
export class RedisOutOfMemoryError extends SandglassError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_REDIS_OOM', message, options);
  }
}

/**
 * The job was written, but fewer replicas than asked for (`waitForReplicas`) confirmed it in time:
 * a failover now could lose it. Adding it again with the same id is safe (adds are idempotent).
 */
export class NotReplicatedError extends SandglassError {
  /** Replicas that confirmed the write. */
  readonly acknowledgedReplicas: number;
  /** Ids written by the call (all of them, only not confirmed by enough replicas). */
  readonly ids: string[];

  constructor(acknowledgedReplicas: number, wanted: number, ids: string[]) {
    super('ERR_NOT_REPLICATED', `Written, but ${acknowledgedReplicas} of the ${wanted} replica(s) asked for confirmed it in time`);
    this.acknowledgedReplicas = acknowledgedReplicas;
    this.ids = ids;
  }
}

/** Redis answered with an error sandglass does not expect (a bug, or a foreign change to its keys). */
export class RedisCommandError extends SandglassError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_REDIS', message, options);
  }
}

/**
 * The test kit's virtual clock (sandglass/testing) cannot run here: the server on the test
 * environment's port is not the one it started (it restarted, or another took the port), or it
 * refused the clock's library. Nothing ran: a virtual clock never falls back to the real one.
 */
export class VirtualClockError extends SandglassError {
  constructor(message: string) {
    super('ERR_VIRTUAL_CLOCK', message);
  }
}

/** The Queue or Worker was closed; create a new one. */
export class ClosedError extends SandglassError {
  constructor(message: string) {
    super('ERR_CLOSED', message);
  }
}

/**
 * Throw this from a handler to send the job straight to the dead letters, skipping the remaining
 * attempts (for failures that a retry cannot fix, such as a malformed payload).
 *
 * @example
 * if (!order) throw new UnrecoverableError(`order ${job.payload.orderId} does not exist`);
 */
export class UnrecoverableError extends SandglassError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_UNRECOVERABLE', message, options);
  }
}

/**
 * A queue is stored in a storage format newer than this version of sandglass knows: a newer
 * sandglass created or upgraded it. This process refuses the queue at its first touch and writes
 * nothing to it; upgrade this process (README, "Upgrading").
 */
export class IncompatibleStorageError extends SandglassError {
  /** The queue refused. */
  readonly queue: string;
  /** The format the queue is stored in. */
  readonly foundFormat: number;
  /** The newest format this version of sandglass reads and writes. */
  readonly supportedFormat: number;

  constructor(queue: string, partition: number, foundFormat: number, supportedFormat: number) {
    super(
      'ERR_INCOMPATIBLE_STORAGE',
      `Queue '${queue}' is stored in format ${foundFormat} (partition ${partition}), newer than this sandglass knows (format ${supportedFormat}): ` +
        `a newer sandglass wrote it. Nothing was written; upgrade this process to a sandglass that reads format ${foundFormat} (README, "Upgrading").`,
    );
    this.queue = queue;
    this.foundFormat = foundFormat;
    this.supportedFormat = supportedFormat;
  }
}
