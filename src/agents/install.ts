// Installs Turnkeeper's hook into each agent's own JSON config (spec §8).
//
// Users keep comments, other hooks and their own formatting in these files, and `uninstall` must give
// them back byte for byte. jsonc-parser's `modify` re-formats every line it touches, so the edits are
// computed here from `parseTree` offsets and applied with `applyEdits`. Each insertion has one shape
// that the matching removal recognises from the content alone; nothing is remembered on disk:
//   - into a container with members: `,<eol><indent><member>` right after the last member;
//     removal deletes from the end of the previous member to the end of ours.
//   - into the empty root `{}`: `<eol><indent><member><eol>`; removal empties the interior again.
//   - into any other empty container `[W]`/`{W}`: `W<eol><indent><member>` with nothing before the
//     closing bracket; removal deletes our member and the line break just before it, leaving W.
//   - a container we create ("hooks", or an event array) is printed with its closing bracket on its
//     own line, which the fill of an existing empty container never produces: that is how removal
//     tells "we created this, remove the key" from "this was empty before, leave it empty".
// The one thing the content cannot tell is that the whole file is ours: install made it from nothing
// (or from a blank file), so uninstall should delete it (or give the blank back) rather than leave
// `{}`. Install records that in the backup directory, with a digest of what it wrote; uninstall
// trusts the record only while the file still holds exactly what Turnkeeper last wrote. Reading and
// writing the file safely (lossless bytes, symlinks, backups, that record) is ./configFiles.ts's.
import { join, resolve } from 'node:path';
import { readConfigFile } from '../files/boundedFile';
import { applyEdits, parseTree, printParseErrorCode, type Edit, type Node, type ParseError } from 'jsonc-parser';
import { decodeBytes, HookConfigError, rewrite, splitBom, type InstallResult, type RewriteShapes, type WriteOptions } from './configFiles';
import { AGENTS, type Agent } from '../core/ids';
import { byAgent, PROFILES, type AgentProfile } from './profiles/index';
export type { Env, Scope } from './profiles/index';
export { decodeBytes, encodeText, HookConfigError, readJsonConfig, type InstallResult, type WriteOptions } from './configFiles';
import type { Env, Scope } from './profiles/index';

export interface HookTarget {
  readonly agent: Agent;
  readonly scope: Scope;
  readonly env: Env;
  /** Required for the project scope. */
  readonly projectRoot?: string;
}

export interface HooksStatus {
  readonly path: string;
  readonly exists: boolean;
  /** Every event of the agent has a hook with exactly this command. */
  readonly installed: boolean;
  readonly events: Readonly<Record<string, boolean>>;
  /** Turnkeeper-looking commands that differ from the current one (an older shim path, another agent). */
  readonly staleCommands: readonly string[];
  /** Set when the file exists but cannot be read as a config (status never throws for that: doctor lists every file). */
  readonly error?: string;
}

/** The events `hooks install` registers for each agent, in order (from its profile). */
export const HOOK_EVENTS: Readonly<Record<Agent, readonly string[]>> = byAgent((profile) => Object.keys(profile.events.installed));

/** Matches any command an install of Turnkeeper wrote, whatever its shim path (or `turnkeeper` from PATH, project scope), agent or event. */
export const TURNKEEPER_COMMAND_PATTERN = new RegExp(
  `(?:['"]?[^'"]*/bin/turnkeeper['"]?|^turnkeeper) hook --agent (${AGENTS.join('|')})( --event [A-Za-z]{1,64})?$`,
);

/** Quotes a string for POSIX sh: single quotes, each inner `'` written as `'\''`. */
export const shQuote = (value: string): string => `'${value.replace(/'/g, "'\\''")}'`;

/**
 * The command every agent config points at. It names the stable shim, never Turnkeeper's install
 * location, so it stays byte-identical across upgrades (Codex skips a changed hook until re-trusted).
 */
export const installedHookCommand = (agent: Agent, shimPath: string): string => `${shQuote(shimPath)} hook --agent ${agent}`;

/**
 * The command installed for one event: `command` itself, or, for an agent whose payloads name no
 * event (Copilot), `command --event <event>`. Each stays byte-identical across upgrades.
 */
export const eventCommand = (agent: Agent, command: string, event: string): string =>
  PROFILES[agent].events.source === 'command' ? `${command} --event ${event}` : command;

