// Lint: typescript-eslint's recommended rules plus the project's boundaries.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

/** The library's folders behind its public API (src/index.ts). */
const LIBRARY_INTERNALS = ['core', 'client', 'worker', 'schedules', 'flow', 'telemetry', 'connection', 'store'];
const USERS_OF_THE_LIBRARY =
  "The service and the CLI use the library's public API (import it from src/index.ts; export there, with TSDoc, what a user could need too) and src/deploy only.";

/**
 * A lint block refusing imports, `import type` included, of `folders` (siblings under src/) from
 * `files`. It uses the core rule no-restricted-imports, not the typescript-eslint one of the Redis
 * client block: options of a later block for the same rule replace an earlier block's for the
 * files both match, and the core rule refuses type imports too (public types come through index.ts).
 */
function boundary(files, folders, message) {
  return {
    files,
    rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: `^(\\.\\./)+(${folders.join('|')})(/|$)`, message }] }] },
  };
}
// The import boundaries of src/ (issue 19: the storage seam). In a flat config the last block that sets a
// rule for a file wins with its options, so each block below lists every pattern that holds there.
const IOREDIS = { group: ['ioredis'], allowTypeImports: true, message: 'Only src/store/redis and src/connection import the Redis client.' };
const KEY_NAMES = {
  regex: '(^|/)store/redis/keys\\.js$',
  message: 'Only src/store/redis knows key names: go through a storage interface of src/store.',
};
const REDIS_LAYER = {
  regex: '(^|/)(store/redis|connection/waker)(/|\\.js$)',
  message:
    'Roles use the interfaces of src/store; the Redis layer is reached through acquireConnection (src/connection/connection.ts) only.',
};
const STORE_INTERFACES = {
  regex: '^\\./redis/|^\\.\\./(?!core/)',
  message: 'The interfaces of src/store import only src/core and each other.',
};
const OUTSIDE_CORE = { regex: '^\\.\\./', message: 'src/core imports nothing outside src/core.' };

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tmp/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // The test kit's CommonJS example is a user's CommonJS test file.
    files: ['**/*.cjs'],
    languageOptions: { globals: globals.node, sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The examples in plain JavaScript run as Node programs.
    files: ['examples/**/*.mjs'],
    languageOptions: { globals: globals.node },
  },
  {
    // The dashboard is plain browser JavaScript served as is.
    files: ['dashboard/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
  },
  {
    // Only the storage layer talks to Redis: roles go through it.
    files: ['src/**/*.ts'],
    ignores: ['src/store/redis/**', 'src/connection/**', 'src/index.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [IOREDIS, KEY_NAMES] }],
    },
  },
  // The layers' boundaries; each folder's README.md says what it may import.
  boundary(['src/server/**'], [...LIBRARY_INTERNALS, 'cli', 'nestjs'], USERS_OF_THE_LIBRARY),
  // The CLI may load server/: `sandglass serve` starts the service.
  boundary(['src/cli/**'], [...LIBRARY_INTERNALS, 'nestjs'], USERS_OF_THE_LIBRARY),
  // The Nest module is a library entry point: nothing of serve's deployment either.
  boundary(
    ['src/nestjs/**'],
    [...LIBRARY_INTERNALS, 'deploy', 'server', 'cli'],
    "The Nest module uses the library's public API (src/index.ts) only.",
  ),
  // The test kit is a library entry point built on the public API; the Redis layer only for its clock.
  boundary(
    ['src/testing/**'],
    ['client', 'worker', 'schedules', 'flow', 'telemetry', 'connection', 'server', 'cli', 'nestjs'],
    "sandglass/testing uses the library's public API (src/index.ts), src/core, src/deploy's local-redis and store/redis/virtual-clock.ts only.",
  ),
  // deploy/ (what only serve and the CLI use) builds on the public API, core/ and connection/ (openClient).
  boundary(
    ['src/deploy/**'],
    ['client', 'worker', 'schedules', 'flow', 'telemetry', 'store', 'server', 'cli', 'nestjs'],
    'src/deploy imports only the public API (src/index.ts), src/core and src/connection.',
  ),
  // migrate/ moves jobs from another library through the Queue (client/) and reads that library's keys
  // on a client of connection/ (openClient).
  boundary(
    ['src/migrate/**'],
    ['worker', 'schedules', 'flow', 'telemetry', 'store', 'server', 'cli', 'nestjs', 'deploy'],
    'src/migrate imports only src/core, src/client (the Queue) and src/connection (openClient).',
  ),
  {
    // connection/ may talk to Redis (shared clients, pub/sub), but names no key.
    files: ['src/connection/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [KEY_NAMES] }] },
  },
  {
    // The roles are typed against the interfaces of src/store; acquireConnection is their one way in.
    files: ['src/client/**/*.ts', 'src/worker/**/*.ts', 'src/flow/**/*.ts', 'src/schedules/**/*.ts', 'src/telemetry/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [IOREDIS, KEY_NAMES, REDIS_LAYER] }] },
  },
  {
    // The interfaces of src/store (and its leaves) import only src/core and each other.
    files: ['src/store/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [IOREDIS, KEY_NAMES, STORE_INTERFACES] }] },
  },
  {
    // src/core is the leaf every folder shares: it imports nothing of the others.
    files: ['src/core/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [IOREDIS, OUTSIDE_CORE] }] },
  },
);
