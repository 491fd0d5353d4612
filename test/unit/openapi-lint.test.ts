// docs/openapi.json is what code generators and Prism read: it must pass Redocly's recommended
// rules with no error and no warning (http-admin.test.ts checks that the service serves this file).
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { createConfig, lint } from '@redocly/openapi-core';

const OPENAPI_FILE = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

test("docs/openapi.json passes Redocly's recommended rules without an error or a warning", async () => {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lint({ ref: OPENAPI_FILE, config });
  const shown = problems.map(
    problem => `${problem.severity} ${problem.ruleId} at ${problem.location[0]?.pointer ?? '?'}: ${problem.message}`,
  );
  assert.deepEqual(shown, []);
});
