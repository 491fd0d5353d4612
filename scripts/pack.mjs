#!/usr/bin/env node
// Packs the two npm packages of this tree, after `npm run build`:
//   sandglass         the library (Queue, Worker, ...): dist/ without the service and the CLI, and a
//                     small `sandglass` bin that runs sandglass-server's CLI (src/launcher.ts);
//   sandglass-server  the HTTP service, the dashboard, the metrics and the `sandglass` CLI.
// The root package.json is the development workspace (private); each package's package.json is
// generated from it here, into a staging folder where `npm pack` runs.
//
//   node scripts/pack.mjs [--destination <folder>]   (default: the current folder)
//
// Prints the path of each tarball, one a line. Before packing it follows the imports of every entry
// of each package and fails when one reaches a file the package does not ship or a package it does
// not depend on.
import { execFileSync } from 'node:child_process';
import console from 'node:console';
import { builtinModules } from 'node:module';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { URL, fileURLToPath } from 'node:url';
import process from 'node:process';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { destination: { type: 'string', default: '.' } } });
const destination = resolve(values.destination);
const workspace = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** What `npm install sandglass` needs: the service's packages (fastify, pino, ...) stay out. */
const LIBRARY_DEPENDENCIES = ['ioredis', 'croner', '@opentelemetry/api'];
/** dist/ files of the service and the CLI; signature.js stays in the library as `sandglass/webhooks`. */
const serviceOnly = file => /^cli(\.|\/)/.test(file) || (file.startsWith('server/') && !file.startsWith('server/signature.'));

const common = {
  version: workspace.version,
  license: workspace.license,
  type: workspace.type,
  engines: workspace.engines,
};
const pick = names => Object.fromEntries(names.map(name => [name, workspace.dependencies[name]]));

/**
 * The docs of the service alone (its HTTP API and OpenAPI document, the CLI, the dashboard's
 * picture, Spring Boot over HTTP): shipped in sandglass-server, not in the library, whose readers
 * need the rest (testing, migrating, Nest, OpenTelemetry, Cluster, Sentinel, webhooks' check).
 */
const SERVICE_DOCS = ['docs/http-api.md', 'docs/openapi.json', 'docs/cli.md', 'docs/dashboard.png', 'docs/spring-boot.md'];

const PACKAGES = [
  {
    manifest: {
      name: 'sandglass',
      description: workspace.description,
      ...common,
      main: workspace.main,
      types: workspace.types,
      exports: workspace.exports,
      bin: { sandglass: './dist/launcher.js' },
      dependencies: pick(LIBRARY_DEPENDENCIES),
      peerDependencies: workspace.peerDependencies,
      peerDependenciesMeta: workspace.peerDependenciesMeta,
    },
    dist: file => !serviceOnly(file),
    extra: ['README.md', 'CHANGELOG.md', 'docs'],
    leaveOut: SERVICE_DOCS,
  },
  {
    // Self-contained: it ships the library's dist/ files its CLI and service import, rather than
    // depending on `sandglass` and rewriting their relative imports to the package's; an install of
    // both then holds two copies of those files (about 2 MB), never two versions that disagree.
    manifest: {
      name: 'sandglass-server',
      description: 'The sandglass service (HTTP API, webhooks, dashboard, Prometheus metrics) and the sandglass command line.',
      ...common,
      // `sandglass-server`, the package's own name, is what `npm exec sandglass-server` runs.
      bin: { sandglass: './dist/cli.js', 'sandglass-server': './dist/cli.js' },
      exports: { './cli': './dist/cli.js', './package.json': './package.json' },
      dependencies: workspace.dependencies,
    },
    dist: file => !file.startsWith('launcher.') && !file.startsWith('nestjs/'),
    extra: ['README.md', 'CHANGELOG.md', 'docs', 'dashboard'],
  },
];

if (!existsSync(join(root, 'dist', 'index.js')) || !existsSync(join(root, 'dist', 'launcher.js'))) {
  console.error('pack: dist/ is not built: run `npm run build` first');
  process.exit(1);
}

const staging = mkdtempSync(join(tmpdir(), 'sandglass-pack-'));
try {
  mkdirSync(destination, { recursive: true });
  for (const pkg of PACKAGES) console.log(pack(pkg));
} catch (error) {
  console.error(`pack: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  rmSync(staging, { recursive: true, force: true });
}

function pack({ manifest, dist, extra, leaveOut = [] }) {
  const dir = join(staging, manifest.name);
  cpSync(join(root, 'dist'), join(dir, 'dist'), {
    recursive: true,
    filter: source => source === join(root, 'dist') || dist(relative(join(root, 'dist'), source).split(sep).join('/')),
  });
  const left = new Set(leaveOut.map(file => join(root, file)));
  for (const entry of extra) cpSync(join(root, entry), join(dir, entry), { recursive: true, filter: source => !left.has(source) });
  const exports = {};
  for (const [key, target] of Object.entries(manifest.exports)) {
    const file = typeof target === 'string' ? target : target.default;
    // An entry whose module is not in this tree yet (another branch adds it) is left out, not packed broken.
    if (file === './package.json' || existsSync(join(dir, file))) exports[key] = target;
    else console.error(`${manifest.name}: export ${key} left out, ${file} is not built`);
  }
  const final = { ...manifest, exports };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(final, null, 2)}\n`);
  checkImports(dir, final);
  const out = npm(['pack', '--json', '--pack-destination', destination], dir);
  return join(destination, JSON.parse(out)[0].filename);
}

/** Every file the package's entries import is in it; every package they import is a dependency. */
function checkImports(dir, manifest) {
  const allowed = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
  const entries = [...Object.values(manifest.exports), ...Object.values(manifest.bin)]
    .map(target => (typeof target === 'string' ? target : target.default))
    .filter(file => file.endsWith('.js'));
  const seen = new Set();
  const visit = file => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!existsSync(file)) fail(`${manifest.name}: ${relative(dir, file)} is imported but not in the package`);
    // Compiled ES modules: static `from '...'` and `import('...')` with a literal specifier.
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"]([^'"]+)['"]/g)) {
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
      else if (!specifier.startsWith('node:') && !builtinModules.includes(specifier)) {
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
        if (!allowed.has(name)) fail(`${manifest.name}: ${relative(dir, file)} imports ${name}, which is not a dependency`);
      }
    }
  };
  for (const entry of entries) visit(join(dir, entry));
}

function npm(args, cwd) {
  // The npm running this script when there is one (`npm run`), else the one on the PATH.
  const cli = process.env.npm_execpath?.endsWith('.js') ? process.env.npm_execpath : undefined;
  return cli
    ? execFileSync(process.execPath, [cli, ...args], { cwd, encoding: 'utf8' })
    : execFileSync('npm', args, { cwd, encoding: 'utf8', shell: process.platform === 'win32' });
}

function fail(message) {
  throw new Error(message);
}
