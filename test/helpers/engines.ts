// Which installed packages want a newer Node than a range admits, read from an npm lockfile: the
// repo's own (what CI installs) and a user's app's (what `npm install sandglass` gives them).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// semver comes with the production tree (fastify depends on it): no extra dependency for one check.
export const semver = createRequire(import.meta.url)('semver') as {
  subset(range: string, superset: string): boolean;
  validRange(range: string): string | null;
};

interface LockEntry {
  version?: string;
  dev?: boolean;
  engines?: { node?: string } | string[];
}

/** An npm lockfile (v2/v3): its `packages` map, keyed by install path ('' is the root project). */
export interface Lockfile {
  packages: Record<string, LockEntry>;
}

export function readLockfile(path: string): Lockfile {
  return JSON.parse(readFileSync(path, 'utf8')) as Lockfile;
}

/** `path@version wants node X` for every non-dev package whose engines do not admit all of `range`. */
export function packagesRefusing(lock: Lockfile, range: string): string[] {
  const refusing: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || entry.dev) continue;
    // Old packages wrote engines as an array of strings; npm ignores that form.
    const wanted = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (wanted !== undefined && !semver.subset(range, wanted)) refusing.push(`${path}@${entry.version} wants node ${wanted}`);
  }
  return refusing;
}
