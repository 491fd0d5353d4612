#!/usr/bin/env node
// The `sandglass` command: operate queues from a shell. It uses the library's public API only; the
// commands live in src/cli/, one file per group. See docs/cli.md.
import { run } from './cli/program.js';

const code = await run(process.argv);
// Exit explicitly once the output is flushed: a connection to an unreachable Redis may still be
// retrying in the background, and it must not keep a finished command alive.
await new Promise(resolve => process.stdout.write('', resolve));
await new Promise(resolve => process.stderr.write('', resolve));
process.exit(code);
