// End to end with the real OpenCode (1.18.33): Turnkeeper's plugin written by the real CLI into
// $XDG_CONFIG_HOME/opencode/plugin/turnkeeper.js, the real `opencode run` talking to a mock OpenAI
// chat-completions server on 127.0.0.1 (a custom provider on OpenCode's bundled
// @ai-sdk/openai-compatible), real SQLite. The Turn is the user message's id (`msg_…`).
//
// Offline: OPENCODE_DISABLE_MODELS_FETCH stops the models.dev fetch; every other fetch of Bun goes
// to a proxy on 127.0.0.1 that refuses; and the config directory has node_modules and a
// package-lock.json naming @opencode-ai/plugin, so OpenCode's start-up npm install of it is skipped
// (without them, offline, `opencode run` waits on that install and never reaches the model).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
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
  turnkeeperRun,
  verifyOf,
  worldDir,
  type LeaseJson,
  type ProcResult,
} from '../support/agentHarness';

const BODY = 'Distinctive body: the password reset form drops the second factor (heron-7713).';
const SIGNUP_BODY = 'Distinctive body: the signup form accepts an empty e-mail (heron-7714).';
const RUN_TIMEOUT_MS = 60_000;
/** The native executable npm's bin links to (a hard link of opencode-linux-x64's): what the launcher attests. */
const OPENCODE = join(REPO_ROOT, 'node_modules/opencode-ai/bin/opencode.exe');
const READY_LINE = /Turnkeeper: Todo fix-login · capture (cap_[0-9a-f]{24}) · epoch 1$/m;

let world: World;
let mock: OpenAiMock;
let agentEnv: NodeJS.ProcessEnv;
let configDir: string;
/** The next main-conversation model turn asks for this shell command (once). */
let nextShell: string | undefined;
/** The next main-conversation request is answered with this status first (once). */
let nextFailure: number | undefined;

/** OpenCode's title request carries no tools; the conversation does. */
const isConversation = (request: ChatRequest): boolean => (request.body?.tools ?? []).some((tool) => tool.function?.name === 'bash');

beforeAll(async () => {
  mock = await startOpenAiMock((request) => {
    if (!isConversation(request)) return { text: 'Title' };
    if (nextFailure !== undefined) {
      const status = nextFailure;
      nextFailure = undefined;
      return { status, body: JSON.stringify({ error: { message: 'mock: try again', type: 'server_error' } }), headers: { 'retry-after-ms': '0' } };
    }
    if (lastToolResult(request) !== undefined) return { text: 'done' };
    if (nextShell !== undefined) {
      const command = nextShell;
      nextShell = undefined;
      return { toolCall: { name: 'bash', arguments: { command, description: 'touch a marker' } } };
    }
    return { text: 'ok' };
  });
  world = makeWorld('tk-e2e-opencode');
  const user = worldDir(world, 'opencode', 'user');
  const xdg = (name: string): string => worldDir(world, 'opencode', 'xdg', name);
  configDir = join(xdg('config'), 'opencode');
  // What OpenCode's own install of @opencode-ai/plugin would leave: it then skips it (see above).
  mkdirSync(join(configDir, 'node_modules'), { recursive: true });
  writeFileSync(join(configDir, 'package-lock.json'), `${JSON.stringify({ packages: { '': { dependencies: { '@opencode-ai/plugin': '1.18.33' } } } })}\n`);
  const provider = {
    mock: {
      npm: '@ai-sdk/openai-compatible',
      name: 'Mock',
      options: { baseURL: mock.url, apiKey: 'mock-key' },
      models: { [MOCK_MODEL]: { name: 'Mock', tool_call: true } },
    },
  };
  agentEnv = baseEnv({
    HOME: user,
    XDG_CONFIG_HOME: xdg('config'),
    XDG_DATA_HOME: xdg('data'),
    XDG_CACHE_HOME: xdg('cache'),
    XDG_STATE_HOME: xdg('state'),
    TMPDIR: worldDir(world, 'opencode', 'tmp'),
    TURNKEEPER_HOME: world.home,
    PATH: `${join(world.home, 'bin')}:${nodePath()}`,
    OPENCODE_CONFIG_CONTENT: JSON.stringify({ provider, model: `mock/${MOCK_MODEL}`, autoupdate: false, share: 'disabled', permission: { bash: 'allow' } }),
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    HTTPS_PROXY: 'http://127.0.0.1:9',
    HTTP_PROXY: 'http://127.0.0.1:9',
    NO_PROXY: '127.0.0.1,localhost',
  });
  const add = world.cli(['todo', 'add', 'Fix login', '--id', 'fix-login', '--body', BODY]);
  expect(add.code, add.stderr).toBe(0);
  const second = world.cli(['todo', 'add', 'Fix signup', '--id', 'fix-signup', '--body', SIGNUP_BODY]);
  expect(second.code, second.stderr).toBe(0);
  const install = world.cli(['hooks', 'install', '--agent', 'opencode'], { env: { XDG_CONFIG_HOME: xdg('config') } });
  expect(install.code, install.stdout + install.stderr).toBe(0);
  expect(readFileSync(join(configDir, 'plugin', 'turnkeeper.js'), 'utf8')).toContain(`${world.home}/bin/turnkeeper' hook --agent opencode`);
}, 120_000);

