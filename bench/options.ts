/**
 * Command-line options of `npm run bench` and the workload sizes they select.
 * `--quick` shrinks every workload so that the whole bench can be smoke-tested in a minute or two;
 * its figures are indicative only (short windows, small counts).
 */

export const PHASE_NAMES = ['enqueue', 'spread-memory', 'cold-drain', 'drain', 'lateness', 'idle', 'scale', 'groups'] as const;
export type PhaseName = (typeof PHASE_NAMES)[number];

export interface LatencyWorkload {
  /** Jobs added per second by the producer. */
  readonly rate: number;
  /** Steady load before samples count (JIT, script cache, timers settling). */
  readonly warmupMs: number;
  /** Steady load whose jobs are measured. */
  readonly durationMs: number;
  /** Delay of every job, ms. */
  readonly delayMs: number;
}

export interface ScaleWorkload {
  /** Far-future jobs loaded into the sandglass queue before measuring. */
  readonly sandglassWaiting: number;
  /** The same for BullMQ (can be set lower: loading it is several times slower). */
  readonly bullmqWaiting: number;
  /** Jobs added per add-throughput measurement. */
  readonly addJobs: number;
  /** Due jobs drained per claim-throughput measurement. */
  readonly claimJobs: number;
}

/** The deployment-shaped drain: a cold worker in its own process (bench/worker-process.ts). */
export interface ColdDrainWorkload {
  /** Due jobs loaded before the worker process starts. */
  readonly jobs: number;
  /** Repetitions; the libraries alternate within each, the median is reported. */
  readonly reps: number;
  /** Size of the sandglass batch-mode row (at the first concurrency). */
  readonly batchSize: number;
}

/** The groups phase (bench/phases/groups.ts): fairness, group limits, order and what groups cost. */
export interface GroupsWorkload {
  /** Due jobs of the big group when the small one arrives. */
  readonly latecomerBacklog: number;
  /** The largest of the ten log-spaced backlogs of the equal-share figure (the smallest is 10). */
  readonly largestBacklog: number;
  /** The window of starts the equal-share figure judges, from the first start, ms. */
  readonly shareWindowMs: number;
  /** Jobs of each of the 20 groups of the group-concurrency run. */
  readonly concurrencyJobsPerGroup: number;
  /** Jobs of each of the 20 groups of the group-rate run (at 5/s, this many / 5 seconds). */
  readonly rateJobsPerGroup: number;
  /** Jobs of the concurrency-1 group that must run in order. */
  readonly orderJobs: number;
  /** Jobs of the cost figures, in `costGroups` groups (10 each by default). */
  readonly costJobs: number;
  readonly costGroups: number;
  /** Repetitions of each cost figure (grouped and ungrouped alternate), the median is reported. */
  readonly costReps: number;
}

/** `--profile`: one extra, profiled sandglass drain process (its figures are not the table's). */
export interface ProfileOptions {
  /** Where `node --cpu-prof` writes the child's profile. */
  readonly dir: string;
}

export interface BenchOptions {
  readonly quick: boolean;
  /** Phases to run (all by default). */
  readonly phases: ReadonlySet<PhaseName>;
  /** Where the JSON goes. */
  readonly outFile: string;
  /** Repetitions of each throughput measurement; the median is reported. */
  readonly reps: number;
  /** Handlers at once, the same for both libraries (the first of `drainConcurrencies`). */
  readonly concurrency: number;
  /** Concurrencies of the drain figure: one row each, both judged against the bar. */
  readonly drainConcurrencies: readonly number[];
  /** Size of the extra sandglass batch-mode drain row. */
  readonly batchSize: number;
  /** Jobs per `addBulk` call, the same for both libraries. */
  readonly chunk: number;
  /** Jobs of the enqueue (and memory) figure. */
  readonly enqueueJobs: number;
  /** Due jobs of the drain figure. */
  readonly drainJobs: number;
  /** Jobs drained before each timed measurement, not timed. */
  readonly warmupJobs: number;
  readonly latency: LatencyWorkload;
  /** Window of the idle-commands figure. */
  readonly idleWindowMs: number;
  /** Quiet time after an idle worker starts, before the window opens (startup traffic excluded). */
  readonly idleSettleMs: number;
  readonly scale: ScaleWorkload;
  readonly coldDrain: ColdDrainWorkload;
  /** Jobs of the spread-delay memory figure (due 1 minute to 30 days from now, log-uniform). */
  readonly spreadJobs: number;
  readonly groups: GroupsWorkload;
  /** Set by `--profile[=DIR]`. */
  readonly profile: ProfileOptions | undefined;
  /** A drain that makes no progress for this long fails its figure instead of hanging the bench. */
  readonly stallMs: number;
}

