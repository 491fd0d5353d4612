/**
 * Prometheus metrics of the service (prom-client, a registry of its own). Counts and totals are
 * read from Redis at scrape time (`queue.stats()`, `queue.counters()`, `queue.listSchedules()` and
 * `queue.groupTotals()` of every queue), so they are the queue's totals across all processes; the
 * lateness histograms and the HTTP counters are this process's own observations.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { JOB_STATES, type GroupTotals, type QueueCounters, type QueueStats, type ScheduleInfo } from '../index.js';

export interface QueueSnapshot {
  name: string;
  stats: QueueStats;
  counters: QueueCounters;
  schedules: ScheduleTotals;
  groups: GroupTotals;
}

/** A queue's schedules counted by state for the metrics. */
export interface ScheduleTotals {
  /** Creating ticks: not paused, with a next tick. */
  active: number;
  paused: number;
  /** Reached `limit` or `endAt` (`nextAt` null, not paused): listed until removed. */
  ended: number;
}

/** Sums up `queue.listSchedules()` for one scrape. */
export function scheduleTotals(schedules: readonly Pick<ScheduleInfo, 'paused' | 'nextAt'>[]): ScheduleTotals {
  const totals: ScheduleTotals = { active: 0, paused: 0, ended: 0 };
  for (const schedule of schedules) {
    if (schedule.paused) totals.paused += 1;
    else if (schedule.nextAt === null) totals.ended += 1;
    else totals.active += 1;
  }
  return totals;
}

/** Totals of `queue.counters()` (running totals kept in Redis by the scripts) exported as Prometheus counters: metric name, field, help. */
const TOTALS: [string, keyof QueueCounters, string][] = [
  ['sandglass_jobs_added_total', 'added', 'Jobs added (an add of an existing id does not count)'],
  [
    'sandglass_jobs_delivered_total',
    'claimed',
    'Deliveries started: jobs claimed by workers, pull consumers and webhooks (redeliveries count again)',
  ],
  ['sandglass_jobs_completed_total', 'completed', 'Jobs acked'],
  [
    'sandglass_jobs_failed_total',
    'retried',
    'Failed attempts scheduled for a retry (failures that dead-letter count in sandglass_jobs_dead_total)',
  ],
  ['sandglass_jobs_dead_total', 'dead', 'Jobs dead-lettered'],
  ['sandglass_jobs_reaped_total', 'reaped', 'Leases that ran out and were taken back (a consumer died or froze)'],
  ['sandglass_jobs_stale_total', 'stale', 'Acks or fails refused because the sender had lost the lease'],
  ['sandglass_schedule_runs_total', 'ticks', "Jobs created by the queue's schedules, one per tick"],
  ['sandglass_schedule_skipped_total', 'ticksSkipped', "Schedule ticks skipped by overlap 'skip' (the previous run was still active)"],
  ['sandglass_jobs_expired_total', 'expired', 'Jobs not started by their deadline (expireAfter): dead-lettered or dropped'],
];

