#!/usr/bin/env node
// The test runner of `npm test` and `npm run test:fast`: every test file in its own `node --test`
// process (as `node --test a b c` runs them), as many at once as the machine has room for.
//
//   node scripts/test.mjs [folder | file ...]   every test/*/*.test.ts by default
//   node scripts/test.mjs --measure [...]       one file at a time; records each file's times
//
// Why not `node --test --test-concurrency=2 test/*/*.test.ts`: Node 20 sorts the files it is given,
// so the longest files may start last and leave a core idle at the end; and one concurrency fits
// neither the files that compute (the CLI tests spawn a CLI process per command) nor the many that
// mostly wait (leases, timers, frozen servers, cluster fail-overs), two of which leave a core idle.
//
// So: files start longest first, BASE_FILES of them at any time as `--test-concurrency=2` runs them.
// More files start only while the CPU in use, the files' expected use or the machine's measured use
// if that is more (other test runs, builds), leaves room for them within CPU_SHARE of the cores: a
// loaded machine gets no more files at once than before, an idle one the waiting files side by side.
// While the longest waiting file does not fit, shorter ones that fit and will be done before it can
// start go first (EASY backfilling: they fill the gap and never hold it back). Expected wall and CPU
// seconds per file come from scripts/test-times.json, written by --measure on an otherwise idle
// machine; a file not in it (a new one) starts first and counts as one core. Only when files start
// changes: each file's tests run as `node --test <file>` runs them, one process per file.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import process from 'node:process';
import { clearInterval, clearTimeout, setInterval, setTimeout } from 'node:timers';

const root = resolve(import.meta.dirname, '..');
const timesPath = join(root, 'scripts', 'test-times.json');
/** Beyond BASE_FILES files, the share of the machine's cores that the CPU in use must stay within. */
const CPU_SHARE = 0.8;
/** At most this many files per core at once, however little CPU they use. */
const FILES_PER_CORE = 2;
/** The least CPU a file is counted for (its `node --test` and tsx start-up alone take some). */
const MIN_CORES = 0.1;
/** As many files as `--test-concurrency=2` ran at once: that many start whatever the CPU in use. */
const BASE_FILES = 2;
/** The machine's CPU use is measured over this last stretch. */
const LOAD_WINDOW_MS = 3_000;
/**
 * A file still running after this many times its expected wall time (and at least FILE_LIMIT_MIN_S)
 * hangs: its process group is stopped and the file fails with the last lines it printed, instead of
 * holding the whole run until CI's own limit ends it with nothing to read. A new file gets FILE_LIMIT_NEW_S.
 */
const FILE_LIMIT_FACTOR = 4;
const FILE_LIMIT_MIN_S = 180;
const FILE_LIMIT_NEW_S = 600;
/** How many of a hung file's last output lines the failure shows. */
const HUNG_TAIL_LINES = 40;

const out = text => process.stdout.write(text);
const args = process.argv.slice(2);
const measure = args.includes('--measure');
const paths = args.filter(arg => arg !== '--measure');
const files = testFiles(paths);
const times = existsSync(timesPath) ? JSON.parse(readFileSync(timesPath, 'utf8')) : {};

if (files.length === 0) {
  out(`no test files in ${paths.join(' ') || 'test/*/'}\n`);
  process.exit(1);
}
process.exitCode = measure ? await measureFiles(files) : await runFiles(files);

/** The *.test.ts files of each folder (not its subfolders, like `test/unit/*.test.ts`), and the files named. */
function testFiles(named) {
  const folders =
    named.length > 0
      ? named
      : readdirSync(join(root, 'test'), { withFileTypes: true })
          .filter(entry => entry.isDirectory())
          .map(entry => join('test', entry.name));
  const found = [];
  for (const path of folders) {
    const full = resolve(path);
    if (!existsSync(full)) {
      out(`no such test file or folder: ${path}\n`);
      process.exit(1);
    }
    if (statSync(full).isDirectory()) {
      const names = readdirSync(full).filter(name => name.endsWith('.test.ts'));
      found.push(...names.sort().map(name => join(full, name)));
    } else {
      found.push(full);
    }
  }
  return [...new Set(found.map(file => relative(root, file)))];
}

/**
 * Runs one file as `node --import tsx --test <file>` and resolves with its exit code and output.
 * Past `limitS` seconds (when given) its whole process group is stopped: SIGTERM, then SIGKILL.
 */
function runFile(file, children, limitS) {
  return new Promise(resolveRun => {
    const startedAt = Date.now();
    // A process group of its own: a signal to the runner reaches the file's every process (below).
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', file], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    children.add(child);
    let output = '';
    child.stdout.on('data', chunk => (output += chunk));
    child.stderr.on('data', chunk => (output += chunk));
    let hung = false;
    const limit =
      limitS === undefined
        ? undefined
        : setTimeout(() => {
            hung = true;
            signalGroup(child, 'SIGTERM');
            setTimeout(() => signalGroup(child, 'SIGKILL'), 5_000).unref();
          }, limitS * 1_000);
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      children.delete(child);
      const wallS = (Date.now() - startedAt) / 1_000;
      resolveRun({ file, code: code ?? 1, signal, output, wallS, hungAfterS: hung ? limitS : undefined });
    });
  });
}

