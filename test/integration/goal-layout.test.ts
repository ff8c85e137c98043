// resolveGoal against repositories made by real git: for each layout, the common directory and the
// checkout must be what git itself says (`rev-parse`), from the root and from a subdirectory.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GoalError, goalIdOf, parseGitConfigOrigin } from '../../src/core/goal';
import { resolveGoal } from '../../src/checkout/goal';
import { branchOf, preconditionsOf } from '../../src/checkout/workspace';
import { like } from '../support/matchers';

let root: string;
// git without the user's configuration or any GIT_* variable of the calling process.
const env: Record<string, string> = {};

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** What git says about `cwd`: realpaths of the common directory and of the top level (null when git has none). */
function gitSays(cwd: string): { commonDir: string; toplevel: string | null } {
  const commonDir = realpathSync(git(cwd, 'rev-parse', '--path-format=absolute', '--git-common-dir'));
  const top = spawnSync('git', ['rev-parse', '--show-toplevel'], { cwd, env, encoding: 'utf8' });
  return { commonDir, toplevel: top.status === 0 && top.stdout.trim() !== '' ? realpathSync(top.stdout.trim()) : null };
}

function expectAgreesWithGit(cwd: string): void {
  const said = gitSays(cwd);
  const goal = resolveGoal(cwd);
  expect(goal.commonDir).toBe(said.commonDir);
  if (said.toplevel !== null) expect(goal.checkout).toBe(said.toplevel);
  else expect(goal.inGitDir).toBe(true);
}

function commitFile(repo: string, name: string, text: string): void {
  writeFileSync(join(repo, name), text);
  git(repo, 'add', name);
  git(repo, 'commit', '-qm', `add ${name}`);
}

function newRepo(name: string): string {
  const repo = join(root, name);
  git(root, 'init', '-q', '-b', 'main', repo);
  mkdirSync(join(repo, 'src', 'deep'), { recursive: true });
  writeFileSync(join(repo, 'src', 'deep', 'keep'), '');
  commitFile(repo, 'README.md', `${name}\n`);
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'tree');
  return repo;
}

