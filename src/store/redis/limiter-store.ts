import { limiterKeys } from './keys.js';
import type { PartitionStore } from './partition-store.js';
import { runScript } from './scripts.js';
import type { QueueLimits } from '../../core/types.js';
import type { Grant, LimiterStorage } from '../limiter-storage.js';

/** The `meta` fields that hold a queue's limits (partition 0 holds all; every partition `limited` and `expireAfter`). */
const FIELDS = {
  rateMax: 'rateMax',
  ratePer: 'ratePer',
  concurrency: 'concurrency',
  expireAfter: 'expireAfter',
  limited: 'limited',
} as const;

/**
 * The limiter of one queue (lua/limiter.lua), in partition 0's slot: a typed call per operation,
 * and the stored limits (LimiterStorage).
 */
export class LimiterStore implements LimiterStorage {
  readonly #stores: readonly PartitionStore[];
  readonly #keys: { starts: string; slots: string; wakeChannel: string };

  /** `stores`: the queue's partitions, in partition order (the limiter lives with partition 0). */
  constructor(stores: readonly PartitionStore[]) {
    const first = stores[0];
    if (!first) throw new Error("A limiter needs the queue's partitions");
    this.#stores = stores;
    this.#keys = limiterKeys(first.prefix, first.queue);
  }

  #run(args: ReadonlyArray<string | number>): Promise<unknown> {
    const first = this.#stores[0] as PartitionStore;
    return runScript(first.redis, 'limiter', first.keys, args, [this.#keys.starts, this.#keys.slots]);
  }

  /** Asks for `want` tokens; a grant's slots last `leaseMs` unless settled. */
  async acquire(want: number, leaseMs: number, id: string): Promise<Grant> {
    const reply = (await this.#run(['acquire', this.#keys.wakeChannel, want, leaseMs, id])) as number[];
    const kinds = reply[3] as number;
    return {
      now: reply[0] as number,
      id,
      count: reply[1] as number,
      retryAt: reply[2] as number,
      rate: (kinds & 1) === 1,
      concurrency: (kinds & 2) === 2,
      limitedAt: reply[4] as number,
    };
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

  /**
   * Stores `limits` with the queue: partition 0 first (the limiter reads it there), then each other
   * partition's `limited` flag (claim.lua refuses to claim without the limiter's tokens while it is
   * set) and `expireAfter` default (add.lua). A crash half way leaves some partitions on the old
   * flags; writing the limits again completes it.
   */
  async write(limits: QueueLimits): Promise<void> {
    const limited = limits.rate !== undefined || limits.concurrency !== undefined ? '1' : '';
    const everywhere = [FIELDS.limited, limited, FIELDS.expireAfter, limits.expireAfter === undefined ? '' : String(limits.expireAfter)];
    const [first, ...rest] = this.#stores as [PartitionStore, ...PartitionStore[]];
    const keys = this.#keys;
    const own = [
      FIELDS.rateMax,
      limits.rate ? String(limits.rate.max) : '',
      FIELDS.ratePer,
      limits.rate ? String(limits.rate.per) : '',
      FIELDS.concurrency,
      limits.concurrency === undefined ? '' : String(limits.concurrency),
    ];
    await runScript(
      first.redis,
      'limiter',
      first.keys,
      ['configure', keys.wakeChannel, '1', ...own, ...everywhere],
      [keys.starts, keys.slots],
    );
    await Promise.all(
      rest.map(store => runScript(store.redis, 'limiter', store.keys, ['configure', keys.wakeChannel, '0', ...everywhere])),
    );
  }
}