/** `command` or one of its per-event forms. */
const isCommandOf = (agent: Agent, command: string, value: string): boolean =>
  value === command ||
  (PROFILES[agent].events.source === 'command' && value.startsWith(`${command} --event `) && /^[A-Za-z]{1,64}$/.test(value.slice(command.length + 9)));

export function hookConfigPath(target: HookTarget): string {
  const { agent, scope, env } = target;
  if (scope === 'project') {
    if (target.projectRoot === undefined || target.projectRoot === '') throw new Error('project scope needs a project root');
    return join(resolve(target.projectRoot), PROFILES[agent].install.projectConfig);
  }
  return PROFILES[agent].install.userConfig(env);
}

/** What one event's array gets: a matcher group around the entry (no `matcher`: every tool and source), or the entry itself. */
function hookGroup(agent: Agent, command: string, event: string): Record<string, unknown> {
  const { entry, layout, timeout } = PROFILES[agent].install;
  const handler = entry(eventCommand(agent, command, event), timeout);
  return layout === 'flat' ? handler : { hooks: [handler] };
}

// ---------------------------------------------------------------------------------------------
// Public operations

/**
 * Where a project-scope write may land: inside the project. A repository can commit its config as a
 * symlink (git keeps them) to the user's own settings; following it would edit them. The user scope
 * writes through symlinks (dotfile managers, spec §8).
 */
const confinementOf = (target: HookTarget): string | undefined => (target.scope === 'project' ? resolve(target.projectRoot ?? '') : undefined);

/**
 * Adds `command`'s hooks where they are missing. With `replaceStale`, other Turnkeeper commands (an
 * earlier install's shim path, say) are removed in the same edit: one write, one backup, and no moment
 * without hooks.
 */
export function installHooks(target: HookTarget, command: string, options: WriteOptions, replaceStale = false): InstallResult {
  const path = hookConfigPath(target);
  const plugin = PROFILES[target.agent].install.plugin;
  if (plugin !== undefined)
    return rewrite(path, confinementOf(target), options, 'install', PLUGIN_SHAPES, (text) => installPlugin(path, plugin, command, text));
  const isStale = (value: string): boolean => TURNKEEPER_COMMAND_PATTERN.test(value) && !isCommandOf(target.agent, command, value);
  return rewrite(path, confinementOf(target), options, 'install', SHAPES, (text) =>
    text === undefined ? freshConfig(target.agent, command) : addHooks(path, replaceStale ? removeHooks(path, text, isStale) : text, target.agent, command),
  );
}

/** Removes our hook entries: exactly `command` (or its per-event forms) when given, otherwise anything Turnkeeper-looking. */
export function uninstallHooks(target: HookTarget, command: string | undefined, options: WriteOptions): InstallResult {
  const path = hookConfigPath(target);
  const plugin = PROFILES[target.agent].install.plugin;
  if (plugin !== undefined)
    return rewrite(path, confinementOf(target), options, 'uninstall', PLUGIN_SHAPES, (text) => uninstallPlugin(path, plugin, command, text));
  const isOurs = (value: string): boolean => (command === undefined ? TURNKEEPER_COMMAND_PATTERN.test(value) : isCommandOf(target.agent, command, value));
  return rewrite(path, confinementOf(target), options, 'uninstall', SHAPES, (text) => (text === undefined ? undefined : removeHooks(path, text, isOurs)));
}

export function hooksStatus(target: HookTarget, command: string): HooksStatus {
  const path = hookConfigPath(target);
  const events: Record<string, boolean> = {};
  for (const event of HOOK_EVENTS[target.agent]) events[event] = false;
  const raw = readConfigFile(path);
  if (raw.kind === 'missing') return { path, exists: false, installed: false, events, staleCommands: [] };
  if (raw.kind === 'refused') return { path, exists: true, installed: false, events, staleCommands: [], error: new HookConfigError(path, raw.problem).message };
  const text = decodeBytes(raw.bytes);
  const plugin = PROFILES[target.agent].install.plugin;
  if (plugin !== undefined) return pluginStatus(path, plugin, command, text, events);
  const stale = new Set<string>();
  let hooks: Node | undefined;
  try {
    hooks = parseConfig(path, text).hooks;
  } catch (error) {
    if (!(error instanceof HookConfigError)) throw error;
    return { path, exists: true, installed: false, events, staleCommands: [], error: error.message };
  }
  for (const prop of hooks?.children ?? []) {
    const event = keyOf(prop);
    const expected = eventCommand(target.agent, command, event);
    for (const group of arrayItems(prop.children?.[1])) {
      for (const entry of groupEntries(group)) {
        const cmd = commandOf(entry);
        if (cmd === expected && Object.hasOwn(events, event)) events[event] = true;
        else if (cmd !== undefined && cmd !== expected && TURNKEEPER_COMMAND_PATTERN.test(cmd)) stale.add(cmd);
      }
    }
  }
  return { path, exists: true, installed: Object.values(events).every(Boolean), events, staleCommands: [...stale] };
}

