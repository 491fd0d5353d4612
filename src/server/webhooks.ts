/**
 * Push delivery: a queue bound to a URL gets each job POSTed there, signed, at its due time. One
 * sandglass Worker per binding does the timing, the leases, the retries and the dead letters; this
 * file only turns a job into an HTTP request and the answer into an ack or a failure.
 */
import { EventEmitter } from 'node:events';
import { Agent as HttpAgent, request as httpRequest, type Agent } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import {
  ClosedError,
  QUEUE_NAME_RULE,
  SandglassError,
  UnrecoverableError,
  ValidationError,
  Worker,
  assertInteger,
  defaultLogger,
  deliveryTraceparent,
  isQueueName,
  resolveRate,
  type ConnectionOption,
  type Duration,
  type Job,
  type Logger,
} from '../index.js';
import { SlidingWindow, type Rate } from './rate-window.js';
import { MIN_SECRET_LENGTH, signPayload } from './signature.js';

export { signPayload, verifySignature, DEFAULT_TOLERANCE_SECONDS, type VerifyOptions } from './signature.js';

/** A queue bound to a target URL. */
export interface WebhookBinding {
  /** The queue whose jobs are delivered. One binding per queue. */
  queue: string;
  /** Where jobs are POSTed: an absolute http(s) URL; `user:password@` in it is sent as Basic authentication. */
  url: string;
  /** HMAC key of the `Sandglass-Signature` header, shared with the receiver: at least 16 characters. */
  secret: string;
  /** Requests in flight to this URL at most. @default 10 */
  concurrency?: number;
  /**
   * Requests started to this URL by this process: at most `max` in any sliding window of `per`
   * (ms, or a duration text such as '1s'). A job held by it waits, under its lease, for the oldest
   * start to leave the window. Unset: no limit besides the queue's own limits.
   * @example { max: 100, per: '1s' }
   */
  rate?: { max: number; per: Duration };
  /** How long one request may take, answer body included, before it counts as failed. @default 10000 */
  timeoutMs?: number;
  /** Deliveries before a job is dead-lettered (a job's own `maxAttempts` wins). @default 5 */
  maxAttempts?: number;
}

/** Options of `new WebhookDelivery`. */
export interface WebhookDeliveryOptions {
  /** Where Redis is, as for a Worker. */
  connection: ConnectionOption;
  /** Prefix of every Redis key; the same as the queues'. @default 'sg' */
  prefix?: string;
  bindings: WebhookBinding[];
  /** Where warnings and errors without an 'error' listener go. Default: Node process warnings. */
  logger?: Logger;
  /** How long `close()` lets requests in flight finish before handing their jobs back. @default 10000 */
  closeTimeoutMs?: number;
}

/** Events of a WebhookDelivery and their arguments. */
export interface WebhookDeliveryEvents {
  /**
   * The receiver answered 2xx and the ack landed. `latenessMs`: the start of the delivery (claim)
   * minus the due time (local clock); `heldMs`: how long the binding's `rate` then held the request.
   */
  delivered: [queue: string, job: Job<unknown>, latenessMs: number, heldMs: number];
  /** An attempt failed; `retryAt` is when the next one runs (epoch ms), undefined when the job went dead. */
  failed: [queue: string, job: Job<unknown>, error: Error, retryAt: number | undefined];
  /** The job is a dead letter: out of attempts, or the receiver answered 410 Gone. */
  dead: [queue: string, job: Job<unknown>, error: Error];
  /** A Redis call failed; delivery goes on by itself. */
  error: [error: Error];
}

/** Why an attempt failed. Its message is what the dead letter keeps as `lastError`. */
export class WebhookError extends SandglassError {
  /** The HTTP status of the answer; undefined for a timeout or a network error. */
  readonly status: number | undefined;

  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    super('ERR_WEBHOOK', message, options);
    this.status = status;
  }
}

