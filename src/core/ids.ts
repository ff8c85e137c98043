// Grammars of the identifiers the spec fixes (spec §1). Everything that accepts an id from outside
// checks it here first: ids end up in file names, commands and guidance text.
import { digestText } from './canonical';
export const AGENTS = ['codex', 'claude', 'gemini', 'copilot', 'qwen', 'opencode', 'goose', 'grok'] as const;
export type Agent = (typeof AGENTS)[number];

const TODO_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{2,63}$/;
// `_` too: OpenCode's ids are `ses_<base62>` and `msg_<base62>`.
const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const CAPTURE_ID_PATTERN = /^cap_[0-9a-f]{24}$/;
/** The nonce a launch puts in its agent's environment (TURNKEEPER_LAUNCH) and in its receipt. */
const LAUNCH_ID_PATTERN = /^launch_[0-9a-f]{16}$/;

export const isAgent = (value: unknown): value is Agent => typeof value === 'string' && (AGENTS as readonly string[]).includes(value);
/**
 * A grammar check: a type guard for a value of unknown type; for a string, a plain boolean (a string
 * that fails the grammar is still a string: a guard would narrow it to `never`).
 */
export interface GrammarCheck {
  (value: string): boolean;
  (value: unknown): value is string;
}
const grammar = (pattern: RegExp): GrammarCheck => ((value: unknown) => typeof value === 'string' && pattern.test(value)) as GrammarCheck;
export const isTodoId = grammar(TODO_ID_PATTERN);
export const isSessionId = grammar(SESSION_ID_PATTERN);
/** Turn ids share the session grammar. */
export const isTurnId = grammar(SESSION_ID_PATTERN);
export const isCaptureId = grammar(CAPTURE_ID_PATTERN);
export const isLaunchId = grammar(LAUNCH_ID_PATTERN);

/** The holder of a lease: `<agent>:<session>`. */
export type Owner = `${Agent}:${string}`;
export const ownerOf = (agent: Agent, session: string): Owner => `${agent}:${session}`;
export const isOwner = (value: unknown): value is Owner => {
  if (typeof value !== 'string') return false;
  const colon = value.indexOf(':');
  return colon > 0 && isAgent(value.slice(0, colon)) && isSessionId(value.slice(colon + 1));
};

/** `#todo:<id>` in prompt text binds that Todo. The first well-formed mention wins. */
const TODO_MENTION = /#todo:([a-z0-9][a-z0-9_-]{2,63})(?![a-z0-9_-])/;
export function todoMentionedIn(prompt: string): string | undefined {
  return TODO_MENTION.exec(prompt)?.[1];
}

/**
 * A mention that means a Todo but is not a well-formed id (`#todo:Fix-Login`, `#TODO:fix-login`,
 * `#todo:ab`): what was written, so guidance can say why it binds nothing. Undefined when there is none.
 */
const ANY_MENTION = /#todo:(\S{0,80})/i;
export function malformedTodoMention(prompt: string): string | undefined {
  if (todoMentionedIn(prompt) !== undefined) return undefined;
  const found = ANY_MENTION.exec(prompt);
  return found ? found[0] : undefined;
}

/** The Todo id grammar in plain words, for people (guidance, usage errors). */
export const TODO_ID_RULE = '3 to 64 characters: lower-case letters a-z, digits, "-" and "_", starting with a letter or digit (e.g. fix-login)';

/**
 * A Todo id derived from a title when the user gives none: lower-case words joined by '-'. Letters
 * and digits with no ASCII form (Cyrillic, CJK, …) would vanish from the slug, and every such title
 * would get the same id (`todo-x`): then the id ends with 8 hex digits of the title's digest, so
 * different titles get different ids and the same title the same id.
 */
export function todoIdFromTitle(title: string): string {
  // Accents go with their letter (é → e); what is left outside a-z0-9 separates words.
  const folded = title.toLowerCase().normalize('NFKD').replace(/\p{M}/gu, '');
  const slug = folded
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
  const lossy = /[\p{L}\p{N}]/u.test(folded.replace(/[a-z0-9]/g, ''));
  if (lossy) return `${slug || 'todo'}-${digestText(title.normalize('NFC')).slice('sha256:'.length, 'sha256:'.length + 8)}`;
  return slug.length >= 3 ? slug : `todo-${slug || 'x'}`.slice(0, 64);
}