/**
 * Passes SIGINT and SIGTERM on to every process of the running files, as Ctrl-C in a terminal does
 * to one process group: their redis-servers and worker processes stop too, instead of outliving a
 * test process that died before its `after` hooks. No file starts after that.
 */
function forwardSignals(children) {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      process.exitCode = 130;
      for (const child of children) signalGroup(child, signal);
    });
  }
}

/** Sends `signal` to every process of a file's process group (its node, redis-servers, workers). */
function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is gone already.
  }
}

async function runFiles(list) {
  const cores = availableParallelism();
  const maxFiles = cores * FILES_PER_CORE;
  const expected = file => {
    const known = times[file];
    if (!known) return { wallMs: Number.POSITIVE_INFINITY, cores: 1, limitS: FILE_LIMIT_NEW_S };
    // A share above every core is the start-up's threads in a short file, not the file's own use.
    return {
      wallMs: known.wallS * 1_000,
      cores: Math.min(cores, Math.max(MIN_CORES, known.cpuS / known.wallS)),
      limitS: Math.max(FILE_LIMIT_MIN_S, Math.ceil(known.wallS * FILE_LIMIT_FACTOR)),
    };
  };
  const queue = list.map(file => ({ file, ...expected(file) })).sort((a, b) => b.wallMs - a.wallMs || a.file.localeCompare(b.file));
  const children = new Set();
  forwardSignals(children);
  const startedAt = Date.now();
  const totals = { tests: 0, suites: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
  const failed = [];
  const running = new Set();
  const machine = machineLoad(cores);
  await new Promise(resolveAll => {
    const next = () => {
      const interrupted = process.exitCode === 130;
      for (let job; !interrupted && running.size < maxFiles && (job = pick(queue, running, cores, machine.busyCores()));) {
        queue.splice(queue.indexOf(job), 1);
        const beside = [...running].map(other => other.file);
        running.add(Object.assign(job, { startsAt: Date.now(), endsAt: Date.now() + job.wallMs }));
        const startS = (Date.now() - startedAt) / 1_000;
        void runFile(job.file, children, job.limitS).then(result => {
          running.delete(job);
          report(result, totals, failed, { startS, beside });
          next();
        });
      }
      if (running.size === 0 && (queue.length === 0 || interrupted)) {
        clearInterval(recheck);
        resolveAll();
      }
    };
    // A file may wait for the machine rather than for a file to end: look again every second.
    const recheck = setInterval(next, 1_000);
    next();
  });
  for (const [name, count] of Object.entries(totals)) out(`ℹ ${name} ${count}\n`);
  const ran = list.length - queue.length;
  out(`ℹ files ${ran}${ran < list.length ? ` of ${list.length} (interrupted)` : ''}\nℹ duration_ms ${Date.now() - startedAt}\n`);
  // Each failure again at the very end, where a CI log cut to its tail still shows why.
  for (const result of failed) out(`\n✖ ${result.file} (${failureCause(result)})\n${failureDetails(result)}`);
  if (failed.length > 0) out('\n');
  for (const result of failed) out(`✖ ${result.file} (${failureCause(result)})\n`);
  return process.exitCode === 130 ? 130 : failed.length > 0 ? 1 : 0;
}

/**
 * The file to start next, if any: the longest waiting file when it fits (below BASE_FILES files any
 * does); otherwise a shorter one that fits and is expected to end before the longest could start, so
 * that new short files never hold the longest one back (EASY backfilling). A file fits beside
 * BASE_FILES or more when its expected CPU and the CPU in use stay within CPU_SHARE of the cores:
 * the CPU in use is the running files' expected use, or the machine's measured use if that is more
 * (plus the expected use of the files started too recently to show in it).
 */
function pick(queue, running, cores, machineBusy) {
  const now = Date.now();
  let using = 0;
  let unseen = 0;
  for (const job of running) {
    using += job.cores;
    if (job.startsAt > now - LOAD_WINDOW_MS) unseen += job.cores;
  }
  using = Math.max(using, machineBusy + unseen);
  const cpuBudget = cores * CPU_SHARE;
  const fits = job => running.size < BASE_FILES || using + job.cores <= cpuBudget;
  const [head] = queue;
  if (head === undefined || fits(head)) return head;
  // When the longest file can start: once enough of the running ones have ended, as expected.
  let free = cpuBudget - using;
  let left = running.size;
  let headStartsAt = now;
  for (const job of [...running].sort((a, b) => a.endsAt - b.endsAt)) {
    if (left < BASE_FILES || free >= head.cores) break;
    free += job.cores;
    left -= 1;
    headStartsAt = job.endsAt;
  }
  return queue.find(job => job !== head && fits(job) && now + job.wallMs <= headStartsAt);
}

/**
 * Prints a finished file's output whole (files run at once never interleave) and adds up its counts.
 * The header says when the file started and beside which files, for a timing failure's post-mortem.
 */
function report(result, totals, failed, { startS, beside }) {
  const company = beside.length > 0 ? `, beside ${beside.map(file => basename(file, '.test.ts')).join(', ')}` : '';
  out(`\n● ${result.file} · ${result.wallS.toFixed(1)} s, started at +${startS.toFixed(1)} s${company}\n`);
  const counts = {};
  for (const line of result.output.trimEnd().split('\n')) {
    const summary = /^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ([\d.]+)$/.exec(line);
    if (summary) counts[summary[1]] = Number(summary[2]);
    else out(`${line}\n`);
  }
  for (const name of Object.keys(totals)) totals[name] += counts[name] ?? 0;
  // A file that ran no test, or died before its summary, failed too.
  if (result.code !== 0 || counts.tests === undefined) failed.push(result);
}

function failureCause({ code, signal, hungAfterS }) {
  if (hungAfterS !== undefined) return `still running after ${hungAfterS} s: stopped`;
  return signal ?? `exit code ${code}`;
}

/**
 * What to read of a failed file: the spec reporter's "failing tests" part without its stack frames,
 * or, for a file that hung or died before it, the last lines it printed.
 */
function failureDetails({ output, hungAfterS }) {
  const lines = output.trimEnd().split('\n');
  const failing = lines.findIndex(line => line.startsWith('✖ failing tests:'));
  if (hungAfterS === undefined && failing !== -1) {
    const details = lines.slice(failing + 1).filter(line => !/^\s+at /.test(line) && line.trim() !== '');
    return details.map(line => `  ${line.length > 300 ? `${line.slice(0, 300)}...` : line}\n`).join('');
  }
  const tail = lines.slice(-HUNG_TAIL_LINES);
  const ending = hungAfterS === undefined ? '' : ' (the test after them never ended)';
  return `  its last ${tail.length} lines${ending}:\n${tail.map(line => `  ${line}\n`).join('')}`;
}

/** The machine's busy cores (all processes) over the last LOAD_WINDOW_MS, from the kernel's CPU times. */
function machineLoad(cores) {
  const samples = [];
  const sample = () => {
    let busy = 0;
    let total = 0;
    for (const { times } of cpus()) {
      const all = times.user + times.nice + times.sys + times.idle + times.irq;
      total += all;
      busy += all - times.idle;
    }
    const at = Date.now();
    samples.push({ at, busy, total });
    // Keep one sample older than the window, so that the difference spans all of it.
    while (samples.length > 2 && samples[1].at <= at - LOAD_WINDOW_MS) samples.shift();
  };
  sample();
  return {
    busyCores() {
      sample();
      const [first] = samples;
      const last = samples.at(-1);
      return last.total > first.total ? ((last.busy - first.busy) / (last.total - first.total)) * cores : 0;
    },
  };
}

/** CPU seconds used by this process's children that have exited and been waited for (Linux). */
function childCpuS() {
  // /proc/self/stat: fields 16 and 17 (cutime, cstime), counted from the one after the ")" as 3, in
  // clock ticks (USER_HZ, 100 a second on Linux).
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

async function measureFiles(list) {
  const children = new Set();
  forwardSignals(children);
  let failures = 0;
  for (const file of list) {
    const cpuBefore = childCpuS();
    const result = await runFile(file, children);
    if (process.exitCode === 130) return 130;
    const cpuS = childCpuS() - cpuBefore;
    if (result.code !== 0) {
      failures += 1;
      out(result.output);
    }
    times[file] = { wallS: Number(result.wallS.toFixed(1)), cpuS: Number(cpuS.toFixed(1)) };
    out(
      `${file}\t${result.wallS.toFixed(1)} s wall\t${cpuS.toFixed(1)} s CPU (${Math.round((100 * cpuS) / result.wallS)}%)${result.code === 0 ? '' : '\tFAILED'}\n`,
    );
    writeTimes();
  }
  return failures > 0 ? 1 : 0;
}

/** scripts/test-times.json, one line per file in file order (a re-measure diffs line by line), as Prettier writes it. */
function writeTimes() {
  const lines = Object.keys(times)
    .sort()
    .map(file => `  ${JSON.stringify(file)}: { "wallS": ${times[file].wallS}, "cpuS": ${times[file].cpuS} }`);
  writeFileSync(timesPath, `{\n${lines.join(',\n')}\n}\n`);
}
