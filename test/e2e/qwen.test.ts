// End to end with the real Qwen Code (0.24.4): Turnkeeper's hooks installed by the real CLI into
// $HOME/.qwen/settings.json (merged into the user's own settings), the real `qwen` one-shot mode
// talking to the OpenAI chat-completions stand-in on 127.0.0.1 (`security.auth.selectedType: openai`
// with OPENAI_BASE_URL/OPENAI_API_KEY/OPENAI_MODEL: no login, no auto-update, no usage statistics),
// real SQLite. Qwen's payloads carry `prompt_id` = `<session>########<n>`: the Turn is `<session>:<n>`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeWorld, type World } from '../support/world';
import { lastToolResult, requestText, startOpenAiMock, type ChatRequest, type OpenAiMock } from '../support/openaiMock';
import {
  BIN,
  describeRun,
  expectLeaseUnchanged,
  killAll,
  occurrences,
  presentationOf,
  qwenEnv,
  runProcess,
  statusOf,
  verifyOf,
  type LeaseJson,
  type ProcResult,
} from '../support/agentHarness';

const BODY = 'Distinctive body: the reset-password link expires before the email arrives (ibis-5521).';
const RUN_TIMEOUT_MS = 60_000;
const READY_LINE = /Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

let world: World;
let mock: OpenAiMock;
let qwenHome: string;
let agentEnv: NodeJS.ProcessEnv;
/** The next model turn asks for this shell command (once). */
let nextShell: string | undefined;

/** How Qwen hands a UserPromptSubmit context to the model: `<` and `>` escaped, then wrapped. */
const asQwenContext = (text: string): string =>
  `<qwen:user-prompt-submit-context>\n${text.replace(/</g, '&lt;').replace(/>/g, '&gt;')}\n</qwen:user-prompt-submit-context>`;

