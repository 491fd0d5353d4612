// The Node.js versions sandglass declares must be ones its production dependencies accept: a
// dependency that wants a newer Node than `engines` admits breaks (or warns on) a user's install.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';

// semver comes with the production tree (fastify depends on it): no extra dependency for one check.
const semver = createRequire(import.meta.url)('semver') as {
  subset(range: string, superset: string): boolean;
  validRange(range: string): string | null;
};

interface LockEntry {
  version?: string;
  dev?: boolean;
  engines?: { node?: string } | string[];
}

const readJson = (file: string) => JSON.parse(readFileSync(new URL(`../${file}`, import.meta.url), 'utf8')) as Record<string, unknown>;
const pkg = readJson('package.json') as { engines: { node: string } };
const lock = readJson('package-lock.json') as { packages: Record<string, LockEntry> };

describe('engines', () => {
  it('package.json declares a valid Node range and the lockfile records the same one', () => {
    assert.ok(semver.validRange(pkg.engines.node), pkg.engines.node);
    assert.deepEqual(lock.packages['']?.engines, pkg.engines);
  });

  it("every production dependency in package-lock.json admits sandglass's Node range", () => {
    const refusing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === '' || entry.dev) continue;
      // Old packages wrote engines as an array of strings; npm ignores that form.
      const wanted = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (wanted !== undefined && !semver.subset(pkg.engines.node, wanted)) refusing.push(`${path}@${entry.version} wants node ${wanted}`);
    }
    assert.deepEqual(refusing, [], `sandglass declares node ${pkg.engines.node}`);
  });
});
