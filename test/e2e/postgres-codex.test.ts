// The real Codex CLI on two "machines" sharing one PostgreSQL team store: each machine has its own
// HOME and CODEX_HOME, its own TURNKEEPER_HOME (Turnkeeper's hooks installed there by the real CLI)
// and its own clone of one repository (same origin URL, hence one Goal). Machine A names the store in
// $TURNKEEPER_HOME/config.json, machine B in TURNKEEPER_STORE with its password in a pgpass file.
// A claims the Todo; B's prompt gets [lease_held] naming A's session and checkout; `turnkeeper resume`
// on A relaunches A's session through the native launcher and its hooks present the same ready
// capture, the launch receipt and the lease living on the server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startMockModelServer, developerTexts, type MockModelServer } from '../support/mockModelServer';
import { cleanupCodexHome, EXEC_FLAGS, makeCodexHome, parseSessionId, writeCodexConfig, codexBinaryPath, type CodexHome } from '../support/codexHarness';
import { describeRun, killAll, runProcess, turnkeeperRun, type ProcResult } from '../support/agentHarness';
import { pgEnv, usePostgres } from '../support/postgres';
import { openAuthority } from '../../src/ledger/open';

const server = usePostgres({ beforeAll, afterAll });
const CODEX_SHIM = resolve(__dirname, '../../node_modules/.bin/codex');
const ORIGIN = 'git@example.invalid:acme/app.git';
const ROLE = 'tk_team';
const PASSWORD = 'team-pw-e2e-5521';
const DB = 'team_e2e';
const BODY = 'Shared across machines (narwhal-2207).';
const RUN_TIMEOUT_MS = 90_000;

interface Machine {
  name: string;
  codex: CodexHome;
  clone: string;
  env: NodeJS.ProcessEnv;
}

let root: string;
let mock: MockModelServer;
const machines: Machine[] = [];

const turnkeeper = (machine: Machine, args: string[]): Promise<ProcResult> =>
  turnkeeperRun(args, { cwd: machine.clone, env: machine.env, timeoutMs: RUN_TIMEOUT_MS });
const codexExec = (machine: Machine, prompt: string): Promise<ProcResult> =>
  runProcess(codexBinaryPath(), ['exec', ...EXEC_FLAGS, prompt], { cwd: machine.clone, env: machine.env, timeoutMs: RUN_TIMEOUT_MS });
const turnkeeperTexts = (from: number): string[] =>
  mock.requests
    .slice(from)
    .flatMap((request) => developerTexts(request))
    .filter((text) => text.startsWith('Turnkeeper'));

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-e2e-pg-codex-')));
  mock = await startMockModelServer();
  await server().createRole(ROLE, PASSWORD);
  await server().createDatabase(DB);
  const upstream = join(root, 'upstream');
  mkdirSync(upstream);
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd, stdio: 'ignore' });
  git(upstream, 'init', '-q');
  writeFileSync(join(upstream, 'README.md'), 'app\n');
  git(upstream, 'add', '.');
  git(upstream, 'commit', '-qm', 'init');

  for (const name of ['machine-a', 'machine-b']) {
    const tkHome = join(root, name, 'tkhome');
    mkdirSync(tkHome, { recursive: true });
    const codex = makeCodexHome({ prefix: `tk-e2e-pg-${name}-`, extraEnv: { TURNKEEPER_HOME: tkHome } });
    const clone = join(root, name, 'src', 'app');
    execFileSync('git', ['clone', '-q', upstream, clone], { stdio: 'ignore' });
    git(clone, 'remote', 'set-url', 'origin', ORIGIN);
    // Node 24 first on PATH, for the shim the hooks run.
    const env: NodeJS.ProcessEnv = { ...codex.env, PATH: [resolve(process.execPath, '..'), codex.env.PATH].join(':') };
    if (name === 'machine-a') {
      writeFileSync(join(tkHome, 'config.json'), JSON.stringify({ store: server().url(DB, ROLE, PASSWORD) }), { mode: 0o600 });
    } else {
      const pgpass = join(codex.home, '.pgpass');
      writeFileSync(pgpass, `127.0.0.1:${server().port}:${DB}:${ROLE}:${PASSWORD}\n`, { mode: 0o600 });
      env.TURNKEEPER_STORE = server().url(DB, ROLE);
    }
    writeCodexConfig(codex.codexHome, mock.url);
    machines.push({ name, codex, clone, env });
  }
  const [a] = machines;
  const init = await turnkeeperRun(['store', 'init', '--hook-role', ROLE], { cwd: a!.clone, env: { ...a!.env, TURNKEEPER_STORE: server().url(DB) } });
  expect(init.code, describeRun('store init', init)).toBe(0);
  for (const machine of machines) {
    const install = await turnkeeper(machine, ['hooks', 'install', '--agent', 'codex']);
    expect(install.code, describeRun(`hooks install on ${machine.name}`, install)).toBe(0);
  }
  const add = await turnkeeper(a!, ['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, describeRun('todo add', add)).toBe(0);
}, 180_000);

