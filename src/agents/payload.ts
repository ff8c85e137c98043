// Hook payloads of the three agents: validation (zod) and normalisation into one HookEvent.
// Agents add fields over time, so unknown fields pass; the fields we use are checked strictly.
// zod/mini: the same validators as classic zod, tree-shaken; the hook pays for every byte it loads.
import * as z from 'zod/mini';
import { isSessionId, type Agent } from '../core/ids';

/** Hook input larger than this is refused unread (spec §2 rule 2). */
export const MAX_HOOK_INPUT_BYTES = 1024 * 1024;

export type EventKind = 'session_start' | 'prompt' | 'pre_tool' | 'post_tool' | 'stop';

const EVENTS: Readonly<Record<Agent, Readonly<Record<string, EventKind>>>> = {
  codex: { SessionStart: 'session_start', UserPromptSubmit: 'prompt', PreToolUse: 'pre_tool', PostToolUse: 'post_tool', Stop: 'stop' },
  claude: { SessionStart: 'session_start', UserPromptSubmit: 'prompt', PreToolUse: 'pre_tool', PostToolUse: 'post_tool', Stop: 'stop' },
  gemini: { SessionStart: 'session_start', BeforeAgent: 'prompt', BeforeTool: 'pre_tool', AfterTool: 'post_tool', AfterAgent: 'stop' },
};

export interface HookEvent {
  readonly agent: Agent;
  /** The event name exactly as received: output echoes it. */
  readonly eventName: string;
  readonly kind: EventKind;
  readonly session: string;
  /** The Turn id the payload itself carries (Codex `turn_id`, Claude `prompt_id`); never on SessionStart. */
  readonly turn: string | undefined;
  readonly cwd: string;
  readonly transcriptPath: string | undefined;
  readonly prompt: string | undefined;
  readonly toolName: string | undefined;
}

export class InvalidHookInput extends Error {
  constructor(readonly problem: string) {
    super(`invalid hook input: ${problem}`);
    this.name = 'InvalidHookInput';
  }
}

const wellFormed = (maxLength: number) =>
  z.string().check(
    z.maxLength(maxLength),
    z.refine((text) => text.isWellFormed(), 'lone surrogate'),
  );
const pathString = z.string().check(
  z.maxLength(4096, 'path too long'),
  z.refine((text) => text.isWellFormed(), 'lone surrogate'),
  z.refine((text) => !text.includes('\0'), 'NUL byte in path'),
  z.refine((text) => text.startsWith('/'), 'not an absolute path'),
);
const idString = z.string().check(z.refine(isSessionId, 'id outside its grammar'));
const ANY_LENGTH = MAX_HOOK_INPUT_BYTES;

const payloadSchema = z.looseObject({
  hook_event_name: z.string().check(z.maxLength(64)),
  session_id: idString,
  cwd: pathString,
  transcript_path: z.nullish(pathString),
  turn_id: z.nullish(idString),
  prompt_id: z.nullish(idString),
  prompt: z.nullish(wellFormed(ANY_LENGTH)),
  tool_name: z.nullish(wellFormed(256)),
  model: z.nullish(wellFormed(256)),
  permission_mode: z.nullish(wellFormed(256)),
  timestamp: z.nullish(wellFormed(256)),
});
type Payload = z.infer<typeof payloadSchema>;

/** Codex: `turn_id`, or `model` with `permission_mode`; Gemini: `timestamp` with a Gemini event; else Claude. */
export function detectAgent(payload: Payload): Agent {
  if (payload.turn_id != null || (payload.model != null && payload.permission_mode != null)) return 'codex';
  if (payload.timestamp != null && payload.hook_event_name in EVENTS.gemini) return 'gemini';
  return 'claude';
}

/** Parses raw stdin into a HookEvent, or throws InvalidHookInput naming the first problem. */
export function parseHookInput(raw: string | Buffer, forcedAgent?: Agent): HookEvent {
  const size = typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.length;
  if (size > MAX_HOOK_INPUT_BYTES) throw new InvalidHookInput(`input is ${size} bytes, over the ${MAX_HOOK_INPUT_BYTES}-byte limit`);
  let json: unknown;
  try {
    json = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch (error) {
    throw new InvalidHookInput(`not JSON (${(error as Error).message})`);
  }
  const parsed = payloadSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidHookInput(`${issue?.path.join('.') || 'payload'}: ${issue?.message ?? 'invalid'}`);
  }
  const payload = parsed.data;
  const agent = forcedAgent ?? detectAgent(payload);
  const kind = EVENTS[agent][payload.hook_event_name];
  if (kind === undefined || !Object.hasOwn(EVENTS[agent], payload.hook_event_name)) {
    throw new InvalidHookInput(`unknown ${agent} event ${JSON.stringify(payload.hook_event_name)}`);
  }
  const payloadTurn = agent === 'codex' ? payload.turn_id : agent === 'claude' ? payload.prompt_id : undefined;
  // Gemini prepends earlier hook context to the prompt as <hook_context>…</hook_context>: our own
  // presentation or guidance must never read as the user naming a Todo.
  const prompt = payload.prompt == null ? undefined : agent === 'gemini' ? withoutHookContext(payload.prompt) : payload.prompt;
  return {
    agent,
    eventName: payload.hook_event_name,
    kind,
    session: payload.session_id,
    turn: kind === 'session_start' ? undefined : (payloadTurn ?? undefined),
    cwd: payload.cwd,
    transcriptPath: payload.transcript_path ?? undefined,
    prompt,
    toolName: payload.tool_name ?? undefined,
  };
}

const HOOK_CONTEXT = /<hook_context>[\s\S]*?<\/hook_context>/g;
export const withoutHookContext = (prompt: string): string => prompt.replace(HOOK_CONTEXT, '');

// Tools that change the workspace: edits, patches and shells (spec §2, fencing). Read-only and
// MCP tools are not fenced.
const WRITE_TOOLS: Readonly<Record<Agent, ReadonlySet<string>>> = {
  codex: new Set(['Bash', 'apply_patch', 'shell', 'exec_command', 'write_stdin', 'local_shell', 'Edit', 'Write']),
  claude: new Set(['Bash', 'Edit', 'Write', 'MultiEdit', 'NotebookEdit']),
  gemini: new Set(['run_shell_command', 'write_file', 'replace', 'edit']),
};

export const isWriteTool = (agent: Agent, toolName: string | undefined): boolean =>
  toolName !== undefined && WRITE_TOOLS[agent].has(toolName);
