// Issue 20 items 1 and 4 through real git and real `dist/cli.js` processes: `start --worktree` makes
// (or reuses) a Todo's own worktree on `todo/<id>` beside the main checkout and launches there;
// `resume --recreate-worktree` brings a deleted worktree back at the capture's branch (or its captured
// HEAD); `todo done --merge|--squash` merges the branch back with a `todo_finished` receipt and the
// lease released, and refuses a dirty worktree or a conflicting merge with the repository unchanged
// byte for byte. The agent is /bin/true (attested and launched for real; it fires no hook) or, for
// claims, the agent's hook run with the agent's payload, as the other integration tests do.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FINISH_FAULT_POINTS } from '../../src/store/faults';
import Database from 'better-sqlite3';
import { parseReceipt, type ReceiptDocument } from '../../src/core/receipts';
import { contextOf, makeWorld, payload, type World } from '../support/world';

let world: World;
/** Git identity for the commits of a merge or squash (the world's HOME has no git config). */
const IDENTITY = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid' };
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...IDENTITY } });
const commitFile = (cwd: string, file: string, text: string, message: string) => {
  writeFileSync(join(cwd, file), text);
  git(cwd, 'add', file);
  git(cwd, 'commit', '-qm', message);
};

beforeEach(() => {
  world = makeWorld('todo-worktrees');
  expect(world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login']).code).toBe(0);
});
afterEach(() => world.cleanup());

/** Where the worktree goes by default: `<parent>/<name>.worktrees/<todo>`. */
const defaultPath = () => join(world.root, 'repo.worktrees', 'fix-login');

function cli(args: string[], cwd = world.repo) {
  const run = world.cli(args, { cwd, env: IDENTITY });
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(run.stdout) as Record<string, unknown>;
  } catch {
    // not --json
  }
  return { ...run, json };
}
const startWorktree = (...extra: string[]) =>
  cli(['start', 'fix-login', '--agent', 'codex', '--worktree', ...extra, '--agent-bin', '/bin/true', '--prompt', 'go', '--json']);

const receiptDocs = (): ReceiptDocument[] => {
  const db = new Database(world.db, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT doc FROM receipts ORDER BY seq').all() as { doc: string }[]).map((row) => parseReceipt(row.doc)!);
  } finally {
    db.close();
  }
};
function leases() {
  const run = world.cli(['status', '--json']);
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { leases: { todo: string; owner: string; capture: string; status: string; checkout?: string }[] }).leases;
}
const todoStatus = () =>
  (JSON.parse(world.cli(['todo', 'list', '--json']).stdout) as { id: string; status: string }[]).find((t) => t.id === 'fix-login')!.status;

/**
 * Claims fix-login from `cwd` with the agent's own hook (session `sess-1`) and, unless `working`, ends
 * that turn (its Stop hook), as an agent has before a person finishes its Todo; returns the capture id.
 */
function claimIn(cwd: string, options: { working?: boolean } = {}): string {
  writeFileSync(join(world.root, 'sess-1.jsonl'), '{"type":"session"}\n');
  const input = JSON.parse(payload.codexPrompt(world, 'sess-1', 'turn-1', 'work on #todo:fix-login')) as Record<string, unknown>;
  input.cwd = cwd;
  const claim = world.cli(['hook'], { input: JSON.stringify(input) });
  const capture = /capture (cap_[0-9a-f]{24})/.exec(contextOf(claim.stdout) ?? '')?.[1];
  expect(capture, claim.stdout + claim.stderr).toBeDefined();
  if (!options.working) {
    const stop = world.cli(['hook'], {
      input: payload.codex(world, 'Stop', 'sess-1', 'turn-1', { cwd, stop_hook_active: false, last_assistant_message: 'done' }),
    });
    expect(stop.code, stop.stderr).toBe(0);
  }
  return capture!;
}

