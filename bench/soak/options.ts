/** Command-line options of `npm run soak` and the fixed shape of its load. */
import { parseFlags } from '../options.js';

export interface SoakOptions {
  /** Minutes of steady load (the drain and the memory check come after). */
  readonly minutes: number;
  /** Jobs added per second to the main queue. */
  readonly rate: number;
  /** Jobs added per second to the limited queue (below its limits, so it keeps up). */
  readonly limitedRate: number;
  /** Where the JSON goes. */
  readonly outFile: string;
  /**
   * `lose`: cancel one job right after adding it, behind the ledger's back, to see the ledger
   * check fail (the run must then exit 1). A self-test of the soak, never of sandglass.
   */
  readonly inject: 'lose' | undefined;
}

/** The load's shape: fixed, so that runs of different lengths compare. */
export const SOAK = {
  /** Delays of the added jobs, uniform in [min, max] ms. */
  delayMs: { min: 1_000, max: 120_000 },
  /** Handler durations, uniform in [min, max] ms. */
  mainHandlerMs: { min: 0, max: 50 },
  limitedHandlerMs: { min: 100, max: 400 },
  /** The share of each plan among added jobs (the rest are `ok`). */
  plans: { once: 0.08, always: 0.04, unrecoverable: 0.03 },
  /** Attempts: `always` jobs die after 3; the others get room for a lease lost to a kill or two. */
  maxAttempts: { always: 3, other: 8 },
  leaseMs: 10_000,
  sampleEveryMs: 10_000,
  restartEveryMs: 60_000,
  /** The schedule on the main queue. */
  schedule: { key: 'every-second', everyMs: 1_000 },
  /** The limited queue's limits: a `concurrency` the handlers' durations make bite, and a `rate`. */
  limits: { concurrency: 3, rate: { max: 8, per: 1_000 } },
  /** Redis `used_memory` after the drain may exceed its start by at most this share. */
  memoryTolerance: 0.05,
  /** The memory check reads Redis this long after the drain: `done` buckets (60-90 s) and claim memos (a lease) expire by then. */
  memoryQuietMs: 100_000,
  /** ... and waits up to this long in all for it to be back within the tolerance. */
  memorySettleMs: 150_000,
  /** Heap growth of the long-lived worker process after the first 2 minutes, judged on runs of 10 minutes or more. */
  heap: { fromMs: 120_000, tolerance: 0.1, judgedFromMinutes: 10 },
  /** The drain may take the longest delay, plus this (retries, leases of killed processes). */
  drainSlackMs: 120_000,
} as const;

const USAGE = `usage: npm run soak -- [--minutes=N] [--rate=N] [--limited-rate=N] [--out=FILE] [--inject=lose]
  --minutes       minutes of steady load (default 10); the drain and memory check add about 4 minutes
  --rate          jobs/s added to the main queue (default 40)
  --limited-rate  jobs/s added to the limited queue (default 4; its limits: concurrency ${SOAK.limits.concurrency}, ${SOAK.limits.rate.max}/s)
  --out           the JSON file (default bench/soak-results.json)
  --inject=lose   self-test: cancel one added job behind the ledger's back; the run must fail`;

const FLAGS = ['minutes', 'rate', 'limited-rate', 'out', 'inject', 'help'];

export function parseSoakOptions(argv: readonly string[]): SoakOptions {
  const flags = parseFlags(argv, FLAGS, USAGE);
  const inject = flags.get('inject');
  if (inject !== undefined && inject !== 'lose') throw new Error(`--inject must be 'lose', got '${inject}'\n${USAGE}`);
  return {
    minutes: positive(flags.get('minutes'), 10, 'minutes'),
    rate: positive(flags.get('rate'), 40, 'rate'),
    limitedRate: positive(flags.get('limited-rate'), 4, 'limited-rate'),
    outFile: flags.get('out') || 'bench/soak-results.json',
    inject,
  };
}

function positive(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number, got '${text}'\n${USAGE}`);
  return value;
}
