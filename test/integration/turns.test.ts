// Live turn status and the turn receipt (issue 20 items 2 and 3; spec §5 "turn_ended", §9 "Live
// status"), through the built `turnkeeper hook` with Claude Code payloads in a real git repository
// against a real SQLite file, and `status --json` / `show <todo>` as a person runs them. The tree
// digests are checked against plain git run in a copy of the checkout.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { ReceiptDocument } from '../../src/core/receipts';
import { makeWorld, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('turns');
  writeFileSync(join(world.repo, 'a.txt'), 'a\n');
  git(world.repo, 'add', 'a.txt');
  git(world.repo, '-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-qm', 'a');
  expect(world.cli(['todo', 'add', 'Fix the login', '--id', 'fix-login']).code).toBe(0);
});
afterEach(() => world.cleanup());

const spawnSyncQuiet = (file: string, args: string[]) => spawnSync(file, args, { stdio: 'ignore' });
const git = (repo: string, ...args: string[]): string => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();

/** The tree `git add -A` stages, computed by plain git in a throwaway copy of the checkout. */
function plainTree(): string {
  const copy = join(world.root, 'copy');
  rmSync(copy, { recursive: true, force: true });
  cpSync(world.repo, copy, { recursive: true });
  git(copy, 'add', '-A');
  const tree = git(copy, 'write-tree');
  rmSync(copy, { recursive: true, force: true });
  return tree;
}

const SESSION = 'sess-turns';
const transcript = () => join(world.root, `${SESSION}.jsonl`);
const claude = (event: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ session_id: SESSION, transcript_path: transcript(), cwd: world.repo, hook_event_name: event, permission_mode: 'default', ...extra });
const hook = (event: string, extra: Record<string, unknown> = {}) => {
  const result = world.cli(['hook', '--agent', 'claude'], { input: claude(event, extra) });
  expect(result.code).toBe(0);
  return result;
};

/** The session row and the store's write counter (every write transaction advances it), read beside the hook. */
function sessionRow(): {
  state: string | null;
  state_at: number | null;
  turn_tree: string | null;
  turn_head: string | null;
  turn_id: string | null;
  writes: number;
} {
  const db = new Database(world.db, { readonly: true });
  try {
    const row = db.prepare('SELECT state, state_at, turn_tree, turn_head, turn_id FROM sessions WHERE owner = ?').get(`claude:${SESSION}`) as Omit<
      ReturnType<typeof sessionRow>,
      'writes'
    >;
    const writes = Number((db.prepare("SELECT value FROM store_meta WHERE key = 'writes'").get() as { value: string }).value);
    return { ...row, writes };
  } finally {
    db.close();
  }
}

const liveOf = () => {
  const status = JSON.parse(world.cli(['status', '--json']).stdout) as { leases: { todo: string; status: string; live?: { state: string; since: string } }[] };
  return status.leases.find((lease) => lease.todo === 'fix-login' && lease.status === 'active')?.live;
};

async function turnReceipts(): Promise<ReceiptDocument[]> {
  const store = await world.store();
  try {
    return (await store.receipts({ limit: 1000 })).map((row) => JSON.parse(row.doc) as ReceiptDocument).filter((doc) => doc.kind === 'turn_ended');
  } finally {
    store.close();
  }
}

const PROMPT = { prompt: 'please #todo:fix-login', prompt_id: 'prompt-1' };

describe('an index the agent replaced', () => {
  it('.git/index a link to /dev/zero: the claim answers at once with no tree (the copy would fill the disk); control: the real index gives one', () => {
    hook('UserPromptSubmit', PROMPT);
    expect(sessionRow().turn_tree).toBe(plainTree());
    const index = join(world.repo, '.git', 'index');
    rmSync(index);
    symlinkSync('/dev/zero', index);
    const started = Date.now();
    hook('UserPromptSubmit', { prompt: 'go on', prompt_id: 'prompt-2' });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(sessionRow()).toMatchObject({ turn_id: 'prompt-2', turn_tree: null });
    expect(readdirSync(join(world.repo, '.git')).filter((name) => name.startsWith('turnkeeper-index.'))).toEqual([]);
  });
});