afterAll(async () => {
  killAll();
  await mock?.close();
  for (const machine of machines) cleanupCodexHome(machine.codex);
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('the real Codex on two machines, one team server', () => {
  let capture = '';
  let owner = '';
  let presented = '';

  it('machine A claims the Todo; its model gets the ready capture', async () => {
    const [a] = machines;
    const from = mock.requests.length;
    const run = await codexExec(a!, 'please work on #todo:fix-login');
    expect(run.code, describeRun('codex exec on A', run)).toBe(0);
    const session = parseSessionId(run.stderr)!;
    const texts = turnkeeperTexts(from);
    expect(texts).toHaveLength(1);
    presented = texts[0]!;
    const match = /^Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m.exec(presented);
    expect(match, presented).not.toBeNull();
    expect(presented).toContain('narwhal-2207');
    capture = match![1]!;
    owner = `codex:${session}`;
    const status = JSON.parse((await turnkeeper(a!, ['status', '--json'])).stdout) as { leases: { owner: string; capture: string; checkout?: string }[] };
    expect(status.leases).toStrictEqual([expect.objectContaining({ owner, capture, checkout: a!.clone })]);
  });

  it('machine B, another clone in another home, gets [lease_held] naming A', async () => {
    const [a, b] = machines;
    const from = mock.requests.length;
    const run = await codexExec(b!, 'please work on #todo:fix-login');
    expect(run.code, describeRun('codex exec on B', run)).toBe(0);
    const texts = turnkeeperTexts(from);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain('[lease_held]');
    expect(texts[0]).toContain(`is leased to ${owner} (epoch 1) in ${a!.clone}`);
    // B's view is the same server: one lease, A's.
    const status = JSON.parse((await turnkeeper(b!, ['status', '--json'])).stdout) as { leases: { owner: string; capture: string }[] };
    expect(status.leases).toStrictEqual([expect.objectContaining({ owner, capture })]);
  });

  it('resume on machine A relaunches its session: same ready capture, lease unchanged, launch receipt on the server', async () => {
    const [a, b] = machines;
    const from = mock.requests.length;
    const resumed = await turnkeeper(a!, ['resume', capture, '--json', '--agent-bin', CODEX_SHIM, '--', ...EXEC_FLAGS]);
    expect(resumed.code, describeRun('turnkeeper resume on A', resumed)).toBe(0);
    const decision = JSON.parse(resumed.stdout) as { decision: string; receipt: { seq: number }; exit: { code: number } };
    expect(decision).toMatchObject({ decision: 'launched', exit: { code: 0 } });
    expect(turnkeeperTexts(from)).toContain(presented);

    const authority = (await openAuthority(pgEnv(server().url(DB)), { create: false }))!;
    try {
      const leases = await authority.listLeases();
      expect(leases).toHaveLength(1);
      expect(leases[0]).toMatchObject({ owner, capture, epoch: 1, status: 'active' });
      const launches = await authority.launchReceipts(capture);
      const committed = launches.find((r) => r.kind === 'launch_committed');
      expect(committed?.seq).toBe(decision.receipt.seq);
      const hooked = launches.find((r) => r.kind === 'launch_hooked' && r.launch === committed!.launch);
      expect(hooked!.seq).toBeGreaterThan(committed!.seq);
      expect((await authority.verifyChain()).ok).toBe(true);
    } finally {
      authority.close();
    }
    // Both machines verify the one chain; neither has a local store.
    for (const machine of [a!, b!]) {
      expect(JSON.parse((await turnkeeper(machine, ['verify', '--json'])).stdout)).toMatchObject({ ok: true, breaks: [] });
    }
    const dbs = execFileSync('find', [root, '-name', 'turnkeeper.db*'], { encoding: 'utf8' }).trim();
    expect(dbs).toBe('');
  });
});