beforeAll(() => {
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !key.startsWith('GIT_')) env[key] = value;
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-goal-')));
  Object.assign(env, {
    HOME: join(root, 'home'),
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@example.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@example.invalid',
  });
  mkdirSync(env.HOME!);
  // Control for every "outside git" case below: the temporary directory is in no repository.
  expect(spawnSync('git', ['rev-parse', '--git-dir'], { cwd: root, env }).status).not.toBe(0);
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('resolveGoal on real git layouts', () => {
  it('the branch of each checkout is read from its own HEAD, as git says it (linked worktree, slash names, detached, a bare directory)', () => {
    const repo = newRepo('branches');
    const wt = join(root, 'branches-wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'team/feature-1', wt);
    const said = (cwd: string) => spawnSync('git', ['symbolic-ref', '--short', '-q', 'HEAD'], { cwd, env, encoding: 'utf8' }).stdout.trim() || null;
    const branch = (cwd: string) => {
      const resolved = resolveGoal(cwd);
      return branchOf(resolved.inGitDir ? null : resolved.gitDir, resolved.checkout);
    };
    expect(branch(repo)).toBe('main');
    expect(branch(join(wt, 'src', 'deep'))).toBe('team/feature-1');
    for (const cwd of [repo, wt]) expect(branch(cwd)).toBe(said(cwd));
    git(wt, 'checkout', '-q', '--detach');
    expect(branch(wt)).toBeNull();
    expect(said(wt)).toBeNull();
    // Inside the git directory there is no checkout to recreate: no branch.
    expect(branch(join(repo, '.git'))).toBeNull();
    // Outside git: none.
    const plain = join(root, 'branches-plain');
    mkdirSync(plain);
    expect(branch(plain)).toBeNull();
  });

  it('a plain repository: rule (c), from the root and a subdirectory, agreeing with git', () => {
    const repo = newRepo('plain');
    for (const cwd of [repo, join(repo, 'src', 'deep')]) {
      expectAgreesWithGit(cwd);
      const goal = resolveGoal(cwd);
      expect(goal).toMatchObject({ rule: 'common_dir', key: `local:${repo}/.git`, checkout: repo, displayName: 'plain', inGitDir: false, originSkipped: null });
      expect(goal.id).toBe(goalIdOf(`local:${repo}/.git`));
    }
  });

  it('worktrees of one clone share one Goal and keep their own checkouts', () => {
    const repo = newRepo('app');
    const wt = join(root, 'app-feature');
    git(repo, 'worktree', 'add', '-q', '-b', 'feature', wt);
    for (const cwd of [wt, join(wt, 'src', 'deep')]) expectAgreesWithGit(cwd);
    const main = resolveGoal(repo);
    const linked = resolveGoal(join(wt, 'src'));
    expect(linked.id).toBe(main.id);
    expect(linked.commonDir).toBe(main.commonDir);
    expect(linked.displayName).toBe('app');
    expect(linked.checkout).toBe(wt);
    // Control: the checkouts differ, so the shared id is not an accident of one path.
    expect(main.checkout).not.toBe(linked.checkout);
  });

  it('clones with one origin share a Goal; a clone of another origin does not', () => {
    const source = newRepo('source');
    const one = join(root, 'clone-one');
    const two = join(root, 'clone-two');
    const other = join(root, 'clone-other');
    for (const clone of [one, two, other]) git(root, 'clone', '-q', source, clone);
    // A local-path origin is not keyed (another machine's /srv/x is another repository): rule (c).
    const local = resolveGoal(one);
    expect(local.rule).toBe('common_dir');
    expect(local.originSkipped).toMatch(/local path/);
    expect(resolveGoal(two).id).not.toBe(local.id);

    git(one, 'remote', 'set-url', 'origin', 'https://Example.com/acme/app.git');
    git(two, 'remote', 'set-url', 'origin', 'git@example.com:acme/app');
    git(other, 'remote', 'set-url', 'origin', 'https://example.com/acme/other.git');
    for (const clone of [one, two, other]) expectAgreesWithGit(join(clone, 'src'));
    const a = resolveGoal(join(one, 'src', 'deep'));
    const b = resolveGoal(two);
    const c = resolveGoal(other);
    expect(a).toMatchObject({ rule: 'origin', key: 'example.com/acme/app', id: goalIdOf('example.com/acme/app'), displayName: 'clone-one' });
    expect(b.id).toBe(a.id);
    expect(c.rule).toBe('origin');
    expect(c.id).not.toBe(a.id);

    // A worktree of a clone reads origin from the common config.
    const wt = join(root, 'clone-one-wt');
    git(one, 'worktree', 'add', '-q', '-b', 'wt', wt);
    expectAgreesWithGit(wt);
    expect(resolveGoal(wt)).toMatchObject({ rule: 'origin', id: a.id, checkout: wt });
  });

  it('.turnkeeper.json wins over origin, and reaches worktrees made after it is committed', () => {
    const repo = newRepo('team');
    git(repo, 'remote', 'add', 'origin', 'https://example.com/acme/team.git');
    const early = join(root, 'team-early');
    git(repo, 'worktree', 'add', '-q', '-b', 'early', early);
    // Control: before the file, origin decides.
    expect(resolveGoal(repo).rule).toBe('origin');

    commitFile(repo, '.turnkeeper.json', '{ "goal": "acme-team" }\n');
    const late = join(root, 'team-late');
    git(repo, 'worktree', 'add', '-q', '-b', 'late', late);
    for (const cwd of [repo, join(repo, 'src'), late]) {
      expect(resolveGoal(cwd)).toMatchObject({ rule: 'turnkeeper_json', key: 'acme-team', id: goalIdOf('acme-team') });
    }
    // A worktree whose branch predates the file has no file: it is still keyed by origin (docs/goals.md).
    expect(resolveGoal(early).rule).toBe('origin');
  });

  it('a broken .turnkeeper.json is a typed error, not a fallback', () => {
    const repo = newRepo('broken-file');
    writeFileSync(join(repo, '.turnkeeper.json'), '{ "goal": "" }');
    expect(() => resolveGoal(join(repo, 'src'))).toThrow(GoalError);
    try {
      resolveGoal(repo);
    } catch (error) {
      expect((error as GoalError).code).toBe('turnkeeper_json_invalid');
      expect((error as GoalError).path).toBe(join(repo, '.turnkeeper.json'));
    }
    // Control: a valid file in the same place is read.
    writeFileSync(join(repo, '.turnkeeper.json'), '{ "goal": "fixed" }');
    expect(resolveGoal(repo).key).toBe('fixed');
  });

  it('an include or a matching insteadOf falls back to rule (c), never to a wrong key', () => {
    const repo = newRepo('exotic');
    git(repo, 'remote', 'add', 'origin', 'https://example.com/acme/exotic.git');
    const local = `local:${repo}/.git`;
    // Control: plain config, origin decides.
    expect(resolveGoal(repo)).toMatchObject({ rule: 'origin', key: 'example.com/acme/exotic' });

    writeFileSync(join(repo, 'override.cfg'), '[remote "origin"]\n\turl = https://example.com/acme/elsewhere.git\n');
    git(repo, 'config', 'include.path', join(repo, 'override.cfg'));
    // git does follow it (two URLs now): the case the fallback guards against.
    expect(git(repo, 'config', '--get-all', 'remote.origin.url').split('\n')).toHaveLength(2);
    expect(resolveGoal(repo)).toMatchObject({ rule: 'common_dir', key: local });
    expect(resolveGoal(repo).originSkipped).toMatch(/include/);
    git(repo, 'config', '--unset', 'include.path');
    expect(resolveGoal(repo).rule).toBe('origin');

    git(repo, 'config', `includeIf.gitdir:${repo}/.path`, join(repo, 'override.cfg'));
    expect(resolveGoal(repo)).toMatchObject({ rule: 'common_dir', key: local });
    git(repo, 'config', '--remove-section', `includeIf.gitdir:${repo}/`);

    git(repo, 'config', 'url.https://mirror.example/.insteadOf', 'https://example.com/');
    expect(git(repo, 'ls-remote', '--get-url', 'origin')).toBe('https://mirror.example/acme/exotic.git');
    expect(resolveGoal(repo)).toMatchObject({ rule: 'common_dir', key: local });
    expect(resolveGoal(repo).originSkipped).toMatch(/insteadOf/);
    // Control: a rewrite of another prefix leaves origin alone.
    git(repo, 'config', 'url.https://mirror.example/.insteadOf', 'https://other.example/');
    expect(git(repo, 'ls-remote', '--get-url', 'origin')).toBe('https://example.com/acme/exotic.git');
    expect(resolveGoal(repo).rule).toBe('origin');
  });

  it('per-worktree config: read, and an origin it overrides falls back to rule (c)', () => {
    const repo = newRepo('wtconfig');
    git(repo, 'remote', 'add', 'origin', 'https://example.com/acme/wtconfig.git');
    git(repo, 'config', 'extensions.worktreeConfig', 'true');
    const wt = join(root, 'wtconfig-wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'x', wt);
    git(wt, 'config', '--worktree', 'core.sparseCheckout', 'true');
    expect(resolveGoal(wt)).toMatchObject({ rule: 'origin', key: 'example.com/acme/wtconfig' });
    git(wt, 'config', '--worktree', 'remote.origin.url', 'https://example.com/acme/fork.git');
    // git sees two URLs for this worktree only.
    expect(git(wt, 'config', '--get-all', 'remote.origin.url').split('\n')).toHaveLength(2);
    expect(git(repo, 'config', '--get-all', 'remote.origin.url').split('\n')).toHaveLength(1);
    expect(resolveGoal(wt)).toMatchObject({ rule: 'common_dir', key: `local:${repo}/.git` });
    expect(resolveGoal(repo).rule).toBe('origin');
  });

  it('a submodule is its own repository, with its own common directory and origin', () => {
    const lib = newRepo('lib');
    const sup = newRepo('super');
    git(sup, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    const mod = join(sup, 'vendor', 'lib');
    for (const cwd of [mod, join(mod, 'src', 'deep'), sup, join(sup, 'vendor')]) expectAgreesWithGit(cwd);
    const inner = resolveGoal(join(mod, 'src'));
    expect(inner.commonDir).toBe(join(sup, '.git', 'modules', 'vendor', 'lib'));
    expect(inner.checkout).toBe(mod);
    expect(inner.displayName).toBe('lib');
    expect(inner.id).not.toBe(resolveGoal(sup).id);
    // Its origin is the submodule's own.
    git(mod, 'remote', 'set-url', 'origin', 'https://example.com/acme/lib.git');
    expect(resolveGoal(mod)).toMatchObject({ rule: 'origin', key: 'example.com/acme/lib' });
    expect(resolveGoal(join(sup, 'vendor')).rule).toBe('common_dir');
  });

  it('a bare repository with worktrees: every checkout and the bare directory share the Goal', () => {
    const source = newRepo('bare-source');
    const bare = join(root, 'proj.git');
    git(root, 'clone', '-q', '--bare', source, bare);
    const wt = join(root, 'proj-main');
    git(root, `--git-dir=${bare}`, 'worktree', 'add', '-q', wt, 'main');
    for (const cwd of [wt, join(wt, 'src', 'deep'), bare, join(bare, 'refs')]) expectAgreesWithGit(cwd);
    const inWorktree = resolveGoal(join(wt, 'src'));
    expect(inWorktree).toMatchObject({ commonDir: bare, checkout: wt, displayName: 'proj', inGitDir: false });
    expect(resolveGoal(bare)).toMatchObject({ id: inWorktree.id, checkout: bare, inGitDir: true });
    expect(resolveGoal(join(bare, 'refs', 'heads')).checkout).toBe(bare);
  });

  it('the ".bare" layout: a .git file with a relative gitdir at the project root', () => {
    const source = newRepo('dotbare-source');
    const proj = join(root, 'dotbare');
    mkdirSync(proj);
    git(root, 'clone', '-q', '--bare', source, join(proj, '.bare'));
    writeFileSync(join(proj, '.git'), 'gitdir: ./.bare\n');
    git(proj, 'worktree', 'add', '-q', 'main');
    for (const cwd of [proj, join(proj, 'main'), join(proj, 'main', 'src')]) expectAgreesWithGit(cwd);
    const goal = resolveGoal(join(proj, 'main', 'src', 'deep'));
    expect(goal).toMatchObject({ commonDir: join(proj, '.bare'), checkout: join(proj, 'main'), displayName: 'dotbare' });
    // The project root itself is no worktree: `.bare` says core.bare = true, and git has no top level there.
    expect(resolveGoal(proj)).toMatchObject({ id: goal.id, inGitDir: true, checkout: join(proj, '.bare') });
  });

  it('inside .git: the git directory is the checkout, the Goal is the repository', () => {
    const repo = newRepo('inside');
    expectAgreesWithGit(join(repo, '.git'));
    expectAgreesWithGit(join(repo, '.git', 'refs'));
    expect(resolveGoal(join(repo, '.git', 'refs'))).toMatchObject({ id: resolveGoal(repo).id, checkout: join(repo, '.git'), inGitDir: true });
  });

  it('symlinked paths are resolved: the checkout is a realpath', () => {
    const repo = newRepo('linked');
    const link = join(root, 'link-to-linked');
    symlinkSync(repo, link);
    const goal = resolveGoal(join(link, 'src'));
    expect(goal.checkout).toBe(repo);
    expect(goal.id).toBe(resolveGoal(repo).id);
    expectAgreesWithGit(join(link, 'src'));
  });

  it('outside git: local: + realpath of the directory itself', () => {
    const dir = join(root, 'loose', 'sub');
    mkdirSync(dir, { recursive: true });
    expect(resolveGoal(dir)).toMatchObject({ rule: 'not_git', key: `local:${dir}`, checkout: dir, commonDir: null, displayName: 'sub' });
    // Each directory is its own Goal outside git (there is no repository to share).
    expect(resolveGoal(join(root, 'loose')).id).not.toBe(resolveGoal(dir).id);
  });

  it('a .git file pointing at a missing or invalid git directory is a typed error', () => {
    const gone = join(root, 'gone');
    mkdirSync(gone);
    writeFileSync(join(gone, '.git'), 'gitdir: ../nowhere/.git/worktrees/x\n');
    // Control: git refuses it too.
    expect(spawnSync('git', ['rev-parse', '--git-dir'], { cwd: gone, env }).status).not.toBe(0);
    expect(() => resolveGoal(gone)).toThrow(expect.objectContaining({ code: 'gitdir_missing' }));

    writeFileSync(join(gone, '.git'), 'not a gitfile\n');
    expect(spawnSync('git', ['rev-parse', '--git-dir'], { cwd: gone, env }).status).not.toBe(0);
    expect(() => resolveGoal(gone)).toThrow(expect.objectContaining({ code: 'gitfile_invalid' }));
  });

  // A hostile checkout (an archive, a shared folder) decides what its git files are. Read as they were
  // with readFileSync, a FIFO there blocked every hook until the agent's timeout. In a child process,
  // so that a hang fails this test instead of stalling the worker.
  it('git files planted as a FIFO or a link to /dev/zero never hang the lookup: refused in bounded time', () => {
    const goalOf = (dir: string) =>
      spawnSync(process.execPath, [join(__dirname, '../../dist/cli.js'), 'goal', '--json', '--dir', dir], {
        env: { ...env, TURNKEEPER_HOME: join(root, 'tk-home') },
        encoding: 'utf8',
        timeout: 15_000,
      });
    const repo = newRepo('hostile-config');
    git(repo, 'remote', 'add', 'origin', 'https://example.org/team/hostile.git');
    // Control: the regular config is read, its origin names the Goal.
    expect(JSON.parse(goalOf(repo).stdout)).toMatchObject({ rule: 'origin' });
    for (const plant of [(path: string) => execFileSync('mkfifo', [path]), (path: string) => symlinkSync('/dev/zero', path)]) {
      rmSync(join(repo, '.git', 'config'));
      plant(join(repo, '.git', 'config'));
      const run = goalOf(repo);
      expect(run.signal, 'the lookup hung and was killed').toBeNull();
      // An unreadable config is not a key: the repository's own directory is (rule c), and goal says why.
      expect(JSON.parse(run.stdout)).toMatchObject({ rule: 'common_dir', originSkipped: like.stringMatching(/not a regular file/) });
    }

    const main = newRepo('hostile-commondir');
    const wt = join(root, 'hostile-wt');
    git(main, 'worktree', 'add', '-q', '-b', 'wt', wt);
    const pointer = join(main, '.git', 'worktrees', 'hostile-wt', 'commondir');
    expect(JSON.parse(goalOf(wt).stdout)).toMatchObject({ rule: 'common_dir' }); // control
    rmSync(pointer);
    execFileSync('mkfifo', [pointer]);
    const run = goalOf(wt);
    expect(run.signal, 'the lookup hung and was killed').toBeNull();
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/commondir cannot be read: it is a FIFO, not a regular file/);
  });

  it("a claim's git status does not run the checkout's core.fsmonitor program (control: git status does)", () => {
    const repo = newRepo('fsmonitor');
    const marker = join(root, 'fsmonitor-ran');
    const program = join(root, 'fsmonitor.sh');
    writeFileSync(program, `#!/bin/sh\ntouch '${marker}'\nexit 1\n`, { mode: 0o755 });
    git(repo, 'config', 'core.fsmonitor', program);
    writeFileSync(join(repo, 'README.md'), 'changed\n');
    spawnSync('git', ['status', '--porcelain'], { cwd: repo, env });
    expect(existsSync(marker), 'control: git status runs it').toBe(true);
    rmSync(marker);
    expect(preconditionsOf(repo).statusDigest).toMatch(/^sha256:/);
    expect(existsSync(marker)).toBe(false);
  });

  it('an empty .git directory is not a repository: the walk goes on up, as git does', () => {
    const repo = newRepo('outer');
    const nested = join(repo, 'nested');
    mkdirSync(join(nested, '.git'), { recursive: true });
    expectAgreesWithGit(nested);
    expect(resolveGoal(nested).checkout).toBe(repo);
  });
});

describe('parseGitConfigOrigin agrees with git config', () => {
  it('reads the URL git reads, for values git had to quote and escape', () => {
    const repo = newRepo('config-diff');
    for (const url of ['https://h.io/a b', 'x"y', 'back\\slash', 'semi;colon#hash', ' lead and trail ', 'tab\there', 'line\nbreak']) {
      git(repo, 'config', 'remote.origin.url', url);
      const said = spawnSync('git', ['config', '--get', 'remote.origin.url'], { cwd: repo, env, encoding: 'utf8' }).stdout.replace(/\n$/, '');
      expect(said).toBe(url);
      expect([url, parseGitConfigOrigin(readFileSync(join(repo, '.git', 'config'), 'utf8'))]).toEqual([url, { url }]);
    }
  });

  it('reads hand-written files as git does', () => {
    const file = join(root, 'hand.cfg');
    const texts = [
      '[remote "origin"]\n  url = "quoted # not a comment" # a comment\n',
      '[Remote "origin"]\n\tURL = a\\\n  b\n',
      '[remote.origin]\nurl = old\n',
      '[remote "origin"]url=same-line\n',
      '[remote "o\\rigin"]\nurl = escaped-subsection\n',
      '\uFEFF[remote "origin"]\r\n\turl = crlf \r\n',
      '[remote "origin"]\n\turl = a"b c"d\n',
      '[remote "origin"]\n\turl = "a"  "b"\t# tab, then a comment\n',
      '# leading comment\n[core]\n\tbare = false\n[remote "origin"]\n\tfetch = x\n\turl = https://h.io/a/b.git\n[branch "main"]\n\tremote = origin\n',
    ];
    for (const text of texts) {
      writeFileSync(file, text);
      const said = spawnSync('git', ['config', '-f', file, '--get', 'remote.origin.url'], { env, encoding: 'utf8' });
      expect(said.status).toBe(0);
      expect([text, parseGitConfigOrigin(text)]).toEqual([text, { url: said.stdout.replace(/\n$/, '') }]);
    }
  });
});
