// The `turnkeeper` command line (contract §8). Each command lives in a small module; this file only
// dispatches, maps errors to exit codes, and keeps `hook` free of anything that is not on its path.
import { terminalSafe } from '../core/terminal';
import type { Io } from './io';

type Command = (args: string[], io: Io) => Promise<number>;
const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  hook: async () => (await import('./hookCommand')).hookCommand,
  todo: async () => (await import('./todo')).todoCommand,
  status: async () => (await import('./inspect')).statusCommand,
  show: async () => (await import('./inspect')).showCommand,
  verify: async () => (await import('./inspect')).verifyCommand,
  release: async () => (await import('./inspect')).releaseCommand,
  receipts: async () => (await import('./inspect')).receiptsCommand,
  attest: async () => (await import('./launch')).attestCommand,
  resume: async () => (await import('./launch')).resumeCommand,
  hooks: async () => (await import('./hooks')).hooksCommand,
  doctor: async () => (await import('./hooks')).doctorCommand,
  goal: async () => (await import('./goal')).goalCommand,
  store: async () => (await import('./store')).storeCommand,
};

const USAGE = `usage: turnkeeper <command>
  hook [--agent codex|claude|gemini]      run one agent hook (reads JSON on stdin)
  todo add <title> [--id <id>] [--body <text>] [--goal <dir>]
  todo list [--json]  |  todo done <id>
  status [--json]  |  show <captureId> [--json]  |  verify [--json]  |  receipts [--limit <n>] [--json]
  release <todo> [--force --reason <why>]
  attest <path> [--json]
  resume <captureId> [--dry-run] [--json] [--accept-drift] [--agent-bin <path>] [--interactive] [-- <agent args>]
  hooks install|uninstall|status --agent <agent> [--scope user|project]
  goal [--json]  |  goal init [--key <key>]  |  goal move --from <goal>
  store init [--hook-role <role>]             create or migrate the selected store (TURNKEEPER_STORE)
  doctor [--json]
`;

/**
 * The one place output is made safe for a terminal (contract §8): every command prints through an Io
 * whose text has its control characters shown escaped, stored text included (titles, bodies, paths,
 * hook commands read from a repository's config), so no command has to remember it. `hook` is the
 * exception: its stdout is machine JSON for the agent that carries the stored presentation exactly as
 * stored (contract §3; JSON.stringify already escapes C0 controls). Its stderr is for people: escaped.
 */
function escapedIo(io: Io, command: string | undefined): Io {
  const err = (text: string) => io.err(terminalSafe(text));
  if (command === 'hook') return { ...io, err };
  return { ...io, out: (text) => io.out(terminalSafe(text)), err };
}

export async function main(argv: string[], rawIo: Io): Promise<number> {
  const [name, ...args] = argv;
  const io = escapedIo(rawIo, name);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.err : io.out)(USAGE);
    return name === undefined ? 2 : 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    io.err(`unknown command ${JSON.stringify(name)}\n${USAGE}`);
    return 2;
  }
  const { UsageError } = await import('./io');
  try {
    return await (await load())(args, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n`);
      return 2;
    }
    io.err(`turnkeeper ${name}: ${(error as Error).message}\n`);
    return 1;
  }
}

/**
 * Reads stdin up to `limit` + 1 bytes. Synchronous reads of fd 0 avoid loading Node's stream machinery,
 * a few milliseconds of every hook's start-up; a non-blocking stdin (EAGAIN) falls back to the stream.
 */
async function readStdin(limit: number): Promise<Buffer> {
  const { readSync } = process.getBuiltinModule('node:fs') as typeof import('node:fs');
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(65536);
      const read = readSync(0, chunk, 0, chunk.length, null);
      if (read === 0) break;
      // Keep one byte past the limit so the parser can tell "too large" apart from "exactly full".
      if (size <= limit) chunks.push(chunk.subarray(0, read));
      size += read;
    }
    return Buffer.concat(chunks).subarray(0, limit + 1);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EAGAIN' && code !== 'EOF') throw error;
  }
  return new Promise((resolve, reject) => {
    process.stdin.on('data', (chunk: Buffer) => {
      if (size <= limit) chunks.push(chunk);
      size += chunk.length;
    });
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).subarray(0, limit + 1)));
    process.stdin.on('error', reject);
  });
}

/**
 * Writes through fd 1/2 directly (no stdio stream objects). A non-blocking pipe that is full (EAGAIN)
 * hands the rest to the stream, which writes it when the pipe drains; `lost` hears of a failure then.
 */
function writer(fd: 1 | 2, lost: () => void): (text: string) => void {
  return (text) => {
    const { writeSync } = process.getBuiltinModule('node:fs') as typeof import('node:fs');
    const bytes = Buffer.from(text, 'utf8');
    let offset = 0;
    try {
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      const stream = fd === 1 ? process.stdout : process.stderr;
      // Without a listener a failed stream write would crash the process with exit 1.
      if (stream.listenerCount('error') === 0) stream.on('error', lost);
      // Only what was not written yet: the bytes before EAGAIN are already out.
      stream.write(bytes.subarray(offset));
    }
  };
}

/** Entry point used by dist/cli.js (src/cli/launcher.cjs). */
export function runCli(): void {
  const argv = process.argv.slice(2);
  // Contract §10: the hook exits 0 even when stdout or stderr cannot be written; other commands report it.
  const hook = argv[0] === 'hook';
  const lost = (): void => {
    if (!hook && !process.exitCode) process.exitCode = 1;
  };
  const io: Io = {
    env: process.env,
    cwd: process.cwd(),
    out: writer(1, lost),
    err: writer(2, lost),
    readStdin,
  };
  main(argv, io).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.exitCode = hook ? 0 : 1;
      try {
        io.err(`turnkeeper: ${(error as Error).stack ?? String(error)}\n`);
      } catch {
        // stderr is gone as well.
      }
    },
  );
}
