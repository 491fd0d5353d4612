// Which packages a fresh Node process loads: test/helpers/record-imports.mjs records every module
// resolved, and the package names are read off their node_modules paths.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand } from './commands.js';

/** The packages of sandglass-server only: not dependencies of the library (scripts/pack.mjs). */
export const SERVICE_PACKAGES = ['fastify', 'pino', 'prom-client', 'commander', 'cli-progress', 'light-my-request'];

const recorder = fileURLToPath(new URL('record-imports.mjs', import.meta.url));

/** The node_modules packages that running the ES module `script` in `cwd` resolves (after `loaders`, e.g. tsx). */
export async function packagesLoaded(cwd: string, script: string, loaders: string[] = []): Promise<Set<string>> {
  const work = mkdtempSync(join(tmpdir(), 'sandglass-imports-'));
  const out = join(work, 'resolved.txt');
  try {
    const args = [...loaders.flatMap(loader => ['--import', loader]), '--import', recorder, '--input-type=module', '-e', script];
    const result = await runCommand(process.execPath, args, { cwd, env: { ...process.env, RECORD_IMPORTS_TO: out } });
    assert.equal(result.code, 0, result.stderr);
    const names = new Set<string>();
    for (const line of readFileSync(out, 'utf8').split('\n'))
      for (const [, name] of line.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)) names.add(name as string);
    return names;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
