// Lint: typescript-eslint's recommended rules plus the project's boundaries.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// The import boundaries of src/ (issue 19: the storage seam). In a flat config the last block that sets a
// rule for a file wins with its options, so each block below lists every pattern that holds there.
const IOREDIS = { group: ['ioredis'], allowTypeImports: true, message: 'Only src/store/redis and src/connection import the Redis client.' };
const KEY_NAMES = { regex: '(^|/)store/redis/keys\\.js$', message: 'Only src/store/redis knows key names: go through a storage interface of src/store.' };
const REDIS_LAYER = {
  regex: '(^|/)(store/redis|connection/waker)(/|\\.js$)',
  message: 'Roles use the interfaces of src/store; the Redis layer is reached through acquireConnection (src/connection/connection.ts) only.',
};
const STORE_INTERFACES = { regex: '^\\./redis/|^\\.\\./(?!core/)', message: 'The interfaces of src/store import only src/core and each other.' };
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
