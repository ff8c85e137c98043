// End to end with the real GitHub Copilot CLI (1.0.102): Turnkeeper's hooks installed by the real CLI
// into the repository's .github/hooks/turnkeeper.json, the real `copilot -p` talking to a mock
// OpenAI chat-completions server on 127.0.0.1 (COPILOT_OFFLINE=true, no login), real SQLite. Copilot
// payloads carry no Turn: a bound prompt needs TURNKEEPER_TURN. Repository hooks run only in a folder
// Copilot trusts: here `trustedFolders` in $COPILOT_HOME/config.json, the file its trust prompt writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { lastToolResult, MOCK_MODEL, requestText, startOpenAiMock, type ChatRequest, type OpenAiMock } from '../support/openaiMock';
import {
  BIN,
  REPO_ROOT,
  baseEnv,
  describeRun,
  expectLeaseUnchanged,
  killAll,
  nodePath,
  presentationOf,
  runProcess,
  statusOf,
  verifyOf,
  worldDir,
  type LeaseJson,
  type ProcResult,
} from '../support/agentHarness';

const BODY = 'Distinctive body: the reset-password link expires before the email arrives (heron-3316).';
const RUN_TIMEOUT_MS = 60_000;
const READY_LINE = /Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

let world: World;
let mock: OpenAiMock;
let copilotHome: string;
let copilotEnv: NodeJS.ProcessEnv;
/** The next model turn asks for this shell command (once). */
let nextShell: string | undefined;

