/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and says where the time went: idle (waiting for
 * replies), garbage collection, and the functions with the most self time.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
}

export interface ProfileSummary {
  readonly path: string;
  /** Whether only the samples of the given window were counted (else the whole process life). */
  readonly windowed: boolean;
  readonly totalMs: number;
  readonly idleMs: number;
  readonly gcMs: number;
  /** Functions by self time, most first. */
  readonly top: readonly { readonly name: string; readonly selfMs: number }[];
}

/** The main thread's profile among a child's (node names them CPU.<date>.<time>.<pid>.<thread>.<seq>). */
export function mainThreadProfile(paths: readonly string[]): string | undefined {
  return paths.find(path => /\.\d+\.0\.\d+\.cpuprofile$/.test(path)) ?? paths[0];
}

/**
 * Self time by function. With a window (monotonic us, the clock of V8's sample timestamps and of
 * process.hrtime), only the samples inside it count: a cold process spends much of its life
 * loading modules before the measured drain starts.
 */
export function summarizeProfile(path: string, window?: { readonly startUs: number; readonly endUs: number }, top = 12): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map(node => [node.id, node]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  let at = profile.startTime;
  const times = profile.timeDeltas.map(delta => (at += delta));
  const inside = (time: number) => window !== undefined && time >= window.startUs && time <= window.endUs;
  // A window no sample falls in means the clocks differ: then count everything, and say so.
  const windowed = times.some(inside);
  profile.samples.forEach((id, index) => {
    if (windowed && !inside(times[index] ?? 0)) return;
    const delta = profile.timeDeltas[index] ?? 0;
    totalUs += delta;
    const frame = nodes.get(id)?.callFrame;
    const name = frame ? nameOf(frame) : '(unknown)';
    selfUs.set(name, (selfUs.get(name) ?? 0) + delta);
  });
  const ranked = [...selfUs].filter(([name]) => !['(idle)', '(program)', '(garbage collector)'].includes(name)).sort((a, b) => b[1] - a[1]);
  return {
    path,
    windowed,
    totalMs: totalUs / 1000,
    idleMs: (selfUs.get('(idle)') ?? 0) / 1000,
    gcMs: (selfUs.get('(garbage collector)') ?? 0) / 1000,
    top: ranked.slice(0, top).map(([name, us]) => ({ name, selfMs: us / 1000 })),
  };
}

function nameOf(frame: ProfileNode['callFrame']): string {
  if (frame.url === '') return frame.functionName || '(anonymous)';
  const file = frame.url.startsWith('file://') ? relative(process.cwd(), new URL(frame.url).pathname) : frame.url;
  // No line number: tsx compiles the sources, and V8 reports the compiled lines.
  return `${frame.functionName || '(anonymous)'} ${file}`;
}
