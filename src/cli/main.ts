// The `turnkeeper` command line (spec §8). Each command lives in a small module; this file only
// dispatches, maps errors to exit codes, and keeps `hook` free of anything that is not on its path.
import { AGENTS } from '../core/ids';
import { terminalSafe } from '../core/terminal';
import { didYouMean } from '../core/suggest';
import { HELP, type CommandHelp } from './help';
import type { Io } from './io';
import { readStdin, writer } from './stdio';

/** A command answers its exit code, at once or later (the dispatcher awaits either). */
type Command = (args: string[], io: Io) => Promise<number> | number;
const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  hook: async () => (await import('./hookCommand')).runHookCommand,
  todo: async () => (await import('./todo')).todoCommand,
  next: async () => (await import('./next')).nextCommand,
  status: async () => (await import('./inspect')).statusCommand,
  show: async () => (await import('./inspect')).showCommand,
  verify: async () => (await import('./receipts')).verifyCommand,
  release: async () => (await import('./inspect')).releaseCommand,
  receipts: async () => (await import('./receipts')).receiptsCommand,
  checkpoint: async () => (await import('./receipts')).checkpointCommand,
  keys: async () => (await import('./keys')).keysCommand,
  attest: async () => (await import('./launch')).attestCommand,
  closures: async () => (await import('./closures')).closuresCommand,
  resume: async () => (await import('./launch')).resumeCommand,
  start: async () => (await import('./launch')).startCommand,
  hooks: async () => (await import('./hooks')).hooksCommand,
  doctor: async () => (await import('./hooks')).doctorCommand,
  goal: async () => (await import('./goal')).goalCommand,
  store: async () => (await import('./store')).storeCommand,
  'hook-server': async () => (await import('./hookServer')).hookServerCommand,
};

// One line per form of a command, every flag it takes: `turnkeeper --help` prints it all and
// `turnkeeper <command> --help` the lines of that command (test/integration/cli-help.test.ts checks that
// every flag a command parses is listed here).
const AGENT_LIST = AGENTS.join('|');
const USAGE = `usage: turnkeeper <command> [options]       every command takes --help; turnkeeper --version
  hook [--agent ${AGENT_LIST}] [--event <name>]   run one agent hook (reads JSON on stdin, always exits 0)
  hook-server serve|status|stop [--json]   the warm hook server hooks start on demand (serve: in the foreground)
  todo add <title> [--id <id>] [--body <text>] [--after <id>…] [--goal <dir>] [--json]   --after: it waits until those are done
  todo list [--goal <dir> | --all] [--limit <n|all>] [--json]   open and blocked Todos, the newest 50 done
  todo done <id> [--owner <agent:session>] [--force --reason <why>] [--goal <dir>] [--json]
  todo done <id> --merge|--squash|--rebase|--keep-branch [--remove-worktree] [--branch <name>] [--owner <agent:session>] [--force --reason <why>] [--goal <dir>] [--json]   merge the Todo's branch back first
  todo reopen <id> [--goal <dir>] [--json]
  todo block <id> (--reason <why> | --after <id>…) [--owner <agent:session>] [--force] [--goal <dir>] [--json]
  todo unblock <id> [--after <id>…] [--goal <dir>] [--json]   lift a person's block, or drop those dependencies
  next [--goal <dir>] [--limit <n>] [--json]   the ready Todos (open, dependencies done, not held), oldest first
  status [--limit <n> | --all] [--json]       leases and captures (held ones, the newest 50), with their Goal and checkout
  show <captureId> [--json]                   a capture and its ready capture, exactly as presented
  show <todo> [--json]                        a Todo's timeline: claims, turns and what each changed, releases
  receipts [--limit <n>] [--before <seq>] [--json]   the receipt log, newest first
  receipts export [--from <seq>] [--out <file>] [--json]   the stored receipts and a signed checkpoint: a bundle that verifies offline
  receipts attestation <seq> [--out <file>]   a launch_committed or turn_ended receipt as an in-toto statement in a signed DSSE envelope, with its inclusion proof
  receipts prove <seq> [--size <n>] [--json]   the receipt's inclusion proof in a signed checkpoint (RFC 6962)
  receipts consistency --from <n> --to <m> [--json]   the tree of n receipts is a prefix of the tree of m (RFC 6962)
  verify [--json]                             check the receipt chain (and its anchor and witness)
  verify --bundle <file> [--key <public key|file>]… [--json]   check an exported bundle, with no store
  verify --proof <file> --document <file> [--key <public key|file>]… [--json]   check one receipt's inclusion proof (receipts prove --json), with no store
  checkpoint [--json]                         sign the chain's head now, into the store and the witness
  keys show [--pem] [--json]                  this installation's public key and key id (the private key is never shown)
  keys trust <file|key> [--json]              trust a teammate's public key for checkpoints
  release <todo> [--owner <agent:session>] [--force --reason <why>] [--goal <dir>] [--json]
  attest <path> [--json]                      what the native launcher would run, and its digest
  closures [--json]                           attested snapshots of script-shaped agents and their disk use
  closures prune [--all] [--json]             remove snapshots no installation or running agent uses
  resume <captureId> [--dry-run] [--json] [--accept-drift] [--recreate-worktree] [--agent-bin <path>] [--interactive | --headless] [--prompt <text>] [--allow-loader-env <name>]… [-- <agent args>]
  start <todo> --agent ${AGENT_LIST} [--worktree [<path>]] [--branch <name>] [--prompt <text>] [--interactive | --headless] [--json] [--agent-bin <path>] [--allow-loader-env <name>]… [-- <agent args>]
  hooks install|uninstall|status [--agent ${AGENT_LIST}] [--scope user|project] [--goal <dir>] [--json]
  doctor [--goal <dir>] [--json]              what is installed, and what each agent will do with it
  goal [--dir <dir>] [--json]                 which Goal (repository) this directory belongs to, and why
  goal init [--key <key>] [--dir <dir>] [--json]
  goal move --from <goal> [--rename <suffix>] [--dir <dir>] [--json]
  store init [--hook-role <role>] [--json]    create or migrate the selected store (TURNKEEPER_STORE)
  store copy --to <postgres://…|sqlite:<path>> [--json]   copy Todos and the chain's head into another store
exit codes: 0 done, 1 refused (the output names the reason), 2 usage error; with --json, errors are
{"ok":false,"error":{"code","message"}} on stdout
`;