afterAll(async () => {
  killAll();
  await mock?.close();
  world?.cleanup();
});

function opencode(args: string[]): Promise<ProcResult> {
  return runProcess(join(BIN, 'opencode'), ['run', ...args], { cwd: world.repo, env: agentEnv, timeoutMs: RUN_TIMEOUT_MS });
}

function expectRan(label: string, run: ProcResult): void {
  expect(run.code, describeRun(label, run)).toBe(0);
}

/** Every message part of `request` that carries Turnkeeper's context (a line that begins "Turnkeeper: Todo "), oldest first. */
function injectedContexts(request: ChatRequest): string[] {
  const texts = (request.body?.messages ?? []).flatMap((message) =>
    typeof message.content === 'string' ? [message.content] : Array.isArray(message.content) ? message.content.map((part) => part.text ?? '') : [],
  );
  return texts.filter((text) => /^Turnkeeper: Todo /m.test(text));
}

/** The conversation requests of a run whose messages include `prompt`. */
const turnRequests = (from: number, prompt: string): ChatRequest[] =>
  mock.requests.slice(from).filter((request) => isConversation(request) && requestText(request).includes(prompt));

describe('OpenCode with Turnkeeper plugin (real binary)', () => {
  let session = '';
  let lease: LeaseJson;
  let presentation = '';

  it('a prompt naming #todo:fix-login claims the lease (Turn = the message id) and the ready capture reaches the model', async () => {
    const prompt = 'please work on #todo:fix-login';
    const from = mock.requests.length;
    expectRan('opencode run', await opencode(['--', prompt]));
    const request = turnRequests(from, prompt)[0];
    expect(request, `requests: ${mock.requests.length - from}, other: ${mock.otherRequests.join(', ')}`).toBeDefined();
    const text = requestText(request!);
    const match = READY_LINE.exec(text);
    expect(match, text.slice(-3000)).not.toBeNull();
    expect(text).toContain(BODY);

    const status = statusOf(world);
    expect(status.leases).toHaveLength(1);
    lease = status.leases[0]!;
    expect(lease.owner).toMatch(/^opencode:ses_[0-9A-Za-z]+$/);
    session = lease.owner.slice('opencode:'.length);
    expect(lease).toMatchObject({ todo: 'fix-login', epoch: 1, capture: match![1], status: 'active' });
    const capture = status.captures.find((c) => c.id === lease.capture);
    expect(capture).toMatchObject({ agent: 'opencode', session, state: 'ready' });
    expect(capture?.turn).toMatch(/^msg_[0-9A-Za-z]+$/);
    presentation = presentationOf(world, lease.capture);
    expect(text).toContain(presentation);
    // The sessions' database stands in for a transcript: resume needs it to exist.
    const doctor = JSON.parse(world.cli(['doctor', '--json'], { env: { XDG_CONFIG_HOME: join(configDir, '..') } }).stdout) as {
      sessions: { owner: string; transcriptPath: string | null }[];
    };
    const transcript = doctor.sessions.find((s) => s.owner === lease.owner)?.transcriptPath;
    expect(transcript).toBe(join(agentEnv.XDG_DATA_HOME!, 'opencode', 'opencode.db'));
    expect(existsSync(transcript!)).toBe(true);
    expect(verifyOf(world).ok).toBe(true);
  });

  it('a model call that fails is retried by OpenCode with the same injected capture, and nothing new is claimed', async () => {
    const prompt = 'retry this one #todo:fix-login';
    const from = mock.requests.length;
    nextFailure = 500;
    expectRan('opencode run (retried)', await opencode(['--session', session, '--', prompt]));
    const requests = turnRequests(from, prompt);
    expect(requests.length, `${requests.length} requests`).toBeGreaterThanOrEqual(2);
    // The context rides in a stored part of the message: the retry sends the same bytes. Compared as
    // the parts that carry it, wherever they stand: OpenCode may repeat the prompt later in a request
    // (seen once in CI: the text after the prompt's last occurrence was a lone `"`), so the text after
    // the prompt is not where to look.
    // The session's earlier turns carry theirs too: this turn's is the newest.
    const contexts = requests.map((request) => injectedContexts(request).at(-1));
    expect(contexts[0]).toContain(`Turnkeeper: Todo fix-login · capture ${lease.capture} · epoch 1`);
    expect(contexts[1]).toBe(contexts[0]);
    expectLeaseUnchanged(world, lease);
  });

  it('a second OpenCode session naming the same Todo gets [lease_held] and claims nothing', async () => {
    const prompt = 'I also want #todo:fix-login';
    const from = mock.requests.length;
    expectRan('second opencode run', await opencode(['--', prompt]));
    const text = requestText(turnRequests(from, prompt)[0]!);
    expect(text).toContain('[lease_held]');
    expect(text).toContain(lease.owner);
    expect(text).not.toContain(BODY);
    const status = statusOf(world);
    expect(status.leases).toEqual([expect.objectContaining({ owner: lease.owner, epoch: 1, status: 'active' })]);
    expect(status.captures.filter((c) => c.todo === 'fix-login')).toHaveLength(1);
  });

  it('with onConflict=block a second session naming the held Todo is stopped before the model: no request carries the prompt, nothing is claimed', async () => {
    const prompt = 'block me on #todo:fix-login';
    const from = mock.requests.length;
    const run = await runProcess(join(BIN, 'opencode'), ['run', '--', prompt], {
      cwd: world.repo,
      env: { ...agentEnv, TURNKEEPER_ON_CONFLICT: 'block' },
      timeoutMs: RUN_TIMEOUT_MS,
    });
    expect(run.timedOut, describeRun('opencode run (blocked)', run)).toBe(false);
    expect(turnRequests(from, prompt), describeRun('opencode run (blocked)', run)).toEqual([]);
    // Observed (1.18.33): the run fails, and OpenCode replaces the thrown reason with its own words,
    // so the person does not see [lease_held] (docs/hook-protocol.md, "OpenCode").
    expect(run.code, describeRun('opencode run (blocked)', run)).toBe(1);
    expect(run.stdout + run.stderr).toContain('Unexpected server error');
    const status = statusOf(world);
    expect(status.leases).toEqual([expect.objectContaining({ owner: lease.owner, epoch: 1, status: 'active' })]);
    expect(status.captures.filter((c) => c.todo === 'fix-login')).toHaveLength(1);
  });

  it('opencode run --session <id> presents the held capture again, the lease unchanged; the holder runs a shell command', async () => {
    const marker = join(world.repo, 'opencode-marker-before-release');
    // The plugin names the session in the bash tool's environment (what `release` without --force reads).
    nextShell = `printf %s "$TURNKEEPER_OPENCODE_SESSION" > '${marker}'`;
    const from = mock.requests.length;
    expectRan('opencode run --session', await opencode(['--session', session, '--', 'continue']));
    const request = turnRequests(from, 'continue')[0];
    expect(request).toBeDefined();
    const text = requestText(request!);
    expect(text).toContain('please work on #todo:fix-login');
    expect(text).toContain(presentation);
    const result = mock.requests
      .slice(from)
      .map(lastToolResult)
      .find((r) => r !== undefined);
    expect(existsSync(marker), `the lease holder may run a shell command; tool result: ${result}`).toBe(true);
    expect(readFileSync(marker, 'utf8')).toBe(session);
    expectLeaseUnchanged(world, lease);
  });

  it('after `release --force` the resumed session is fenced: its shell command is denied with [lease_fenced]', async () => {
    const release = world.cli(['release', 'fix-login', '--force', '--reason', 'test']);
    expect(release.code, release.stderr).toBe(0);
    const marker = join(world.repo, 'opencode-marker-after-release');
    nextShell = `touch '${marker}'`;
    const from = mock.requests.length;
    const run = await opencode(['--session', session, '--', 'keep going']);
    expectRan('opencode run (fenced)', run);
    expect(existsSync(marker)).toBe(false);
    const followUp = mock.requests.slice(from).find((r) => lastToolResult(r) !== undefined);
    expect(followUp, describeRun('fenced', run)).toBeDefined();
    expect(lastToolResult(followUp!)).toContain('[lease_fenced]');
    const status = statusOf(world);
    expect(status.leases).toEqual([expect.objectContaining({ owner: lease.owner, epoch: 1, status: 'released' })]);
    expect(verifyOf(world).ok).toBe(true);
  });
});

