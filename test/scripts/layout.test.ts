import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  claimMemoKey,
  failMemoKey,
  groupQueueKey,
  groupRateKey,
  partitionKeys,
  limiterKeys,
  queueRegistryKey,
  wheelBucketKey,
  wheelIndexKey,
  PARTITION_KEY_NAMES,
} from '../../src/store/redis/keys.js';
import { SCRIPT_NAMES, declaredIncludes, resolveIncludes, scriptIncludes, scriptSource } from '../../src/store/redis/scripts.js';
import { useRedis } from '../helpers/redis.js';
import { codeOf, reachedNames, topLevelDefinitions, usedNames } from './lua-names.js';

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

// The keys' names as keys.ts and the README's "Redis keys" table give them: the part after the hash tag.
const tagged = (key: string) => key.replace(/^sg:\{<queue>:(<p>|0)\}:/, '');
const PARTITION = partitionKeys('sg', '<queue>', '<p>' as unknown as number);
const KEY_NAMES = new Set(
  [
    ...Object.values(PARTITION),
    claimMemoKey('sg', '<queue>', '<p>' as unknown as number, '<claim id>'),
    failMemoKey('sg', '<queue>', '<p>' as unknown as number),
    wheelBucketKey('sg', '<queue>', '<p>' as unknown as number, '<n>'),
    wheelIndexKey('sg', '<queue>', '<p>' as unknown as number, '<s>'),
    groupQueueKey('sg', '<queue>', '<p>' as unknown as number, '<group>'),
    groupRateKey('sg', '<queue>', '<p>' as unknown as number, '<group>'),
    ...Object.values(limiterKeys('sg', '<queue>')),
  ].map(tagged),
);

// The functions of includes/wheel.lua that build the names of the wheel's buckets and index shards
// (wheelSplit builds those of the shards it splits itself).
const WHEEL_KEY_BUILDERS = new Map([
  ['wheelBucketKey', ['wheel:<n>']],
  ['wheelShardKey', ['wheel:idx:<s>']],
  ['wheelSplit', ['wheel:idx:<s>']],
  // includes/groups.lua's builders of a group's queue and rate-window keys.
  ['groupQueueKey', ['group:q:<group>']],
  ['groupRateKey', ['group:r:<group>']],
]);

/**
 * The key each name of the Lua code stands for: the bindings of includes/keys.lua (KEYS[i] is the
 * i-th of PARTITION_KEY_NAMES, ARGV[1] the wake channel) and the wheel's key builders.
 */
function luaKeyNames(): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  const bindings = topLevelDefinitions(codeOf(includeText('keys')));
  const keyName = (i: number) => {
    const name = PARTITION_KEY_NAMES[i - 1];
    assert.ok(name !== undefined, `includes/keys.lua binds KEYS[${i}], which keys.ts does not name`);
    return tagged(PARTITION[name]);
  };
  for (const [name, value] of bindings) {
    if (/ARGV\[1\]/.test(value)) byName.set(name, ['wake']);
    const keys = [...value.matchAll(/KEYS\[(\d+)\]/g)].map(match => keyName(Number(match[1])));
    if (keys.length === 0) continue;
    // `local a, b = KEYS[1], KEYS[2]` gives each name one key, `local all = { KEYS[8], ... }` one name all of them.
    const names = [...bindings].filter(([, other]) => other === value).map(([other]) => other);
    byName.set(name, names.length === 1 ? keys : keys.slice(names.indexOf(name), names.indexOf(name) + 1));
  }
  for (const [name, keys] of WHEEL_KEY_BUILDERS) byName.set(name, keys);
  return byName;
}