/** The usage lines of one command's forms, from USAGE. */
export function usageLinesOf(name: string): string[] {
  return USAGE.split('\n')
    .filter((line) => line.startsWith(`  ${name} `) || line === `  ${name}`)
    .map((line) => `turnkeeper ${line.trimStart()}`);
}

/** `turnkeeper <command> --help`: what it does (./help.ts), its usage lines, each flag's meaning, examples. */
export function commandHelp(name: string): string {
  const help: CommandHelp | undefined = HELP[name];
  const flags = Object.entries(help?.flags ?? {});
  const width = Math.max(0, ...flags.map(([flag]) => flag.length));
  return [
    ...(help ? [`turnkeeper ${name}: ${help.what}`, ''] : []),
    'usage:',
    ...usageLinesOf(name).map((line) => `  ${line}`),
    ...(flags.length > 0 ? ['', 'flags:', ...flags.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`)] : []),
    ...(help && help.examples.length > 0 ? ['', 'examples:', ...help.examples.map((example) => `  ${example}`)] : []),
    '',
    '(turnkeeper --help lists every command)',
    '',
  ].join('\n');
}

/** The flags before a `--` (what follows it belongs to the agent that resume starts). */
const ownArgs = (args: readonly string[]): readonly string[] => (args.includes('--') ? args.slice(0, args.indexOf('--')) : args);

/** This Turnkeeper's version, from the package.json beside the bundle (dist/../package.json). */
function version(): string {
  const { readFileSync } = process.getBuiltinModule('node:fs');
  const path = process.getBuiltinModule('node:path');
  for (let dir = __dirname, i = 0; i < 4; i += 1, dir = path.dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'turnkeeper' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // not here
    }
  }
  return 'unknown';
}

/** The JSON error code of a refusal Turnkeeper raised (`HookConfigError` -> `hook_config`), else `internal`. */
function errorCode(error: unknown): string {
  const name = error instanceof Error ? error.name : '';
  if (
    !/^[A-Z][A-Za-z]*Error$/.test(name) ||
    ['Error', 'TypeError', 'RangeError', 'ReferenceError', 'SyntaxError', 'EvalError', 'URIError', 'AggregateError'].includes(name)
  )
    return 'internal';
  return name
    .replace(/Error$/, '')
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase();
}

/**
 * The one place output is made safe for a terminal (spec §8): every command prints through an Io
 * whose text has its control characters shown escaped, stored text included (titles, bodies, paths,
 * hook commands read from a repository's config), so no command has to remember it. `hook` is the
 * exception: its stdout is machine JSON for the agent that carries the stored presentation exactly as
 * stored (spec §3; JSON.stringify already escapes C0 controls). Its stderr is for people: escaped.
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
  if (name === '--version' || name === '-V') {
    io.out(`turnkeeper ${version()}\n`);
    return 0;
  }
  const json = name !== 'hook' && ownArgs(args).includes('--json');
  const { UsageError, printJson } = await import('./io');
  // Spec §8: under --json, errors are JSON on stdout too, so a script never parses prose; the
  // person reading stderr still gets the sentence.
  const fail = (code: string, message: string): number => {
    if (json) printJson(io, { ok: false, error: { code, message } });
    io.err(`${message}\n`);
    return code === 'usage' ? 2 : 1;
  };
  const load = COMMANDS[name];
  // Two lines, not the whole usage: the nearest command names, and where the rest are listed.
  if (!load)
    return fail(
      'usage',
      `unknown command ${JSON.stringify(name)}${didYouMean(name, Object.keys(COMMANDS))}${json ? '; ' : '\n'}turnkeeper --help lists the commands`,
    );
  if (ownArgs(args).includes('--help') || ownArgs(args).includes('-h')) {
    io.out(commandHelp(name));
    return 0;
  }
  try {
    return await (
      await load()
    )(args, io);
  } catch (error) {
    if (error instanceof UsageError) return fail('usage', error.message);
    return fail(errorCode(error), `turnkeeper ${name}: ${(error as Error).message}`);
  }
}

/** Entry point used by dist/cli.js (src/cli/launcher.cjs). */
export function runCli(): void {
  const argv = process.argv.slice(2);
  // Spec §10: the hook exits 0 even when stdout or stderr cannot be written; other commands report it.
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
    // node:tty's isatty, not process.stdin.isTTY: reading that would load the stream machinery.
    atTerminal: () => {
      const { isatty } = process.getBuiltinModule('node:tty');
      return isatty(0) && isatty(1);
    },
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
