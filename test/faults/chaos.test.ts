// The chaos suite at CI size: every fault of test/chaos/faults.ts under load against a private
// redis-server and real worker processes, checked by the ledger checker (test/chaos/checker.ts).
// `npm run chaos` runs the same faults at full size and prints the table (docs/chaos.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chaosPlan } from '../chaos/faults.js';
import { formatResult, runScenario } from '../chaos/harness.js';

for (const { scenario, size } of chaosPlan('ci')) {
  test(`chaos: ${scenario.description}`, { timeout: 60_000 }, async t => {
    const result = await runScenario(scenario, size);
    for (const line of formatResult(result).split('\n')) t.diagnostic(line);
    for (const criterion of result.criteria) assert.ok(criterion.ok, `${scenario.name}: ${criterion.name}: ${criterion.detail}`);
  });
}
