// The command line called in this process: `main(argv, io)` of src/cli/main.ts with an Io that
// collects what it prints. For tests about what a command says and does; a process of its own
// (./world.ts runCli, world.cli) stays for what only a process shows: exit on a signal, stdin limits,
// the installed shim, the launcher, the warm server's socket.
import { main } from '../../src/cli/main';

export interface InProcessRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `turnkeeper <argv>` in-process with exactly `env` and `cwd` (nothing of process.env), `input` on its stdin, at a terminal or not (default: not). */
export async function runMain(
  argv: readonly string[],
  options: { env: Record<string, string>; cwd: string; input?: string; atTerminal?: boolean },
): Promise<InProcessRun> {
  let stdout = '';
  let stderr = '';
  const input = Buffer.from(options.input ?? '');
  const code = await main([...argv], {
    env: options.env,
    cwd: options.cwd,
    out: (text) => void (stdout += text),
    err: (text) => void (stderr += text),
    readStdin: (limit) => Promise.resolve(input.subarray(0, limit)),
    atTerminal: () => options.atTerminal ?? false,
  });
  return { code, stdout, stderr };
}