/** A binding with its defaults, and the origin that error messages name (paths and queries may hold tokens). */
type ResolvedBinding = Required<Omit<WebhookBinding, 'rate'>> & {
  readonly rate: Rate | undefined;
  readonly origin: string;
  readonly https: boolean;
};

const DEFAULTS = { concurrency: 10, timeoutMs: 10_000, maxAttempts: 5 };
const FIELDS = ['queue', 'url', 'secret', 'concurrency', 'rate', 'timeoutMs', 'maxAttempts'];
/** Bytes of an answer read at most: enough for the error message, and to reuse the connection. */
const MAX_ANSWER_BYTES = 16 * 1024;
const ERROR_BODY_CHARS = 200;
const USER_AGENT = 'sandglass-webhooks/1';
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Delivers the jobs of bound queues to their URLs at their due times: a self-hosted QStash or Cloud
 * Tasks on your own Redis. A 2xx answer acks the job; 410 Gone dead-letters it at once; any other
 * answer, a network error or a timeout fails the attempt, and the job is retried with backoff until
 * `maxAttempts`, then dead-lettered with the last error.
 *
 * @example
 * const delivery = new WebhookDelivery({ connection: 'redis://127.0.0.1:6379', bindings: [
 *   { queue: 'order-timeout', url: 'https://shop.example/hooks/order-timeout', secret: process.env.HOOK_SECRET! },
 * ] });
 * delivery.on('dead', (queue, job, error) => log.error({ queue, id: job.id, error }, 'webhook gave up'));
 * await delivery.start();
 * process.on('SIGTERM', () => void delivery.close());
 */
export class WebhookDelivery extends EventEmitter<WebhookDeliveryEvents> {
  readonly #bindings: ResolvedBinding[];
  readonly #connection: ConnectionOption;
  readonly #prefix: string;
  readonly #logger: Logger;
  readonly #closeTimeoutMs: number;
  readonly #workers: Worker<unknown>[] = [];
  readonly #agents: Agent[] = [];
  #started: Promise<void> | undefined;
  #closed: Promise<void> | undefined;