beforeAll(async () => {
  mock = await startOpenAiMock((request) => {
    if (lastToolResult(request) !== undefined) return { text: 'done' };
    if (nextShell !== undefined) {
      const command = nextShell;
      nextShell = undefined;
      return { toolCall: { name: 'run_shell_command', arguments: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-qwen');
  const qwenSetup = qwenEnv(world, mock);
  const { home } = qwenSetup;
  agentEnv = qwenSetup.env;
  qwenHome = join(home, '.qwen');
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  const install = world.cli(['hooks', 'install', '--agent', 'qwen'], { env: { HOME: home } });
  expect(install.code, install.stdout + install.stderr).toBe(0);
  const settings = readFileSync(join(qwenHome, 'settings.json'), 'utf8');
  expect(settings).toContain(`${world.home}/bin/turnkeeper' hook --agent qwen`);
  expect(settings).toContain('"selectedType": "openai"');
}, 120_000);

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

function qwen(args: string[], env: Record<string, string> = {}): Promise<ProcResult> {
  return runProcess(join(BIN, 'qwen'), [...args, '--approval-mode', 'yolo', '-o', 'json'], {
    cwd: world.repo,
    env: { ...agentEnv, ...env },
    timeoutMs: RUN_TIMEOUT_MS,
  });
}

/** `qwen -o json`: an array of events whose last is the result; asserts the run succeeded. */
function result(label: string, run: ProcResult): { session_id?: string; result?: string } {
  expect(run.code, describeRun(label, run)).toBe(0);
  const events = JSON.parse(run.stdout) as { type: string; is_error?: boolean; session_id?: string; result?: string }[];
  const last = events.at(-1)!;
  expect(last.type, describeRun(label, run)).toBe('result');
  expect(last.is_error, describeRun(label, run)).toBe(false);
  return last;
}

/** The first chat request of a run whose messages include `prompt`. */
function turnRequest(from: number, prompt: string): ChatRequest | undefined {
  return mock.requests.slice(from).find((request) => requestText(request).includes(prompt));
}

describe('Qwen Code with Turnkeeper hooks (real binary)', () => {
  let session = '';
  let lease: LeaseJson;
  let presentation = '';

  it('a prompt naming #todo:fix-login claims (Turn from prompt_id), the ready capture reaches the model, and a tool call runs', async () => {
    const prompt = 'please work on #todo:fix-login';
    const marker = join(world.root, 'qwen-marker-claim');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const json = result('qwen (claim)', await qwen([`--prompt=${prompt}`]));
    session = json.session_id ?? '';
    expect(session).toMatch(/^[0-9a-f-]{36}$/);

    const request = turnRequest(from, prompt);
    expect(request, `requests: ${mock.requests.length - from}, other: ${mock.otherRequests.join(', ')}`).toBeDefined();
    const text = requestText(request!);
    const match = READY_LINE.exec(text);
    expect(match, text.slice(-3000)).not.toBeNull();
    expect(text).toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease).toMatchObject({ todo: 'fix-login', owner: `qwen:${session}`, epoch: 1, capture: match![1], status: 'active' });
    // Qwen's first prompt of a session is `<session>########0`.
    expect(status.captures.find((c) => c.id === lease.capture)).toMatchObject({ agent: 'qwen', session, turn: `${session}:0`, state: 'ready' });
    presentation = presentationOf(world, lease.capture);
    // The stored bytes, as Qwen gives additionalContext to the model.
    expect(text).toContain(asQwenContext(presentation));

    // The tool ran (the holder is not fenced). Qwen fires UserPromptSubmit again for the tool result
    // (`prompt: ""`): that renews like a PostToolUse and adds nothing, so the request after the tool
    // carries the capture once, in the history, and no reminder.
    expect(existsSync(marker), 'the lease holder may run a shell command').toBe(true);
    const followUp = mock.requests.slice(from).find((r) => (r.body?.messages ?? []).some((m) => m.role === 'tool'));
    expect(
      followUp,
      mock.requests
        .slice(from)
        .map((r) => JSON.stringify(r.body?.messages?.slice(-2)).slice(0, 600))
        .join('\n'),
    ).toBeDefined();
    const followText = requestText(followUp!);
    expect(occurrences(followText, asQwenContext(presentation))).toBe(1);
    expect(followText).not.toContain('This session still holds the lease');
    expect(verifyOf(world).ok).toBe(true);
  });

  it('qwen --resume <id> replays the same ready capture, the lease unchanged; the holder may run a shell command', async () => {
    expect(session).not.toBe('');
    const marker = join(world.root, 'qwen-marker-resume');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const json = result('qwen --resume', await qwen(['--resume', session, '--prompt=continue']));
    expect(json.session_id).toBe(session);
    const request = turnRequest(from, 'continue');
    expect(request).toBeDefined();
    // The resumed history carries the first prompt's context, the stored bytes, once; Qwen's transcript
    // recorded it, so this prompt's context is the reminder that names the capture.
    const text = requestText(request!);
    expect(occurrences(text, asQwenContext(presentation))).toBe(1);
    expect(text).toContain(`${presentation.split('\n')[0]}\nThis session still holds the lease`);
    expect(text).toContain(`turnkeeper show ${lease.capture}`);
    expect(existsSync(marker), 'the lease holder may run a shell command').toBe(true);
    expectLeaseUnchanged(world, lease);
  });

  it('a second Qwen session naming the same Todo gets [lease_held] and claims nothing', async () => {
    const prompt = 'I also want #todo:fix-login';
    const from = mock.requests.length;
    const json = result('second qwen', await qwen([`--prompt=${prompt}`]));
    expect(json.session_id).not.toBe(session);
    const text = requestText(turnRequest(from, prompt)!);
    expect(text).toContain('[lease_held]');
    expect(text).toContain(`qwen:${session}`);
    expect(text).not.toContain(BODY);
    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    expect(status.leases[0]).toMatchObject({ owner: lease.owner, epoch: 1, status: 'active' });
    expect(status.captures.filter((c) => c.todo === 'fix-login')).toHaveLength(1);
  });

  it('after `release --force` the resumed session is fenced: run_shell_command is denied with [lease_fenced]', async () => {
    const release = world.cli(['release', 'fix-login', '--force', '--reason', 'test']);
    expect(release.code, release.stderr).toBe(0);
    const marker = join(world.root, 'qwen-marker-fenced');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const run = await qwen(['--resume', session, '--prompt=keep going']);
    const diagnostics = `${describeRun('qwen (fenced)', run)}\n--- requests\n${mock.requests
      .slice(from)
      .map((r) => JSON.stringify(r.body?.messages?.at(-1)).slice(0, 800))
      .join('\n')}`;
    expect(run.code, diagnostics).toBe(0);
    expect(existsSync(marker), diagnostics).toBe(false);
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(followUp, diagnostics).toBeDefined();
    expect(lastToolResult(followUp!), diagnostics).toContain('[lease_fenced]');
    const status = statusOf(world);
    expect(status.leases).toEqual([expect.objectContaining({ owner: lease.owner, epoch: 1, status: 'released' })]);
    expect(status.captures.filter((c) => c.todo === 'fix-login')).toHaveLength(1);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('with folder trust on, project hooks in a folder Qwen does not trust never run, and doctor says so (control: trusted, they claim)', async () => {
    const add = world.cli(['todo', 'add', 'Trust check', '--id', 'fix-trust', '--body', 'Only in a trusted folder (kite-1187).']);
    expect(add.code, add.stderr).toBe(0);
    const home = join(qwenHome, '..');
    expect(world.cli(['hooks', 'uninstall', '--agent', 'qwen'], { env: { HOME: home } }).code).toBe(0);
    const install = world.cli(['hooks', 'install', '--agent', 'qwen', '--scope', 'project'], { env: { HOME: home } });
    expect(install.code, install.stdout + install.stderr).toBe(0);
    const settingsPath = join(qwenHome, 'settings.json');
    const settings = JSON.parse(readFileSync(settingsPath, 'utf8')) as Record<string, Record<string, unknown>>;
    writeFileSync(settingsPath, `${JSON.stringify({ ...settings, security: { ...settings.security, folderTrust: { enabled: true } } }, null, 2)}\n`);
    // The project's hooks run `turnkeeper` from PATH: the shim is first on it.
    const env = { PATH: `${join(world.home, 'bin')}:${agentEnv.PATH}` };
    const doctor = () => world.cli(['doctor'], { env: { HOME: home } }).stdout;

    const prompt = 'untrusted: please work on #todo:fix-trust';
    const from = mock.requests.length;
    const run = await qwen([`--prompt=${prompt}`], env);
    const request = turnRequest(from, prompt);
    expect(request, describeRun('qwen (untrusted)', run)).toBeDefined();
    expect(requestText(request!)).not.toContain('Turnkeeper');
    expect(statusOf(world).leases.filter((l) => l.todo === 'fix-trust')).toHaveLength(0);
    expect(doctor()).toContain('Qwen Code skips');

    // Trusted as Qwen's own trust dialog saves it.
    writeFileSync(join(qwenHome, 'trustedFolders.json'), `${JSON.stringify({ [world.repo]: 'TRUST_FOLDER' }, null, 2)}\n`);
    expect(doctor()).not.toContain('Qwen Code skips');
    const trusted = 'trusted: please work on #todo:fix-trust';
    const at = mock.requests.length;
    result('qwen (trusted)', await qwen([`--prompt=${trusted}`], env));
    expect(requestText(turnRequest(at, trusted)!)).toContain('kite-1187');
    expect(statusOf(world).leases.filter((l) => l.todo === 'fix-trust' && l.status === 'active')).toHaveLength(1);
  });
});
