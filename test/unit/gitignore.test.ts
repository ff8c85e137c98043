// What a build leaves in the checkout (`npm pack`'s tarball, the .vsix, dist/) is ignored by git, so a
// person who follows the README's install steps does not see it as a change to commit.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const { name, version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
/** Whether .gitignore ignores `path` (git's own matching; --no-index: whether or not a file is tracked). */
const ignored = (path: string) => spawnSync('git', ['-C', ROOT, 'check-ignore', '--no-index', '-q', path]).status === 0;

describe('.gitignore', () => {
  it.skipIf(!existsSync(join(ROOT, '.git')))("ignores npm pack's tarball, the .vsix and dist/ (control: a source file is not ignored)", () => {
    expect(ignored(`${name}-${version}.tgz`)).toBe(true);
    expect(ignored(`${name}-linux-x64-${version}.vsix`)).toBe(true);
    expect(ignored('dist/cli.js')).toBe(true);
    expect(ignored('src/cli/main.ts')).toBe(false);
    expect(ignored('package.json')).toBe(false);
  });
});
