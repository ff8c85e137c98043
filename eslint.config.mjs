// Lint rules that keep the layers honest: imports only point inward, and `vscode` lives only in
// src/extension. See docs/architecture.md.
import tseslint from 'typescript-eslint';

const layer = (files, forbidden, message) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', { patterns: forbidden.map((group) => ({ group: [group], message })) }],
  },
});

// Store implementations: only src/store itself and the factory src/ledger/open.ts name them.
const storeImplementations = ['**/store/sqlite', '**/store/postgres*'];

// The layers, innermost first (docs/architecture.md): each may import the layers before it, never one
// after it. `checkout` and `config` are siblings, and so are `doctor` and `launcher`.
const LAYERS = ['core', 'files', 'store', 'agents', 'config', 'checkout', 'ledger', 'hook', 'doctor', 'launcher', 'cli', 'extension'];
const SIBLINGS = { config: ['checkout'], checkout: ['config'], doctor: ['launcher'], launcher: ['doctor'], cli: ['extension'], extension: ['cli'] };
/** The folders `name` must not import: every later layer except those it may use, and its siblings. */
const outerThan = (name, allowed = []) =>
  LAYERS.slice(LAYERS.indexOf(name) + 1)
    .filter((later) => !allowed.includes(later))
    .concat(SIBLINGS[name] ?? [])
    .filter((folder, index, all) => all.indexOf(folder) === index && !allowed.includes(folder))
    .map((folder) => `**/${folder}/**`);

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
    ['vscode', ...outerThan('core'), 'node:fs', 'node:child_process', 'node:net', 'better-sqlite3'],
    'src/core is pure: no I/O, no outer layer',
  ),
  layer(['src/files/**/*.ts'], ['vscode', ...outerThan('files')], 'src/files holds file primitives over node:fs, below every layer but core'),
  layer(['src/store/**/*.ts'], ['vscode', ...outerThan('store')], 'src/store may only use src/core and src/files'),
  layer(['src/agents/**/*.ts'], ['vscode', '**/store/**', ...outerThan('agents')], 'src/agents may only use src/core and src/files'),
  layer(['src/config/**/*.ts'], ['vscode', ...outerThan('config'), ...storeImplementations], 'src/config may use core, store and agents'),
  layer(['src/checkout/**/*.ts'], ['vscode', ...outerThan('checkout'), ...storeImplementations], 'src/checkout may use core, store and agents'),
  layer(
    ['src/ledger/**/*.ts'],
    ['vscode', ...outerThan('ledger'), ...storeImplementations],
    'src/ledger may use core, store, agents, config and checkout; only open.ts opens a store',
  ),
  // The one factory: the only file outside src/store that may name a store implementation.
  layer(['src/ledger/open.ts'], ['vscode', ...outerThan('ledger')], 'src/ledger may use core, store, agents, config and checkout'),
  layer(
    ['src/hook/**/*.ts'],
    ['vscode', ...outerThan('hook'), ...storeImplementations],
    'src/hook may use everything up to src/ledger; stores are opened by src/ledger/open.ts',
  ),
  layer(
    ['src/doctor/**/*.ts'],
    ['vscode', ...outerThan('doctor'), ...storeImplementations],
    'src/doctor may use everything up to src/hook; stores are opened by src/ledger/open.ts',
  ),
  layer(
    ['src/launcher/**/*.ts'],
    ['vscode', ...outerThan('launcher'), ...storeImplementations],
    'src/launcher (launch and resume) may use everything up to src/hook; stores are opened by src/ledger/open.ts',
  ),
  layer(
    ['src/cli/**/*.ts'],
    ['vscode', ...outerThan('cli'), ...storeImplementations],
    'the CLI never imports the extension; stores are opened by src/ledger/open.ts',
  ),
  // The one folder where `vscode` is allowed; it never imports the other shell.
  layer(
    ['src/extension/**/*.ts'],
    [...outerThan('extension'), ...storeImplementations],
    'the extension never imports the CLI; stores are opened by src/ledger/open.ts',
  ),
  // Tests of the extension import `vscode`, which vitest aliases to the double in test/support/vscode.ts.
  { files: ['test/extension/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
);