describe('live turn status from the hooks', () => {
  it('a prompt claims (working), an unchanged tool event writes nothing, a notification is waiting, stop is stopped', () => {
    const before = plainTree();
    hook('UserPromptSubmit', PROMPT);
    const claimed = sessionRow();
    expect(claimed).toMatchObject({ state: 'working', turn_tree: before, turn_head: git(world.repo, 'rev-parse', 'HEAD'), turn_id: 'prompt-1' });
    expect(liveOf()).toMatchObject({ state: 'working', since: new Date(claimed.state_at!).toISOString() });

    // The same state within the touch interval: the store is not written at all (hooks run on every tool call).
    hook('PreToolUse', { tool_name: 'Read', tool_input: { file_path: 'a.txt' } });
    hook('PostToolUse', { tool_name: 'Read', tool_input: { file_path: 'a.txt' }, tool_response: {} });
    expect(sessionRow()).toEqual(claimed);

    // Control: a changed state is written at once, within the same interval.
    hook('Notification', { message: 'Claude needs your permission to use Bash', notification_type: 'permission_prompt' });
    const waiting = sessionRow();
    expect(waiting.state).toBe('waiting');
    expect(waiting.writes).toBe(claimed.writes + 1);
    expect(waiting.state_at).toBeGreaterThanOrEqual(claimed.state_at!);
    expect(liveOf()).toMatchObject({ state: 'waiting' });

    hook('Stop', { stop_hook_active: false });
    expect(sessionRow()).toMatchObject({ state: 'stopped', turn_tree: null });
    expect(liveOf()).toMatchObject({ state: 'stopped' });
    const text = world.cli(['status']).stdout;
    expect(text).toMatch(/fix-login .*\n\s+stopped since \d{4}-/);
  });
});

