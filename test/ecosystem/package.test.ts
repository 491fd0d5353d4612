// The two packages as a user gets them: built from a fresh copy of the sources and packed by
// scripts/pack.mjs, then installed from the tarballs into a new app. First the library alone (what
// `npm install sandglass` gives): used from ESM, from CommonJS (require of the ES module, Node ^20.19 /
// >= 22.12), type-checked from both, no service package installed, and its bin's launcher saying
// what to install when npm cannot fetch the CLI (offline). Then sandglass-server beside it: the CLI,
// `serve` through its bin and through the launcher, a BullMQ queue moved by `sandglass migrate bullmq`
// and by migrateFromBullMQ, and the library still loading no service
// package. Everything happens in a temporary folder; the repository is only read.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue as BullQueue } from 'bullmq';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cleanEnv, npmCli, runCommand, type CommandResult } from '../helpers/commands.js';
import { packagesRefusing, readLockfile } from '../helpers/engines.js';
import { SERVICE_PACKAGES, packagesLoaded } from '../helpers/imports.js';
import { useRedis, waitFor } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const root = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'sandglass-package-'));
const clone = join(work, 'clone');
const app = join(work, 'app');
const installed = join(app, 'node_modules', 'sandglass');
const installedServer = join(app, 'node_modules', 'sandglass-server');
let tarball = '';
let serverTarball = '';

const npm = (cwd: string, ...args: string[]) => runCommand(process.execPath, [npmCli(), ...args], { cwd, env: cleanEnv() });
const node = (file: string) => runCommand(process.execPath, [file], { cwd: app, env: cleanEnv({ REDIS_URL: redis.url }) });

