import { Queue, listQueues, type Logger } from '../index.js';
import { SandglassError } from '../core/errors.js';

/**
 * `drain()` gave up: something was still due or running when its time ran out. The message names
 * each queue that was not idle, what it held (due and not claimed, running, their first ids), and
 * the schedules whose tick was due.
 */
export class DrainTimeoutError extends SandglassError {
  constructor(message: string) {
    // The code of a wait that ran out on a test's own terms, not of Redis.
    super('ERR_VALIDATION', message);
    this.name = 'DrainTimeoutError';
  }
}

/** What one look at a queue found; `busy` says why it is not idle (empty when it is). */
interface QueueLook {
  readonly name: string;
  readonly busy: string[];
  /** Totals that move whenever anything happens (adds, claims, settles, ticks): equal in two looks means nothing happened between them. */
  readonly motion: string;
}

/** How drain() looks: the environment's Redis, prefix and clock. */
export interface DrainTarget {
  readonly connection: string;
  readonly prefix: string;
  readonly logger: Logger;
  now(): number;
  wake(): Promise<void>;
}

/** Between two looks at the queues (real ms). */
const LOOK_INTERVAL_MS = 5;
/** Looks in a row that must find every queue idle and nothing moved. */
const IDLE_LOOKS = 3;

/**
 * Resolves when nothing is due and nothing runs on the environment's Redis: in every queue no job
 * is due and unclaimed (jobs a queue's limits or a pause hold back do not count: they wait for the
 * clock), none is under a lease, and no schedule's tick is due; seen in IDLE_LOOKS looks in a row
 * with nothing moving between them (a handler's settle, a tick's job). Wakes the workers first.
 */
export async function drain(target: DrainTarget, timeoutMs: number): Promise<void> {
  const queues = new Map<string, Queue>();
  const giveUpAt = Date.now() + timeoutMs;
  try {
    await target.wake();
    let idleLooks = 0;
    let lastMotion = '';
    for (;;) {
      const looks = await lookAtAll(target, queues);
      const motion = looks.map(look => `${look.name}:${look.motion}`).join(' ');
      const idle = looks.every(look => look.busy.length === 0);
      idleLooks = idle && motion === lastMotion ? idleLooks + 1 : idle ? 1 : 0;
      lastMotion = motion;
      if (idleLooks >= IDLE_LOOKS) return;
      if (Date.now() >= giveUpAt) {
        const busy = looks.filter(look => look.busy.length > 0).map(look => `${look.name}: ${look.busy.join(', ')}`);
        throw new DrainTimeoutError(
          `drain(): not idle after ${timeoutMs} ms. ${busy.length > 0 ? `Still due or running: ${busy.join('; ')}` : 'The queues kept changing'}. A job due with no worker for its queue, or a handler that never returns, keeps a drain from ending (drain({ timeoutMs }) waits longer).`,
        );
      }
      await new Promise(resolve => setTimeout(resolve, LOOK_INTERVAL_MS));
    }
  } finally {
    await Promise.all([...queues.values()].map(queue => queue.close()));
  }
}

async function lookAtAll(target: DrainTarget, queues: Map<string, Queue>): Promise<QueueLook[]> {
  const names = await listQueues({ connection: target.connection, prefix: target.prefix, logger: target.logger });
  for (const name of names) {
    if (!queues.has(name))
      queues.set(name, new Queue(name, { connection: target.connection, prefix: target.prefix, logger: target.logger }));
  }
  return Promise.all(names.map(name => lookAt(name, queues.get(name) as Queue, target.now())));
}

async function lookAt(name: string, queue: Queue, now: number): Promise<QueueLook> {
  const [stats, counters, schedules] = await Promise.all([queue.stats(), queue.counters(), queue.listSchedules()]);
  const busy: string[] = [];
  const claimable = stats.paused ? 0 : stats.ready - stats.limited;
  if (claimable > 0) busy.push(`${claimable} due and not claimed (${await firstIds(queue, 'ready')})`);
  if (stats.active > 0) busy.push(`${stats.active} running (${await firstIds(queue, 'active')})`);
  const dueTicks = schedules.filter(schedule => !schedule.paused && schedule.nextAt !== null && schedule.nextAt <= now);
  if (dueTicks.length > 0) busy.push(`schedule tick due: ${dueTicks.map(schedule => schedule.key).join(', ')}`);
  const motion = [
    counters.added,
    counters.claimed,
    counters.completed,
    counters.retried,
    counters.dead,
    counters.reaped,
    counters.ticks,
  ].join(',');
  return { name, busy, motion };
}

async function firstIds(queue: Queue, state: 'ready' | 'active'): Promise<string> {
  const page = await queue.list(state, { limit: 3 });
  return page.jobs.map(job => job.id).join(', ') || 'ids not listed';
}