describe('the turn receipt', () => {
  it("names the trees before and after, the changed paths, and the transcript's model and tokens of this turn only", async () => {
    // A response before this turn, which must not be counted.
    const old = (at: Date) =>
      JSON.stringify({
        type: 'assistant',
        timestamp: at.toISOString(),
        version: '2.1.332',
        message: { id: 'msg_old', model: 'claude-old', usage: { input_tokens: 1000, output_tokens: 1000 } },
      });
    writeFileSync(transcript(), old(new Date(Date.now() - 3600_000)) + '\n');
    const treeBefore = plainTree();
    const headBefore = git(world.repo, 'rev-parse', 'HEAD');
    hook('UserPromptSubmit', PROMPT);

    // The turn: two files edited, one added; the model answered in two messages (one written as two lines with one usage).
    writeFileSync(join(world.repo, 'README.md'), 'demo, edited\n');
    writeFileSync(join(world.repo, 'a.txt'), 'a, edited\n');
    writeFileSync(join(world.repo, 'new.txt'), 'new\n');
    const line = (id: string, input: number, output: number) =>
      JSON.stringify({
        type: 'assistant',
        timestamp: new Date().toISOString(),
        version: '2.1.332',
        message: { id, model: 'claude-sonnet-test', usage: { input_tokens: input, output_tokens: output, cache_read_input_tokens: 7 } },
      });
    appendFileSync(transcript(), [line('msg_1', 10, 5), line('msg_1', 10, 5), line('msg_2', 20, 8)].join('\n') + '\n');
    const treeAfter = plainTree();
    expect(treeAfter).not.toBe(treeBefore);

    hook('Stop', { stop_hook_active: false });
    const [receipt, ...more] = await turnReceipts();
    expect(more).toEqual([]);
    expect(receipt).toMatchObject({
      kind: 'turn_ended',
      todo: 'fix-login',
      owner: `claude:${SESSION}`,
      lease: { epoch: 1 },
      detail: {
        agent: 'claude',
        agentVersion: '2.1.332',
        model: 'claude-sonnet-test',
        inputTokens: 30,
        outputTokens: 13,
        cachedInputTokens: 14,
        session: SESSION,
        turn: 'prompt-1',
        event: 'Stop',
        headBefore,
        treeBefore,
        headAfter: headBefore,
        treeAfter,
        changed: 3,
        added: 1,
        modified: 2,
        deleted: 0,
      },
    });
    expect(receipt!.detail!.paths).toEqual(['M\tREADME.md', 'M\ta.txt', 'A\tnew.txt']);
    expect(receipt!.detail!.durationMs).toBeGreaterThanOrEqual(0);
    // Nothing in the repository moved: the tree was built in a temporary index.
    expect(execFileSync('git', ['-C', world.repo, 'status', '--porcelain'], { encoding: 'utf8' })).toBe(' M README.md\n M a.txt\n?? new.txt\n');
    // Chained like every receipt.
    expect(JSON.parse(world.cli(['verify', '--json']).stdout)).toMatchObject({ ok: true });

    // A second stop without a prompt has no turn base: no before, no changes claimed.
    hook('Stop', { stop_hook_active: false });
    const second = (await turnReceipts())[0]!;
    expect(second.seq).toBeGreaterThan(receipt!.seq);
    expect(second.detail).toMatchObject({ treeBefore: null, changed: null, treeAfter });

    // `show <todo>`: the timeline of turns, text and JSON.
    const timeline = JSON.parse(world.cli(['show', 'fix-login', '--json']).stdout) as {
      turns: number;
      entries: { kind: string; detail: Record<string, unknown>; paths?: string[] }[];
    };
    expect(timeline.turns).toBe(2);
    expect(timeline.entries.map((entry) => entry.kind)).toEqual(['lease_acquired', 'turn_ended', 'turn_ended']);
    expect(timeline.entries[1]).toMatchObject({ detail: { changed: 3 }, paths: ['M\tREADME.md', 'M\ta.txt', 'A\tnew.txt'] });
    const text = world.cli(['show', 'fix-login']).stdout;
    expect(text).toContain('Todo fix-login (open): 2 turns');
    expect(text).toMatch(/turn prompt-1 ended \(claude:sess-turns\): 3 paths changed \(\+1 ~2 -0\)/);
    expect(text).toContain('A  new.txt');
    // The turn as an in-toto statement about the tree it left, signed, with its inclusion proof.
    const attestation = world.cli(['receipts', 'attestation', String(receipt!.seq)]);
    expect(attestation.code, attestation.stdout + attestation.stderr).toBe(0);
    const envelope = JSON.parse(attestation.stdout) as { payload: string; signatures: unknown[] };
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as Record<string, unknown>;
    expect(statement).toMatchObject({
      subject: [{ name: 'git-tree', digest: { gitTree: treeAfter } }],
      predicateType: 'https://turnkeeper.dev/attestation/turn/v1',
      predicate: { todo: 'fix-login', treeBefore, treeAfter, changed: 3, paths: ['M\tREADME.md', 'M\ta.txt', 'A\tnew.txt'], receipt: { seq: receipt!.seq } },
    });
    expect(envelope.signatures).toHaveLength(1);
    // Control: a receipt of another kind is refused.
    expect(JSON.parse(world.cli(['receipts', 'attestation', '1']).stdout)).toMatchObject({ ok: false, reason: 'not_a_launch' });
    // Control: a capture id is still the capture's view.
    const capture = (JSON.parse(world.cli(['status', '--json']).stdout) as { captures: { id: string }[] }).captures[0]!.id;
    expect(JSON.parse(world.cli(['show', capture, '--json']).stdout)).toMatchObject({ ok: true, captureId: capture });
  });

  it('show names the commits of a turn that only committed, and a turn that began with no end recorded', () => {
    hook('UserPromptSubmit', PROMPT);
    // The turn edits a file and commits it: the path changed, and HEAD moved by one commit.
    writeFileSync(join(world.repo, 'a.txt'), 'a, fixed\n');
    git(world.repo, 'add', 'a.txt');
    // Its commit carries a signature header (made by hand, no key needed), so a `git log` that shows
    // signatures runs the signature program on it.
    const signed = [
      `tree ${git(world.repo, 'write-tree')}`,
      `parent ${git(world.repo, 'rev-parse', 'HEAD')}`,
      'author t <t@example.invalid> 1700000000 +0000',
      'committer t <t@example.invalid> 1700000000 +0000',
      'gpgsig -----BEGIN PGP SIGNATURE-----',
      ' ',
      ' aGVsbG8=',
      ' -----END PGP SIGNATURE-----',
      '',
      'fix the login form',
      '',
    ].join('\n');
    const id = execFileSync('git', ['-C', world.repo, 'hash-object', '-t', 'commit', '-w', '--stdin'], { input: signed, encoding: 'utf8' }).trim();
    git(world.repo, 'update-ref', 'HEAD', id);
    const commit = git(world.repo, 'rev-parse', '--short=7', 'HEAD');
    // A config that names a signature program: `git log` alone would run it (the control below).
    const marker = join(world.root, 'gpg-ran');
    writeFileSync(join(world.root, 'gpg.sh'), `#!/bin/sh\ntouch '${marker}'\nexit 1\n`, { mode: 0o755 });
    git(world.repo, 'config', 'log.showSignature', 'true');
    git(world.repo, 'config', 'gpg.program', join(world.root, 'gpg.sh'));
    hook('Stop', { stop_hook_active: false });
    hook('UserPromptSubmit', { prompt: 'go on', prompt_id: 'prompt-2' });

    const text = world.cli(['show', 'fix-login']).stdout;
    expect(text).toMatch(/turn prompt-1 ended \(claude:sess-turns\): 1 path changed/);
    expect(text).toMatch(new RegExp(`HEAD [0-9a-f]{12} -> [0-9a-f]{12}: 1 commit\\n +${commit}[0-9a-f]* fix the login form`));
    expect(text).toMatch(/turn prompt-2 began \(claude:sess-turns\) and has no end recorded/);
    const json = JSON.parse(world.cli(['show', 'fix-login', '--json']).stdout) as {
      entries: { kind: string; commits?: { id: string; subject: string }[] }[];
      openTurn: { turn: string } | null;
    };
    expect(json.entries.find((entry) => entry.kind === 'turn_ended')!.commits).toStrictEqual([
      { id: expect.stringMatching(new RegExp(`^${commit}`)) as string, subject: 'fix the login form' },
    ]);
    expect(json.openTurn).toMatchObject({ turn: 'prompt-2' });
    expect(readdirSync(world.root)).not.toContain('gpg-ran');
    // Control: plain `git log` of the same range runs the program the checkout's config names.
    spawnSyncQuiet('git', ['-C', world.repo, 'log', '-1']);
    expect(readdirSync(world.root)).toContain('gpg-ran');
  });

  it('a session that holds no lease gets no turn receipt (control: the holder does)', async () => {
    const other = JSON.stringify({
      session_id: 'sess-free',
      transcript_path: join(world.root, 'free.jsonl'),
      cwd: world.repo,
      hook_event_name: 'Stop',
      permission_mode: 'default',
    });
    world.cli(['hook', '--agent', 'claude'], { input: JSON.stringify({ ...JSON.parse(other), hook_event_name: 'UserPromptSubmit', prompt: 'no todo here' }) });
    world.cli(['hook', '--agent', 'claude'], { input: other });
    expect(await turnReceipts()).toEqual([]);
    hook('UserPromptSubmit', PROMPT);
    hook('Stop');
    expect(await turnReceipts()).toHaveLength(1);
  });
});

