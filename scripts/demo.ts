// `npm run demo`: the main job end to end on the embedded SQLite default, with a real agent.
// It creates a Todo, installs Turnkeeper's hook into a throwaway Codex home and trusts it there the
// way Codex's /hooks review does, runs one real `codex exec` turn that names the Todo (against a
// local stand-in model on 127.0.0.1, since this machine has no model access), shows what the model
// received, prints status and receipts, then resumes the captured turn through the native launcher
// (the demo builds the launcher addon first) and verifies the chain.
//
// TURNKEEPER_DEMO_KEEP=1 keeps the demo's directory (store, repository, Codex home) for a look after.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startMockModelServer, developerTexts, type MockModelServer } from '../test/support/mockModelServer';
import { makeCodexHome, writeCodexConfig, runCodexExec, cleanupCodexHome, trustAllHooks } from '../test/support/codexHarness';
import { hasLaunchBackend as launchBackendHere } from '../src/launcher/backends';

// Resume goes through the native launcher: build its addon first (against the pinned Node headers,
// offline; a no-op when it is up to date), so the quick start leaves a working `turnkeeper resume`.
// A platform without a launch backend has no addon to build: the demo runs without the resume step.
const hasLaunchBackend = launchBackendHere();
if (hasLaunchBackend) execFileSync(process.execPath, ['scripts/build-native.mjs'], { stdio: ['ignore', 'inherit', 'inherit'] });

const cli = resolve('dist/cli.js');
// The shim npm puts on PATH for the Codex package: what a user's `codex` is.
const codexBin = resolve('node_modules/.bin/codex');
const keep = Boolean(process.env.TURNKEEPER_DEMO_KEEP);
const root = mkdtempSync(join(tmpdir(), 'turnkeeper-demo-'));
const repo = join(root, 'repo');
const codex = makeCodexHome({ prefix: 'turnkeeper-demo-codex-' });
const env = { ...codex.env, TURNKEEPER_HOME: join(root, 'turnkeeper-home') };

