#!/usr/bin/env node
// What `npm install sandglass` costs an app, beside `npm install bullmq` (with the ioredis it needs):
// packages installed, size of node_modules, and the time to import the entry (wall and CPU, the
// median of runs taken in turns, A B A B, so that other load hits both alike).
//
//   npm run pack && node bench/footprint.mjs [--runs 15]
//
// The sandglass tarball is the one `npm run pack` wrote (.tmp/packages); BullMQ comes from the registry.
import { execFileSync, spawnSync } from 'node:child_process';
import console from 'node:console';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import process from 'node:process';

const root = resolve(import.meta.dirname, '..');
const runsAt = process.argv.indexOf('--runs');
const runs = runsAt === -1 ? 15 : Number(process.argv[runsAt + 1]);
const tarball = readdirSync(join(root, '.tmp', 'packages')).find(file => /^sandglass-\d.*\.tgz$/.test(file));
if (tarball === undefined) throw new Error('no sandglass tarball in .tmp/packages: run npm run pack first');

const work = mkdtempSync(join(tmpdir(), 'sandglass-footprint-'));
try {
  const apps = [
    { name: 'sandglass', install: [join(root, '.tmp', 'packages', tarball)], entry: 'sandglass' },
    { name: 'bullmq', install: ['bullmq'], entry: 'bullmq' },
    { name: 'bullmq + ioredis', install: ['bullmq', 'ioredis'], entry: 'bullmq' },
  ].map((app, i) => {
    const dir = join(work, `app-${i}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${i}`, private: true, type: 'module' }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', ...app.install], { cwd: dir, stdio: 'ignore' });
    const packages = execFileSync('find', ['node_modules', '-name', 'package.json', '-not', '-path', '*/node_modules/*/node_modules/*/*'], {
      cwd: dir,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(path => /^node_modules\/(@[^/]+\/)?[^/@]+\/package\.json$/.test(path)).length;
    const size = execFileSync('du', ['-sh', 'node_modules'], { cwd: dir, encoding: 'utf8' }).split('\t')[0];
    return { ...app, dir, packages, size, wall: [], cpu: [] };
  });

  for (let run = 0; run < runs; run++)
    for (const app of apps) {
      const started = process.hrtime.bigint();
      const child = spawnSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `await import(${JSON.stringify(app.entry)}); const u = process.cpuUsage(); console.log((u.user + u.system) / 1000)`,
        ],
        { cwd: app.dir, encoding: 'utf8' },
      );
      if (child.status !== 0) throw new Error(`${app.name}: ${child.stderr}`);
      app.wall.push(Number(process.hrtime.bigint() - started) / 1e6);
      app.cpu.push(Number(child.stdout.trim()));
    }

  const median = values => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  console.log(
    `| install | packages | node_modules (du -sh) | import, wall ms (median of ${runs}) | import, CPU ms (with node's own start) |`,
  );
  console.log('|---|---|---|---|---|');
  for (const app of apps)
    console.log(
      `| npm install ${app.install.map(name => (name.endsWith('.tgz') ? 'sandglass' : name)).join(' ')} | ${app.packages} | ${app.size} | ${median(app.wall).toFixed(0)} | ${median(app.cpu).toFixed(0)} |`,
    );
} finally {
  rmSync(work, { recursive: true, force: true });
}
