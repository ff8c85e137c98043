// Hook payloads of the agents: validation (zod) and normalisation into one HookEvent. What differs
// between agents (event names, where the Turn and the transcript come from, detection) is read from
// their profiles (src/agents/profiles/). Two payload dialects exist: snake_case with the event name
// inside (Codex, Claude, Gemini, and Copilot under Claude-style names), and Copilot's camelCase,
// which names no event: its installed command passes `--event`.
// Agents add fields over time, so unknown fields pass; the fields we use are checked strictly.
// zod/mini: the same validators as classic zod, tree-shaken; the hook pays for every byte it loads.
import * as z from 'zod/mini';
import { AGENTS, isSessionId, type Agent } from '../core/ids';
import { DETECT_ORDER, FALLBACK_AGENT, PROFILES, type Env, type EventKind, type PayloadDialect } from './profiles/index';

/** Hook input larger than this is refused unread (spec §2 rule 2). */
export const MAX_HOOK_INPUT_BYTES = 1024 * 1024;

export interface HookEvent {
  readonly agent: Agent;
  /** The event name exactly as received (payload or `--event`): output echoes it where the agent wants it. */
  readonly eventName: string;
  readonly kind: EventKind;
  readonly session: string;
  /** The Turn id the payload itself carries (Codex `turn_id`, Claude `prompt_id`); never on SessionStart. */
  readonly turn: string | undefined;
  readonly cwd: string;
  readonly transcriptPath: string | undefined;
  /**
   * Why a SessionStart fired, as the agent says it (`source`: `startup`, `resume`, `clear`, `compact`,
   * Copilot's `new`); undefined on other events and when the payload has none.
   */
  readonly sessionSource: string | undefined;
  readonly prompt: string | undefined;
  readonly toolName: string | undefined;
}

/** What the hook's command line and environment add to the payload. */
export interface HookContext {
  /**
   * The hook process's own working directory: the cwd of an agent whose payloads carry none (Goose
   * runs its hooks in its own working directory and names one only on Stop).
   */
  readonly processCwd?: string | undefined;
  /** `--event <name>`: the event, for agents whose payloads name none (Copilot). */
  readonly event?: string | undefined;
  /** The hook process's environment: detection (COPILOT_CLI=1) and transcript locations. */
  readonly env?: Env;
}

/**
 * What a refused hook input may leave behind (src/hook/rejections.ts, for doctor): where the
 * problem is and why, in Turnkeeper's own words. Never the payload's text: no prompt, no path, no
 * value, not even a JSON parser's message (V8 quotes the input in it).
 */
export interface RejectionTrace {
  /** The agent's JSON, a TURNKEEPER_ variable of the hook's environment, or the checkout's Goal. */
  readonly source: 'payload' | 'environment' | 'checkout';
  /** Field paths (`transcript_path`, `--event`; `payload` for the whole input); at most MAX_TRACED_FIELDS. */
  readonly fields: readonly string[];
  /** Why, as the schema says it (`not an absolute path`, `unknown event`). */
  readonly reason: string;
  /** The agent, when `--agent` or the payload told it. */
  readonly agent?: Agent | undefined;
  /** The event, when a well-formed event name was given (payload or `--event`), known or not. */
  readonly event?: string | undefined;
  /** A program other than the agent whose hook it is, recognised by its payload's shape (`vscode`). */
  readonly caller?: ForeignCaller | undefined;
}

/**
 * Programs that run agents' hooks but are no agent Turnkeeper serves. `vscode`: VS Code's own chat
 * agent, which reads .claude/settings.json, ~/.claude/settings.json and .github/hooks by default
 * (chat.hookFilesLocations) and sends `{timestamp, hookEventName, sessionId, cwd, transcript_path,
 * prompt | tool_name, tool_input, tool_use_id}` (src/vs/workbench/contrib/chat/common/hooks,
 * hooksCommandTypes.ts): camelCase common fields with the event's own fields in snake_case.
 */