// ---------------------------------------------------------------------------------------------
// A plugin file of Turnkeeper's own (OpenCode): written whole, never merged

type PluginShape = NonNullable<AgentProfile['install']['plugin']>;

/** Removing the plugin leaves nothing: the file is deleted (or, with a creation record of a blank file, the blank given back). */
const PLUGIN_SHAPES: RewriteShapes = { isBlank: (text) => splitBom(text).body.trim() === '', emptied: '', wholeFile: true };

function installPlugin(path: string, plugin: PluginShape, command: string, text: string | undefined): string {
  if (text === undefined || splitBom(text).body.trim() === '' || plugin.isOurs(text)) return plugin.source(command);
  throw new HookConfigError(path, 'this file is not the plugin Turnkeeper writes, and Turnkeeper does not overwrite it');
}

function uninstallPlugin(path: string, plugin: PluginShape, command: string | undefined, text: string | undefined): string | undefined {
  if (text === undefined || !plugin.isOurs(text)) return undefined;
  const installed = plugin.commandOf(text);
  if (installed === undefined) throw new HookConfigError(path, 'this plugin was changed since Turnkeeper wrote it: remove it by hand');
  return command === undefined || installed === command ? '' : undefined;
}

function pluginStatus(path: string, plugin: PluginShape, command: string, text: string, events: Record<string, boolean>): HooksStatus {
  const installed = plugin.commandOf(text);
  if (installed === command) for (const event of Object.keys(events)) events[event] = true;
  const staleCommands = installed !== undefined && installed !== command ? [installed] : [];
  const error =
    plugin.isOurs(text) && installed === undefined ? new HookConfigError(path, 'this plugin was changed since Turnkeeper wrote it').message : undefined;
  return { path, exists: true, installed: installed === command, events, staleCommands, ...(error === undefined ? {} : { error }) };
}

// ---------------------------------------------------------------------------------------------
// Install

function freshConfig(agent: Agent, command: string): string {
  const hooks: Record<string, unknown> = {};
  for (const event of HOOK_EVENTS[agent]) hooks[event] = [hookGroup(agent, command, event)];
  return `${JSON.stringify({ hooks }, null, 2)}\n`;
}
/** What removing every hook leaves of `freshConfig`: the "hooks" key goes, the empty root stays. */
const FRESH_REMAINDER = '{}\n';

/** No settings to keep: empty, or only whitespace (and a BOM). Install replaces such a file whole. */
const isBlank = (text: string): boolean => splitBom(text).body.trim() === '';

/** What configFiles.ts's creation record needs to know of this editor's texts. */
const SHAPES: RewriteShapes = { isBlank, emptied: FRESH_REMAINDER };

/** Adds one insertion at a time and re-parses, so each step sees the shape the last one left. */
function addHooks(path: string, original: string, agent: Agent, command: string): string {
  const { bom, body } = splitBom(original);
  if (isBlank(original)) return freshConfig(agent, command); // uninstall gives the blank back from the creation record
  let text = body;
  const style = detectStyle(text);
  for (;;) {
    const config = parseConfig(path, text);
    const edit = nextInstallEdit(path, text, config, agent, command, style);
    if (edit === undefined) return bom + text;
    text = applyEdits(text, [edit]);
  }
}

function nextInstallEdit(path: string, text: string, config: Config, agent: Agent, command: string, style: Style): Edit | undefined {
  const { root, hooks } = config;
  const events = HOOK_EVENTS[agent];
  if (hooks === undefined) {
    const value: Record<string, unknown> = {};
    for (const event of events) value[event] = [hookGroup(agent, command, event)];
    return insertMember(text, root, 'hooks', value, style);
  }
  for (const event of events) {
    const prop = propertyNamed(hooks, event);
    if (prop === undefined) return insertMember(text, hooks, event, [hookGroup(agent, command, event)], style);
    const array = prop.children?.[1];
    if (array?.type !== 'array') throw new HookConfigError(path, `"hooks.${event}" is not an array`);
    const expected = eventCommand(agent, command, event);
    const present = arrayItems(array).some((group) => groupEntries(group).some((entry) => commandOf(entry) === expected));
    if (!present) return insertMember(text, array, undefined, hookGroup(agent, command, event), style);
  }
  return undefined;
}

