// The compiler's own words for common mistakes: the message must name the misspelled option, not
// an overload the user never meant (test/ecosystem/types.test-d.ts pins what compiles and what does not).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import ts from 'typescript';

function diagnosticsOf(source: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'sg-types-'));
  const file = join(dir, 'probe.ts');
  const index = fileURLToPath(new URL('../../src/index.ts', import.meta.url));
  writeFileSync(file, source.replace('SANDGLASS', index.replace(/\.ts$/, '.js')));
  const program = ts.createProgram([file], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    typeRoots: [fileURLToPath(new URL('../../node_modules/@types', import.meta.url))],
  });
  return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map(d => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('type errors name the mistake', () => {
  it("a misspelled Worker option is named in the last overload's error, the one editors show", () => {
    const [message] = diagnosticsOf(`
      import { Worker } from 'SANDGLASS';
      new Worker('q', async job => void job.payload, { connection: 'redis://127.0.0.1:6379', concurency: 5 });
    `);
    const last = (message ?? '').split(/\n\s*Overload \d of \d/).at(-1) ?? '';
    assert.match(last, /'concurency' does not exist/, message);
  });

  it('a duration in words and a reschedule without a time do not compile', () => {
    const messages = diagnosticsOf(`
      import { Queue } from 'SANDGLASS';
      declare const queue: Queue<number>;
      void queue.add(1, { delay: '30 minutes' });
      void queue.reschedule('id', {});
    `);
    assert.equal(messages.length, 2, messages.join('\n---\n'));
    assert.match(messages[0] ?? '', /'"30 minutes"' is not assignable/);
  });
});