describe('a turn that hides its changes from git', () => {
  /**
   * The tree of the real working tree from a fresh index, with no exclude file but the .gitignore
   * ones, and the sparse checkout's absent file as its commit has it.
   */
  function freshTree(): string {
    const copy = join(world.root, 'fresh');
    rmSync(copy, { recursive: true, force: true });
    cpSync(world.repo, copy, { recursive: true });
    writeFileSync(join(copy, 'sparse.txt'), git(copy, 'show', 'HEAD:sparse.txt') + '\n');
    rmSync(join(copy, '.git', 'index'));
    rmSync(join(copy, '.git', 'info', 'exclude'), { force: true });
    git(copy, 'add', '-A');
    const tree = git(copy, 'write-tree');
    rmSync(copy, { recursive: true, force: true });
    return tree;
  }

  it('skip-worktree, assume-unchanged and a line in .git/info/exclude: the receipt names each path, and its tree is what a fresh index sees', async () => {
    // A sparse checkout's file: skip-worktree and absent before the turn. It was not changed by it.
    writeFileSync(join(world.repo, 'sparse.txt'), 'sparse\n');
    git(world.repo, 'add', 'sparse.txt');
    git(world.repo, '-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-qm', 'sparse');
    git(world.repo, 'update-index', '--skip-worktree', 'sparse.txt');
    rmSync(join(world.repo, 'sparse.txt'));
    hook('UserPromptSubmit', PROMPT);

    // The turn, and three ways to keep git from seeing what it did.
    git(world.repo, 'update-index', '--skip-worktree', 'a.txt');
    writeFileSync(join(world.repo, 'a.txt'), 'a, edited behind skip-worktree\n');
    git(world.repo, 'update-index', '--assume-unchanged', 'README.md');
    writeFileSync(join(world.repo, 'README.md'), 'demo, edited behind assume-unchanged\n');
    mkdirSync(join(world.repo, '.git', 'info'), { recursive: true });
    appendFileSync(join(world.repo, '.git', 'info', 'exclude'), 'secret.txt\n');
    writeFileSync(join(world.repo, 'secret.txt'), 'kept out of sight\n');
    // Control: git itself shows none of it, so a tree from the index as it stands would not either.
    expect(git(world.repo, 'status', '--porcelain')).toBe('');

    hook('Stop', { stop_hook_active: false });
    const [receipt] = await turnReceipts();
    expect(receipt!.detail).toMatchObject({ changed: 3, added: 1, modified: 2, deleted: 0, treeAfter: freshTree() });
    expect(receipt!.detail!.paths).toEqual(['M\tREADME.md', 'M\ta.txt', 'A\tsecret.txt']);
    // The person's index keeps its flags: the tree was built in a copy.
    expect(git(world.repo, 'ls-files', '-v', 'a.txt', 'README.md', 'sparse.txt')).toBe('h README.md\nS a.txt\nS sparse.txt');
  });
});