describe('turnkeeper start and resume with the real OpenCode through the native launcher', () => {
  let lease: LeaseJson;

  it('start: launched through the native launcher, the prompt naming no Todo claims fix-signup and its capture reaches the model', async () => {
    const prompt = 'Please fix the signup form (start-opencode-1)';
    const from = mock.requests.length;
    const started = await turnkeeperRun(['start', 'fix-signup', '--agent', 'opencode', '--json', '--agent-bin', OPENCODE, '--prompt', prompt], {
      env: agentEnv,
      cwd: world.repo,
      timeoutMs: 90_000,
    });
    expect(started.code, started.stdout + started.stderr.slice(-4000)).toBe(0);
    expect(JSON.parse(started.stdout)).toMatchObject({ ok: true, decision: 'launched', agent: 'opencode', exit: { code: 0 } });
    const request = turnRequests(from, prompt)[0];
    expect(request, started.stderr.slice(-3000)).toBeDefined();
    const status = statusOf(world);
    lease = status.leases.find((l) => l.todo === 'fix-signup')!;
    expect(lease).toMatchObject({ epoch: 1, status: 'active' });
    expect(lease.owner).toMatch(/^opencode:ses_/);
    expect(requestText(request!)).toContain(SIGNUP_BODY);
    expect(requestText(request!)).toContain(presentationOf(world, lease.capture));
  });

  it('resume relaunches that session (opencode run --session <id>) with the same capture, the lease unchanged', async () => {
    const prompt = 'go on with the signup form (resume-opencode-1)';
    const from = mock.requests.length;
    const resumed = await turnkeeperRun(['resume', lease.capture, '--json', '--agent-bin', OPENCODE, '--prompt', prompt], {
      env: agentEnv,
      cwd: world.repo,
      timeoutMs: 90_000,
    });
    expect(resumed.code, resumed.stdout + resumed.stderr.slice(-4000)).toBe(0);
    const request = turnRequests(from, prompt)[0];
    expect(request, resumed.stderr.slice(-3000)).toBeDefined();
    // The resumed session's history has the start's prompt: the same OpenCode session.
    expect(requestText(request!)).toContain('start-opencode-1');
    expect(requestText(request!)).toContain(`capture ${lease.capture}`);
    // fix-login's released lease is in the same store: compare fix-signup's alone.
    const after = statusOf(world);
    expect(after.leases.find((l) => l.todo === 'fix-signup')).toMatchObject({ owner: lease.owner, capture: lease.capture, epoch: 1, status: 'active' });
    expect(after.captures.filter((c) => c.todo === 'fix-signup')).toHaveLength(1);
    expect(verifyOf(world).ok).toBe(true);
  });
});

describe('the plugin fails open in the real OpenCode', () => {
  it('with the shim gone every hook fails, and the prompt still reaches the model, unchanged (control: the shim back, the same prompt gets the capture)', async () => {
    const shim = join(world.home, 'bin', 'turnkeeper');
    const prompt = 'fail open on #todo:fix-login please';
    renameSync(shim, `${shim}.away`);
    let from = mock.requests.length;
    try {
      expectRan('opencode run (no shim)', await opencode(['--', prompt]));
    } finally {
      renameSync(`${shim}.away`, shim);
    }
    const request = turnRequests(from, prompt)[0];
    expect(request).toBeDefined();
    expect(requestText(request!)).not.toContain('Turnkeeper');
    from = mock.requests.length;
    expectRan('opencode run (shim back)', await opencode(['--', prompt]));
    expect(requestText(turnRequests(from, prompt)[0]!)).toMatch(/Turnkeeper: Todo fix-login · capture cap_[0-9a-f]{24} · epoch 2$/m);
  });
});
