// Lint: typescript-eslint's recommended rules plus the project's boundaries.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

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
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ group: ['ioredis'], allowTypeImports: true, message: 'Only src/store/redis and src/connection import the Redis client.' }] }],
    },
  },
);