/** Inserts a property (key given) or an array element (key undefined) as the container's last member. */
function insertMember(text: string, container: Node, key: string | undefined, value: unknown, style: Style): Edit {
  const members = container.children ?? [];
  const last = members.at(-1);
  const indent = last !== undefined ? (lineIndent(text, last.offset) ?? childIndent(text, container, style)) : childIndent(text, container, style);
  const rendered = JSON.stringify(value, null, style.unit)
    .split('\n')
    .join(style.eol + indent);
  const member = (key === undefined ? '' : `${JSON.stringify(key)}: `) + rendered;
  if (last !== undefined) return { offset: last.offset + last.length, length: 0, content: `,${style.eol}${indent}${member}` };
  const open = container.offset + 1;
  const close = container.offset + container.length - 1;
  if (container.parent === undefined && open === close) {
    return { offset: open, length: 0, content: `${style.eol}${indent}${member}${style.eol}${lineIndentOf(text, container.offset)}` };
  }
  return { offset: close, length: 0, content: `${style.eol}${indent}${member}` };
}

// ---------------------------------------------------------------------------------------------
// Uninstall

/** Removes one piece at a time, always the last one in the document, so it undoes installs in reverse. */
function removeHooks(path: string, original: string, isOurs: (command: string) => boolean): string {
  const { bom, body } = splitBom(original);
  if (body.trim() === '') return original;
  let text = body;
  for (;;) {
    const config = parseConfig(path, text);
    const removals = plannedRemovals(text, config, isOurs);
    const lastRemoval = removals.sort((a, b) => b.offset - a.offset)[0];
    if (lastRemoval === undefined) return bom + text;
    text = applyEdits(text, [removeMember(text, lastRemoval)]);
  }
}

/** The outermost pieces that are entirely ours: the whole "hooks" key, an event key, a group, an entry. */
function plannedRemovals(text: string, config: Config, isOurs: (command: string) => boolean): Node[] {
  const { hooks } = config;
  if (hooks === undefined) return [];
  const isOurGroup = (group: Node): boolean => {
    const entries = groupEntries(group);
    return entries.length > 0 && entries.every((entry) => isOursCommand(entry, isOurs));
  };
  const isOurEvent = (prop: Node): boolean => {
    const array = prop.children?.[1];
    return array?.type === 'array' && createdByUs(text, array) && arrayItems(array).every(isOurGroup);
  };
  const eventProps = hooks.children ?? [];
  const hooksProp = hooks.parent;
  if (hooksProp !== undefined && createdByUs(text, hooks) && eventProps.every(isOurEvent)) return [hooksProp];
  const removals: Node[] = [];
  for (const prop of eventProps) {
    if (isOurEvent(prop)) {
      removals.push(prop);
      continue;
    }
    for (const group of arrayItems(prop.children?.[1])) {
      if (isOurGroup(group)) removals.push(group);
      else removals.push(...groupEntries(group).filter((entry) => isOursCommand(entry, isOurs)));
    }
  }
  return removals;
}

/** A container we printed: not empty, only whitespace around its members, closing bracket on its own line. */
function createdByUs(text: string, container: Node): boolean {
  const members = container.children ?? [];
  const first = members[0];
  const last = members.at(-1);
  if (first === undefined || last === undefined) return false;
  return (
    isLineBreakIndent(text.slice(container.offset + 1, first.offset)) &&
    isLineBreakIndent(text.slice(last.offset + last.length, container.offset + container.length - 1))
  );
}

/** Deletes a property or array element (given as the node itself, or its property node) with its separator. */
function removeMember(text: string, node: Node): Edit {
  const container = node.parent;
  if (container === undefined) throw new Error('cannot remove the root');
  const members = container.children ?? [];
  const index = members.indexOf(node);
  const start = node.offset;
  const end = node.offset + node.length;
  const previous = members[index - 1];
  if (previous !== undefined) return deletion(previous.offset + previous.length, end);
  const next = members[index + 1];
  if (next !== undefined) return deletion(start, next.offset);
  const open = container.offset + 1;
  const close = container.offset + container.length - 1;
  const leading = text.slice(open, start);
  const trailing = text.slice(end, close);
  if (trailing === '') {
    // Filled from an empty container: take back our line break, leave what was there before.
    const ours = /\r?\n[ \t]*$/.exec(leading);
    return deletion(ours === null ? start : open + ours.index, end);
  }
  if (/^\s*$/.test(leading) && /^\s*$/.test(trailing)) return deletion(open, close);
  return deletion(start, end);
}

