import type { FailEntry, LeaseRef, PartitionStorage } from '../store/partition-storage.js';

/**
 * What became of an ack or fail, as the script decided it: applied (for an ack also: applied earlier
 * by this same token, the ack being resent after a lost reply); `stale` (the token does not hold the
 * job: its lease ran out and another delivery took it, or completed it); `not-found` (an ack of a
 * job that does not exist and did not complete lately); or given up (sends kept failing until well
 * past the lease, or the worker closed first).
 */
export type SettleOutcome = 'applied' | 'stale' | 'not-found' | 'gave-up';

/**
 * An ack or fail to send, and who hears its outcome. The caller passes its own object (a Worker its
 * held job), so that settling a job costs no Promise and no closure.
 */
export interface Settlement<E extends LeaseRef> {
  readonly settleEntry: E;
  /** The lease's end (the caller's clock): failed sends are retried until RETRY_PAST_LEASE_MS after it. */
  readonly settleGiveUpAt: number;
  settled(outcome: SettleOutcome): void;
}

/** An ack of a job of a queue that keeps completed jobs: it carries the result to keep. */
export interface KeptSettlement extends Settlement<LeaseRef> {
  /** The result's JSON to keep ('' for none): src/flow/retention.ts keptResultJson. */
  readonly keptResult: string;
}

interface StoreQueue {
  acks: Settlement<LeaseRef>[];
  /** Acks with results (the queue keeps completed jobs): their own calls, so plain acks stay as they were. */
  keeps: KeptSettlement[];
  fails: Settlement<FailEntry>[];
  /** Ack, keep and fail calls of this partition in flight (at most MAX_CALLS_IN_FLIGHT of each). */
  calls: Record<Kind, number>;
}

type Kind = 'acks' | 'keeps' | 'fails';
/** One script call: the positions of its batch that were refused. */
type Call<K extends Kind> = (batch: StoreQueue[K]) => Promise<{ stale: number[]; notFound: number[] }>;

/** Entries per script call: bounds the time one call holds Redis. */
const MAX_PER_CALL = 1_000;
/**
 * Ack calls (and fail calls) per partition in flight at once. While they travel, what settles
 * meanwhile waits and goes in the next call: batches grow with the load instead of one small call
 * per event-loop turn (each call costs a write, a script run and a reply on both sides), and an idle
 * worker's ack still leaves at once. Two, so that a pile of acks (MIN_SECOND_CALL) does not wait for
 * a whole round trip.
 */
const MAX_CALLS_IN_FLIGHT = 2;
/**
 * Entries a second call of a kind needs to leave while the first travels. Fewer wait for the first
 * call's reply and go in the call after it: under load that call carries what settled during a round
 * trip (hundreds of jobs) instead of a call per wave of handlers, and each call saved is a write, a
 * reply and a script run on both sides. An ack waits at most about one round trip for it; the
 * job's handler slot and its concurrency slot were freed when its handler ended, not at the ack.
 */
export const MIN_SECOND_CALL = 250;
/**
 * How long past the lease a failed send is still retried. The script, not this process, decides
 * what became of a late ack (applied by this token before a lost reply, or stale), so retrying past
 * the lease gets the caller a true answer: a process that was frozen mid-call (its call timed out
 * while it could not read the reply) learns `stale` or `applied` instead of nothing. Shorter than
 * the 60 s for which Redis remembers which token completed a job, so `applied` is still known.
 */
const RETRY_PAST_LEASE_MS = 30_000;

/**
 * Collects acks and fails from handlers that finish in the same tick (and, under load, while the
 * partition's previous calls travel) and sends them as one script call per partition: a loaded
 * worker settles hundreds of jobs per round trip. A failed send is retried with backoff until
 * RETRY_PAST_LEASE_MS after the lease ran out.
 */
export class Settler {
  readonly #queues = new Map<PartitionStorage, StoreQueue>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #onError: (error: unknown) => void;
  readonly #clock: () => number;
  #scheduled = false;
  #retryDelayMs = 0;
  #retryTimer: NodeJS.Timeout | undefined;

  /** `clock` is the caller's (the one its lease times are on). */
  constructor(onError: (error: unknown) => void, clock: () => number = Date.now) {
    this.#onError = onError;
    this.#clock = clock;
  }

  ack(store: PartitionStorage, settlement: Settlement<LeaseRef>): void {
    this.#queueOf(store).acks.push(settlement);
    this.#schedule();
  }

  /** An ack that carries a result to keep (the partition's queue keeps completed jobs). */
  keep(store: PartitionStorage, settlement: KeptSettlement): void {
    this.#queueOf(store).keeps.push(settlement);
    this.#schedule();
  }

  fail(store: PartitionStorage, settlement: Settlement<FailEntry>): void {
    this.#queueOf(store).fails.push(settlement);
    this.#schedule();
  }

