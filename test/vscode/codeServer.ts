// code-server for the e2e run: installed on demand (install-code-server.mjs), started on 127.0.0.1
// in its own process group with throwaway user-data and extensions dirs, stopped by killing the
// whole group (code-server forks the extension host and file watchers; killing the parent alone
// leaves them running).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '../..');
const INSTALLER = join(ROOT, 'test/vscode/install-code-server.mjs');

/** Node 24: code-server's native modules were compiled for it. */
export const NODE = join(ROOT, 'node_modules/node/bin/node');

/** Installs code-server if the pinned version is missing (minutes the first time), returns its entry point. */
export function ensureCodeServer(): string {
  const run = spawnSync(NODE, [INSTALLER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 25 * 60_000 });
  if (run.status !== 0) throw new Error(`installing code-server failed (exit ${run.status ?? run.signal}); see the output above`);
  // The entry path is the installer's last line of output.
  return run.stdout.trim().split('\n').at(-1)!.trim();
}

export interface CodeServer {
  readonly url: string;
  readonly userDataDir: string;
  readonly logFile: string;
  /** URL of the workbench with `folder` open. */
  folderUrl(folder: string): string;
  stop(): Promise<void>;
}

export interface CodeServerOptions {
  readonly entry: string;
  readonly vsix?: string;
  /** false: start without --disable-workspace-trust, so opening a folder asks whether to trust it. */
  readonly trusted: boolean;
  /** Extra environment for the server and its extension host (TURNKEEPER_HOME, ...). */
  readonly env?: Record<string, string>;
  /** Written to the user settings.json before start. */
  readonly settings?: Record<string, unknown>;
  /**
   * Written to the remote ("Machine") settings.json. code-server's extension host is a remote one, and
   * VS Code applies `"scope": "machine"` settings there only from these, never from user settings.
   */
  readonly machineSettings?: Record<string, unknown>;
  /** Written to the user keybindings.json before start. */
  readonly keybindings?: readonly { key: string; command: string; args?: unknown }[];
}

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}

export async function startCodeServer(options: CodeServerOptions): Promise<CodeServer> {
  const base = mkdtempSync(join(tmpdir(), 'tk-code-server-'));
  const userDataDir = join(base, 'user-data');
  const extensionsDir = join(base, 'extensions');
  const home = join(base, 'home');
  for (const dir of [userDataDir, extensionsDir, home]) mkdirSync(dir, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    // Its own HOME and XDG dirs: code-server writes ~/.config/code-server/config.yaml otherwise.
    ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(npm_|VSCODE_|ELECTRON_)/i.test(key))),
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local/share'),
    ...options.env,
  };
  const common = ['--extensions-dir', extensionsDir, '--user-data-dir', userDataDir];

  if (options.vsix) {
    const install = spawnSync(NODE, [options.entry, ...common, '--install-extension', options.vsix], { env, encoding: 'utf8', timeout: 120_000 });
    if (install.status !== 0 || !/successfully installed/i.test(install.stdout)) {
      rmSync(base, { recursive: true, force: true });
      throw new Error(
        `code-server --install-extension ${options.vsix} failed (exit ${install.status ?? install.signal}):\n${install.stdout}\n${install.stderr}`,
      );
    }
  }
  mkdirSync(join(userDataDir, 'User'), { recursive: true });
  writeFileSync(join(userDataDir, 'User/settings.json'), `${JSON.stringify(options.settings ?? {}, null, 2)}\n`);
  writeFileSync(join(userDataDir, 'User/keybindings.json'), `${JSON.stringify(options.keybindings ?? [], null, 2)}\n`);
  mkdirSync(join(userDataDir, 'Machine'), { recursive: true });
  writeFileSync(join(userDataDir, 'Machine/settings.json'), `${JSON.stringify(options.machineSettings ?? {}, null, 2)}\n`);

  const port = await freePort();
  const logFile = join(base, 'code-server.log');
  const log = openSync(logFile, 'a');
  const args = [
    options.entry,
    ...common,
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--auth',
    'none',
    '--disable-telemetry',
    '--disable-update-check',
    ...(options.trusted ? ['--disable-workspace-trust'] : []),
  ];
  // detached: a process group of its own, which stop() kills as a whole.
  const child = spawn(NODE, args, { env, detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  const server: CodeServer = {
    url,
    userDataDir,
    logFile,
    folderUrl: (folder) => `${url}/?folder=${encodeURIComponent(folder)}`,
    stop: async () => {
      await killGroup(child);
      rmSync(base, { recursive: true, force: true });
    },
  };
  try {
    await waitForHealth(url, child, logFile, 60_000);
  } catch (error) {
    await killGroup(child);
    throw error;
  }
  return server;
}

async function waitForHealth(url: string, child: ChildProcess, logFile: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`code-server exited (${child.exitCode ?? child.signalCode}) before listening:\n${readFileSync(logFile, 'utf8')}`);
    }
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 250));
  }
  throw new Error(`code-server did not answer ${url}/healthz within ${timeoutMs} ms:\n${readFileSync(logFile, 'utf8')}`);
}

/** SIGTERM to the group, SIGKILL after 5 s; resolves when the group leader has exited. */
async function killGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const exited = new Promise<void>((done) => (child.exitCode !== null || child.signalCode !== null ? done() : child.once('exit', () => done())));
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-pid, name);
    } catch {
      // group already gone
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
  // Children of the group (extension host, watchers) may outlive the leader's exit by a moment.
  signal('SIGKILL');
}

/** Files under `dir` (recursively) whose content matches `pattern`; used to find exthost logs. */
export function grepLogs(dir: string, pattern: RegExp): { file: string; match: RegExpMatchArray }[] {
  const found: { file: string; match: RegExpMatchArray }[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const stat = statSync(path);
      if (stat.isDirectory()) walk(path);
      else if (stat.isFile() && name.endsWith('.log')) {
        const match = readFileSync(path, 'utf8').match(pattern);
        if (match) found.push({ file: path, match });
      }
    }
  };
  walk(dir);
  return found;
}
