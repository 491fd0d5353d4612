/**
 * The soak's producer: adds jobs at a fixed rate, each with a random delay, handler duration and
 * plan (see SOAK), recording each job in the ledger before it is added, so an add that was
 * acknowledged and then lost shows as a lost job.
 */
import type { Queue } from '../../src/index.js';
import { sleep } from '../stats.js';
import type { Ledger, Plan } from './ledger.js';
import { SOAK } from './options.js';
import type { SoakPayload } from './worker.js';

/** How often the producer tops up: at 40 jobs/s, groups of about 4. */
const TICK_MS = 100;

export interface ProducerSpec {
  readonly queue: Queue<SoakPayload | null>;
  /** Id prefix, e.g. `m` (ids `m-1`, `m-2`, ...). */
  readonly prefix: string;
  readonly rate: number;
  readonly handlerMs: { readonly min: number; readonly max: number };
  readonly ledger: Ledger;
  /** Called once with the first job of the longest delay added (for `--inject=lose`). */
  readonly onFirstAdd?: (id: string) => Promise<void>;
  readonly log: (message: string) => void;
}

export interface Producer {
  /** Jobs added so far. */
  readonly added: () => number;
  /** Stops adding and resolves once the add in flight finished. */
  stop(): Promise<void>;
}

function uniform(range: { readonly min: number; readonly max: number }): number {
  return Math.round(range.min + Math.random() * (range.max - range.min));
}

function pickPlan(): Plan {
  const roll = Math.random();
  const { once, always, unrecoverable } = SOAK.plans;
  if (roll < once) return 'once';
  if (roll < once + always) return 'always';
  if (roll < once + always + unrecoverable) return 'unrecoverable';
  return 'ok';
}

export function startProducer(spec: ProducerSpec): Producer {
  let added = 0;
  let stopped = false;
  let addErrors = 0;
  const startedAt = Date.now();
  const loop = (async () => {
    while (!stopped) {
      const owed = Math.floor((spec.rate * (Date.now() - startedAt)) / 1000) - added;
      if (owed > 0) {
        const jobs = Array.from({ length: owed }, (_, i) => {
          const plan = pickPlan();
          const id = `${spec.prefix}-${added + i + 1}`;
          spec.ledger.expect(spec.queue.name, id, plan);
          return {
            id,
            payload: { plan, ms: uniform(spec.handlerMs) },
            delay: uniform(SOAK.delayMs),
            maxAttempts: plan === 'always' ? SOAK.maxAttempts.always : SOAK.maxAttempts.other,
          };
        });
        // Resent with the same ids until it lands: an add whose reply was lost may have been applied.
        for (;;) {
          try {
            await spec.queue.addBulk(jobs);
            break;
          } catch (error) {
            addErrors += 1;
            if (addErrors <= 5) spec.log(`add to ${spec.queue.name} failed (resending): ${(error as Error).message}`);
            await sleep(500);
          }
        }
        if (added === 0 && spec.onFirstAdd) {
          const longest = jobs.reduce((a, b) => (b.delay > a.delay ? b : a));
          await spec.onFirstAdd(longest.id);
        }
        added += owed;
      }
      await sleep(TICK_MS);
    }
  })();
  return {
    added: () => added,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
