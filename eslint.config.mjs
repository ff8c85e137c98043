// Lint rules that keep the layers honest: imports only point inward, and `vscode` lives only in
// src/extension. See docs/architecture.md.
import tseslint from 'typescript-eslint';

const layer = (files, forbidden, message) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', { patterns: forbidden.map((group) => ({ group: [group], message })) }],
  },
});

// Store implementations: only src/store itself and the factory src/lifecycle/open.ts name them.
const storeImplementations = ['**/store/sqlite', '**/store/postgres*'];

// A regex, not a gitignore-style group: `vscode` as a group also matched any path segment, such as
// the e2e harness in test/vscode/.
const vscodeOnlyInExtension = { regex: '^vscode(/.*)?$', message: "'vscode' may only be imported under src/extension" };

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.tools/**', 'native/build/**'] },
  // typescript-eslint's type-checked recommended rules, on every TypeScript file (the project's
  // tsconfig.json, through the project service): unsafe `any` flows, promises nobody awaits, methods
  // detached from their object.
  ...tseslint.configs.recommendedTypeChecked.map((config) => ({ ...config, files: ['**/*.ts'] })),
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      'no-restricted-imports': ['error', { patterns: [vscodeOnlyInExtension] }],
      // `const { dropped: _, ...kept } = value` is how a field is left out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true, argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Passing on what was caught, unchanged, is not inventing a non-Error rejection.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  layer(
    ['src/core/**/*.ts'],
    [
      'vscode',
      '**/store/**',
      '**/agents/**',
      '**/lifecycle/**',
      '**/launcher/**',
      '**/cli/**',
      '**/extension/**',
      'node:fs',
      'node:child_process',
      'node:net',
      'better-sqlite3',
    ],
    'src/core is pure: no I/O, no outer layer',
  ),
  layer(
    ['src/store/**/*.ts'],
    ['vscode', '**/agents/**', '**/lifecycle/**', '**/launcher/**', '**/cli/**', '**/extension/**'],
    'src/store may only use src/core',
  ),
  layer(
    ['src/agents/**/*.ts'],
    ['vscode', '**/store/**', '**/lifecycle/**', '**/launcher/**', '**/cli/**', '**/extension/**'],
    'src/agents may only use src/core',
  ),
  layer(
    ['src/lifecycle/**/*.ts'],
    ['vscode', '**/launcher/**', '**/cli/**', '**/extension/**', ...storeImplementations],
    'src/lifecycle may use core, store and agents; only open.ts opens a store',
  ),
  // The one factory: the only file outside src/store that may name a store implementation.
  layer(['src/lifecycle/open.ts'], ['vscode', '**/launcher/**', '**/cli/**', '**/extension/**'], 'src/lifecycle may use core, store and agents'),
  layer(
    ['src/launcher/**/*.ts'],
    ['vscode', '**/cli/**', '**/extension/**', ...storeImplementations],
    'src/launcher (launch and resume) may use core, store, agents and lifecycle; stores are opened by src/lifecycle/open.ts',
  ),
  layer(
    ['src/cli/**/*.ts'],
    ['vscode', '**/extension/**', ...storeImplementations],
    'the CLI never imports the extension; stores are opened by src/lifecycle/open.ts',
  ),
  // The one folder where `vscode` is allowed; it never imports the other shell.
  layer(['src/extension/**/*.ts'], ['**/cli/**', ...storeImplementations], 'the extension never imports the CLI; stores are opened by src/lifecycle/open.ts'),
  // Tests of the extension import `vscode`, which vitest aliases to the double in test/support/vscode.ts.
  { files: ['test/extension/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
);