/** The header's `Reads:`, `Writes:` and `Publishes:` lists (a list may wrap onto indented lines). */
function headerKeys(source: string, label: 'Reads' | 'Writes' | 'Publishes'): string[] | undefined {
  const header = source.slice(0, source.indexOf('\n]]\n'));
  const list = new RegExp(`^  ${label}: +(.*(?:\\n {5,}\\S.*)*)`, 'm').exec(header)?.[1];
  if (list === undefined) return undefined;
  const names = list.split(/,\s*/).map(name => name.trim());
  return names.length === 1 && names[0] === 'none' ? [] : names;
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
      groupQueueKey('sg', '<queue>', p, '<group>'),
      groupRateKey('sg', '<queue>', p, '<group>'),
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
    const files = readdirSync(luaDir)
      .filter(file => file.endsWith('.lua'))
      .map(file => file.slice(0, -4));
    assert.deepEqual(files.sort(), [...SCRIPT_NAMES].sort());
    for (const name of SCRIPT_NAMES) {
      const source = readFileSync(new URL(`${name}.lua`, luaDir), 'utf8');
      assert.match(source, /^#!lua( flags=[a-z-]+(,[a-z-]+)*)?\n--\[\[\n/, `${name}.lua header`);
      assert.match(source, /Returns:/, `${name}.lua documents its reply`);
      assert.match(source, /Errors:/, `${name}.lua documents its errors`);
      assert.match(source, new RegExp(`^  ${name}: `, 'm'), `${name}.lua starts its header with its name and purpose`);
    }
  });

  it("every script's header lists the keys it reads and writes, by the names of keys.ts and the README", () => {
    for (const name of SCRIPT_NAMES) {
      const source = scriptText(name);
      const reads = headerKeys(source, 'Reads');
      const writes = headerKeys(source, 'Writes');
      assert.ok(reads !== undefined && writes !== undefined, `${name}.lua has 'Reads:' and 'Writes:' lines in its header`);
      const publishes = headerKeys(source, 'Publishes') ?? [];
      for (const key of [...reads, ...writes, ...publishes])
        assert.ok(KEY_NAMES.has(key), `${name}.lua names a key keys.ts does not build: ${key}`);
      assert.equal(new Set([...reads, ...writes]).size, reads.length + writes.length, `${name}.lua lists a key under Reads and Writes`);
      assert.equal(
        /^#!lua flags=[a-z,-]*no-writes/.test(source),
        writes.length === 0,
        `${name}.lua: 'Writes: none' exactly when its flags say no-writes`,
      );
    }
  });

  it('includes/keys.lua binds every partition key once, in the order of keys.ts', () => {
    const bound = [...luaKeyNames()].filter(([name]) => !WHEEL_KEY_BUILDERS.has(name)).flatMap(([, keys]) => keys);
    assert.deepEqual(bound, [...PARTITION_KEY_NAMES.map(name => tagged(PARTITION[name])), 'wake']);
  });

  it("every script's header lists exactly the partition keys its code and the includes it calls touch", () => {
    const keyNames = luaKeyNames();
    // Only what the code reaches counts: a function of an include that the script never calls
    // (directly or through another) touches nothing. wheelTag is a prefix, not a key.
    const opaque = new Set(['wheelTag', 'groupTag', ...keyNames.keys()]);
    const bound = new Set([...keyNames.values()].flat());
    for (const name of SCRIPT_NAMES) {
      const source = scriptText(name);
      const reached = reachedNames(codeOf(source), definitions, opaque);
      const touched = new Set([...reached].flatMap(used => keyNames.get(used) ?? []));
      const listed = ['Reads', 'Writes', 'Publishes']
        .flatMap(label => headerKeys(source, label as 'Reads') ?? [])
        .filter(key => bound.has(key));
      assert.deepEqual(new Set(listed), touched, `${name}.lua header's Reads/Writes/Publishes`);
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
    for (const include of INCLUDES)
      assert.match(includeText(include), new RegExp(`^--\\[\\[\\n  ${include}: `), `includes/${include}.lua header`);
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
        for (const needed of declaredIncludes(includeText(include)))
          assert.ok(includes.indexOf(needed) < i, `${name}: ${needed} before ${include}`);
      }
      for (const declared of declaredIncludes(body)) assert.ok(includes.includes(declared), `${name}: sent with ${declared}`);
      const shebang = body.slice(0, body.indexOf('\n') + 1);
      assert.equal(
        scriptSource(name),
        shebang + includes.map(include => `${includeText(include)}\n`).join('') + body.slice(shebang.length),
      );
    }
  });

  it('includes resolve depth first in the order written, each once; an unknown or cyclic include, or a second includes line, is refused', () => {
    const graph: Record<string, string[]> = {
      keys: [],
      base: ['keys'],
      wheel: ['keys', 'base'],
      schedules: ['keys', 'base', 'wheel'],
      a: ['b'],
      b: ['a'],
    };
    const of = (name: string) => graph[name];
    assert.deepEqual(resolveIncludes('x.lua', ['keys', 'schedules', 'base'], of), ['keys', 'base', 'wheel', 'schedules']);
    assert.throws(() => resolveIncludes('x.lua', ['keys', 'nope'], of), /x\.lua includes 'nope', which is not in lua\/includes\//);
    assert.throws(() => resolveIncludes('x.lua', ['wheel', 'a'], of), /Lua include cycle: x\.lua -> a -> b -> a/);
    assert.throws(() => declaredIncludes('-- includes: keys\n-- includes: base\n', 'x.lua'), /x\.lua names its includes on more than one/);
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
