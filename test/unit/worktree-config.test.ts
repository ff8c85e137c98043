// config.json's `worktrees` (spec §7 "Start in a worktree"): its defaults, and a value that is not
// valid is kept as `invalid` (worktreeSettings then throws) rather than dropped for the default. The
// branch prefix rule is checked against git's own check-ref-format, so it refuses what git refuses.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { branchPrefixProblem, parseHomeConfig, WORKTREE_DEFAULTS } from '../../src/config/homeConfig';

const gitAccepts = (branch: string) => spawnSync('git', ['check-ref-format', '--branch', branch]).status === 0 && !branch.startsWith('-');

describe('worktrees in config.json', () => {
  it('defaults each missing key and keeps the valid values', () => {
    expect(WORKTREE_DEFAULTS).toStrictEqual({ location: '{repo}.worktrees/{todo}', branchPrefix: 'todo/' });
    expect(parseHomeConfig({ worktrees: {} }).worktrees).toStrictEqual(WORKTREE_DEFAULTS);
    expect(parseHomeConfig({ worktrees: { branchPrefix: 'agent/' } }).worktrees).toStrictEqual({ ...WORKTREE_DEFAULTS, branchPrefix: 'agent/' });
    expect(parseHomeConfig({ worktrees: { location: '/trees/{repo}' } }).worktrees).toStrictEqual({ ...WORKTREE_DEFAULTS, location: '/trees/{repo}' });
    expect(parseHomeConfig({}).worktrees).toBeUndefined();
  });

  it('an invalid value is kept as invalid with the reason, and the other keys still apply', () => {
    for (const [value, reason] of [
      ['trees', 'must be an object'],
      [{ location: '' }, 'non-empty path'],
      [{ location: '/t/{branch}' }, '{branch}'],
      [{ branchPrefix: 7 }, 'must be a string'],
      [{ branchPrefix: 'a b/' }, 'cannot begin a branch name'],
      [{ where: '/t' }, 'unknown key "where"'],
    ] as const) {
      const config = parseHomeConfig({ worktrees: value, onConflict: 'block' });
      expect(config.onConflict).toBe('block');
      expect(config.worktrees).toStrictEqual({ invalid: expect.stringContaining(reason) as unknown });
    }
  });

  it('a branch prefix is refused exactly when git refuses the branch <prefix>fix-login', () => {
    const prefixes = [
      'todo/',
      '',
      'agent-',
      'a/b/',
      'x y/',
      'a..b/',
      'a~/',
      'a^/',
      'a:/',
      'a?/',
      'a*/',
      'a[/',
      'a\\/',
      '-a/',
      '/a/',
      'a//b/',
      '.a/',
      'a/.b/',
      'a.lock/',
      'a@{/',
      'tab\t/',
      'del\x7f/',
      'a.b/',
      'ü/',
    ];
    for (const prefix of prefixes) expect(branchPrefixProblem(prefix) === undefined, JSON.stringify(prefix)).toBe(gitAccepts(`${prefix}fix-login`));
  });
});