describe('the tree is built only in the temporary index', () => {
  it("a git that drops GIT_INDEX_FILE (a runner that stops passing the environment on) leaves the person's index alone and the tree unknown", async () => {
    // A git in front of the real one that runs it without GIT_INDEX_FILE.
    const bin = join(world.root, 'no-index-env-bin');
    const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    mkdirSync(bin);
    writeFileSync(join(bin, 'git'), `#!/bin/sh\nunset GIT_INDEX_FILE\nexec '${real}' "$@"\n`, { mode: 0o755 });
    const env = { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    writeFileSync(join(world.repo, 'untracked.txt'), 'not staged\n');
    const status = () => execFileSync('git', ['-C', world.repo, 'status', '--porcelain'], { encoding: 'utf8' });
    expect(world.cli(['hook', '--agent', 'claude'], { input: claude('UserPromptSubmit', PROMPT), env }).code).toBe(0);
    expect(world.cli(['hook', '--agent', 'claude'], { input: claude('Stop'), env }).code).toBe(0);
    expect(status()).toBe('?? untracked.txt\n');
    expect(sessionRow()).toMatchObject({ turn_tree: null });
    expect((await turnReceipts())[0]!.detail).toMatchObject({ treeBefore: null, treeAfter: null, changed: null });
    // Control: that git, asked to stage into a temporary index, stages into the person's own.
    execFileSync(join(bin, 'git'), ['-C', world.repo, 'add', '-A'], { env: { ...process.env, GIT_INDEX_FILE: join(world.root, 'tmp-index') } });
    expect(status()).toBe('A  untracked.txt\n');
  });
});

describe('exited and crashed, from the launcher liveness of a launched agent', () => {
  /** Field 22 of /proc/<pid>/stat, as the launcher records it. */
  const processStartOf = (pid: number): string => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]!;

  async function launchFor(pid: number): Promise<void> {
    const store = await world.store();
    try {
      const lease = (await store.activeLeases())[0]!;
      await store.appendReceipt(
        {
          kind: 'launch_committed',
          goal: lease.goal,
          todo: lease.todo,
          capture: lease.capture,
          owner: lease.owner,
          lease: { epoch: lease.epoch, version: lease.version },
          detail: { launch: 'launch-turns', agent: 'claude', pid, host: hostname(), machine: null, boot: null, pidStart: processStartOf(pid) },
        },
        Date.now() - 1000,
      );
    } finally {
      store.close();
    }
  }

  it("a launched agent that runs keeps its hooks' state; gone mid-turn it crashed, gone after its stop it exited", async () => {
    hook('UserPromptSubmit', PROMPT);
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await new Promise((done) => child.once('spawn', done));
    await launchFor(child.pid!);
    // The launch is older than the session's hooks: they are its run. Running: the hooks' state.
    hook('PreToolUse', { tool_name: 'Bash', tool_input: { command: 'true' } });
    expect(liveOf()).toMatchObject({ state: 'working', launch: { process: 'running', pid: child.pid } });
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;
    // Gone without a stop event.
    expect(liveOf()).toMatchObject({ state: 'crashed', launch: { process: 'exited' } });
    // Control: the same launch gone after the turn's stop is a clean exit.
    hook('Stop');
    expect(liveOf()).toMatchObject({ state: 'exited', launch: { process: 'exited' } });
  });
});
