// `npm run chaos`: every fault of the chaos suite at full size, one after the other, then a table.
//   tsx test/chaos/run.ts [--ci] [fault names...]
// --ci runs the CI sizes (the same as test/faults/chaos.test.ts). Exit code 1 when a fault fails.
// SANDGLASS_SCRIPTS=eval (inherited by the worker processes) runs every script by EVALSHA instead of
// FCALL of the Functions library (src/store/redis/scripts.ts): `SANDGLASS_SCRIPTS=eval npm run chaos`.
import { cpus, loadavg } from 'node:os';
import { chaosPlan } from './faults.js';
import { formatResult, formatTable, runScenario, type ScenarioResult } from './harness.js';

const args = process.argv.slice(2);
const scale = args.includes('--ci') ? 'ci' : 'full';
const only = args.filter(arg => !arg.startsWith('--'));
const plan = chaosPlan(scale).filter(({ scenario }) => only.length === 0 || only.includes(scenario.name));

const startedAt = Date.now();
const stamp = () => `[${((Date.now() - startedAt) / 1000).toFixed(1)} s]`;
console.log(`sandglass chaos suite, ${scale} size: ${plan.map(p => p.scenario.name).join(', ')}`);
console.log(
  `${cpus().length} CPUs, load average ${loadavg()
    .map(l => l.toFixed(2))
    .join(' ')} at the start`,
);
const results: ScenarioResult[] = [];
for (const { scenario, size } of plan) {
  try {
    const result = await runScenario(scenario, size, line => console.log(`${stamp()} ${line}`));
    results.push(result);
    console.log(formatResult(result));
    console.log(
      `  load average now ${loadavg()
        .map(l => l.toFixed(2))
        .join(' ')}`,
    );
  } catch (error) {
    console.log(`FAIL ${scenario.name}: the harness threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exitCode = 1;
  }
}
console.log('');
console.log(formatTable(results));
console.log(
  `\nwhole run ${((Date.now() - startedAt) / 1000).toFixed(0)} s; load average at the end ${loadavg()
    .map(l => l.toFixed(2))
    .join(' ')}`,
);
if (results.some(r => !r.pass) || results.length < plan.length) process.exitCode = 1;
