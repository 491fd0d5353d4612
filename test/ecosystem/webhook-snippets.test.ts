// The receivers' checks that docs/webhooks.md gives for Node, Python and Java, run as written
// against docs/webhook-signature-vectors.json: a reader who copies one gets a check that accepts
// what the service signs and refuses the rest (the hex-decoded key above all).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { SIGNATURE_VECTORS_FILE, signatureVectors } from '../helpers/webhook-vectors.js';

const run = promisify(execFile);
const doc = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
const vectors = signatureVectors;
/** Every vector with the answer a verifier must give, at the vector's own second. */
const cases = [...vectors.valid.map(v => ({ ...v, expected: true })), ...vectors.invalid.map(v => ({ ...v, expected: false }))];
const expected = cases.map(c => `${c.name}: ${c.expected}`);

/** The fenced block of `language` in the doc's section `heading`. */
function snippet(heading: string, language: string): string {
  const section = doc.slice(doc.indexOf(`\n### ${heading}\n`));
  const block = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section);
  assert.ok(block, `docs/webhooks.md has a ${language} block under "### ${heading}"`);
  return block[1] as string;
}

const dir = mkdtempSync(join(tmpdir(), 'sandglass-webhook-snippets-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("docs/webhooks.md's verifiers, as written, on the test vectors", () => {
  it('Node: accepts every valid vector and refuses every invalid one', () => {
    const code = snippet('Node.js', 'js');
    // The function as the doc writes it, without its server; its SECRET and clock set per vector.
    const verifySource = /\nfunction verify\([\s\S]*?\n}\n/.exec(code)?.[0];
    assert.ok(verifySource, 'the Node snippet defines verify(headers, rawBody)');
    const answers = cases.map(vector => {
      const make = new Function(
        'createHmac',
        'timingSafeEqual',
        'SECRET',
        'TOLERANCE_SECONDS',
        'Date',
        `${verifySource}; return verify;`,
      ) as (...args: unknown[]) => (headers: Record<string, string>, body: Buffer) => boolean;
      const clock = { now: () => vector.timestamp * 1000 };
      const verify = make(createHmac, timingSafeEqual, vector.secret, 300, clock);
      const headers = { 'sandglass-timestamp': String(vector.timestamp), 'sandglass-signature': vector.signature };
      return `${vector.name}: ${verify(headers, Buffer.from(vector.bodyHex, 'hex'))}`;
    });
    assert.deepEqual(answers, expected);
  });

  it('Python: accepts every valid vector and refuses every invalid one', async () => {
    // The snippet imports Flask, which only its server needs: a stand-in module keeps it importable.
    writeFileSync(
      join(dir, 'flask.py'),
      'class Flask:\n    def __init__(self, name): pass\n    def post(self, path): return lambda f: f\nabort = request = None\n',
    );
    writeFileSync(join(dir, 'receiver.py'), snippet('Python', 'python'));
    const harness = `
import importlib, json, os, sys, time
vectors = json.load(open(sys.argv[1], encoding="utf-8"))
cases = [(v, True) for v in vectors["valid"]] + [(v, False) for v in vectors["invalid"]]
for vector, _ in cases:
    os.environ["SANDGLASS_WEBHOOK_SECRET"] = vector["secret"]
    sys.modules.pop("receiver", None)
    receiver = importlib.import_module("receiver")
    receiver.time.time = lambda: float(vector["timestamp"])
    ok = receiver.verify(str(vector["timestamp"]), vector["signature"], bytes.fromhex(vector["bodyHex"]))
    print(f'{vector["name"]}: {"true" if ok else "false"}')
`;
    writeFileSync(join(dir, 'check.py'), harness);
    const { stdout } = await run('python3', [join(dir, 'check.py'), SIGNATURE_VECTORS_FILE], { cwd: dir });
    assert.deepEqual(stdout.trim().split('\n'), expected);
  });

  it('Java: accepts every valid vector and refuses every invalid one', async () => {
    writeFileSync(join(dir, 'SandglassSignature.java'), snippet('Java', 'java'));
    const calls = cases
      .map(
        vector =>
          `    check(${JSON.stringify(vector.name)}, ${JSON.stringify(vector.secret)}, "${vector.timestamp}", HexFormat.of().parseHex("${vector.bodyHex}"), ${JSON.stringify(vector.signature)}, ${vector.timestamp}L);`,
      )
      .join('\n');
    writeFileSync(
      join(dir, 'Check.java'),
      `import java.util.HexFormat;
public final class Check {
  static void check(String name, String secret, String timestamp, byte[] body, String signature, long now) throws Exception {
    System.out.println(name + ": " + SandglassSignature.verify(secret, timestamp, body, signature, now));
  }
  public static void main(String[] args) throws Exception {
${calls}
  }
}
`,
    );
    await run('javac', ['-encoding', 'UTF-8', '-d', dir, join(dir, 'SandglassSignature.java'), join(dir, 'Check.java')], { cwd: dir });
    const { stdout } = await run('java', ['-Dfile.encoding=UTF-8', '-Dstdout.encoding=UTF-8', '-cp', dir, 'Check'], { cwd: dir });
    assert.deepEqual(stdout.trim().split('\n'), expected);
  });
});