  constructor(options: WebhookDeliveryOptions) {
    super();
    if (!options?.connection) throw new ValidationError('Expected `connection`: a Redis URL, ioredis options or an ioredis instance');
    this.#prefix = options.prefix ?? 'sg';
    if (!isQueueName(this.#prefix))
      throw new ValidationError(`Expected \`prefix\` to be ${QUEUE_NAME_RULE.description}, got '${String(this.#prefix).slice(0, 100)}'`);
    this.#closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
    assertInteger('closeTimeoutMs', this.#closeTimeoutMs, 0, 3_600_000);
    this.#bindings = resolveBindings(options.bindings);
    this.#connection = options.connection;
    this.#logger = options.logger ?? defaultLogger;
  }

  /** Starts one Worker per binding; resolves when all of them listen for due jobs. */
  start(): Promise<void> {
    if (this.#closed) return Promise.reject(new ClosedError('This WebhookDelivery was closed; create a new one'));
    this.#started ??= this.#start();
    return this.#started;
  }

  /**
   * Stops taking jobs and waits up to `closeTimeoutMs` for requests in flight; those still running
   * then are aborted and their jobs handed back, to be delivered again at once by the next process
   * (the interrupted attempt does not count). Nothing is lost.
   */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    await Promise.all(this.#workers.map(worker => worker.close()));
    for (const agent of this.#agents) agent.destroy(); // idle keep-alive connections
  }

  async #start(): Promise<void> {
    for (const binding of this.#bindings) this.#workers.push(this.#createWorker(binding));
    await Promise.all(this.#workers.map(worker => worker.waitUntilReady()));
  }

  #createWorker(binding: ResolvedBinding): Worker<unknown> {
    const { queue } = binding;
    // At most `concurrency` connections to the target, kept alive between deliveries.
    const agent = new (binding.https ? HttpsAgent : HttpAgent)({ keepAlive: true, maxSockets: binding.concurrency });
    this.#agents.push(agent);
    const limiter = binding.rate && new SlidingWindow(binding.rate);
    const worker = new Worker<unknown>(
      queue,
      job => deliver(binding, agent, job, limiter).catch(error => this.#failure(queue, job, error)),
      {
        connection: this.#connection,
        prefix: this.#prefix,
        concurrency: binding.concurrency,
        maxAttempts: binding.maxAttempts,
        closeTimeoutMs: this.#closeTimeoutMs,
        logger: this.#logger,
      },
    );
    worker.on('completed', (job, result) =>
      this.emit('delivered', queue, job, (result as Delivered).latenessMs, (result as Delivered).heldMs),
    );
    worker.on('failed', (job, error, retryAt) => this.emit('failed', queue, job, asError(error), retryAt));
    worker.on('dead', (job, error) => this.emit('dead', queue, job, asError(error)));
    worker.on('stale', job =>
      this.#logger.warn(`sandglass webhooks: the ack of job ${job.id} of ${queue} came after its lease ran out; it may be delivered twice`),
    );
    worker.on('error', error => this.#reportError(error));
    return worker;
  }

  /**
   * Rethrows a failed delivery to its Worker without stack frames. The Worker keeps an error's
   * `stack` as the job's `lastError`, which is right when the handler is the user's own code; here
   * the service is the handler, and the frames would show every API consumer the service's files
   * (`file:///.../dist/server/webhooks.js:245:36`). The dead letter keeps the message alone, as
   * documented (docs/webhooks.md); a network error keeps its own stack on `cause`, and an error
   * that is not one of the expected failures (a bug) has its stack logged here.
   */
  #failure(queue: string, job: Job<unknown>, error: unknown): never {
    const failure = asError(error);
    if (!(failure instanceof SandglassError))
      this.#logger.error(
        `sandglass webhooks: delivery of job ${job.id} of ${queue} failed unexpectedly: ${failure.stack ?? failure.message}`,
      );
    Object.defineProperty(failure, 'stack', { value: failure.message, writable: true, configurable: true });
    throw failure;
  }

  #reportError(error: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else this.#logger.error(`sandglass webhooks: ${error.message}`);
  }
}

/**
 * Parses the `SANDGLASS_WEBHOOKS` setting: a JSON array of {@link WebhookBinding}. Empty or unset
 * means no bindings. The content is never quoted in errors: it holds the secrets.
 */
export function parseWebhookBindings(json: string | undefined, source = 'SANDGLASS_WEBHOOKS'): WebhookBinding[] {
  if (json === undefined || json.trim() === '') return [];
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new ValidationError(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(value)) throw new ValidationError(`Expected ${source} to be a JSON array of { queue, url, secret, ... }`);
  resolveBindings(value);
  return value as WebhookBinding[];
}

// --- one delivery ---------------------------------------------------------------------------

interface Delivered {
  latenessMs: number;
  heldMs: number;
}

interface Answer {
  status: number;
  statusText: string;
  /** The start of the answer's body. */
  text: string;
}

/**
 * POSTs one job, once the binding's rate allows it. Resolves on 2xx; throws otherwise, which makes
 * the Worker retry or dead-letter it.
 */
async function deliver(binding: ResolvedBinding, agent: Agent, job: Job<unknown>, limiter: SlidingWindow | undefined): Promise<Delivered> {
  const startedAt = Date.now();
  const holding = performance.now();
  // Aborted by close() or a lost lease: the rejection hands the job back like an aborted request.
  const markSent = limiter && (await limiter.acquire(job.signal));
  // 0 unless the rate really made it wait (a start granted at once is not held).
  const heldMs = limiter ? Math.floor(performance.now() - holding) : 0;
  // A job of a group says which (absent: the default group); a schedule's tick says which one it is
  // ({ key, tickAt }), as job.group and job.schedule do.
  const body = JSON.stringify({
    id: job.id,
    queue: job.queue,
    payload: job.payload,
    dueAt: job.dueAt,
    attempt: job.attempt,
    ...(job.group === undefined ? {} : { group: job.group }),
    ...(job.schedule === undefined ? {} : { schedule: job.schedule }),
  });
  const sentAt = Date.now();
  const timestamp = Math.floor(sentAt / 1000);
  const target = binding.origin;
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new WebhookError(`Webhook ${target} did not answer within ${binding.timeoutMs} ms`)),
    binding.timeoutMs,
  );
  // close() and a lost lease abort job.signal: stop waiting for the receiver then.
  const onJobAbort = () => controller.abort(job.signal.reason);
  if (job.signal.aborted) onJobAbort();
  else job.signal.addEventListener('abort', onJobAbort, { once: true });
  try {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(body)),
      'User-Agent': USER_AGENT,
      'Sandglass-Id': headerSafe(job.id),
      'Sandglass-Attempt': String(job.attempt),
      'Sandglass-Timestamp': String(timestamp),
      'Sandglass-Signature': signPayload(binding.secret, timestamp, body),
    };
    // The receiver joins the job's trace: under this delivery's `process` span when this process
    // is traced, else under the context the job was added in.
    const traceparent = deliveryTraceparent(job);
    if (traceparent !== undefined) headers.traceparent = traceparent;
    const answer = await post(binding, agent, headers, body, controller.signal, markSent);
    if (answer.status >= 200 && answer.status < 300) return { latenessMs: startedAt - job.dueAt, heldMs };
    throw statusError(target, answer);
  } catch (error) {
    if (controller.signal.aborted) throw controller.signal.reason;
    if (error instanceof WebhookError || error instanceof UnrecoverableError) throw error;
    throw new WebhookError(`Webhook ${target} request failed: ${(error as Error).message}`, undefined, { cause: error });
  } finally {
    clearTimeout(timer);
    job.signal.removeEventListener('abort', onJobAbort);
  }
}