const USAGE = `usage: npm run bench -- [--quick] [--only=${PHASE_NAMES.join(',')}] [--reps=N] [--concurrency=N] [--out=FILE]
       [--cold-jobs=N] [--spread-jobs=N] [--scale-waiting=N] [--profile[=DIR]]
  --cold-jobs      due jobs of the deployment-shaped drain (default 20000)
  --spread-jobs    jobs of the spread-delay memory figure (default 200000, quick 20000)
  --scale-waiting  jobs waiting in the sandglass queue of the scale phase (e.g. 10000000; BullMQ keeps its count)
  --profile        one extra sandglass drain process under node --cpu-prof (profile in DIR, default bench/profiles),
                   and the Redis / client microseconds per delivered job printed per command`;

const FLAGS = ['quick', 'only', 'reps', 'concurrency', 'out', 'help', 'cold-jobs', 'spread-jobs', 'scale-waiting', 'profile'];

/**
 * `--name=value` and `--name` arguments of a bench command, by name ('' for a bare flag); an
 * argument not among `names` throws with the usage; `--help` prints the usage and exits.
 */
export function parseFlags(argv: readonly string[], names: readonly string[], usage: string): Map<string, string> {
  const flags = new Map<string, string>();
  for (const arg of argv) {
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match || !names.includes(match[1] as string)) throw new Error(`Unknown argument ${arg}\n${usage}`);
    flags.set(match[1] as string, match[2] ?? '');
  }
  if (flags.has('help')) {
    console.log(usage);
    process.exit(0);
  }
  return flags;
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const flags = parseFlags(argv, FLAGS, USAGE);
  const quick = flags.has('quick');
  const concurrencies = flags.has('concurrency') ? [positiveInt(flags.get('concurrency'), 50, 'concurrency')] : [50, 100];
  const scale = quick
    ? { sandglassWaiting: 200_000, bullmqWaiting: 200_000, addJobs: 20_000, claimJobs: 10_000 }
    : // Windows of about a second for sandglass: shorter ones measure timer noise, not throughput.
      { sandglassWaiting: 1_000_000, bullmqWaiting: 1_000_000, addJobs: 100_000, claimJobs: 50_000 };
  return {
    quick,
    phases: parsePhases(flags.get('only')),
    outFile: flags.get('out') || (quick ? 'bench/results-quick.json' : 'bench/results.json'),
    reps: positiveInt(flags.get('reps'), quick ? 1 : 3, 'reps'),
    concurrency: positiveInt(flags.get('concurrency'), 50, 'concurrency'),
    drainConcurrencies: concurrencies,
    batchSize: 100,
    chunk: 1_000,
    enqueueJobs: quick ? 20_000 : 100_000,
    drainJobs: quick ? 10_000 : 50_000,
    warmupJobs: quick ? 1_000 : 5_000,
    latency: { rate: 1_000, warmupMs: quick ? 1_000 : 2_000, durationMs: quick ? 4_000 : 10_000, delayMs: 500 },
    idleWindowMs: quick ? 10_000 : 60_000,
    idleSettleMs: 2_000,
    scale: { ...scale, sandglassWaiting: positiveInt(flags.get('scale-waiting'), scale.sandglassWaiting, 'scale-waiting') },
    // A cold process's drain is short and noisy: more repetitions than the warmed figures.
    coldDrain: {
      jobs: positiveInt(flags.get('cold-jobs'), 20_000, 'cold-jobs'),
      reps: positiveInt(flags.get('reps'), quick ? 3 : 5, 'reps'),
      batchSize: 50,
    },
    groups: quick
      ? {
          latecomerBacklog: 20_000,
          largestBacklog: 20_000,
          // About 10k starts/s would leave only the largest of the 35k with work after 3 s: a shorter window.
          shareWindowMs: 1_000,
          concurrencyJobsPerGroup: 20,
          rateJobsPerGroup: 15,
          orderJobs: 200,
          costJobs: 20_000,
          costGroups: 2_000,
          costReps: 1,
        }
      : {
          latecomerBacklog: 50_000,
          largestBacklog: 100_000,
          shareWindowMs: 3_000,
          concurrencyJobsPerGroup: 50,
          rateJobsPerGroup: 50,
          orderJobs: 500,
          costJobs: 100_000,
          costGroups: 10_000,
          costReps: 3,
        },
    spreadJobs: positiveInt(flags.get('spread-jobs'), quick ? 20_000 : 200_000, 'spread-jobs'),
    profile: flags.has('profile') ? { dir: flags.get('profile') || 'bench/profiles' } : undefined,
    stallMs: 30_000,
  };
}

function parsePhases(list: string | undefined): ReadonlySet<PhaseName> {
  if (list === undefined || list === '') return new Set(PHASE_NAMES);
  const names = list.split(',').map(name => name.trim());
  for (const name of names) {
    if (!(PHASE_NAMES as readonly string[]).includes(name)) throw new Error(`Unknown phase '${name}'\n${USAGE}`);
  }
  return new Set(names as PhaseName[]);
}

function positiveInt(text: string | undefined, fallback: number, name: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got '${text}'\n${USAGE}`);
  return value;
}
