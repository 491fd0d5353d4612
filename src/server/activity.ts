/**
 * What this process saw happen, per queue and per second, over the last few minutes: jobs
 * delivered (claimed by pull consumers, or delivered by webhooks), attempts failed, and lateness
 * percentiles. A ring of one-second slots per queue, in memory; bounded in queues, slots and
 * samples, so no traffic pattern can make it grow without limit.
 */

/** One second of one queue, as `/activity` answers it. */
export interface ActivityPoint {
  /** Start of the second, epoch ms (this process's clock). */
  at: number;
  delivered: number;
  failed: number;
  latenessP50Ms: number | null;
  latenessP99Ms: number | null;
}

interface Slot {
  at: number;
  delivered: number;
  failed: number;
  /** Lateness samples; a uniform reservoir once more than MAX_SAMPLES arrive in the second. */
  samples: number[];
  seen: number;
}

const STEP_MS = 1_000;
const MAX_SAMPLES = 1_024;
const MAX_QUEUES = 1_000;

export class Activity {
  readonly windowMs: number;
  readonly stepMs = STEP_MS;
  readonly #slots: number;
  readonly #queues = new Map<string, Slot[]>();
  readonly #now: () => number;

  constructor(options: { windowMs?: number; now?: () => number } = {}) {
    this.windowMs = options.windowMs ?? 300_000;
    this.#slots = Math.ceil(this.windowMs / STEP_MS);
    this.#now = options.now ?? Date.now;
  }

  /** Records `count` jobs handed to a consumer, with their lateness (start minus due) in ms. */
  delivered(queue: string, latenessMs: readonly number[]): void {
    const slot = this.#slot(queue);
    slot.delivered += latenessMs.length;
    for (const ms of latenessMs) {
      slot.seen += 1;
      if (slot.samples.length < MAX_SAMPLES) slot.samples.push(ms);
      else {
        const k = Math.floor(Math.random() * slot.seen);
        if (k < MAX_SAMPLES) slot.samples[k] = ms;
      }
    }
  }

  /** Records one failed attempt. */
  failed(queue: string): void {
    this.#slot(queue).failed += 1;
  }

  /** The last `windowMs`, one point per second, oldest first (seconds without events are zeros). */
  points(queue: string): ActivityPoint[] {
    const ring = this.#queues.get(queue);
    const current = Math.floor(this.#now() / STEP_MS) * STEP_MS;
    const points: ActivityPoint[] = [];
    for (let i = this.#slots - 1; i >= 0; i--) {
      const at = current - i * STEP_MS;
      const slot = ring?.[(at / STEP_MS) % this.#slots];
      if (!slot || slot.at !== at) {
        points.push({ at, delivered: 0, failed: 0, latenessP50Ms: null, latenessP99Ms: null });
        continue;
      }
      const sorted = [...slot.samples].sort((a, b) => a - b);
      points.push({
        at,
        delivered: slot.delivered,
        failed: slot.failed,
        latenessP50Ms: percentile(sorted, 0.5),
        latenessP99Ms: percentile(sorted, 0.99),
      });
    }
    return points;
  }

  #slot(queue: string): Slot {
    let ring = this.#queues.get(queue);
    if (!ring) {
      if (this.#queues.size >= MAX_QUEUES) this.#queues.delete(this.#queues.keys().next().value as string);
      ring = [];
      this.#queues.set(queue, ring);
    }
    const at = Math.floor(this.#now() / STEP_MS) * STEP_MS;
    const index = (at / STEP_MS) % this.#slots;
    let slot = ring[index];
    if (!slot || slot.at !== at) {
      slot = { at, delivered: 0, failed: 0, samples: [], seen: 0 };
      ring[index] = slot;
    }
    return slot;
  }
}

/** Nearest-rank percentile of sorted samples; null when there are none. */
function percentile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}