function ok(result: CommandResult, what: string): CommandResult {
  assert.equal(result.code, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`);
  return result;
}

// An ES module app: the local-redis entry starts its own Redis (the Lua files must be found inside
// the installed package), a delayed job runs, the webhooks entry loads, and the test kit runs a
// 30-minute job on its virtual clock.
const ESM_SCRIPT = `
import { Queue, Worker, ValidationError } from 'sandglass';
import { startLocalRedis } from 'sandglass/local-redis';
import { verifySignature } from 'sandglass/webhooks';
import { createTestEnvironment } from 'sandglass/testing';
const server = await startLocalRedis({ appendOnly: false });
setTimeout(() => { console.error('no job ran in 30 s'); void server.stop().then(() => process.exit(3)); }, 30_000).unref();
const queue = new Queue('pack-esm', { connection: server.url });
let ran;
const done = new Promise(resolve => (ran = resolve));
const worker = new Worker('pack-esm', async job => ran(job.payload), { connection: server.url });
worker.on('error', error => { console.error(error); process.exit(2); });
await queue.add({ hello: 'esm' }, { delay: 50 });
const payload = await done;
const env = await createTestEnvironment();
const timedOut = [];
env.worker('order-timeout', job => void timedOut.push(job.payload.orderId));
await env.queue('order-timeout').add({ orderId: 42 }, { delay: '30m' });
await env.clock.advance('30m');
await env.drain();
await env.close();
console.log(JSON.stringify({ payload, verify: typeof verifySignature, validation: typeof ValidationError, timedOut }));
await worker.close();
await queue.close();
await server.stop();
`;

// A CommonJS app: require() gets the same module instance as import (one SandglassError class).
const CJS_SCRIPT = `
const sandglass = require('sandglass');
const { startLocalRedis } = require('sandglass/local-redis');
const { verifySignature } = require('sandglass/webhooks');
const testing = require('sandglass/testing');
(async () => {
  const queue = new sandglass.Queue('pack-cjs', { connection: process.env.REDIS_URL });
  const id = await queue.add({ hello: 'cjs' }, { delay: '1h' });
  const info = await queue.get(id);
  let refused = '';
  try { await queue.add({}, { delay: -1 }); } catch (error) { refused = error instanceof sandglass.ValidationError ? error.code : String(error); }
  const same = (await import('sandglass')).ValidationError === sandglass.ValidationError;
  const env = await testing.createTestEnvironment();
  const ran = [];
  env.worker('reminder', job => void ran.push(job.id));
  await env.queue('reminder').add({}, { id: 'in-3-days', delay: '3d' });
  await env.clock.advance('3d');
  await env.drain();
  await env.close();
  console.log(JSON.stringify({ state: info.state, refused, same, local: typeof startLocalRedis, verify: typeof verifySignature, ran }));
  await queue.close();
})().catch(error => { console.error(error); process.exit(2); });
`;

const ESM_TYPES = `
import { Queue, type Job } from 'sandglass';
import { startLocalRedis, RedisServerNotFoundError } from 'sandglass/local-redis';
import { verifySignature } from 'sandglass/webhooks';
export const use = (job: Job<{ n: number }>) => job.payload.n + 1;
export const queue: (url: string) => Queue<{ n: number }> = url => new Queue<{ n: number }>('q', { connection: url });
export const refs = [startLocalRedis, RedisServerNotFoundError, verifySignature];
`;
const CJS_TYPES = ESM_TYPES.replace(/^export const use/m, 'export const usedFromCommonJs');

// A Nest application context from plain JavaScript (decorators applied by hand): forRoot from
// REDIS_URL, registerQueue, a @Processor that injects its queue; a job added runs, the app closes.
const NEST_SCRIPT = `
import { Inject, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SandglassModule, Processor, OnJobEvent, InjectQueue, getQueueToken } from 'sandglass/nestjs';
setTimeout(() => { console.error('no job ran in 30 s'); process.exit(3); }, 30_000).unref();
let ran;
const done = new Promise(resolve => (ran = resolve));
class Orders {
  constructor(queue) { this.queue = queue; }
  process(job) { return job.payload.orderId + 1; }
  onCompleted(job, result) { ran({ payload: job.payload, result }); }
}
InjectQueue('pack-nest')(Orders, undefined, 0);
OnJobEvent('completed')(Orders.prototype, 'onCompleted', Object.getOwnPropertyDescriptor(Orders.prototype, 'onCompleted'));
Processor('pack-nest')(Orders);
class AppModule {}
Module({ imports: [SandglassModule.forRoot({ connection: process.env.REDIS_URL }), SandglassModule.registerQueue({ name: 'pack-nest' })], providers: [Orders] })(AppModule);
const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
await app.get(getQueueToken('pack-nest')).add({ orderId: 41 });
console.log(JSON.stringify(await done));
await app.close();
`;

const NEST_TYPES = `
import { Injectable, Module } from '@nestjs/common';
import type { Job, Queue } from 'sandglass';
import { InjectQueue, OnJobEvent, Processor, SandglassModule, type JobProcessor } from 'sandglass/nestjs';
@Injectable()
export class OrdersService {
  constructor(@InjectQueue('orders') private readonly orders: Queue<{ orderId: number }>) {}
  place(orderId: number): Promise<string> { return this.orders.add({ orderId }, { delay: '30m' }); }
}
@Processor('orders', { concurrency: 50 })
export class OrdersProcessor implements JobProcessor<{ orderId: number }> {
  async process(job: Job<{ orderId: number }>): Promise<number> { return job.payload.orderId; }
  @OnJobEvent('dead') onDead(job: Job<{ orderId: number }>, error: unknown): void { console.error(job.id, error); }
}
@Module({
  imports: [
    SandglassModule.forRootAsync({ useFactory: async () => ({ connection: 'redis://127.0.0.1:6379', defaultWorkerOptions: { closeTimeoutMs: 5000 } }) }),
    SandglassModule.registerQueue({ name: 'orders', maxPayloadBytes: 1024 }),
  ],
  providers: [OrdersService, OrdersProcessor],
})
export class OrdersModule {}
`;

before(async () => {
  // A fresh clone's packable files, without dist/ (node_modules linked for the build's compiler).
  mkdirSync(clone);
  for (const entry of [
    'scripts/pack.mjs',
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'src',
    'dashboard',
    'docs',
    'README.md',
    'CHANGELOG.md',
  ]) {
    cpSync(join(root, entry), join(clone, entry), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'));
  ok(await npm(clone, 'run', 'build', '--silent'), 'npm run build');
  const packed = ok(
    await runCommand(process.execPath, [join(clone, 'scripts', 'pack.mjs'), '--destination', work], {
      cwd: clone,
      env: cleanEnv({ npm_execpath: npmCli() }),
    }),
    'scripts/pack.mjs',
  );
  [tarball = '', serverTarball = ''] = packed.stdout.trim().split('\n');
  assert.match(tarball, /\/sandglass-\d[^/]*\.tgz$/);
  assert.match(serverTarball, /sandglass-server-.*\.tgz$/);

  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'sandglass-app', version: '1.0.0', private: true }));
  // Dependencies from the local npm cache when it has them (the registry otherwise).
  ok(
    await npm(app, 'install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'),
    'npm install',
  );
  writeFileSync(join(app, 'esm.mjs'), ESM_SCRIPT);
  writeFileSync(join(app, 'cjs.cjs'), CJS_SCRIPT);
  writeFileSync(join(app, 'check.mts'), ESM_TYPES);
  writeFileSync(join(app, 'check.cts'), CJS_TYPES);
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        typeRoots: [join(root, 'node_modules', '@types')],
        types: ['node'],
      },
      files: ['check.mts', 'check.cts'],
    }),
  );
});

after(() => rmSync(work, { recursive: true, force: true }));

describe('the library package, installed alone into an app', () => {
  it('ships the library, its Lua scripts, the webhooks check and the launcher; not the service, the CLI, the dashboard or src/', () => {
    for (const file of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/deploy/local-redis.js',
      'dist/server/signature.js',
      'dist/launcher.js',
      'dist/store/redis/lua/ack.lua',
    ]) {
      assert.ok(existsSync(join(installed, file)), `${file} is in the package`);
    }
    for (const file of ['src', 'dashboard', 'dist/cli.js', 'dist/cli', 'dist/server/app.js'])
      assert.ok(!existsSync(join(installed, file)), `${file} is not shipped`);
    // The library's docs, not the service's (those are in sandglass-server).
    for (const file of ['docs/testing.md', 'docs/migrating-from-bullmq.md', 'docs/nestjs.md', 'docs/webhooks.md'])
      assert.ok(existsSync(join(installed, file)), `${file} is in the package`);
    for (const file of ['docs/http-api.md', 'docs/openapi.json', 'docs/dashboard.png'])
      assert.ok(!existsSync(join(installed, file)), `${file} is not shipped with the library`);
    assert.deepEqual(
      readdirSync(join(installed, 'dist', 'server')).filter(file => !file.startsWith('signature.')),
      [],
      'dist/server holds signature.* only',
    );
    // Nest is an optional peer: not installed for an app that does not ask for it, and only the
    // sandglass/nestjs entry imports it (the other tests here run before Nest is linked in).
    assert.ok(!existsSync(join(app, 'node_modules', '@nestjs')), 'npm installed no Nest package');
    const importsNest = readdirSync(join(installed, 'dist'), { recursive: true, encoding: 'utf8' })
      .filter(file => file.endsWith('.js') && !file.startsWith('nestjs'))
      .filter(file => /from ['"]@nestjs\//.test(readFileSync(join(installed, 'dist', file), 'utf8')));
    assert.deepEqual(importsNest, [], 'only dist/nestjs imports @nestjs');
    const maps = readdirSync(join(installed, 'dist'), { recursive: true, encoding: 'utf8' }).filter(file => file.endsWith('.js.map'));
    assert.ok(maps.length > 10, `${maps.length} maps`);
    for (const file of maps) {
      const map = JSON.parse(readFileSync(join(installed, 'dist', file), 'utf8')) as {
        sources: string[];
        sourcesContent?: (string | null)[];
      };
      assert.equal(
        map.sourcesContent?.filter(content => typeof content === 'string').length,
        map.sources.length,
        `${file} carries its sources`,
      );
    }
  });

  it('depends on ioredis, croner and @opentelemetry/api only: npm installs no service package', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    assert.deepEqual(Object.keys(manifest.dependencies).sort(), ['@opentelemetry/api', 'croner', 'ioredis']);
    assert.deepEqual(
      SERVICE_PACKAGES.filter(name => existsSync(join(app, 'node_modules', name))),
      [],
    );
  });

  it('runs a delayed job from an ES module app, on a Redis started by sandglass/local-redis, and a test on sandglass/testing', async () => {
    const { stdout } = ok(await node('esm.mjs'), 'esm.mjs');
    assert.deepEqual(JSON.parse(stdout), { payload: { hello: 'esm' }, verify: 'function', validation: 'function', timedOut: [42] });
  });

  it('works from a CommonJS app through require(), with the same classes as import', async () => {
    const { stdout } = ok(await node('cjs.cjs'), 'cjs.cjs');
    assert.deepEqual(JSON.parse(stdout), {
      state: 'delayed',
      refused: 'ERR_VALIDATION',
      same: true,
      local: 'function',
      verify: 'function',
      ran: ['in-3-days'],
    });
  });

  it('type-checks from an ES module and from a CommonJS TypeScript file (module nodenext)', async () => {
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    ok(await runCommand(process.execPath, [tsc, '-p', app], { cwd: app }), 'tsc');
  });

  it("gives the app no dependency that refuses sandglass's Node range (npm's EBADENGINE)", () => {
    // The repo's lockfile does not reach a user: this is the tree `npm install sandglass` gives them.
    const { engines } = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { engines: { node: string } };
    assert.deepEqual(
      packagesRefusing(readLockfile(join(app, 'package-lock.json')), engines.node),
      [],
      `sandglass declares node ${engines.node}`,
    );
  });

  it('its sandglass bin, without sandglass-server and offline, fails saying what to install', async () => {
    const offline = await runCommand(process.execPath, [npmCli(), 'exec', '--offline', '--', 'sandglass', '--help'], {
      cwd: app,
      env: cleanEnv({ npm_config_offline: 'true' }),
    });
    assert.equal(offline.code, 1, offline.stdout);
    assert.match(offline.stderr, /ENOTCACHED/, 'npm exec was asked for sandglass-server');
    assert.match(offline.stderr, /which npm could not fetch; install it beside sandglass: npm install sandglass-server@0\.1\.0/);
  });
});

describe('sandglass-server, installed beside the library', () => {
  before(async () => {
    ok(
      await npm(app, 'install', serverTarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'),
      'npm install sandglass-server',
    );
  });

  it('ships the service, the CLI, the dashboard and the library files they import; depends on the service packages', () => {
    for (const file of [
      'dist/cli.js',
      'dist/server/app.js',
      'dist/index.js',
      'dist/store/redis/lua/ack.lua',
      'dashboard/index.html',
      'docs/http-api.md',
      'docs/openapi.json',
    ])
      assert.ok(existsSync(join(installedServer, file)), `${file} is in sandglass-server`);
    for (const file of ['src', 'dist/launcher.js', 'dist/nestjs'])
      assert.ok(!existsSync(join(installedServer, file)), `${file} is not in sandglass-server`);
    const manifest = JSON.parse(readFileSync(join(installedServer, 'package.json'), 'utf8')) as {
      version: string;
      dependencies: Record<string, string>;
      bin: Record<string, string>;
    };
    for (const name of [...SERVICE_PACKAGES, 'ioredis', 'croner', '@opentelemetry/api']) assert.ok(manifest.dependencies[name], name);
    assert.deepEqual(Object.keys(manifest.bin).sort(), ['sandglass', 'sandglass-server']);
    const library = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { version: string };
    assert.equal(manifest.version, library.version);
  });

  it("gives the app no dependency that refuses sandglass's Node range (npm's EBADENGINE)", () => {
    const { engines } = JSON.parse(readFileSync(join(installedServer, 'package.json'), 'utf8')) as { engines: { node: string } };
    assert.deepEqual(packagesRefusing(readLockfile(join(app, 'package-lock.json')), engines.node), []);
  });

  it('importing the library (ESM and require) loads none of the service packages, installed as they are now', async () => {
    for (const name of SERVICE_PACKAGES) assert.ok(existsSync(join(app, 'node_modules', name)), `${name} is installed`);
    const script = `
      await import('sandglass'); await import('sandglass/local-redis'); await import('sandglass/webhooks'); await import('sandglass/testing');
      (await import('node:module')).createRequire(process.cwd() + '/').call(null, 'sandglass');`;
    const loaded = await packagesLoaded(app, script);
    assert.ok(loaded.has('ioredis') && loaded.has('sandglass'), [...loaded].join(', '));
    assert.deepEqual(
      SERVICE_PACKAGES.filter(name => loaded.has(name)),
      [],
    );
  });

  it('moves the waiting jobs of a BullMQ queue: sandglass migrate bullmq through npx, and migrateFromBullMQ from the app', async () => {
    // BullMQ (this repository's dev dependency) adds the jobs, as the app's old code did.
    const bull = new BullQueue('emails', { connection: { host: '127.0.0.1', port: redis.server.port }, prefix: 'pkgbull' });
    try {
      for (let i = 0; i < 3; i++) await bull.add('send', { to: `u${i}` }, { jobId: `mail-${i}`, delay: 3_600_000, attempts: 4 });
      await bull.upsertJobScheduler('daily', { pattern: '0 9 * * *' }, { name: 'digest', data: {} });
    } finally {
      await bull.close();
    }
    const migrate = (...args: string[]) =>
      npm(
        app,
        'exec',
        '--offline',
        '--',
        'sandglass',
        '--redis',
        redis.url,
        'migrate',
        'bullmq',
        'emails',
        '--bullmq-prefix',
        'pkgbull',
        ...args,
      );
    const dry = ok(await migrate('--to', 'pkg-emails', '--dry-run'), 'migrate --dry-run');
    assert.match(dry.stdout, /would move 3 job\(s\)/);
    const moved = ok(await migrate('--to', 'pkg-emails'), 'migrate');
    assert.match(moved.stdout, /moved 3, already there 0, skipped 1/);
    assert.match(moved.stdout, /recreate it as a sandglass schedule, queue\.schedule\("daily"/);
    assert.match(ok(await migrate('--to', 'pkg-emails'), 'migrate again').stdout, /moved 0, already there 3/);

    writeFileSync(
      join(app, 'migrate.mjs'),
      `import { migrateFromBullMQ, Queue } from 'sandglass';
const result = await migrateFromBullMQ({ connection: process.env.REDIS_URL, bullmqQueue: 'emails', bullmqPrefix: 'pkgbull', queue: 'pkg-emails-2' });
const queue = new Queue('pkg-emails-2', { connection: process.env.REDIS_URL });
const job = await queue.get('mail-1');
console.log(JSON.stringify({ moved: result.moved, skipped: result.skipped.length, state: job.state, maxAttempts: job.maxAttempts, payload: job.payload }));
await queue.close();
`,
    );
    const { stdout } = ok(await node('migrate.mjs'), 'migrate.mjs');
    assert.deepEqual(JSON.parse(stdout), { moved: 3, skipped: 1, state: 'delayed', maxAttempts: 4, payload: { to: 'u1' } });
  });

  it('npx sandglass --help', async () => {
    const { stdout } = ok(await npm(app, 'exec', '--offline', '--', 'sandglass', '--help'), 'npx sandglass --help');
    assert.match(stdout, /^Usage: sandglass /m);
  });

  for (const [how, bin] of [
    ['the bin', join('node_modules', '.bin', 'sandglass')],
    ["the library's launcher, in-process", join('node_modules', 'sandglass', 'dist', 'launcher.js')],
  ] as const) {
    it(`serve starts through ${how}, answers /healthz and stops on SIGTERM`, async () => {
      const child = spawn(process.execPath, [join(app, bin), '--redis', redis.url, 'serve', '--port', '0', '--log-level', 'info'], {
        cwd: app,
        env: cleanEnv({ SANDGLASS_DATA_DIR: join(work, 'data') }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', chunk => (output += String(chunk)));
      child.stderr.on('data', chunk => (output += String(chunk)));
      const exited = new Promise<number | null>(resolve => child.on('close', code => resolve(code)));
      try {
        await waitFor(() => /listening on http:\/\/127\.0\.0\.1:\d+/.test(output), 30_000, 'the service to listen');
        const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1] as string;
        assert.equal((await fetch(`${url}/healthz`)).status, 200);
      } finally {
        child.kill('SIGTERM');
      }
      assert.equal(await exited, 0, output);
    });
  }

  it('runs a Nest application with sandglass/nestjs, and its types compile with legacy decorators, once Nest is installed beside it', async () => {
    // Nest from the repository's own node_modules (linked, not downloaded): what `npm install
    // @nestjs/common @nestjs/core` would add to the app.
    for (const name of ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs']) {
      mkdirSync(join(app, 'node_modules', name, '..'), { recursive: true });
      symlinkSync(join(root, 'node_modules', name), join(app, 'node_modules', name));
    }
    writeFileSync(join(app, 'nest.mjs'), NEST_SCRIPT);
    const { stdout } = ok(await node('nest.mjs'), 'nest.mjs');
    assert.deepEqual(JSON.parse(stdout), { payload: { orderId: 41 }, result: 42 });

    writeFileSync(join(app, 'check-nest.mts'), NEST_TYPES);
    writeFileSync(
      join(app, 'tsconfig.nest.json'),
      JSON.stringify({ extends: './tsconfig.json', compilerOptions: { experimentalDecorators: true }, files: ['check-nest.mts'] }),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    ok(await runCommand(process.execPath, [tsc, '-p', join(app, 'tsconfig.nest.json')], { cwd: app }), 'tsc (nest)');
  });
});