export const FOREIGN_CALLERS = ['vscode'] as const;
export type ForeignCaller = (typeof FOREIGN_CALLERS)[number];
export const FOREIGN_CALLER_NAMES: Readonly<Record<ForeignCaller, string>> = { vscode: "VS Code's chat agent" };

const MAX_TRACED_FIELDS = 8;

export class InvalidHookInput extends Error {
  constructor(
    readonly problem: string,
    readonly trace: RejectionTrace,
  ) {
    super(`invalid hook input: ${problem}`);
    this.name = 'InvalidHookInput';
  }
}

/** An event name a trace may keep: a word, as every agent's events are (the rest is content). */
const traceableEvent = (name: unknown): string | undefined => (typeof name === 'string' && /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name) ? name : undefined);

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
const eventName = z.string().check(z.maxLength(64));
const ANY_LENGTH = MAX_HOOK_INPUT_BYTES;

const lazy = <T>(make: () => T): (() => T) => {
  let value: T | undefined;
  return () => (value ??= make());
};
/**
 * The optional fields of each dialect (built on first use, like the schemas). An agent that has no value may send the field empty (Gemini CLI
 * 0.61: `"transcript_path": ""` while the session has no chat file yet): an empty string there means
 * absent, as null does, and is never a reason to drop the payload. Required fields stay required.
 */
const snakeOptional = lazy(() => ({
  transcript_path: pathString,
  turn_id: idString,
  prompt_id: idString,
  prompt: wellFormed(ANY_LENGTH),
  tool_name: wellFormed(256),
  model: wellFormed(256),
  permission_mode: wellFormed(256),
  timestamp: wellFormed(256),
  source: wellFormed(256),
}));
// Copilot CLI under camelCase event names: `timestamp` is milliseconds since the epoch. Grok Build's
// envelope adds `hookEventName` and `promptId` (src/agents/profiles/grok.ts).
const camelOptional = lazy(() => ({
  hookEventName: eventName,
  promptId: idString,
  transcriptPath: pathString,
  prompt: wellFormed(ANY_LENGTH),
  toolName: wellFormed(256),
  timestamp: z.union([z.number(), wellFormed(256)]),
  source: wellFormed(256),
}));
// Goose's HookContext (src/agents/profiles/goose.ts): `working_dir` on Stop only, the prompt in `message`.
const hookContextOptional = lazy(() => ({
  working_dir: pathString,
  message: wellFormed(ANY_LENGTH),
  tool_name: wellFormed(256),
}));
const nullish = <T extends Record<string, z.ZodMiniType>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([key, schema]) => [key, z.nullish(schema)])) as { [K in keyof T]: z.ZodMiniOptional<z.ZodMiniNullable<T[K]>> };

// Each dialect's schema is built on first use: building schemas is start-up time every hook pays.
const makeSnakeSchema = () => z.looseObject({ hook_event_name: eventName, session_id: idString, cwd: pathString, ...nullish(snakeOptional()) });
const makeCamelSchema = () => z.looseObject({ sessionId: idString, cwd: pathString, ...nullish(camelOptional()) });
const makeHookContextSchema = () => z.looseObject({ event: eventName, session_id: idString, ...nullish(hookContextOptional()) });

/** The payload without its empty optional fields: detection and validation read them as absent. */
function withoutEmptyOptionals(payload: Readonly<Record<string, unknown>>, dialect: PayloadDialect): Readonly<Record<string, unknown>> {
  const optional = dialect === 'camel' ? camelOptional() : dialect === 'hookContext' ? hookContextOptional() : snakeOptional();
  const empty = (key: string, value: unknown): boolean => value === '' && Object.hasOwn(optional, key);
  if (!Object.entries(payload).some(([key, value]) => empty(key, value))) return payload;
  return Object.fromEntries(Object.entries(payload).filter(([key, value]) => !empty(key, value)));
}
let snakeSchema: ReturnType<typeof makeSnakeSchema> | undefined;
let camelSchema: ReturnType<typeof makeCamelSchema> | undefined;
let hookContextSchema: ReturnType<typeof makeHookContextSchema> | undefined;

