#!/usr/bin/env node
// The `sandglass` command: operate queues from a shell. It uses the library's public API only; the
// commands live in src/cli/, one file per group. See docs/cli.md.
import { run } from './cli/program.js';

// `sandglass ls q | head -1`: the reader has what it wanted; end quietly instead of with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', error => {
    if ((error as NodeJS.ErrnoException).code === 'EPIPE') process.exit(0);
    throw error;
  });
}

const code = await run(process.argv);
// Exit explicitly once the output is flushed: a connection to an unreachable Redis may still be
// retrying in the background, and it must not keep a finished command alive.
await new Promise(resolve => process.stdout.write('', resolve));
await new Promise(resolve => process.stderr.write('', resolve));
process.exit(code);
