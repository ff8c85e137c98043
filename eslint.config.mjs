// Lint rules that keep the layers honest: imports only point inward, and `vscode` lives only in
// src/extension. See docs/architecture.md.
import tseslint from 'typescript-eslint';

const layer = (files, forbidden, message) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      { patterns: forbidden.map((group) => ({ group: [group], message })) },
    ],
  },
});

// A regex, not a gitignore-style group: `vscode` as a group also matched any path segment, such as
// the e2e harness in test/vscode/.
const vscodeOnlyInExtension = { regex: '^vscode(/.*)?$', message: "'vscode' may only be imported under src/extension" };

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.tools/**', 'native/build/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      'no-restricted-imports': ['error', { patterns: [vscodeOnlyInExtension] }],
    },
  },
  layer(
    ['src/core/**/*.ts'],
    ['vscode', '**/store/**', '**/agents/**', '**/lifecycle/**', '**/launcher/**', '**/cli/**', '**/extension/**', 'node:fs', 'node:child_process', 'node:net', 'better-sqlite3'],
    'src/core is pure: no I/O, no outer layer',
  ),
  layer(['src/store/**/*.ts'], ['vscode', '**/agents/**', '**/lifecycle/**', '**/launcher/**', '**/cli/**', '**/extension/**'], 'src/store may only use src/core'),
  layer(['src/agents/**/*.ts'], ['vscode', '**/store/**', '**/lifecycle/**', '**/launcher/**', '**/cli/**', '**/extension/**'], 'src/agents may only use src/core'),
  layer(['src/lifecycle/**/*.ts'], ['vscode', '**/launcher/**', '**/cli/**', '**/extension/**'], 'src/lifecycle may use core, store and agents'),
  layer(['src/launcher/**/*.ts'], ['vscode', '**/cli/**', '**/extension/**'], 'src/launcher (launch and resume) may use core, store, agents and lifecycle'),
  layer(['src/cli/**/*.ts'], ['vscode', '**/extension/**'], 'the CLI never imports the extension'),
  // The one folder where `vscode` is allowed; it never imports the other shell.
  layer(['src/extension/**/*.ts'], ['**/cli/**'], 'the extension never imports the CLI'),
  // Tests of the extension import `vscode`, which vitest aliases to the double in test/support/vscode.ts.
  { files: ['test/extension/**/*.ts'], rules: { 'no-restricted-imports': 'off' } },
);
