// Vitest runs only the .ts test here (the node:test files beside it are for `node --test`).
import { defineConfig } from 'vitest/config';

export default defineConfig({ test: { include: ['vitest.test.ts'], testTimeout: 20_000 } });
