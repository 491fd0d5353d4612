// No import cycles in src/ (STYLE.md): every relative import of every source file, static,
// re-exported or dynamic, type-only ones included (a type cycle is a design cycle too), read with the
// TypeScript parser the project already has, and the graph searched for a cycle.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

/** Every module specifier `text` names: imports, `export ... from`, `import()`, `import('...')` types, `import x = require()`. */
function specifiersOf(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) found.push(argument.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The source file a relative specifier names (`./x.js` is `./x.ts`, a folder its index); undefined for a package. */
function resolveSpecifier(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts'), base];
  const hit = candidates.find(candidate => candidate.endsWith('.ts') && existsSync(candidate));
  if (!hit) throw new Error(`${relative(SRC, from)} imports ${specifier}, which names no source file`);
  return hit;
}

/** The graph of relative imports between the `.ts` files under `root`. */
function importGraph(root: string): Map<string, string[]> {
  const files = (readdirSync(root, { recursive: true }) as string[]).filter(name => name.endsWith('.ts')).map(name => join(root, name));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const relativeImports = specifiersOf(file, readFileSync(file, 'utf8')).filter(specifier => specifier.startsWith('.'));
    graph.set(file, [...new Set(relativeImports.map(specifier => resolveSpecifier(file, specifier)))]);
  }
  return graph;
}

/** One cycle of the graph as the files along it (the first repeated at the end), or undefined when there is none. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  // Depth-first, iterative (no recursion limit): a file on the current path met again closes a cycle.
  const done = new Set<string>();
  for (const start of [...graph.keys()].sort()) {
    if (done.has(start)) continue;
    const path: string[] = [start];
    const onPath = new Set([start]);
    const next: number[] = [0];
    while (path.length > 0) {
      const file = path.at(-1) as string;
      const edges = graph.get(file) ?? [];
      const index = next[next.length - 1] as number;
      if (index >= edges.length) {
        done.add(file);
        onPath.delete(file);
        path.pop();
        next.pop();
        continue;
      }
      next[next.length - 1] = index + 1;
      const target = edges[index] as string;
      if (onPath.has(target)) return [...path.slice(path.indexOf(target)), target];
      if (done.has(target)) continue;
      path.push(target);
      onPath.add(target);
      next.push(0);
    }
  }
  return undefined;
}

describe('imports', () => {
  it('src/ has no import cycle (type-only imports, re-exports and import() included)', () => {
    const graph = importGraph(SRC);
    assert.ok(graph.size > 50, `read ${graph.size} source files`);
    const cycle = findCycle(graph);
    assert.equal(cycle, undefined, `an import cycle: ${cycle?.map(file => relative(SRC, file)).join(' -> ')}`);
  });

  it('the search finds a cycle through a type-only import, a re-export and an import()', () => {
    const text =
      "import type { A } from './a.js';\nexport { B } from './b.js';\nconst c = await import('./c.js');\ntype D = typeof import('./d.js');";
    assert.deepEqual(specifiersOf('x.ts', text), ['./a.js', './b.js', './c.js', './d.js']);
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c', 'd']],
      ['c', []],
      ['d', ['b']],
    ]);
    assert.deepEqual(findCycle(graph), ['b', 'd', 'b']);
    assert.equal(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
      undefined,
    );
  });
});
