/**
 * What the bench needs from a queue library, so that every workload runs the same code against
 * sandglass and BullMQ. Each driver talks to one private Redis server and owns its connections.
 */

export type LibraryName = 'sandglass' | 'bullmq';
export const LIBRARIES: readonly LibraryName[] = ['sandglass', 'bullmq'];

export interface Payload {
  readonly pad: string;
}

/** The same payload for every job of both libraries: exactly 100 bytes of JSON. */
export const PAYLOAD: Payload = { pad: 'x'.repeat(90) };
export const PAYLOAD_BYTES = Buffer.byteLength(JSON.stringify(PAYLOAD));

/** A delay far enough away that no job of a measurement falls due during the bench. */
export const FAR_FUTURE_MS = 86_400_000;

export interface WorkerSpec {
  readonly concurrency: number;
  /** sandglass only: the handler receives arrays of up to `batchSize` jobs. */
  readonly batchSize?: number;
  /** Called in the handler for each job with its due time and the handler's start time (epoch ms). */
  readonly onStart?: (dueAt: number, startedAt: number) => void;
  /** Called when the library reports a job completed (its ack landed in Redis). */
  readonly onCompleted: () => void;
  /** A Redis error the worker reported (it retries on its own). */
  readonly onError: (error: Error) => void;
}

export interface RunningWorker {
  close(): Promise<void>;
}

export interface Driver {
  readonly library: LibraryName;
  /** Adds `count` copies of PAYLOAD due `delayMs` from now, `chunk` jobs per `addBulk` call, one call at a time. */
  addJobs(queue: string, count: number, delayMs: number, chunk: number): Promise<void>;
  /** Adds one copy of PAYLOAD per entry of `delaysMs`, each due that long from now, `chunk` jobs per `addBulk` call. */
  addJobsWithDelays(queue: string, delaysMs: readonly number[], chunk: number): Promise<void>;
  /** Jobs waiting in the queue (delayed or due, not running): a sanity check of what was written. */
  countWaiting(queue: string): Promise<number>;
  /** Starts one worker and resolves once it is connected and listening. */
  startWorker(queue: string, spec: WorkerSpec): Promise<RunningWorker>;
  /** Closes every queue object the driver opened (workers are closed by their owners). */
  close(): Promise<void>;
}
