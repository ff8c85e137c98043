// `npm run demo`: the main job end to end on the embedded SQLite default, with a real agent.
// It creates a Todo, installs Turnkeeper's hook into a throwaway Codex home, runs one real
// `codex exec` turn that names the Todo (against a local stand-in model on 127.0.0.1, since this
// machine has no model access), shows what the model received, and prints status and receipts.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startMockModelServer, developerTexts } from '../test/support/mockModelServer';
import { makeCodexHome, writeCodexConfig, runCodexExec, cleanupCodexHome } from '../test/support/codexHarness';

const cli = resolve('dist/cli.js');
const root = mkdtempSync(join(tmpdir(), 'turnkeeper-demo-'));
const repo = join(root, 'repo');
const codex = makeCodexHome({ prefix: 'turnkeeper-demo-codex-' });
const env = { ...codex.env, TURNKEEPER_HOME: join(root, 'turnkeeper-home') };

function turnkeeper(...args: string[]): string {
  const result = spawnSync(process.execPath, [cli, ...args], { cwd: repo, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`turnkeeper ${args.join(' ')} failed (${result.status}):\n${result.stderr}`);
  return result.stdout;
}
const step = (title: string) => console.log(`\n── ${title} ${'─'.repeat(Math.max(0, 70 - title.length))}`);

const mock = await startMockModelServer();
try {
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', repo]);
  writeFileSync(join(repo, 'login.js'), 'export function login() { /* TODO */ }\n');
  execFileSync('git', ['-C', repo, '-c', 'user.email=demo@example.invalid', '-c', 'user.name=demo', 'add', '.']);
  execFileSync('git', ['-C', repo, '-c', 'user.email=demo@example.invalid', '-c', 'user.name=demo', 'commit', '-qm', 'demo']);

  step('1. add a Todo');
  process.stdout.write(turnkeeper('todo', 'add', 'Fix the login form', '--id', 'fix-login', '--body', 'Valid passwords are rejected when they contain a space.'));

  step('2. install the hook into Codex');
  process.stdout.write(turnkeeper('hooks', 'install', '--agent', 'codex'));
  writeCodexConfig(codex.codexHome, mock.url);

  step('3. a real Codex turn names the Todo');
  const run = await runCodexExec({ env, cwd: repo, prompt: 'Please work on #todo:fix-login', timeoutMs: 120_000 });
  if (run.code !== 0) throw new Error(`codex exec failed (${run.code}):\n${run.stderr}`);
  const injected = mock.requests.flatMap((request) => developerTexts(request)).find((text) => text.startsWith('Turnkeeper:'));
  console.log(injected ? `the model received this context from the hook:\n\n${injected.replace(/^/gm, '  │ ')}` : 'the model received NO Turnkeeper context');

  step('4. turnkeeper status');
  process.stdout.write(turnkeeper('status'));

  step('5. turnkeeper receipts (newest first) and verify');
  process.stdout.write(turnkeeper('receipts'));
  process.stdout.write(turnkeeper('verify'));
  console.log(`\nstore: ${join(env.TURNKEEPER_HOME, 'turnkeeper.db')}`);
  if (!injected) process.exitCode = 1;
} finally {
  await mock.close();
  cleanupCodexHome(codex);
  if (!process.env.TURNKEEPER_DEMO_KEEP) rmSync(root, { recursive: true, force: true });
}
