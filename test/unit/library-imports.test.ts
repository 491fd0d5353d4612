// The library's entries load no package of the service or the CLI: `npm install sandglass` carries
// only ioredis, croner and @opentelemetry/api, so an import that reached fastify or commander would
// fail in an app (test/ecosystem/package.test.ts checks the same on the installed package). Here the
// sources run in a fresh Node under tsx, with the repository's node_modules, where every service
// package is installed: resolving one would succeed, so only the recording tells.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SERVICE_PACKAGES, packagesLoaded } from '../helpers/imports.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const importing = (entries: string[]) =>
  entries.map(entry => `await import(${JSON.stringify(pathToFileURL(join(root, entry)).href)});`).join('\n');

describe('the library entries', () => {
  it('load none of the service packages (fastify, pino, prom-client, commander, cli-progress, light-my-request)', async () => {
    const entries = ['src/index.ts', 'src/deploy/local-redis.ts', 'src/server/signature.ts', 'src/nestjs/index.ts'];
    const loaded = await packagesLoaded(root, importing(entries), ['tsx']);
    assert.ok(loaded.has('ioredis'), `the recording works: ioredis is among ${[...loaded].join(', ')}`);
    assert.deepEqual(
      SERVICE_PACKAGES.filter(name => loaded.has(name)),
      [],
    );
  });

  it('while the CLI does load them (the recording sees them)', async () => {
    const loaded = await packagesLoaded(root, importing(['src/cli/program.ts']), ['tsx']);
    assert.ok(loaded.has('commander') && loaded.has('cli-progress'), [...loaded].join(', '));
  });
});