/** The states of `sandglass_schedules`: they partition a queue's schedules, so a sum() is their number. */
const SCHEDULE_STATES = ['active', 'paused', 'ended'] as const;
const LATENESS_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly #lateness: Histogram<'queue' | 'source'>;
  readonly #tickLateness: Histogram<'queue' | 'source'>;
  readonly #limitedLateness: Histogram<'queue' | 'source'>;
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #load: () => Promise<QueueSnapshot[]>;
  #inflight: Promise<QueueSnapshot[] | null> | undefined;

  /** @param load reads every queue's counts and totals; called once per scrape. */
  constructor(load: () => Promise<QueueSnapshot[]>) {
    this.#load = load;
    const registers = [this.registry];
    const snapshot = () => this.#snapshot();

    for (const [name, field, help] of TOTALS) {
      new Counter({
        name,
        help,
        labelNames: ['queue'],
        registers,
        async collect() {
          const queues = await snapshot();
          this.reset();
          for (const queue of queues ?? []) this.inc({ queue: queue.name }, queue.counters[field]);
        },
      });
    }
    new Gauge({
      name: 'sandglass_queue_jobs',
      help: 'Jobs in the queue by state: delayed (waiting for their due time), ready (due, not claimed), active (claimed), dead, completed (kept by the retention)',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        const queues = await snapshot();
        this.reset();
        // The job states partition a queue's jobs, so a sum() is their number (`limited`, part of ready, has its own gauge).
        for (const queue of queues ?? []) for (const state of JOB_STATES) this.set({ queue: queue.name, state }, queue.stats[state]);
      },
    });
    new Gauge({
      name: 'sandglass_queue_jobs_limited',
      help: 'Jobs due now but held back by the queue\'s rate or concurrency limit (part of sandglass_queue_jobs{state="ready"})',
      labelNames: ['queue'],
      registers,
      async collect() {
        const queues = await snapshot();
        this.reset();
        for (const queue of queues ?? []) this.set({ queue: queue.name }, queue.stats.limited);
      },
    });
    new Gauge({
      name: 'sandglass_queue_paused',
      help: '1 when the queue is paused',
      labelNames: ['queue'],
      registers,
      async collect() {
        const queues = await snapshot();
        this.reset();
        for (const queue of queues ?? []) this.set({ queue: queue.name }, queue.stats.paused ? 1 : 0);
      },
    });
    // Per queue, never per group: group names are the users' (a shop id, a tenant), and one series
    // per group would grow without bound. listGroups answers which groups they are.
    new Gauge({
      name: 'sandglass_queue_groups',
      help: 'Groups of the queue with work: waiting or active jobs',
      labelNames: ['queue'],
      registers,
      async collect() {
        const queues = await snapshot();
        this.reset();
        for (const queue of queues ?? []) this.set({ queue: queue.name }, queue.groups.withWork);
      },
    });
    new Gauge({
      name: 'sandglass_queue_groups_held',
      help: 'Groups held back by their concurrency limit: as many of their jobs active as the limit allows (part of sandglass_queue_groups)',
      labelNames: ['queue'],
      registers,
      async collect() {
        const queues = await snapshot();
        this.reset();
        for (const queue of queues ?? []) this.set({ queue: queue.name }, queue.groups.held);
      },
    });
    new Gauge({
      name: 'sandglass_queue_groups_paused',
      help: 'Groups of the queue that are paused (none of their jobs is claimed until resumed)',
      labelNames: ['queue'],
      registers,
      async collect() {
        const queues = await snapshot();
        this.reset();
        for (const queue of queues ?? []) this.set({ queue: queue.name }, queue.groups.paused);
      },
    });
    new Gauge({
      name: 'sandglass_schedules',
      help: 'Recurring schedules of the queue by state: active (creating ticks), paused, ended (limit or endAt reached, listed until removed)',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        const queues = await snapshot();
        this.reset();
        for (const queue of queues ?? [])
          for (const state of SCHEDULE_STATES) this.set({ queue: queue.name, state }, queue.schedules[state]);
      },
    });
    new Gauge({
      name: 'sandglass_redis_up',
      help: '1 when Redis answered this scrape; 0 when it did not (the queue metrics are then left out)',
      registers,
      async collect() {
        this.set((await snapshot()) === null ? 0 : 1);
      },
    });
    this.#lateness = new Histogram({
      name: 'sandglass_lateness_seconds',
      help: 'Start minus due time of jobs delivered by this process: pull claims (Redis server clock) and webhook deliveries; those a limit held back are in sandglass_limited_lateness_seconds',
      labelNames: ['queue', 'source'],
      buckets: LATENESS_BUCKETS,
      registers,
    });
    // A histogram of its own, not a label of the one above: a tick's job is observed in both (its
    // delivery is a delivery), and this one measures from the tick time, which a catch-up tick's
    // due time is not, so neither a sum over both nor the meaning of the old series changes.
    this.#tickLateness = new Histogram({
      name: 'sandglass_schedule_tick_lateness_seconds',
      help: 'Start minus tick time of schedule ticks first delivered by this process: source webhook (a delivery that succeeded) or pull (a claim over HTTP); retries are left out (their wait is backoff, not lateness)',
      labelNames: ['queue', 'source'],
      buckets: LATENESS_BUCKETS,
      registers,
    });
    // Apart from sandglass_lateness_seconds: a job held back by a limit is late by design, and would
    // hide how late sandglass itself is.
    this.#limitedLateness = new Histogram({
      name: 'sandglass_limited_lateness_seconds',
      help: "Start minus due time of jobs a limit held back, delivered by this process: the queue's rate or concurrency limit, or a webhook binding's rate (source webhook)",
      labelNames: ['queue', 'source'],
      buckets: [...LATENESS_BUCKETS, 900, 3600],
      registers,
    });
    this.#requests = new Counter({
      name: 'sandglass_http_requests_total',
      help: 'HTTP requests answered, by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
  }

  observeLateness(queue: string, source: 'pull' | 'webhook', latenessMs: number): void {
    this.#lateness.observe({ queue, source }, Math.max(0, latenessMs) / 1000);
  }

  /** A delivery a limit held back: `latenessMs` is its start minus its due time. */
  observeLimitedLateness(queue: string, source: 'pull' | 'webhook', latenessMs: number): void {
    this.#limitedLateness.observe({ queue, source }, Math.max(0, latenessMs) / 1000);
  }

  /** A schedule tick's first start: `latenessMs` is start minus `job.schedule.tickAt`. */
  observeTickLateness(queue: string, source: 'pull' | 'webhook', latenessMs: number): void {
    this.#tickLateness.observe({ queue, source }, Math.max(0, latenessMs) / 1000);
  }

  countRequest(method: string, route: string, status: number): void {
    this.#requests.inc({ method, route, status: String(status) });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** One load per scrape, shared by every metric's collect; null when Redis failed. */
  #snapshot(): Promise<QueueSnapshot[] | null> {
    this.#inflight ??= this.#load()
      .catch(() => null)
      .finally(() => {
        this.#inflight = undefined;
      });
    return this.#inflight;
  }
}
