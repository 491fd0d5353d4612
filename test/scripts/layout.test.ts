import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { claimMemoKey, failMemoKey, partitionKeys, limiterKeys, queueRegistryKey, wheelBucketKey, wheelIndexKey, PARTITION_KEY_NAMES } from '../../src/store/redis/keys.js';
import { SCRIPT_NAMES, declaredIncludes, resolveIncludes, scriptIncludes, scriptSource } from '../../src/store/redis/scripts.js';
import { useRedis } from '../helpers/redis.js';
import { codeOf, topLevelDefinitions, usedNames } from './lua-names.js';

const redis = useRedis({ appendOnly: false });

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const luaDir = new URL('../../src/store/redis/lua/', import.meta.url);
const includeDir = new URL('includes/', luaDir);

const scriptText = (name: string) => readFileSync(new URL(`${name}.lua`, luaDir), 'utf8');
const INCLUDES = readdirSync(includeDir)
  .filter(file => file.endsWith('.lua'))
  .map(file => file.slice(0, -4))
  .sort();
const includeText = (name: string) => readFileSync(new URL(`${name}.lua`, includeDir), 'utf8');

// Which include defines each top-level name (function, constant, per-call state, key binding).
const ownerOf = new Map<string, string>();
const definitions = new Map<string, string>();
for (const include of INCLUDES) {
  for (const [name, definition] of topLevelDefinitions(codeOf(includeText(include)))) {
    assert.ok(!ownerOf.has(name), `${name} is defined by includes/${ownerOf.get(name)}.lua and includes/${include}.lua`);
    ownerOf.set(name, include);
    definitions.set(name, definition);
  }
}

/** The includes whose names a file's code uses (its own top-level names aside). */
function includesUsed(source: string, self?: string): Set<string> {
  const code = codeOf(source);
  const own = topLevelDefinitions(code);
  const used = new Set<string>();
  for (const name of usedNames(code)) {
    const owner = ownerOf.get(name);
    if (owner !== undefined && owner !== self && !own.has(name)) used.add(owner);
  }
  return used;
}

