// `turnkeeper hook`: always exits 0 and prints at most one JSON object; the agent goes on whatever
// happens here (fail open for the agent). Errors go to stderr.
import { AGENTS, isAgent } from '../core/ids';
import { MAX_HOOK_INPUT_BYTES } from '../agents/payload';
import { runHook, type HookOptions } from '../hook/hook';
import { parse, type Io } from './io';

/** `shared`: the warm hook server's stores (src/cli/hookServer.ts); the cold hook opens its own. */
export async function runHookCommand(args: string[], io: Io, shared: Pick<HookOptions, 'openStore'> = {}): Promise<number> {
  // Spec §10: an unwritable stderr (closed, full disk) changes nothing, not even the exit code.
  const err = (text: string): void => {
    try {
      io.err(text);
    } catch {
      // Nowhere left to report it.
    }
  };
  let agent;
  let event;
  try {
    const { values } = parse(
      args,
      { agent: { type: 'string' }, event: { type: 'string' } },
      { min: 0, max: 0, usage: `turnkeeper hook [--agent ${AGENTS.join('|')}] [--event <name>]` },
    );
    if (values.agent !== undefined && !isAgent(values.agent)) throw new Error(`unknown agent ${JSON.stringify(values.agent)}`);
    agent = values.agent;
    // Copilot's payloads name no event: its installed commands do (`--event userPromptSubmitted`).
    event = values.event;
  } catch (error) {
    // A broken hook command line must not break the agent either.
    err(`turnkeeper hook: ${(error as Error).message}; ignored\n`);
    return 0;
  }
  let result;
  try {
    const input = await io.readStdin(MAX_HOOK_INPUT_BYTES);
    result = await runHook(input, { env: io.env, agent, event, processCwd: io.cwd, ...shared });
  } catch (error) {
    err(`turnkeeper hook: internal error: ${(error as Error).stack ?? String(error)}\n`);
    return 0;
  }
  for (const line of result.stderr) err(line + '\n');
  if (result.stdout) {
    try {
      io.out(result.stdout);
    } catch (error) {
      // Whatever was decided stands (a claim is committed); the session's next hook presents it again (rule 4).
      err(`turnkeeper hook: could not write the hook output: ${(error as Error).message}\n`);
    }
  }
  return 0;
}