/** The fields every dialect maps onto. */
interface Fields {
  readonly eventName: string | undefined;
  readonly session: string;
  /** Undefined only for a dialect whose payloads may carry none (Goose): then the hook process's. */
  readonly cwd: string | undefined;
  readonly transcriptPath: string | null | undefined;
  readonly source: string | null | undefined;
  readonly turnId: string | null | undefined;
  readonly promptId: string | null | undefined;
  readonly prompt: string | null | undefined;
  readonly toolName: string | null | undefined;
}

const isObject = (value: unknown): value is Readonly<Record<string, unknown>> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** How a refusal names a payload's dialect. */
const DIALECT_NAMES: Readonly<Record<PayloadDialect, string>> = { snake: 'snake_case', camel: 'camelCase', hookContext: '`event`/`session_id`' };

/** camelCase when it has `sessionId` and no `session_id`; Goose's when it names its event in `event` rather than `hook_event_name`. */
const dialectOf = (payload: Readonly<Record<string, unknown>>): PayloadDialect =>
  Object.hasOwn(payload, 'sessionId') && !Object.hasOwn(payload, 'session_id')
    ? 'camel'
    : Object.hasOwn(payload, 'event') && Object.hasOwn(payload, 'session_id') && !Object.hasOwn(payload, 'hook_event_name')
      ? 'hookContext'
      : 'snake';

/**
 * The program that sent this payload when it is not an agent Turnkeeper serves, whatever hook it
 * called (spec §2, "Foreign callers"): a camelCase payload that names its event in `hookEventName`
 * is Grok Build's envelope or VS Code's chat agent; Copilot CLI's camelCase payloads name none. Grok's
 * is served as Grok's (its profile detects it), so what is left is VS Code's.
 */
function foreignCallerOf(payload: Readonly<Record<string, unknown>>, env: Env = {}): ForeignCaller | undefined {
  if (dialectOf(payload) !== 'camel' || typeof payload.hookEventName !== 'string') return undefined;
  return servedAs(payload, env) === undefined ? 'vscode' : undefined;
}

/**
 * Spec §2: Codex (`turn_id`, or `model` with `permission_mode`), Gemini (`timestamp` with a Gemini
 * event), Grok Build (its `hookEventName`, or GROK_HOOK_EVENT), Copilot (camelCase `sessionId`, or
 * COPILOT_CLI=1), Goose (`event` with `session_id`), else Claude: each profile's `detect`.
 */
export function detectAgent(payload: Readonly<Record<string, unknown>>, env: Env = {}): Agent {
  return DETECT_ORDER.find((agent) => PROFILES[agent].payload.detect?.(payload, env) === true) ?? FALLBACK_AGENT;
}

/** The JSON type of a value, which is all of it a reason may say. */
const jsonType = (value: unknown): string => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

/**
 * Why a field failed, in words (zod/mini carries no messages but our own: its default is "Invalid
 * input"). Names the type found, never the value.
 */
function issueReason(issue: z.core.$ZodIssue, json: unknown): string {
  if (issue.code === 'invalid_type') {
    const found = issue.path.reduce<unknown>(
      (value, key) => (typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined),
      json,
    );
    return `expected ${issue.expected}, got ${jsonType(found)}`;
  }
  if (issue.code === 'too_big' && issue.origin === 'string') return `longer than ${issue.maximum} characters`;
  if (issue.code === 'invalid_union') return 'none of the accepted types';
  return issue.message;
}

