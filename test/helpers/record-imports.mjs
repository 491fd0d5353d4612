// `node --import <this file>`: appends every module the process resolves, ES (a resolve hook) and
// CommonJS (require's resolution), to the file named by RECORD_IMPORTS_TO, one URL or path a line.
// process.moduleLoadList lists Node's built-ins only, and require.cache misses ES modules, so a test
// that a module loads no package of some list needs the loader's own view.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import process from 'node:process';
import { isMainThread } from 'node:worker_threads';

let out = process.env.RECORD_IMPORTS_TO;

// This file is also the hooks module: module.register runs it again in the loader's own thread.
if (isMainThread && out) {
  register(import.meta.url, { data: { out } });
  const resolveFilename = Module._resolveFilename;
  Module._resolveFilename = function (...args) {
    const filename = resolveFilename.apply(this, args);
    appendFileSync(out, `${filename}\n`);
    return filename;
  };
}

export function initialize(data) {
  out = data.out;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(out, `${resolved.url}\n`);
  return resolved;
}
