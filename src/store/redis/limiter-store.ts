import { limiterKeys } from './keys.js';
import type { PartitionStore } from './partition-store.js';
import { runScript } from './scripts.js';
import type { QueueLimits } from '../../core/types.js';

/** Tokens `acquire` granted, and what the limiter said about the queue. */
export interface Grant {
  /** Server time of the call, ms. */
  readonly now: number;
  readonly id: string;
  /** Tokens granted: the claim may take this many jobs. */
  readonly count: number;
  /** When a token may be free again if fewer than asked were granted (server ms); -1 otherwise. */
  readonly retryAt: number;
  /** Whether the queue has a `rate` limit. */
  readonly rate: boolean;
  /** Whether the queue has a `concurrency` limit (claimed jobs hold slots until they settle). */
  readonly concurrency: boolean;
  /** The last time the limit held work back (server ms), -1 if never. */
  readonly limitedAt: number;
}

/** The `meta` fields that hold a queue's limits (partition 0 holds all; every partition `limited` and `expireAfter`). */
const FIELDS = { rateMax: 'rateMax', ratePer: 'ratePer', concurrency: 'concurrency', expireAfter: 'expireAfter', limited: 'limited' } as const;

/**
 * The limiter of one queue (lua/limiter.lua), in partition 0's slot: a typed call per operation,
 * and the stored limits.
 */
export class LimiterStore {
  readonly #store: PartitionStore;
  readonly #keys: { starts: string; slots: string; wakeChannel: string };

  /** `partition0`: the store of the queue's partition 0. */
  constructor(partition0: PartitionStore) {
    this.#store = partition0;
    this.#keys = limiterKeys(partition0.prefix, partition0.queue);
  }

  /** The channel a freed slot of a full `concurrency` is published on. */
  get wakeChannel(): string {
    return this.#keys.wakeChannel;
  }

  #run(args: ReadonlyArray<string | number>): Promise<unknown> {
    return runScript(this.#store.redis, 'limiter', this.#store.keys, args, [this.#keys.starts, this.#keys.slots]);
  }

  /** Asks for `want` tokens; a grant's slots last `leaseMs` unless settled. */
  async acquire(want: number, leaseMs: number, id: string): Promise<Grant> {
    const reply = (await this.#run(['acquire', this.#keys.wakeChannel, want, leaseMs, id])) as number[];
    const kinds = reply[3] as number;
    return { now: reply[0] as number, id, count: reply[1] as number, retryAt: reply[2] as number, rate: (kinds & 1) === 1, concurrency: (kinds & 2) === 2, limitedAt: reply[4] as number };
  }

  /**
   * After the claim: gives back the tokens it did not use (`used` of `grant.count` were), and
   * `members` (one per claimed job, under a concurrency limit) hold the slots until `deadline`.
   * `wanted`: what the acquire asked for (all tokens used of fewer than wanted: the limit held work back).
   * Safe to resend. Returns the positions in `members` that hold no slot (the grant's ran out first).
   */
  async settle(grant: Grant, used: number, wanted: number, members: readonly string[], deadline: number): Promise<number[]> {
    return (await this.#run(['settle', this.#keys.wakeChannel, grant.id, grant.count, used, deadline, wanted, ...members])) as number[];
  }

  /** Frees the slots of jobs that settled. */
  async free(members: readonly string[]): Promise<void> {
    await this.#run(['free', this.#keys.wakeChannel, ...members]);
  }

  /** Moves the slots of jobs whose leases were renewed to now + `leaseMs` (server clock). */
  async renew(leaseMs: number, members: readonly string[]): Promise<void> {
    await this.#run(['renew', this.#keys.wakeChannel, leaseMs, ...members]);
  }

  /** The limits as stored (partition 0's `meta`). */
  async read(): Promise<QueueLimits> {
    const [rateMax, ratePer, concurrency, expireAfter] = (await this.#run(['read', this.#keys.wakeChannel])) as (string | null)[];
    const limits: QueueLimits = {};
    if (rateMax && ratePer) limits.rate = { max: Number(rateMax), per: Number(ratePer) };
    if (concurrency) limits.concurrency = Number(concurrency);
    if (expireAfter) limits.expireAfter = Number(expireAfter);
    return limits;
  }
}

/**
 * Stores `limits` with the queue: partition 0 first (the limiter reads it there), then each other
 * partition's `limited` flag (claim.lua refuses to claim without the limiter's tokens while it is
 * set) and `expireAfter` default (add.lua). A crash half way leaves some partitions on the old
 * flags; writing the limits again completes it.
 */
export async function writeLimits(stores: readonly PartitionStore[], limits: QueueLimits): Promise<void> {
  const limited = limits.rate !== undefined || limits.concurrency !== undefined ? '1' : '';
  const everywhere = [FIELDS.limited, limited, FIELDS.expireAfter, limits.expireAfter === undefined ? '' : String(limits.expireAfter)];
  const [first, ...rest] = stores as [PartitionStore, ...PartitionStore[]];
  const keys = limiterKeys(first.prefix, first.queue);
  const own = [
    FIELDS.rateMax, limits.rate ? String(limits.rate.max) : '',
    FIELDS.ratePer, limits.rate ? String(limits.rate.per) : '',
    FIELDS.concurrency, limits.concurrency === undefined ? '' : String(limits.concurrency),
  ];
  await runScript(first.redis, 'limiter', first.keys, ['configure', keys.wakeChannel, '1', ...own, ...everywhere], [keys.starts, keys.slots]);
  await Promise.all(rest.map(store => runScript(store.redis, 'limiter', store.keys, ['configure', keys.wakeChannel, '0', ...everywhere])));
}