  /** Acks and fails not yet answered (waiting to be sent, or in a call in flight). */
  get pending(): number {
    let count = 0;
    for (const queue of this.#queues.values()) count += queue.acks.length + queue.keeps.length + queue.fails.length;
    return count + this.#inFlight.size;
  }

  /** Sends what is pending now and waits for it, up to `timeoutMs`. */
  async drain(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.pending > 0 && Date.now() < until) {
      if (this.#retryTimer) {
        clearTimeout(this.#retryTimer);
        this.#retryTimer = undefined;
      }
      this.#flush();
      await Promise.race([Promise.all(this.#inFlight), sleep(Math.max(1, Math.min(100, until - Date.now())))]);
    }
    for (const queue of this.#queues.values()) {
      for (const pending of [...queue.acks, ...queue.keeps, ...queue.fails]) pending.settled('gave-up');
    }
    this.#queues.clear();
  }

  #queueOf(store: PartitionStorage): StoreQueue {
    let queue = this.#queues.get(store);
    if (!queue) {
      queue = { acks: [], keeps: [], fails: [], calls: { acks: 0, keeps: 0, fails: 0 } };
      this.#queues.set(store, queue);
    }
    return queue;
  }

  #schedule(): void {
    if (this.#scheduled || this.#retryTimer) return;
    this.#scheduled = true;
    // setImmediate, not a microtask: handlers that resolve in the same turn land in one call.
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    for (const [store, queue] of this.#queues) {
      this.#flushKind(queue, 'acks', acks => store.ack(acks.map(p => p.settleEntry)));
      this.#flushKind(queue, 'keeps', keeps =>
        store.ack(
          keeps.map(p => p.settleEntry),
          keeps.map(p => p.keptResult),
        ),
      );
      this.#flushKind(queue, 'fails', async fails => ({ stale: (await store.fail(fails.map(p => p.settleEntry))).stale, notFound: [] }));
    }
  }

  /** Sends `queue[kind]` in calls of up to MAX_PER_CALL, while fewer than MAX_CALLS_IN_FLIGHT travel. */
  #flushKind<K extends Kind>(queue: StoreQueue, kind: K, call: Call<K>): void {
    while (queue[kind].length > (queue.calls[kind] === 0 ? 0 : MIN_SECOND_CALL - 1) && queue.calls[kind] < MAX_CALLS_IN_FLIGHT) {
      const batch = take(queue, kind);
      queue.calls[kind] += 1;
      this.#track(
        this.#send(batch, () => call(batch), queue, kind),
        () => {
          queue.calls[kind] -= 1;
          if (queue[kind].length > 0) this.#schedule(); // what piled up while it travelled
        },
      );
    }
  }

  /** Keeps `promise` for drain() until it ends. */
  #track(promise: Promise<void>, ended: () => void): void {
    this.#inFlight.add(promise);
    void promise.finally(() => {
      this.#inFlight.delete(promise);
      ended();
    });
  }

  /** Sends one call; a failed one goes back to `queue[kind]` (read then: take() may have replaced the array meanwhile). */
  async #send<K extends Kind>(
    batch: StoreQueue[K],
    call: () => Promise<{ stale: number[]; notFound: number[] }>,
    queue: StoreQueue,
    kind: K,
  ): Promise<void> {
    let result;
    try {
      result = await call();
    } catch (error) {
      this.#onError(error);
      const now = this.#clock();
      const requeue = queue[kind] as Settlement<LeaseRef>[];
      for (const pending of batch) {
        if (now < pending.settleGiveUpAt + RETRY_PAST_LEASE_MS) requeue.push(pending);
        else pending.settled('gave-up');
      }
      this.#retryLater();
      return;
    }
    this.#retryDelayMs = 0;
    // The refused positions come in ascending order (the scripts list them as they meet them):
    // walk them alongside the batch instead of building an outcome per entry.
    const { stale, notFound } = result;
    let s = 0;
    let n = 0;
    for (let index = 0; index < batch.length; index++) {
      let outcome: SettleOutcome = 'applied';
      if (stale[s] === index) {
        outcome = 'stale';
        s += 1;
      } else if (notFound[n] === index) {
        outcome = 'not-found';
        n += 1;
      }
      // A listener that throws must not leave the rest of the batch unheard.
      try {
        (batch[index] as Settlement<LeaseRef>).settled(outcome);
      } catch (error) {
        this.#onError(error);
      }
    }
  }

  #retryLater(): void {
    if (this.#retryTimer) return;
    this.#retryDelayMs = Math.min(5_000, this.#retryDelayMs === 0 ? 100 : this.#retryDelayMs * 2);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#flush();
    }, this.#retryDelayMs);
  }
}

/** The next call's entries: the whole queue when it fits (no copy), else its first MAX_PER_CALL. */
function take<K extends Kind>(queue: StoreQueue, kind: K): StoreQueue[K] {
  const pending = queue[kind];
  if (pending.length > MAX_PER_CALL) return pending.splice(0, MAX_PER_CALL) as StoreQueue[K];
  queue[kind] = [] as StoreQueue[K];
  return pending;
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}