function turnkeeper(...args: string[]): string {
  const result = spawnSync(process.execPath, [cli, ...args], { cwd: repo, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`turnkeeper ${args.join(' ')} failed (${result.status}):\n${result.stderr}`);
  return result.stdout;
}
/** Asynchronous, for commands that start Codex: the stand-in model lives in this process and must keep answering. */
function turnkeeperAsync(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}
/** The `reason` of a refused `--json` command, if its output says one. */
function refusalOf(stdout: string): string | undefined {
  try {
    const reason = (JSON.parse(stdout) as { reason?: unknown }).reason;
    return typeof reason === 'string' ? reason : undefined;
  } catch {
    return undefined;
  }
}
const step = (title: string) => console.log(`\n── ${title} ${'─'.repeat(Math.max(0, 70 - title.length))}`);
const quote = (text: string) => text.replace(/^/gm, '  │ ');
const injected = (mock: MockModelServer, from: number) =>
  mock.requests
    .slice(from)
    .flatMap((request) => developerTexts(request))
    .filter((text) => text.startsWith('Turnkeeper:'));

const mock = await startMockModelServer();
try {
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', repo]);
  writeFileSync(join(repo, 'login.js'), 'export function login() { /* TODO */ }\n');
  execFileSync('git', ['-C', repo, '-c', 'user.email=demo@example.invalid', '-c', 'user.name=demo', 'add', '.']);
  execFileSync('git', ['-C', repo, '-c', 'user.email=demo@example.invalid', '-c', 'user.name=demo', 'commit', '-qm', 'demo']);

  step('1. add a Todo');
  process.stdout.write(
    turnkeeper('todo', 'add', 'Fix the login form', '--id', 'fix-login', '--body', 'Valid passwords are rejected when they contain a space.'),
  );

  step('2. install the hook into Codex, and trust it');
  const install = JSON.parse(turnkeeper('hooks', 'install', '--agent', 'codex', '--json')) as { path: string; command: string };
  console.log(`installed in ${install.path}\nhook command: ${install.command}`);
  writeCodexConfig(codex.codexHome, mock.url);
  // Codex skips a new hook until it is trusted. A person does this once in the Codex TUI (/hooks);
  // the demo records the same trust (config.toml [hooks.state]) through `codex app-server`.
  const trusted = await trustAllHooks(codex.codexHome, env, repo);
  console.log(`trusted ${trusted.length} hook entries in ${join(codex.codexHome, 'config.toml')} (what reviewing them in codex's /hooks does)`);

  step('3. a real Codex turn names the Todo');
  const run = await runCodexExec({ env, cwd: repo, prompt: 'Please work on #todo:fix-login', flags: [], timeoutMs: 120_000 });
  if (run.code !== 0) throw new Error(`codex exec failed (${run.code}):\n${run.stderr}`);
  const context = injected(mock, 0)[0];
  console.log(
    context
      ? `the model received this context from the hook:\n\n${quote(context)}`
      : 'the model received NO Turnkeeper context (is the hook trusted? turnkeeper doctor)',
  );

  step('4. turnkeeper status');
  process.stdout.write(turnkeeper('status'));

  step('5. resume the captured turn through the native launcher');
  const status = JSON.parse(turnkeeper('status', '--json')) as { leases: { capture: string; status: string }[] };
  const capture = status.leases.find((lease) => lease.status === 'active')?.capture;
  let resumedOk = false;
  if (capture) {
    const before = mock.requests.length;
    console.log(`turnkeeper resume ${capture} --agent-bin ${codexBin}`);
    const resumed = await turnkeeperAsync('resume', capture, '--json', '--agent-bin', codexBin);
    const decision =
      resumed.code === 0 ? (JSON.parse(resumed.stdout) as { receipt: { seq: number }; digest: string; exit: { code: number | null } }) : undefined;
    const refusal = resumed.code === 0 ? undefined : refusalOf(resumed.stdout);
    resumedOk = decision?.exit.code === 0;
    if (decision)
      console.log(`launch receipt #${decision.receipt.seq} committed before Codex ran (attested ${decision.digest}); Codex exited ${decision.exit.code}`);
    else if (refusal === 'unsupported_platform') {
      // Not a failure of the demo: this platform has no launch backend yet (spec §6 "Platforms").
      resumedOk = true;
      console.log(`resume skipped: ${process.platform}-${process.arch} has no launch backend yet (Linux x64 only); hooks, leases and receipts work here`);
    } else console.log(`resume refused (${resumed.code}):\n${quote(resumed.stderr.trim() || resumed.stdout.trim())}`);
    const again = injected(mock, before);
    if (again.length > 0)
      console.log(`the resumed session's request carries the ready capture (${again.length} context message${again.length === 1 ? '' : 's'} from the hook)`);
  }

  step('6. turnkeeper receipts (newest first) and verify');
  process.stdout.write(turnkeeper('receipts', '--limit', '12'));
  process.stdout.write(turnkeeper('verify'));
  if (!context || !resumedOk) process.exitCode = 1;
} finally {
  await mock.close();
  if (!keep) {
    cleanupCodexHome(codex);
    rmSync(root, { recursive: true, force: true });
  }
}

step('next');
console.log(
  keep
    ? `kept the demo's store and repository in ${root} and its Codex home in ${codex.root} (TURNKEEPER_DEMO_KEEP); remove them when done: rm -rf ${root} ${codex.root}`
    : `the demo's store, repository and Codex home were temporary and are gone (TURNKEEPER_DEMO_KEEP=1 npm run demo keeps them).`,
);
console.log(`On your own repository (README, "Using it"), with turnkeeper on your PATH (the VS Code extension's
terminals, or: npm pack && npm install -g ./turnkeeper-*.tgz):
  turnkeeper todo add "Fix the login form" --id fix-login
  turnkeeper hooks install --agent codex     then open codex once and trust the hook in /hooks
  codex "please work on #todo:fix-login"
  turnkeeper doctor                          says whether Codex will run the hook, and how to fix it`);