/**
 * One POST with node:http, on the binding's keep-alive agent. Not fetch: on loopback fetch peaked
 * at about 2,200 requests/s on the development machine where node:http made 6,800 or more, and
 * node:http never follows a redirect (a followed 301/302 turns the POST into a bodiless GET, whose
 * 200 would ack a job that was never delivered).
 */
function post(
  binding: ResolvedBinding,
  agent: Agent,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
  onSent?: () => void,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = (binding.https ? httpsRequest : httpRequest)(binding.url, { method: 'POST', agent, headers, signal }, response => {
      const chunks: Buffer[] = [];
      let size = 0;
      const settle = () => {
        const text = Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
        resolve({ status: response.statusCode ?? 0, statusText: response.statusMessage ?? '', text });
      };
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        // Enough for the verdict and the error message: a huge answer is not read, its connection is dropped.
        if (size >= MAX_ANSWER_BYTES) {
          settle();
          response.destroy();
        }
      });
      response.on('end', settle);
      response.on('error', reject);
      // A cut answer is a failure even with a 2xx status line: a second delivery beats a lost one.
      response.on('close', () => {
        if (!response.complete) reject(new Error('the connection closed before the answer was complete'));
      });
    });
    request.on('error', reject);
    // The request is on the wire (after a new connection's setup): the rate counts its start from here.
    if (onSent) request.on('finish', onSent);
    request.end(body);
  });
}

function statusError(target: string, answer: Answer): Error {
  const status = `${answer.status}${answer.statusText ? ` ${answer.statusText}` : ''}`;
  const excerpt = answer.text
    .slice(0, ERROR_BODY_CHARS)
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim();
  const redirect = answer.status >= 300 && answer.status < 400 ? ' (redirects are not followed: bind the URL it points to)' : '';
  const message = `Webhook ${target} answered ${status}${redirect}${excerpt ? `: ${excerpt}` : ''}`;
  const error = new WebhookError(message, answer.status);
  // 410 Gone: the receiver says the endpoint is gone for good; further attempts cannot succeed.
  return answer.status === 410 ? new UnrecoverableError(message, { cause: error }) : error;
}