function fieldsOf(dialect: PayloadDialect, json: unknown, trace: Pick<RejectionTrace, 'agent' | 'event'>): Fields {
  const parsed =
    dialect === 'camel'
      ? (camelSchema ??= makeCamelSchema()).safeParse(json)
      : dialect === 'hookContext'
        ? (hookContextSchema ??= makeHookContextSchema()).safeParse(json)
        : (snakeSchema ??= makeSnakeSchema()).safeParse(json);
  if (!parsed.success) {
    const pathOf = (issue: (typeof parsed.error.issues)[number]): string => issue.path.map(String).join('.') || 'payload';
    const issue = parsed.error.issues[0];
    const reason = issue ? issueReason(issue, json) : 'invalid';
    const fields = [...new Set(parsed.error.issues.map(pathOf))].slice(0, MAX_TRACED_FIELDS);
    throw new InvalidHookInput(`${issue ? pathOf(issue) : 'payload'}: ${reason}`, { source: 'payload', fields, reason, ...trace });
  }
  if (dialect === 'camel') {
    const p = parsed.data as z.infer<ReturnType<typeof makeCamelSchema>>;
    return {
      eventName: p.hookEventName ?? undefined,
      session: p.sessionId,
      cwd: p.cwd,
      transcriptPath: p.transcriptPath,
      source: p.source,
      turnId: undefined,
      promptId: p.promptId,
      prompt: p.prompt,
      toolName: p.toolName,
    };
  }
  if (dialect === 'hookContext') {
    const p = parsed.data as z.infer<ReturnType<typeof makeHookContextSchema>>;
    return {
      eventName: p.event,
      session: p.session_id,
      cwd: p.working_dir ?? undefined,
      transcriptPath: undefined,
      source: undefined,
      turnId: undefined,
      promptId: undefined,
      prompt: p.message,
      toolName: p.tool_name,
    };
  }
  const p = parsed.data as z.infer<ReturnType<typeof makeSnakeSchema>>;
  return {
    eventName: p.hook_event_name,
    session: p.session_id,
    cwd: p.cwd,
    transcriptPath: p.transcript_path,
    source: p.source,
    turnId: p.turn_id,
    promptId: p.prompt_id,
    prompt: p.prompt,
    toolName: p.tool_name,
  };
}