beforeAll(async () => {
  mock = await startOpenAiMock((request) => {
    if (lastToolResult(request) !== undefined) return { text: 'done' };
    if (nextShell !== undefined) {
      const command = nextShell;
      nextShell = undefined;
      return { toolCall: { name: 'bash', arguments: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-copilot');
  copilotHome = worldDir(world, 'copilot', 'home');
  copilotEnv = baseEnv({
    HOME: worldDir(world, 'copilot', 'user'),
    COPILOT_HOME: copilotHome,
    // Copilot unpacks its 235 MB package on first run; one shared cache keeps that to once per machine.
    COPILOT_PKG_CACHE_HOME: join(REPO_ROOT, 'node_modules', '.cache', 'copilot-pkg'),
    TMPDIR: worldDir(world, 'copilot', 'tmp'),
    TURNKEEPER_HOME: world.home,
    // A project-scope hook may call `turnkeeper` through PATH: the shim is first on it.
    PATH: `${join(world.home, 'bin')}:${nodePath()}`,
    COPILOT_OFFLINE: 'true',
    COPILOT_PROVIDER_BASE_URL: mock.url,
    COPILOT_MODEL: MOCK_MODEL,
  });
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  const install = world.cli(['hooks', 'install', '--agent', 'copilot', '--scope', 'project'], { env: { COPILOT_HOME: copilotHome } });
  expect(install.code, install.stderr).toBe(0);
  const config = readFileSync(join(world.repo, '.github', 'hooks', 'turnkeeper.json'), 'utf8');
  expect(config).toContain('hook --agent copilot --event userPromptSubmitted');
}, 120_000);

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

function copilot(args: string[], env: Record<string, string> = {}): Promise<ProcResult> {
  return runProcess(join(BIN, 'copilot'), [...args, '--allow-all-tools', '--no-auto-update'], {
    cwd: world.repo,
    env: { ...copilotEnv, ...env },
    timeoutMs: RUN_TIMEOUT_MS,
  });
}

function expectRan(label: string, run: ProcResult): void {
  expect(run.code, describeRun(label, run)).toBe(0);
}

/** The first chat request of a run whose messages include `prompt`. */
function turnRequest(from: number, prompt: string): ChatRequest | undefined {
  return mock.requests.slice(from).find((request) => requestText(request).includes(prompt));
}

/** Trusts the repository the way Copilot's own trust prompt does. */
function trustRepository(): void {
  mkdirSync(copilotHome, { recursive: true });
  writeFileSync(join(copilotHome, 'config.json'), `${JSON.stringify({ trustedFolders: [world.repo] }, null, 2)}\n`);
}

describe('GitHub Copilot CLI with Turnkeeper hooks (real binary)', () => {
  let session = '';
  let lease: LeaseJson;
  let presentation = '';

  it('in a folder Copilot does not trust its repository hooks never run: no context, no claim (control: the trusted runs below)', async () => {
    const prompt = 'untrusted: please work on #todo:fix-login';
    const from = mock.requests.length;
    expectRan('copilot -p (untrusted)', await copilot(['-p', prompt], { TURNKEEPER_TURN: 'turn-copilot-0' }));
    const request = turnRequest(from, prompt);
    expect(request, `requests: ${mock.requests.length - from}, other: ${mock.otherRequests.join(', ')}`).toBeDefined();
    expect(requestText(request!)).not.toContain('Turnkeeper');
    expect(statusOf(world).leases).toHaveLength(0);
    // Doctor reads the same COPILOT_HOME before and after the trust, so the trust alone silences it.
    const doctor = () => world.cli(['doctor'], { env: { COPILOT_HOME: copilotHome } }).stdout;
    expect(doctor()).toContain('Copilot CLI skips');
    trustRepository();
    expect(doctor()).not.toContain('Copilot CLI skips');
  });

  it('a prompt naming #todo:fix-login without a Turn gets [no_turn] guidance and claims nothing', async () => {
    const prompt = 'please work on #todo:fix-login';
    const from = mock.requests.length;
    expectRan('copilot -p (no turn)', await copilot(['-p', prompt]));
    const text = requestText(turnRequest(from, prompt)!);
    expect(text).toContain('[no_turn]');
    expect(text).not.toContain(BODY);
    expect(statusOf(world).leases).toHaveLength(0);
  });

  it('with TURNKEEPER_TURN set the claim succeeds and the ready capture reaches the model request', async () => {
    const prompt = 'please work on #todo:fix-login now';
    const from = mock.requests.length;
    const run = await copilot(['-p', prompt], { TURNKEEPER_TURN: 'turn-copilot-1' });
    expectRan('copilot -p (turn)', run);
    const request = turnRequest(from, prompt);
    expect(request).toBeDefined();
    const text = requestText(request!);
    const match = READY_LINE.exec(text);
    expect(match, text.slice(-3000)).not.toBeNull();
    expect(text).toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease.owner).toMatch(/^copilot:[0-9a-f-]{36}$/);
    session = lease.owner.slice('copilot:'.length);
    // Copilot names the same session in its own resume hint.
    expect(run.stderr + run.stdout).toContain(`--resume=${session}`);
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, capture: match![1], status: 'active' });
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({ agent: 'copilot', session, turn: 'turn-copilot-1', state: 'ready' });
    presentation = presentationOf(world, lease.capture);
    // The exact stored bytes, as additionalContext in the model's request.
    expect(text).toContain(presentation);
    // The transcript resume will check: Copilot's session state, there once the run is over.
    const transcript = join(copilotHome, 'session-state', session, 'events.jsonl');
    expect(existsSync(transcript)).toBe(true);
    const doctor = JSON.parse(world.cli(['doctor', '--json']).stdout) as { sessions: { owner: string; transcriptPath: string | null }[] };
    expect(doctor.sessions.find((s) => s.owner === lease.owner)?.transcriptPath).toBe(transcript);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('a second Copilot session naming the same Todo (with a Turn) gets [lease_held] and claims nothing', async () => {
    const prompt = 'I also want #todo:fix-login';
    const from = mock.requests.length;
    expectRan('second copilot -p', await copilot(['-p', prompt], { TURNKEEPER_TURN: 'turn-copilot-2' }));
    const text = requestText(turnRequest(from, prompt)!);
    expect(text).toContain('[lease_held]');
    expect(text).toContain(`copilot:${session}`);
    expect(text).not.toContain(BODY);
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: lease.owner, epoch: 1, status: 'active' });
    expect(status.captures.filter((c) => c.todo === 'fix-login')).toHaveLength(1);
  });

  it('copilot --resume=<id> presents the same ready capture, the lease unchanged; the holder may run a shell command', async () => {
    expect(session).not.toBe('');
    // Inside the working directory, where Copilot lets a shell write without asking.
    const marker = join(world.repo, 'copilot-marker-before-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    expectRan('copilot --resume', await copilot([`--resume=${session}`, '-p', 'continue']));
    const request = turnRequest(from, 'continue');
    expect(request).toBeDefined();
    // The session's earlier turn, with the stored bytes, is in the history; this turn's hooks present
    // the held capture again (the bytes, or the line naming it when the transcript already has them).
    const text = requestText(request!);
    expect(text).toContain('please work on #todo:fix-login now');
    expect(text).toContain(presentation);
    const firstLine = `Turnkeeper: Todo fix-login · capture ${lease.capture} · epoch 1`;
    expect(text.split(firstLine).length - 1, text.slice(-3000)).toBeGreaterThanOrEqual(2);
    const result = mock.requests
      .slice(from)
      .map(lastToolResult)
      .find((r) => r !== undefined);
    expect(existsSync(marker), `the lease holder may run a shell command; tool result: ${result}`).toBe(true);
    expectLeaseUnchanged(world, lease);
  });

  it('after `release --force` the resumed session is fenced: its shell command is denied with [lease_fenced]', async () => {
    const release = world.cli(['release', 'fix-login', '--force', '--reason', 'test']);
    expect(release.code, release.stderr).toBe(0);
    const marker = join(world.repo, 'copilot-marker-after-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const run = await copilot([`--resume=${session}`, '-p', 'keep going']);
    const diagnostics = `${describeRun('copilot (fenced)', run)}\n--- requests\n${mock.requests
      .slice(from)
      .map((r) => JSON.stringify(r.body?.messages?.at(-1)).slice(0, 800))
      .join('\n')}`;
    expect(run.code, diagnostics).toBe(0);
    expect(existsSync(marker), diagnostics).toBe(false);
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(followUp, diagnostics).toBeDefined();
    expect(lastToolResult(followUp!), diagnostics).toContain('Denied by preToolUse hook');
    expect(lastToolResult(followUp!), diagnostics).toContain('[lease_fenced]');
    // Released for good: nothing re-activated it, and no new capture was made.
    const status = statusOf(world);
    expect(status.leases).toEqual([expect.objectContaining({ owner: lease.owner, epoch: 1, status: 'released' })]);
    expect(status.captures.filter((c) => c.todo === 'fix-login')).toHaveLength(1);
    expect(verifyOf(world).ok).toBe(true);
  });
});
