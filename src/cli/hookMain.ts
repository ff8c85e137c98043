// Entry of the hook's own bundle (dist/hook.js; spec §2, docs/architecture.md "Build"). Agents run
// `turnkeeper hook` on every prompt and tool call, so it gets a bundle of just what a hook needs: the
// full command line (dist/turnkeeper.js) evaluates and collects far more at start-up, which bench row 1
// measured at about 3.5 ms of a ~45 ms hook. dist/cli.js (src/cli/launcher.cjs) chooses between them;
// `turnkeeper hook --help` still goes to the full command line, which owns every command's help.
import * as z from 'zod/mini';
import { terminalSafe } from '../core/terminal';
import { runHookCommand } from './hookCommand';
import { readStdin, writer } from './stdio';

export function runHookCli(): void {
  // A hook parses one payload and exits: zod's compiled fast path (generated with new Function on an
  // object schema's first parse) costs more to build than the one parse it speeds up.
  z.config({ jitless: true });
  // Spec §10: the hook exits 0 even when stdout or stderr cannot be written.
  const ignore = (): void => {};
  const err = writer(2, ignore);
  const io = {
    env: process.env,
    cwd: workingDirectory(),
    out: writer(1, ignore),
    // As main.ts's escapedIo does for the hook: stdout is the agent's JSON, stderr may reach a terminal.
    err: (text: string) => err(terminalSafe(text)),
    readStdin,
  };
  runHookCommand(process.argv.slice(3), io).then(
    () => {
      process.exitCode = 0;
    },
    (error: unknown) => {
      // runHookCommand catches everything; this is the last fence (fail open for the agent).
      process.exitCode = 0;
      try {
        io.err(`turnkeeper: ${(error as Error).stack ?? String(error)}\n`);
      } catch {
        // stderr is gone as well.
      }
    },
  );
}

/**
 * The process's directory, or `/` when it is gone (a worktree removed under a running agent): as the
 * warm server takes a request whose client could not name its directory (hookServer.ts), so a hook
 * there answers on both paths as from nowhere in particular, quietly, instead of dying in uv_cwd.
 */
function workingDirectory(): string {
  try {
    return process.cwd();
  } catch {
    return '/';
  }
}
