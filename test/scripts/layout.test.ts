import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { claimMemoKey, failMemoKey, partitionKeys, limiterKeys, queueRegistryKey, wheelBucketKey, wheelIndexKey, PARTITION_KEY_NAMES } from '../../src/store/redis/keys.js';
import { SCRIPT_NAMES, scriptSource } from '../../src/store/redis/scripts.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis({ appendOnly: false });

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const luaDir = new URL('../../src/store/redis/lua/', import.meta.url);

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
    const files = readdirSync(luaDir).filter(file => file.endsWith('.lua') && file !== 'lib.lua').map(file => file.slice(0, -4));
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