const deletion = (from: number, to: number): Edit => ({ offset: from, length: to - from, content: '' });

// ---------------------------------------------------------------------------------------------
// Parsing helpers

interface Config {
  readonly root: Node;
  /** The value of the top-level "hooks" key, when there is one. */
  readonly hooks: Node | undefined;
}

function parseConfig(path: string, original: string): Config {
  const text = splitBom(original).body;
  if (text.trim() === '') return { root: { type: 'object', offset: 0, length: 0, children: [] }, hooks: undefined };
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const error = errors[0];
  if (error !== undefined) throw new HookConfigError(path, `not valid JSON with comments (${printParseErrorCode(error.error)} at offset ${error.offset})`);
  if (root?.type !== 'object') throw new HookConfigError(path, 'the top level is not a JSON object');
  rejectDuplicateKeys(path, root, '');
  const hooksProp = propertyNamed(root, 'hooks');
  if (hooksProp === undefined) return { root, hooks: undefined };
  const hooks = hooksProp.children?.[1];
  if (hooks?.type !== 'object') throw new HookConfigError(path, '"hooks" is not an object');
  rejectDuplicateKeys(path, hooks, 'hooks.');
  return { root, hooks };
}

/** Agents keep the last of two equal keys and we would edit the first: refuse rather than guess. */
function rejectDuplicateKeys(path: string, object: Node, prefix: string): void {
  const seen = new Set<string>();
  for (const prop of object.children ?? []) {
    const key = keyOf(prop);
    if (seen.has(key)) throw new HookConfigError(path, `the key "${prefix}${key}" appears twice`);
    seen.add(key);
  }
}

const keyOf = (prop: Node): string => String(prop.children?.[0]?.value);
const propertyNamed = (object: Node, key: string): Node | undefined => object.children?.find((prop) => keyOf(prop) === key);
const arrayItems = (node: Node | undefined): Node[] => (node?.type === 'array' ? (node.children ?? []) : []);
/**
 * The hook entries of one item of an event's array: a matcher group's `hooks` (when it is an
 * array), or the item itself when it has no `hooks` key (Copilot's flat entries).
 */
function groupEntries(group: Node): Node[] {
  if (group.type !== 'object') return [];
  const nested = propertyNamed(group, 'hooks');
  return nested === undefined ? [group] : arrayItems(nested.children?.[1]);
}
function commandOf(entry: Node): string | undefined {
  if (entry.type !== 'object') return undefined;
  const value = propertyNamed(entry, 'command')?.children?.[1];
  return value?.type === 'string' && typeof value.value === 'string' ? value.value : undefined;
}
function isOursCommand(entry: Node, isOurs: (command: string) => boolean): boolean {
  const command = commandOf(entry);
  return command !== undefined && isOurs(command);
}

// ---------------------------------------------------------------------------------------------
// Layout: follow the file's own indentation and line endings

interface Style {
  readonly eol: string;
  /** One indentation level: a tab or some spaces. */
  readonly unit: string;
}

function detectStyle(text: string): Style {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  let tabs = 0;
  let spaces = 0;
  let smallest = Infinity;
  for (const match of text.matchAll(/\n([ \t]+)\S/g)) {
    const indent = match[1] ?? '';
    if (indent.startsWith('\t')) tabs++;
    else {
      spaces++;
      smallest = Math.min(smallest, indent.length);
    }
  }
  if (tabs > spaces) return { eol, unit: '\t' };
  return { eol, unit: ' '.repeat(Number.isFinite(smallest) ? Math.min(smallest, 8) : 2) };
}

const isLineBreakIndent = (gap: string): boolean => /^\r?\n[ \t]*$/.test(gap);

/** The indentation before `offset` when only whitespace precedes it on its line. */
function lineIndent(text: string, offset: number): string | undefined {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  const before = text.slice(lineStart, offset);
  return /^[ \t]*$/.test(before) ? before : undefined;
}
/** The leading whitespace of the line that holds `offset`. */
function lineIndentOf(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart, offset))?.[0] ?? '';
}
const childIndent = (text: string, container: Node, style: Style): string => lineIndentOf(text, container.offset) + style.unit;