/** Header values must be bytes: an id beyond printable ASCII is sent percent-encoded (the body has it as is). */
function headerSafe(id: string): string {
  return PRINTABLE_ASCII.test(id) ? id : encodeURIComponent(id);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

// --- validation -----------------------------------------------------------------------------

function resolveBindings(bindings: unknown): ResolvedBinding[] {
  if (!Array.isArray(bindings)) throw new ValidationError('Expected `bindings` to be an array of { queue, url, secret, ... }');
  const resolved = bindings.map((binding, index) => resolveBinding(binding, `bindings[${index}]`));
  const seen = new Set<string>();
  for (const { queue } of resolved) {
    // Two Workers on one queue would compete for its jobs, each job reaching one URL: never what a second binding means.
    if (seen.has(queue)) throw new ValidationError(`Queue '${queue}' is bound twice: a queue delivers to one URL`);
    seen.add(queue);
  }
  return resolved;
}

function resolveBinding(value: unknown, where: string): ResolvedBinding {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ValidationError(`Expected ${where} to be an object { queue, url, secret, ... }`);
  const binding = value as Record<string, unknown>;
  const unknown = Object.keys(binding).find(key => !FIELDS.includes(key));
  if (unknown !== undefined)
    throw new ValidationError(`${where} has an unknown field \`${unknown.slice(0, 40)}\` (known: ${FIELDS.join(', ')})`);
  const { queue, url, secret } = binding;
  // The library's rule, checked here so that a bad binding fails before anything connects.
  if (!isQueueName(queue)) throw new ValidationError(`Expected ${where}.queue to be a queue name of ${QUEUE_NAME_RULE.description}`);
  const target = checkUrl(url, `${where}.url`);
  // Never quote the secret, not even in part.
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    const got = typeof secret === 'string' ? `${secret.length} characters` : typeof secret;
    throw new ValidationError(`Expected ${where}.secret to be a string of at least ${MIN_SECRET_LENGTH} characters, got ${got}`);
  }
  const concurrency = binding.concurrency ?? DEFAULTS.concurrency;
  assertInteger(`${where}.concurrency`, concurrency, 1, 10_000);
  const timeoutMs = binding.timeoutMs ?? DEFAULTS.timeoutMs;
  assertInteger(`${where}.timeoutMs`, timeoutMs, 1, 1_800_000);
  const maxAttempts = binding.maxAttempts ?? DEFAULTS.maxAttempts;
  assertInteger(`${where}.maxAttempts`, maxAttempts, 1, 1_000);
  const rate = binding.rate === undefined ? undefined : toRate(binding.rate, `${where}.rate`);
  return {
    queue,
    url: target.href,
    secret,
    concurrency,
    rate,
    timeoutMs,
    maxAttempts,
    origin: target.origin,
    https: target.protocol === 'https:',
  };
}

/** The binding's `rate`, by the same rule as a queue's `rate` limit (limits.ts). */
function toRate(value: unknown, name: string): Rate {
  const { max, per } = resolveRate(value, name);
  return { max, perMs: per };
}

/** Parses an absolute http(s) URL. `user:password@` in it is sent as Basic authentication. */
function checkUrl(value: unknown, name: string): URL {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  // The URL itself is not quoted: its credentials, path or query may carry a token.
  if (!url)
    throw new ValidationError(
      `Expected ${name} to be an absolute http(s) URL, got ${typeof value === 'string' ? 'a string that is not one' : typeof value}`,
    );
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ValidationError(`Expected ${name} to be an http(s) URL, got protocol '${url.protocol}'`);
  return url;
}
