// Every TypeScript snippet of the README runs as written (issue 22: the Example once called a `db`
// it never defined, and cancelled a job before rescheduling it). Each block runs in its own
// process against a private Redis, importing the built package by its name as a user's code does.
// What a snippet takes from its surroundings is given by a prelude, and only names the block does not
// define itself: `queue`, `payload`, `handler`... (the README's prose says where they come from),
// and a `./db.js` for the Example's data layer. Two changes are made to the text: the Redis URL (the
// README's `redis://127.0.0.1:6379`) becomes the private one, and Nest's `listen(3000)` a free port.
// Blocks that need infrastructure a test cannot have (a Cluster at 10.0.0.1, an OTLP exporter) are
// listed in NOT_RUN with the reason, and the test fails when the list and the README disagree.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });
const root = new URL('../../', import.meta.url).pathname;
const readme = readFileSync(`${root}README.md`, 'utf8');
const built = existsSync(`${root}dist/index.js`);
const dir = `${root}.tmp/readme-snippets/`;

/** Blocks not run, by a word of their text, and why. */
const NOT_RUN: Record<string, string> = {
  'partitions: 12 });\nconst worker': 'a Redis Cluster at 10.0.0.1 (docs/cluster.md; the Cluster is tested in test/faults/)',
  'redis-ca.pem': 'a Redis Cluster at 10.0.0.1 with TLS and an ACL user (tested in test/cli/cli-tls.test.ts and test/faults/)',
  'exporter-trace-otlp-http': 'an OTLP exporter package, not a dependency of this repository (tested in test/library/telemetry.test.ts)',
  'closeOrderIfUnpaid(job.payload.orderId);          // runs in span': 'the tracing setup of the block before it',
};

interface Block {
  readonly line: number;
  readonly text: string;
}

function tsBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```ts') continue;
    const start = i + 1;
    while (i < lines.length && lines[++i] !== '```');
    blocks.push({ line: start + 1, text: lines.slice(start, i).join('\n') });
  }
  return blocks;
}

/** The names a snippet may take from its surroundings, as the README's prose around it gives them. */
const CONTEXT: Record<string, string> = {
  connection: 'const connection = REDIS_URL;',
  queue: "const queue = new Queue<any>('readme-queue', { connection: REDIS_URL });",
  payload: 'const payload = { orderId: 42 };',
  id: "const id = await queue.add(payload, { id: 'readme-id' });",
  cursor: 'const cursor = undefined;',
  handler: 'const handler = async () => undefined;',
};

function defines(text: string, name: string): boolean {
  return new RegExp(`\\b(const|let|class|function)\\s+${name}\\b|import\\s*(type\\s*)?\\{[^}]*\\b${name}\\b`).test(text);
}

function program(block: Block, url: string): string {
  const text = block.text.replaceAll('redis://127.0.0.1:6379', url).replace('app.listen(3000)', 'app.listen(0)');
  // A name used as a variable: not a property (`job.id`), not a key (`{ id: ... }`), not inside a word or string.
  const uses = (name: string) => new RegExp(`(?<![.\\w'"\`-])${name}\\b(?!\\s*:)`).test(text);
  const needed = Object.keys(CONTEXT).filter(name => uses(name) && !defines(text, name));
  if (needed.includes('id') && !needed.includes('queue') && !defines(text, 'queue')) needed.unshift('queue');
  if (needed.includes('id') && !needed.includes('payload') && !defines(text, 'payload')) needed.unshift('payload');
  const order = Object.keys(CONTEXT).filter(name => needed.includes(name));
  const imports = ['Queue', 'Worker'].filter(name => !defines(text, name));
  const prelude = [
    imports.length > 0 ? `import { ${imports.join(', ')} } from 'sandglass';` : '',
    `const REDIS_URL = ${JSON.stringify(url)};`,
    ...order.map(name => CONTEXT[name]),
  ];
  // The snippet's workers and timers keep the process alive: it ends a moment after the last line ran.
  return `${prelude.join('\n')}\n// --- README.md line ${block.line}\n${text}\n// ---\nsetTimeout(() => process.exit(0), 300);\n`;
}

function run(file: string, url: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Nest's decorators need the compiler option the README names (tsx reads it from this tsconfig).
    const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: url, NODE_NO_WARNINGS: '1', TSX_TSCONFIG_PATH: `${dir}tsconfig.json` };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: root, env });
    let output = '';
    child.stdout.on('data', chunk => (output += chunk));
    child.stderr.on('data', chunk => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', code => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the README snippets', () => {
  const blocks = tsBlocks(readme);

  it('are all run here, but for those NOT_RUN names', () => {
    assert.ok(built, 'dist/ is missing: run `npm run build` first (npm test builds before it tests)');
    for (const word of Object.keys(NOT_RUN)) {
      assert.equal(
        blocks.filter(block => block.text.includes(word)).length,
        1,
        `NOT_RUN's ${JSON.stringify(word)} names one block of the README`,
      );
    }
    assert.ok(blocks.length >= 8, `found ${blocks.length} blocks`);
  });

  for (const block of blocks) {
    const notRun = Object.keys(NOT_RUN).find(word => block.text.includes(word));
    if (notRun !== undefined) continue;
    it(`runs the block at README.md line ${block.line}`, async () => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        `${dir}tsconfig.json`,
        JSON.stringify({ compilerOptions: { experimentalDecorators: true, module: 'NodeNext', target: 'ES2022' } }),
      );
      writeFileSync(
        `${dir}db.ts`,
        "// The Example's data layer.\nconst orders = new Map([[42, { id: 42, status: 'unpaid' }]]);\nexport const db = { orders: { find: async (id: number) => orders.get(id), close: async (id: number) => void orders.delete(id) } };\n",
      );
      const file = `${dir}line-${block.line}.ts`;
      writeFileSync(file, program(block, redis.url));
      const { code, output } = await run(file, redis.url);
      assert.equal(code, 0, `README.md line ${block.line} failed:\n${output}\n--- as run (${file}):\n${readFileSync(file, 'utf8')}`);
    });
  }
});
