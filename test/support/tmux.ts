// A real terminal for the interactive-agent tests: Debian's tmux on a private socket, driven as a
// person drives it (send-keys, capture-pane). Each session runs one command with exactly the
// environment the test gives (through `env -i`), in a window of a fixed size.
//
//   const term = await startTmux({ cwd, env, command: ['node', CLI, 'start', …], cols: 160, rows: 48 });
//   await term.waitForText(/Ask Codex/);   // the pane as a person sees it
//   await term.type('please fix it\r');
//   term.kill();
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from './waitFor';

const INSTALL_HINT = 'apt-get install tmux, or run .ci/run';

export interface Tmux {
  /** The pane's text now (what a person sees; after the command exited, with what scrolled off), joined lines, trailing blanks trimmed. */
  screen(): string;
  /** Waits until the pane shows `pattern`; the error names what it showed instead. */
  waitForText(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Types literal text (send-keys -l); `\r` in it is Enter. */
  type(text: string): void;
  /** Sends tmux key names (C-c, Escape, Enter, …). */
  keys(...names: string[]): void;
  /** The pid of the process tmux started in the pane (the command), or undefined once it is gone. */
  panePid(): number | undefined;
  /** The terminal's foreground process group, as the kernel holds it for the pane's tty. */
  foregroundGroup(): number | undefined;
  /** Whether the pane's command has exited (the pane stays, remain-on-exit, so its last screen can be read). */
  exited(): boolean;
  kill(): void;
}

function tmuxBinary(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v tmux'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`tmux is not installed: ${INSTALL_HINT}`);
  }
}

const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

export function startTmux(options: { cwd: string; env: NodeJS.ProcessEnv; command: readonly string[]; cols?: number; rows?: number }): Tmux {
  const binary = tmuxBinary();
  const dir = mkdtempSync(join(tmpdir(), 'tk-tmux-'));
  const socket = join(dir, 'socket');
  const tmux = (...args: string[]): string => execFileSync(binary, ['-S', socket, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const env = Object.entries(options.env)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([key, value]) => shellQuote(`${key}=${value}`));
  const command = `exec env -i ${env.join(' ')} ${options.command.map(shellQuote).join(' ')}`;
  // -f /dev/null: no user config; remain-on-exit keeps the last screen after the command ends.
  execFileSync(
    binary,
    [
      '-S',
      socket,
      '-f',
      '/dev/null',
      'new-session',
      '-d',
      '-s',
      'tk',
      '-x',
      String(options.cols ?? 160),
      '-y',
      String(options.rows ?? 48),
      '-c',
      options.cwd,
      command,
    ],
    {
      stdio: 'ignore',
      env: { PATH: process.env.PATH, TERM: 'xterm-256color', HOME: options.env.HOME },
    },
  );
  tmux('set-option', '-t', 'tk', 'remain-on-exit', 'on');
  const display = (format: string): string => tmux('display-message', '-p', '-t', 'tk', format).trim();
  // Once the command has exited, its scrollback too: as tmux (3.3a) writes "Pane is dead" it scrolls
  // the pane's first line out of the visible screen (a refusal's first line is the one that names it).
  // (Asked after the capture: a pane that died while it was taken may have lost that line already.)
  const capture = (...args: string[]) =>
    tmux('capture-pane', '-p', ...args, '-t', 'tk')
      .split('\n')
      .map((line) => line.trimEnd())
      .join('\n')
      .trimEnd();
  const screen = () => {
    const visible = capture();
    return display('#{pane_dead}') === '1' ? capture('-S', '-') : visible;
  };
  return {
    screen,
    async waitForText(pattern, timeoutMs = 60_000) {
      let last = '';
      const shown = await waitFor(
        () => {
          last = screen();
          return pattern.test(last);
        },
        timeoutMs,
        100,
      );
      if (!shown) {
        // What ran in the pane, with each process's state and groups: a stopped agent (T) or one that
        // is not the terminal's foreground group is the usual reason for a pane that stays empty.
        let processes = '';
        try {
          processes = execFileSync('ps', ['-o', 'pid,ppid,stat,pgid,tpgid,args', '-g', String(display('#{pane_pid}'))], { encoding: 'utf8' });
        } catch {
          processes = '(ps found none)';
        }
        throw new Error(`the pane never showed ${pattern}; it shows:\n${last}\nits processes:\n${processes}`);
      }
      return last;
    },
    type(text) {
      for (const part of text.split(/(\r)/)) {
        if (part === '\r') tmux('send-keys', '-t', 'tk', 'Enter');
        else if (part !== '') tmux('send-keys', '-t', 'tk', '-l', part);
      }
    },
    keys(...names) {
      tmux('send-keys', '-t', 'tk', ...names);
    },
    panePid() {
      if (display('#{pane_dead}') === '1') return undefined;
      const pid = Number(display('#{pane_pid}'));
      return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
    },
    foregroundGroup() {
      const pid = Number(display('#{pane_pid}'));
      try {
        // Field 8 of /proc/<pid>/stat (after the comm in parentheses) is tpgid: the tty's foreground group.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(fields[5]);
      } catch {
        return undefined;
      }
    },
    exited: () => display('#{pane_dead}') === '1',
    kill() {
      try {
        tmux('kill-server');
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