describe('documented layout', () => {
  it("the README's Redis keys table lists exactly the keys keys.ts builds", () => {
    const section = readme.slice(readme.indexOf('## Redis keys'), readme.indexOf('## Redis settings'));
    const documented = [...section.matchAll(/^\| `([^`]+)` \|/gm)].map(match => match[1]).sort();
    const keys = partitionKeys('sg', '<queue>', '<p>' as unknown as number);
    const p = '<p>' as unknown as number;
    const built = [
      ...Object.values(keys),
      claimMemoKey('sg', '<queue>', p, '<claim id>'),
      failMemoKey('sg', '<queue>', p),
      wheelBucketKey('sg', '<queue>', p, '<n>'),
      wheelIndexKey('sg', '<queue>', p, '<s>'),
      ...Object.values(limiterKeys('sg', '<queue>')),
      queueRegistryKey('sg'),
    ].sort();
    assert.deepEqual(documented, built);
  });

  it('every key of a partition shares one hash tag', () => {
    const keys = partitionKeys('sg', 'orders', 3);
    for (const name of PARTITION_KEY_NAMES) assert.ok(keys[name].startsWith('sg:{orders:3}:'), keys[name]);
  });

  it('every script file is registered, starts with #!lua and documents its ARGV and reply', () => {
    const files = readdirSync(luaDir).filter(file => file.endsWith('.lua')).map(file => file.slice(0, -4));
    assert.deepEqual(files.sort(), [...SCRIPT_NAMES].sort());
    for (const name of SCRIPT_NAMES) {
      const source = readFileSync(new URL(`${name}.lua`, luaDir), 'utf8');
      assert.match(source, /^#!lua( flags=[a-z-]+(,[a-z-]+)*)?\n--\[\[\n/, `${name}.lua header`);
      assert.match(source, /Returns:/, `${name}.lua documents its reply`);
      assert.match(source, /Errors:/, `${name}.lua documents its errors`);
      assert.match(source, new RegExp(`^  ${name}: `, 'm'), `${name}.lua starts its header with its name and purpose`);
    }
  });

  it('every script compiles in Redis', async () => {
    for (const name of SCRIPT_NAMES) {
      const sha = await redis.raw.script('LOAD', scriptSource(name));
      assert.match(String(sha), /^[0-9a-f]{40}$/, name);
    }
  });
});

describe('the Lua includes', () => {
  it('every include opens with a header naming it and its purpose', () => {
    for (const include of INCLUDES) assert.match(includeText(include), new RegExp(`^--\\[\\[\\n  ${include}: `), `includes/${include}.lua header`);
  });

  it('every include a file uses is one it names on its includes line, and every one it names it uses', () => {
    const files = [
      ...SCRIPT_NAMES.map(name => ({ file: `${name}.lua`, source: scriptText(name), self: undefined })),
      ...INCLUDES.map(include => ({ file: `includes/${include}.lua`, source: includeText(include), self: include })),
    ];
    for (const { file, source, self } of files) {
      const declared = declaredIncludes(source);
      assert.deepEqual(new Set(declared), includesUsed(source, self), `${file}: its '-- includes:' line`);
      assert.equal(new Set(declared).size, declared.length, `${file} names an include twice`);
    }
  });

  it('no script defines a name that an include defines', () => {
    for (const name of SCRIPT_NAMES) {
      for (const own of topLevelDefinitions(codeOf(scriptText(name))).keys()) {
        assert.ok(!ownerOf.has(own), `${name}.lua redefines ${own} of includes/${ownerOf.get(own)}.lua`);
      }
    }
  });

  it('every include is sent with some script', () => {
    const sent = new Set(SCRIPT_NAMES.flatMap(name => scriptIncludes(name)));
    assert.deepEqual([...sent].sort(), INCLUDES);
  });

  it('a script is sent as its shebang, then each include it needs once, after the includes that one needs, then its own text', () => {
    for (const name of SCRIPT_NAMES) {
      const body = scriptText(name);
      const includes = scriptIncludes(name);
      assert.equal(new Set(includes).size, includes.length, `${name}: an include sent twice`);
      for (const [i, include] of includes.entries()) {
        for (const needed of declaredIncludes(includeText(include))) assert.ok(includes.indexOf(needed) < i, `${name}: ${needed} before ${include}`);
      }
      for (const declared of declaredIncludes(body)) assert.ok(includes.includes(declared), `${name}: sent with ${declared}`);
      const shebang = body.slice(0, body.indexOf('\n') + 1);
      assert.equal(scriptSource(name), shebang + includes.map(include => `${includeText(include)}\n`).join('') + body.slice(shebang.length));
    }
  });

  it('includes resolve depth first in the order written, each once; an unknown or cyclic include is refused', () => {
    const graph: Record<string, string[]> = { keys: [], base: ['keys'], wheel: ['keys', 'base'], schedules: ['keys', 'base', 'wheel'], a: ['b'], b: ['a'] };
    const of = (name: string) => graph[name];
    assert.deepEqual(resolveIncludes('x.lua', ['keys', 'schedules', 'base'], of), ['keys', 'base', 'wheel', 'schedules']);
    assert.throws(() => resolveIncludes('x.lua', ['keys', 'nope'], of), /x\.lua includes 'nope', which is not in lua\/includes\//);
    assert.throws(() => resolveIncludes('x.lua', ['wheel', 'a'], of), /Lua include cycle: x\.lua -> a -> b -> a/);
  });

  it('includes hold definitions only: no top-level statement but `local` ones', () => {
    for (const include of INCLUDES) {
      const stray = codeOf(includeText(include))
        .split('\n')
        .filter(line => /^\S/.test(line) && !/^(local |end$|}$)/.test(line));
      assert.deepEqual(stray, [], `includes/${include}.lua`);
    }
  });
});
