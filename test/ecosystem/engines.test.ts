// The Node.js versions sandglass declares must be ones its production dependencies accept: a
// dependency that wants a newer Node than `engines` admits breaks (or warns on) a user's install.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { packagesRefusing, readLockfile, semver } from '../helpers/engines.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
const lock = readLockfile(new URL('../../package-lock.json', import.meta.url).pathname);

describe('engines', () => {
  it('package.json declares a valid Node range and the lockfile records the same one', () => {
    assert.ok(semver.validRange(pkg.engines.node), pkg.engines.node);
    assert.deepEqual(lock.packages['']?.engines, pkg.engines);
  });

  it("every production dependency in package-lock.json admits sandglass's Node range", () => {
    assert.deepEqual(packagesRefusing(lock, pkg.engines.node), [], `sandglass declares node ${pkg.engines.node}`);
  });
});