/** Parses raw stdin into a HookEvent, or throws InvalidHookInput naming the first problem. */
export function parseHookInput(raw: string | Buffer, forcedAgent?: Agent, context: HookContext = {}): HookEvent {
  const env = context.env ?? {};
  let traced: Pick<RejectionTrace, 'agent' | 'event'> = { agent: forcedAgent, event: traceableEvent(context.event) };
  const invalid = (problem: string, fields: readonly string[], reason: string): InvalidHookInput =>
    new InvalidHookInput(problem, { source: 'payload', fields, reason, ...traced });
  const size = typeof raw === 'string' ? Buffer.byteLength(raw, 'utf8') : raw.length;
  if (size > MAX_HOOK_INPUT_BYTES)
    throw invalid(`input is ${size} bytes, over the ${MAX_HOOK_INPUT_BYTES}-byte limit`, ['payload'], `over the ${MAX_HOOK_INPUT_BYTES}-byte limit`);
  let json: unknown;
  try {
    json = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch (error) {
    throw invalid(`not JSON (${(error as Error).message})`, ['payload'], 'not JSON');
  }
  if (!isObject(json)) throw invalid('payload: not a JSON object', ['payload'], 'not a JSON object');
  const dialect = dialectOf(json);
  const payload = withoutEmptyOptionals(json, dialect);
  // Another program calling this hook (spec §2, "Foreign callers"): never read as the agent whose hook
  // it is. VS Code's chat agent is no agent Turnkeeper serves: refused, and the trace names it.
  const caller = foreignCallerOf(payload, env);
  if (caller !== undefined) {
    const event = traceableEvent(payload.hookEventName);
    traced = { agent: forcedAgent, event: event ?? traced.event };
    const problem = `a payload of ${FOREIGN_CALLER_NAMES[caller]} (camelCase sessionId with hookEventName), not ${forcedAgent ? `a ${forcedAgent}` : 'an agent'} payload`;
    throw new InvalidHookInput(problem, {
      source: 'payload',
      fields: ['hookEventName', 'sessionId'],
      reason: `sent by ${FOREIGN_CALLER_NAMES[caller]}`,
      caller,
      ...traced,
    });
  }
  // Grok Build runs the hooks in Claude Code's settings files with its own payload: whoever's hook it
  // is, a payload an agent's profile recognises as its own is served as that agent, under its session.
  const agent = servedAs(payload, env) ?? forcedAgent ?? detectAgent(payload, env);
  traced = { agent, event: traceableEvent(payload.hook_event_name) ?? traceableEvent(payload.hookEventName) ?? traceableEvent(payload.event) ?? traced.event };
  const profile = PROFILES[agent];
  if (!profile.payload.dialects.includes(dialect)) {
    const problem = `a ${DIALECT_NAMES[dialect]} payload is not a ${agent} payload`;
    throw invalid(problem, ['payload'], problem);
  }
  const normalized = profile.payload.normalize?.(payload) ?? payload;
  const fields = fieldsOf(dialect, normalized, traced);

  // The payload names its event, or the installed command does (`--event`). When both do, they
  // must mean the same event (Copilot sends `UserPromptSubmit` to a command installed for
  // `userPromptSubmitted` only if someone moved it); the payload's own name is the one echoed.
  const kindOf = (name: string, field: string): EventKind => {
    const kind = Object.hasOwn(profile.events.accepted, name) ? profile.events.accepted[name] : undefined;
    if (kind === undefined) throw invalid(`unknown ${agent} event ${JSON.stringify(name)}`, [field], `unknown ${agent} event`);
    return kind;
  };
  const name = fields.eventName ?? context.event;
  if (name === undefined)
    throw invalid(`the ${agent} payload names no event: the hook command must pass --event <name>`, ['--event'], 'no event named (no --event <name>)');
  const named = kindOf(name, fields.eventName !== undefined ? 'hook_event_name' : '--event');
  const kind = profile.payload.kindOf?.(normalized, named) ?? named;
  if (context.event !== undefined && fields.eventName !== undefined && kindOf(context.event, '--event') !== named) {
    throw invalid(
      `--event ${JSON.stringify(context.event)} but the payload says ${JSON.stringify(fields.eventName)}`,
      ['--event', 'hook_event_name'],
      '--event names another event than the payload',
    );
  }

  const cwd = fields.cwd ?? context.processCwd;
  if (cwd === undefined) throw invalid(`the ${agent} payload names no working directory`, ['working_dir'], 'no working directory');
  const turnField = profile.payload.turnField;
  const payloadTurn = turnField === 'turn_id' ? fields.turnId : turnField === 'prompt_id' ? fields.promptId : undefined;
  const clean = profile.payload.cleanPrompt;
  const prompt = fields.prompt == null ? undefined : clean ? clean(fields.prompt) : fields.prompt;
  return {
    agent,
    eventName: name,
    kind,
    session: fields.session,
    turn: kind === 'session_start' ? undefined : (payloadTurn ?? undefined),
    cwd,
    transcriptPath: fields.transcriptPath ?? profile.payload.transcriptFallback?.(fields.session, env),
    sessionSource: kind === 'session_start' ? (fields.source ?? undefined) : undefined,
    prompt,
    toolName: fields.toolName ?? undefined,
  };
}

/**
 * The agent whose own envelope this is (its profile's `ownEnvelope`), served as itself whatever
 * `--agent` the hook was installed with: Grok Build's, which reaches Claude Code's hooks through
 * Grok's Claude compatibility.
 */
function servedAs(payload: Readonly<Record<string, unknown>>, env: Env): Agent | undefined {
  return AGENTS.find((agent) => PROFILES[agent].payload.ownEnvelope?.(payload, env) === true);
}

export const isWriteTool = (agent: Agent, toolName: string | undefined): boolean => toolName !== undefined && PROFILES[agent].writeTools.has(toolName);