/** Every file under `dirs` (the .git directory included) by path, type and content digest. */
function snapshot(...dirs: string[]): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
    else if (stat.isSymbolicLink()) out.set(path, `link:${readlinkSync(path)}`);
    else out.set(path, `${stat.mode.toString(8)}:${createHash('sha256').update(readFileSync(path)).digest('hex')}`);
  };
  for (const dir of dirs) walk(dir);
  return out;
}

describe('start --worktree', () => {
  it('creates the worktree on todo/<id> at the default location from the main checkout HEAD, launches there, and reuses it next time', () => {
    const head = git(world.repo, 'rev-parse', 'HEAD').trim();
    const started = startWorktree();
    expect(started.code, started.stderr).toBe(0);
    expect(started.json).toMatchObject({ decision: 'launched', worktree: defaultPath(), branch: 'todo/fix-login', worktreeCreated: true, exit: { code: 0 } });
    expect(git(defaultPath(), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('todo/fix-login');
    expect(git(defaultPath(), 'rev-parse', 'HEAD').trim()).toBe(head);
    // The launch receipt names the worktree as its checkout, and the branch.
    const launch = receiptDocs().findLast((doc) => doc.kind === 'launch_committed')!;
    expect(launch.detail).toMatchObject({ checkout: defaultPath(), branch: 'todo/fix-login', worktreeCreated: true });

    // A second start (the first agent exited without claiming) reuses the branch's worktree.
    const again = startWorktree();
    expect(again.code, again.stderr).toBe(0);
    expect(again.json).toMatchObject({ worktree: defaultPath(), worktreeCreated: false });
    expect(git(world.repo, 'worktree', 'list').trim().split('\n')).toHaveLength(2);
  });

  it('--worktree <path> and config.json worktrees {location, branchPrefix}; an invalid value is refused [worktree_config] and creates nothing', () => {
    const custom = join(world.root, 'elsewhere', 'wt');
    const named = startWorktree(custom);
    expect(named.code, named.stderr).toBe(0);
    expect(named.json).toMatchObject({ worktree: custom, branch: 'todo/fix-login', worktreeCreated: true });

    expect(world.cli(['todo', 'add', 'Second', '--id', 'second']).code).toBe(0);
    const config = join(world.home, 'config.json');
    writeFileSync(config, JSON.stringify({ worktrees: { location: '/nowhere/{repo}/{branch}', branchPrefix: 'x y/' } }));
    const bad = cli(['start', 'second', '--agent', 'codex', '--worktree', '--agent-bin', '/bin/true', '--prompt', 'go', '--json']);
    expect(bad.code).toBe(1);
    expect(bad.json).toMatchObject({ ok: false, reason: 'worktree_config' });
    expect(String(bad.json.detail)).toContain('{branch}');
    expect(git(world.repo, 'worktree', 'list').trim().split('\n')).toHaveLength(2);

    // The same command with a valid configuration creates it where the configuration says.
    writeFileSync(config, JSON.stringify({ worktrees: { location: join(world.root, 'trees', '{repo}-{todo}'), branchPrefix: 'agent/' } }));
    const good = cli(['start', 'second', '--agent', 'codex', '--worktree', '--agent-bin', '/bin/true', '--prompt', 'go', '--json']);
    expect(good.code, good.stderr).toBe(0);
    expect(good.json).toMatchObject({ worktree: join(world.root, 'trees', 'repo-second'), branch: 'agent/second', worktreeCreated: true });
  });

  it('a path that is not the branch worktree is [path_taken], another path for a branch checked out elsewhere is [branch_elsewhere]; nothing is launched', () => {
    mkdirSync(defaultPath(), { recursive: true });
    writeFileSync(join(defaultPath(), 'mine.txt'), 'not a worktree\n');
    const taken = startWorktree();
    expect(taken.code).toBe(1);
    expect(taken.json).toMatchObject({ ok: false, reason: 'path_taken' });
    expect(readdirSync(defaultPath())).toStrictEqual(['mine.txt']);
    expect(receiptDocs().filter((doc) => doc.kind === 'launch_committed')).toHaveLength(0);

    const first = startWorktree(join(world.root, 'first'));
    expect(first.code, first.stderr).toBe(0);
    const elsewhere = startWorktree(join(world.root, 'second'));
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.json).toMatchObject({ ok: false, reason: 'branch_elsewhere' });
    expect(existsSync(join(world.root, 'second'))).toBe(false);
  });

  it('git runs with the GIT_* variables of the environment removed: GIT_DIR naming another repository changes nothing', () => {
    const other = join(world.root, 'other');
    execFileSync('git', ['init', '-q', other]);
    const hostile = { GIT_DIR: join(other, '.git'), GIT_WORK_TREE: other, GIT_INDEX_FILE: join(other, '.git', 'index') };
    // Control: with these variables, git run in the repository works on the other one.
    const listed = execFileSync('git', ['-C', world.repo, 'rev-parse', '--absolute-git-dir'], { encoding: 'utf8', env: { ...process.env, ...hostile } });
    expect(listed.trim()).toBe(join(other, '.git'));

    const run = world.cli(['start', 'fix-login', '--agent', 'codex', '--worktree', '--agent-bin', '/bin/true', '--prompt', 'go', '--json'], {
      env: { ...IDENTITY, ...hostile },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(git(defaultPath(), 'rev-parse', '--git-common-dir').trim()).toBe(join(world.repo, '.git'));
    expect(execFileSync('git', ['-C', other, 'worktree', 'list'], { encoding: 'utf8' }).trim().split('\n')).toHaveLength(1);
  });

  it('a refused start creates no worktree (the Todo is held)', () => {
    claimIn(world.repo);
    const refused = startWorktree();
    expect(refused.code).toBe(1);
    expect(refused.json).toMatchObject({ ok: false, reason: 'lease_held' });
    expect(existsSync(defaultPath())).toBe(false);
    expect(git(world.repo, 'branch', '--list', 'todo/fix-login').trim()).toBe('');
  });
});

describe('resume --recreate-worktree', () => {
  const dryRun = (capture: string, ...extra: string[]) => cli(['resume', capture, '--dry-run', '--json', '--agent-bin', '/bin/true', ...extra]);

  it('after rm -rf of the worktree and git worktree prune: refused [checkout_missing] naming the flag, then recreated at its branch and resumed', () => {
    git(world.repo, 'worktree', 'add', '-q', '-b', 'todo/fix-login', defaultPath());
    commitFile(defaultPath(), 'login.txt', 'fixed\n', 'fix');
    const head = git(defaultPath(), 'rev-parse', 'HEAD').trim();
    const capture = claimIn(defaultPath());
    expect(dryRun(capture).json).toMatchObject({ ok: true, decision: 'dry_run' });

    rmSync(defaultPath(), { recursive: true, force: true });
    git(world.repo, 'worktree', 'prune');
    const refused = dryRun(capture);
    expect(refused.json).toMatchObject({ ok: false, reason: 'checkout_missing' });
    expect(String(refused.json.guidance)).toContain(`turnkeeper resume ${capture} --recreate-worktree`);

    const resumed = dryRun(capture, '--recreate-worktree');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.json).toMatchObject({ ok: true, decision: 'dry_run' });
    expect(git(defaultPath(), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('todo/fix-login');
    expect(git(defaultPath(), 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(readFileSync(join(defaultPath(), 'login.txt'), 'utf8')).toBe('fixed\n');
  });

  it('with the branch deleted too, the branch is recreated at the captured HEAD; unpruned, the stale registration is pruned', () => {
    git(world.repo, 'worktree', 'add', '-q', '-b', 'todo/fix-login', defaultPath());
    commitFile(defaultPath(), 'login.txt', 'fixed\n', 'fix');
    const head = git(defaultPath(), 'rev-parse', 'HEAD').trim();
    const capture = claimIn(defaultPath());
    rmSync(defaultPath(), { recursive: true, force: true });
    // Not pruned: git still counts the branch as checked out there, so deleting it needs the prune.
    expect(spawnSync('git', ['-C', world.repo, 'branch', '-D', 'todo/fix-login']).status).not.toBe(0);
    git(world.repo, 'worktree', 'prune');
    git(world.repo, 'branch', '-D', 'todo/fix-login');

    const resumed = dryRun(capture, '--recreate-worktree');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(git(defaultPath(), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('todo/fix-login');
    expect(git(defaultPath(), 'rev-parse', 'HEAD').trim()).toBe(head);
  });
});

describe('todo done --merge | --squash | --rebase | --keep-branch', () => {
  /** The Todo's worktree with one commit, claimed there by codex:sess-1. */
  function todoWorktreeWithCommit(): { capture: string; branchHead: string } {
    const started = startWorktree();
    expect(started.code, started.stderr).toBe(0);
    commitFile(defaultPath(), 'login.txt', 'fixed\n', 'fix the login');
    const capture = claimIn(defaultPath());
    return { capture, branchHead: git(defaultPath(), 'rev-parse', 'HEAD').trim() };
  }
  const done = (...flags: string[]) => cli(['todo', 'done', 'fix-login', ...flags, '--owner', 'codex:sess-1', '--json']);

  it('a merge that would conflict is refused [merge_conflict] with the repository byte for byte unchanged; plain git merge would have conflicted', () => {
    todoWorktreeWithCommit();
    commitFile(defaultPath(), 'README.md', 'branch side\n', 'branch edits README');
    commitFile(world.repo, 'README.md', 'main side\n', 'main edits README');
    const before = snapshot(world.repo, defaultPath());
    const receiptsBefore = receiptDocs().length;

    const refused = done('--merge', '--remove-worktree');
    expect(refused.code).toBe(1);
    expect(refused.json).toMatchObject({ ok: false, reason: 'merge_conflict' });
    expect(String(refused.json.detail)).toContain('README.md');
    expect(snapshot(world.repo, defaultPath())).toStrictEqual(before);
    expect(receiptDocs()).toHaveLength(receiptsBefore);
    expect(todoStatus()).toBe('open');
    expect(leases()).toStrictEqual([expect.objectContaining({ status: 'active', owner: 'codex:sess-1' })]);

    // The control: in a copy, git merge itself stops on the conflict and leaves the checkout mid-merge.
    const copy = join(world.root, 'copy');
    cpSync(world.repo, copy, { recursive: true });
    const merge = spawnSync('git', ['-C', copy, 'merge', '--no-edit', 'todo/fix-login'], { encoding: 'utf8', env: { ...process.env, ...IDENTITY } });
    expect(merge.status).toBe(1);
    expect(merge.stdout).toContain('CONFLICT');
    expect(existsSync(join(copy, '.git', 'MERGE_HEAD'))).toBe(true);
  });

  it('control: the <repo>.worktrees folder stays while another Todo has its worktree there', () => {
    todoWorktreeWithCommit();
    const other = join(dirname(defaultPath()), 'other-todo');
    git(world.repo, 'worktree', 'add', '-q', '-b', 'todo/other-todo', other);
    const finished = done('--merge', '--remove-worktree');
    expect(finished.code, finished.stderr + finished.stdout).toBe(0);
    expect(existsSync(defaultPath())).toBe(false);
    expect(readdirSync(dirname(defaultPath()))).toStrictEqual(['other-todo']);
  });

  it('a dirty worktree is refused [worktree_dirty] with nothing changed; clean, --merge merges, records todo_finished and releases the lease', () => {
    const { capture, branchHead } = todoWorktreeWithCommit();
    writeFileSync(join(defaultPath(), 'notes.txt'), 'untracked work\n');
    const before = snapshot(world.repo, defaultPath());
    const refused = done('--merge', '--remove-worktree');
    expect(refused.code).toBe(1);
    expect(refused.json).toMatchObject({ ok: false, reason: 'worktree_dirty' });
    // It names what to commit or discard.
    expect(String(refused.json.detail)).toContain('has changes in 1 path (notes.txt)');
    expect(snapshot(world.repo, defaultPath())).toStrictEqual(before);
    expect(todoStatus()).toBe('open');

    rmSync(join(defaultPath(), 'notes.txt'));
    const headBefore = git(world.repo, 'rev-parse', 'HEAD').trim();
    const finished = done('--merge', '--remove-worktree');
    expect(finished.code, finished.stderr + finished.stdout).toBe(0);
    expect(finished.json).toMatchObject({
      ok: true,
      strategy: 'merge',
      branch: 'todo/fix-login',
      into: 'master',
      merged: true,
      worktreeRemoved: true,
      branchDeleted: true,
    });
    // A merge commit: the main checkout's old HEAD and the branch as its parents.
    expect(git(world.repo, 'rev-parse', 'HEAD^1', 'HEAD^2').trim().split('\n')).toStrictEqual([headBefore, branchHead]);
    expect(readFileSync(join(world.repo, 'login.txt'), 'utf8')).toBe('fixed\n');
    expect(existsSync(defaultPath())).toBe(false);
    // Its last worktree gone, the <repo>.worktrees folder the start made is gone too.
    expect(existsSync(dirname(defaultPath()))).toBe(false);
    expect(git(world.repo, 'branch', '--list', 'todo/fix-login').trim()).toBe('');

    const docs = receiptDocs();
    const finishedDoc = docs.find((doc) => doc.kind === 'todo_finished')!;
    expect(finishedDoc).toMatchObject({
      todo: 'fix-login',
      detail: {
        strategy: 'merge',
        branch: 'todo/fix-login',
        branchHead,
        mergedHead: branchHead,
        commits: 1,
        into: 'master',
        headBefore,
        headAfter: git(world.repo, 'rev-parse', 'HEAD').trim(),
        treeAfter: git(world.repo, 'rev-parse', 'HEAD^{tree}').trim(),
        worktreeRemoved: true,
        branchDeleted: true,
      },
    });
    // In one transaction, in this order: done, finished, released.
    const at = docs.indexOf(finishedDoc);
    expect(docs[at - 1]).toMatchObject({ kind: 'todo_status_changed', detail: { to: 'done' } });
    expect(docs[at + 1]).toMatchObject({ kind: 'lease_released', capture });
    expect(todoStatus()).toBe('done');
    expect(leases().filter((lease) => lease.status === 'active')).toStrictEqual([]);
    expect(JSON.parse(world.cli(['verify', '--json']).stdout)).toMatchObject({ ok: true });
  });

  it('a commit made on the branch during the finish (a post-merge hook here; an agent still at work) keeps the branch, said and recorded: git branch -D would have lost it', () => {
    todoWorktreeWithCommit();
    // The main repository's post-merge hook commits in the Todo's worktree once the merge is made.
    const late = join(world.root, 'late-commit.txt');
    writeFileSync(
      join(world.repo, '.git', 'hooks', 'post-merge'),
      `#!/bin/sh\nunset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_PREFIX\ncd '${defaultPath()}' && echo late > late.txt && git add late.txt && ` +
        `git -c user.email=t@example.invalid -c user.name=t commit -qm 'late work' && git rev-parse HEAD > '${late}'\n`,
      { mode: 0o755 },
    );
    const finished = done('--merge', '--remove-worktree');
    expect(finished.code, finished.stderr + finished.stdout).toBe(0);
    const lateCommit = readFileSync(late, 'utf8').trim();
    expect(finished.json).toMatchObject({ ok: true, merged: true, worktreeRemoved: true, branchDeleted: false });
    expect(finished.json.kept).toStrictEqual([`branch todo/fix-login kept: it moved to ${lateCommit.slice(0, 12)} after the merge, and that is not merged`]);
    // The late commit is still reachable, from the branch that was kept.
    expect(git(world.repo, 'rev-parse', 'refs/heads/todo/fix-login').trim()).toBe(lateCommit);
    // Control: it is not in the main branch, so deleting the branch (as before) would have left it unreachable.
    expect(spawnSync('git', ['-C', world.repo, 'merge-base', '--is-ancestor', lateCommit, 'HEAD']).status).toBe(1);
    expect(receiptDocs().find((doc) => doc.kind === 'todo_finished')).toMatchObject({
      detail: { branchDeleted: false, kept: [expect.stringContaining('branch todo/fix-login kept')] },
    });
  });

  it('--squash makes one commit on the main branch with the branch tree, keeps the worktree unless asked, and someone else cannot finish a held Todo', () => {
    todoWorktreeWithCommit();
    commitFile(defaultPath(), 'more.txt', 'second\n', 'second commit');
    const headBefore = git(world.repo, 'rev-parse', 'HEAD').trim();
    // Not the holder, no --force: refused before git is touched.
    const stranger = cli(['todo', 'done', 'fix-login', '--squash', '--json']);
    expect(stranger.code).toBe(1);
    expect(stranger.json).toMatchObject({ ok: false, reason: 'not_owner' });
    expect(git(world.repo, 'rev-parse', 'HEAD').trim()).toBe(headBefore);

    const finished = done('--squash');
    expect(finished.code, finished.stderr + finished.stdout).toBe(0);
    expect(finished.json).toMatchObject({ ok: true, strategy: 'squash', commits: 2, merged: true, worktreeRemoved: false, branchDeleted: false });
    expect(git(world.repo, 'rev-parse', 'HEAD^').trim()).toBe(headBefore);
    expect(spawnSync('git', ['-C', world.repo, 'rev-parse', '--verify', '-q', 'HEAD^2']).status).not.toBe(0);
    // The main branch had nothing else: its new tree is the branch's.
    expect(git(world.repo, 'rev-parse', 'HEAD^{tree}').trim()).toBe(git(defaultPath(), 'rev-parse', 'HEAD^{tree}').trim());
    expect(existsSync(defaultPath())).toBe(true);
    expect(receiptDocs().find((doc) => doc.kind === 'todo_finished')).toMatchObject({ detail: { strategy: 'squash', commits: 2, worktreeRemoved: false } });
    expect(todoStatus()).toBe('done');
    expect(leases().filter((lease) => lease.status === 'active')).toStrictEqual([]);
  });
  it('--rebase replays the branch on the moved main branch and fast-forwards; --keep-branch merges nothing and keeps the branch', () => {
    todoWorktreeWithCommit();
    commitFile(world.repo, 'other.txt', 'main moved on\n', 'main moves on');
    const mainHead = git(world.repo, 'rev-parse', 'HEAD').trim();
    const finished = done('--rebase', '--remove-worktree');
    expect(finished.code, finished.stderr + finished.stdout).toBe(0);
    expect(finished.json).toMatchObject({ ok: true, strategy: 'rebase', commits: 1, merged: true, worktreeRemoved: true, branchDeleted: true });
    // Linear: the rebased commit sits on the main branch's head, no merge commit.
    expect(git(world.repo, 'rev-parse', 'HEAD^').trim()).toBe(mainHead);
    expect(git(world.repo, 'log', '-1', '--format=%s').trim()).toBe('fix the login');
    expect(readFileSync(join(world.repo, 'login.txt'), 'utf8')).toBe('fixed\n');

    expect(world.cli(['todo', 'add', 'Second', '--id', 'second']).code).toBe(0);
    git(world.repo, 'worktree', 'add', '-q', '-b', 'todo/second', join(world.root, 'second'));
    commitFile(join(world.root, 'second'), 'second.txt', 'kept\n', 'kept work');
    const before = git(world.repo, 'rev-parse', 'HEAD').trim();
    const kept = cli(['todo', 'done', 'second', '--keep-branch', '--remove-worktree', '--json']);
    expect(kept.code, kept.stderr + kept.stdout).toBe(0);
    expect(kept.json).toMatchObject({ ok: true, strategy: 'keep-branch', commits: 1, merged: false, worktreeRemoved: true, branchDeleted: false });
    expect(git(world.repo, 'rev-parse', 'HEAD').trim()).toBe(before);
    expect(git(world.repo, 'log', '-1', '--format=%s', 'todo/second').trim()).toBe('kept work');
    expect(existsSync(join(world.root, 'second'))).toBe(false);
  });

  it('a merge git itself refuses after the checks (no committer identity) is aborted: the main checkout is as before and only the plan is recorded', () => {
    todoWorktreeWithCommit();
    const head = git(world.repo, 'rev-parse', 'HEAD').trim();
    const receiptsBefore = receiptDocs().length;
    // The world's HOME has no git config: without the identity variables a merge commit cannot be made.
    const run = world.cli(['todo', 'done', 'fix-login', '--merge', '--owner', 'codex:sess-1', '--json'], {
      env: { GIT_CONFIG_NOSYSTEM: '1', EMAIL: undefined },
    });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, reason: 'git_failed', detail: expect.stringMatching(/identity|who you are/i) as unknown });
    expect(git(world.repo, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(git(world.repo, 'status', '--porcelain').trim()).toBe('');
    expect(existsSync(join(world.repo, '.git', 'MERGE_HEAD'))).toBe(false);
    // The intent, written before git acted; the next finish finds nothing merged and plans afresh.
    expect(
      receiptDocs()
        .slice(receiptsBefore)
        .map((doc) => doc.kind),
    ).toStrictEqual(['todo_finish_planned']);
    expect(todoStatus()).toBe('open');
    // Control: the same command with an identity merges.
    expect(done('--merge').json).toMatchObject({ ok: true, merged: true });
    expect(receiptDocs().find((doc) => doc.kind === 'todo_finished')!.detail).not.toHaveProperty('recovered');
  });
  it('removing the worktree an agent is working in is refused [session_live] naming the session, everything as it was; once its turn ends, the same finish goes through', () => {
    const started = startWorktree();
    expect(started.code, started.stderr).toBe(0);
    commitFile(defaultPath(), 'login.txt', 'fixed\n', 'fix the login');
    claimIn(defaultPath(), { working: true });
    const before = snapshot(world.repo, defaultPath());
    const receiptsBefore = receiptDocs().length;

    const refused = done('--merge', '--remove-worktree');
    expect(refused.code).toBe(1);
    expect(refused.json).toMatchObject({ ok: false, reason: 'session_live' });
    expect(String(refused.json.detail)).toContain(`codex:sess-1 (working since`);
    expect(String(refused.json.detail)).toContain(defaultPath());
    expect(snapshot(world.repo, defaultPath())).toStrictEqual(before);
    expect(receiptDocs()).toHaveLength(receiptsBefore);
    expect(todoStatus()).toBe('open');
    // Keeping the worktree takes nothing from under the agent: not refused for it.
    expect(done('--keep-branch').json).toMatchObject({ ok: true });
    expect(world.cli(['todo', 'reopen', 'fix-login']).code).toBe(0);

    // Control: the agent's turn ends (its Stop hook), and the same finish removes the worktree.
    const stop = world.cli(['hook'], {
      input: payload.codex(world, 'Stop', 'sess-1', 'turn-1', { cwd: defaultPath(), stop_hook_active: false, last_assistant_message: 'done' }),
    });
    expect(stop.code, stop.stderr).toBe(0);
    const finished = done('--merge', '--remove-worktree');
    expect(finished.json, JSON.stringify(finished.json)).toMatchObject({ ok: true, merged: true, worktreeRemoved: true });
    expect(receiptDocs().find((doc) => doc.kind === 'todo_finished')!.detail).not.toHaveProperty('removedUnder');
  });

  it('--force --reason removes the worktree under the working agent, and todo_finished names the session', () => {
    const started = startWorktree();
    expect(started.code, started.stderr).toBe(0);
    commitFile(defaultPath(), 'login.txt', 'fixed\n', 'fix the login');
    claimIn(defaultPath(), { working: true });
    const forced = done('--merge', '--remove-worktree', '--force', '--reason', 'the agent hangs');
    expect(forced.json, JSON.stringify(forced.json)).toMatchObject({ ok: true, merged: true, worktreeRemoved: true });
    expect(existsSync(defaultPath())).toBe(false);
    expect(receiptDocs().find((doc) => doc.kind === 'todo_finished')!.detail).toMatchObject({ removedUnder: ['codex:sess-1'] });
  });

  it.each(FINISH_FAULT_POINTS)(
    'kill -9 at %s: the rerun leaves git and the receipts agreeing: one merge, one todo_finished naming it, the worktree and branch gone',
    (point) => {
      const { branchHead } = todoWorktreeWithCommit();
      const headBefore = git(world.repo, 'rev-parse', 'HEAD').trim();
      const killed = world.cli(['todo', 'done', 'fix-login', '--merge', '--remove-worktree', '--owner', 'codex:sess-1', '--json'], {
        env: { ...IDENTITY, TURNKEEPER_TEST_FAULT: `${point}=kill` },
      });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect(todoStatus()).toBe('open');
      // Past the plan, git has merged: main holds the merge and no receipt says so yet.
      if (point !== 'finish.after_plan') expect(git(world.repo, 'rev-parse', 'HEAD^2').trim()).toBe(branchHead);

      const rerun = done('--merge', '--remove-worktree');
      expect(rerun.code, rerun.stderr + rerun.stdout).toBe(0);
      expect(rerun.json).toMatchObject({
        ok: true,
        merged: true,
        worktreeRemoved: true,
        branchDeleted: true,
      });
      // One merge commit, of the branch as it was, on the head from before.
      expect(git(world.repo, 'rev-parse', 'HEAD^1', 'HEAD^2').trim().split('\n')).toStrictEqual([headBefore, branchHead]);
      expect(git(world.repo, 'rev-list', '--count', `${headBefore}..HEAD`).trim()).toBe('2');
      expect(existsSync(defaultPath())).toBe(false);
      expect(git(world.repo, 'branch', '--list', 'todo/fix-login').trim()).toBe('');
      const finished = receiptDocs().filter((doc) => doc.kind === 'todo_finished');
      expect(finished).toHaveLength(1);
      expect(finished[0]!.detail).toMatchObject({
        merged: true,
        commits: 1,
        branchHead,
        mergedHead: branchHead,
        headBefore,
        headAfter: git(world.repo, 'rev-parse', 'HEAD').trim(),
        ...(point === 'finish.after_plan' ? {} : { recovered: true }),
      });
      expect(todoStatus()).toBe('done');
      expect(JSON.parse(world.cli(['verify', '--json']).stdout)).toMatchObject({ ok: true });
    },
  );

  it('the main checkout with uncommitted changes is [main_not_ready]; run from inside the Todo worktree, the finish merges into the main checkout', () => {
    todoWorktreeWithCommit();
    writeFileSync(join(world.repo, 'README.md'), 'edited, not committed\n');
    const before = snapshot(world.repo, defaultPath());
    const refused = done('--merge');
    expect(refused.json).toMatchObject({ ok: false, reason: 'main_not_ready' });
    expect(snapshot(world.repo, defaultPath())).toStrictEqual(before);

    git(world.repo, 'checkout', '--', 'README.md');
    const inside = cli(['todo', 'done', 'fix-login', '--squash', '--remove-worktree', '--owner', 'codex:sess-1', '--json'], defaultPath());
    expect(inside.code, inside.stderr + inside.stdout).toBe(0);
    expect(inside.json).toMatchObject({ ok: true, into: 'master', worktreeRemoved: true });
    expect(readFileSync(join(world.repo, 'login.txt'), 'utf8')).toBe('fixed\n');
  });
});
