// Goal identity (spec §1): which repository a checkout belongs to, as a key and its id. Pure:
// src/checkout/goal.ts reads the files and hands their text here. Every rule is written down in
// docs/goals.md. The guiding rule: anything this module cannot read with certainty yields "no key
// from this rule" (the next rule applies), never a guessed key that another repository could share.
import { parseTree, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { derivedHex } from './canonical';

const GOAL_DOMAIN = 'turnkeeper.goal/v1';
const GOAL_ID_PATTERN = /^goal_[0-9a-f]{24}$/;

/** `goal_` + first 24 hex of sha256("turnkeeper.goal/v1\n" + key). */
export function goalIdOf(key: string): string {
  return 'goal_' + derivedHex(GOAL_DOMAIN, key).slice(0, 24);
}

// For a string, a plain boolean: a string that fails the check is still a string (a guard would narrow it to `never`).
export function isGoalId(value: string): boolean;
export function isGoalId(value: unknown): value is string;
export function isGoalId(value: unknown): boolean {
  return typeof value === 'string' && GOAL_ID_PATTERN.test(value);
}

/** The key of rule (c) and of a directory outside git. */
export function localKeyOf(realPath: string): string {
  return 'local:' + realPath;
}

export type GoalErrorCode =
  /** `.turnkeeper.json` exists at the checkout root but is not a valid goal file. */
  | 'turnkeeper_json_invalid'
  /** `.git` is a file that does not start with `gitdir: ` (git itself refuses such a checkout). */
  | 'gitfile_invalid'
  /** `.git` points at a git directory that is gone or incomplete (a pruned worktree, a moved repository). */
  | 'gitdir_missing';

/**
 * The checkout says which repository it is, but says it wrongly: no rule may stand in for it, since
 * a fallback would silently file the work under another Goal. The hook turns this into guidance.
 */
export class GoalError extends Error {
  override readonly name = 'GoalError';
  constructor(
    readonly code: GoalErrorCode,
    readonly detail: string,
    readonly path: string | null = null,
  ) {
    super(`${code}${path === null ? '' : ` (${path})`}: ${detail}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Rule (a): .turnkeeper.json

export const GOAL_FILE = '.turnkeeper.json';
export const MAX_GOAL_FILE_BYTES = 64 * 1024;
const MAX_GOAL_LENGTH = 256;

/**
 * The `goal` of a `.turnkeeper.json` (JSON with comments and trailing commas allowed, other keys
 * ignored). Throws GoalError('turnkeeper_json_invalid') for anything else: a team committed this
 * file to name its Goal, so a broken one must be fixed, not replaced by another rule's key.
 */
export function parseTurnkeeperJson(text: string): { readonly goal: string } {
  const invalid = (detail: string): never => {
    throw new GoalError('turnkeeper_json_invalid', detail);
  };
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const errors: ParseError[] = [];
  const root = parseTree(body, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) invalid(`not valid JSON: ${printParseErrorCode(errors[0]!.error)} at offset ${errors[0]!.offset}`);
  if (root?.type !== 'object') invalid('the file must hold one JSON object, {"goal": "<name>"}');
  const goals = (root!.children ?? []).filter((property) => property.children?.[0]?.value === 'goal');
  if (goals.length === 0) invalid('no "goal" key');
  if (goals.length > 1) invalid('"goal" is given more than once');
  const value: unknown = goals[0]!.children?.[1]?.value;
  if (goals[0]!.children?.[1]?.type !== 'string' || typeof value !== 'string') invalid('"goal" must be a string');
  const goal = value as string;
  if (goal.length === 0) invalid('"goal" is empty');
  if (goal.length > MAX_GOAL_LENGTH) invalid(`"goal" is longer than ${MAX_GOAL_LENGTH} characters`);
  if (goal.trim() !== goal) invalid('"goal" starts or ends with white space');
  // Control characters (C0, DEL, C1) would be invisible in every place the Goal is shown.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(goal) || !goal.isWellFormed()) invalid('"goal" holds control characters or a lone surrogate');
  return { goal };
}

// ---------------------------------------------------------------------------------------------
// Rule (b): the origin remote

/** Schemes whose URLs name a repository on a server, with the port each drops as the default. */
const DEFAULT_PORTS: Readonly<Record<string, number>> = {
  ssh: 22,
  'git+ssh': 22,
  'ssh+git': 22,
  https: 443,
  http: 80,
  git: 9418,
};
const MAX_URL_LENGTH = 2048;
const HOST_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$/;
const HOST_IPV6 = /^\[[0-9A-Fa-f:.]+\]$/;
const UNSAFE_IN_PATH = /[\s\u0000-\u001f\u007f\\/@:?#]/;

/**
 * The key of a remote URL: `host[:port]/path`, e.g. `github.com/acme/app`. Credentials, a default
 * port, leading and repeated `/`, a trailing `/` and one `.git` are dropped, the host is lower-cased,
 * the path keeps its case; URL forms are percent-decoded. `git@host:a/b`, `ssh://git@host/a/b`,
 * `https://host/a/b.git` and `git://host/a/b` are one key. Undefined for local paths (`/srv/a.git`,
 * `../a`, `file://`), remote helpers (`transport::address`), other schemes, and anything ambiguous
 * (white space, `@`, `:`, `?` or `#` in the path, `.` or `..` segments, a single-letter scp host,
 * which Windows reads as a drive): the caller then falls back to the next rule.
 */
export function normalizeRemoteUrl(url: string): string | undefined {
  const key = normalizedKey(url);
  // A host named `local` with a port (`https://local:1/x`) would give `local:1/x`: a key in rule (c)'s
  // namespace. Keys of different rules must never be able to meet, so such a URL is exotic.
  return key !== undefined && key.startsWith('local:') ? undefined : key;
}

function normalizedKey(url: string): string | undefined {
  if (url.length === 0 || url.length > MAX_URL_LENGTH || /[\s\\\u0000-\u001f\u007f]/.test(url)) return undefined;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (scheme) return fromUrlForm(scheme[1]!.toLowerCase(), url.slice(scheme[0].length));
  // `<transport>::<address>` runs a remote helper: what it names is up to the helper.
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url)) return undefined;
  // git's rule: a colon before the first slash makes an scp-like `[user@]host:path`; else a local path.
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  if (colon > 0 && (slash === -1 || colon < slash)) return fromScpForm(url.slice(0, colon), url.slice(colon + 1));
  return undefined;
}

function fromUrlForm(scheme: string, rest: string): string | undefined {
  const defaultPort = DEFAULT_PORTS[scheme];
  if (defaultPort === undefined) return undefined;
  if (rest.includes('?') || rest.includes('#')) return undefined;
  const slash = rest.indexOf('/');
  if (slash < 0) return undefined;
  const authority = rest.slice(0, slash);
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const match = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d*))?$/.exec(hostPort);
  if (!match) return undefined;
  const host = match[1]!;
  if (!HOST_NAME.test(host) && !HOST_IPV6.test(host)) return undefined;
  let port = '';
  if (match[2]) {
    const number = Number.parseInt(match[2], 10);
    if (!(number >= 1 && number <= 65535)) return undefined;
    if (number !== defaultPort) port = `:${number}`;
  }
  const path = normalizePath(rest.slice(slash), true);
  return path === undefined ? undefined : `${host.toLowerCase()}${port}/${path}`;
}

function fromScpForm(userHost: string, rawPath: string): string | undefined {
  const host = userHost.slice(userHost.lastIndexOf('@') + 1);
  if (host.length < 2 || !HOST_NAME.test(host)) return undefined;
  const path = normalizePath(rawPath, false);
  return path === undefined ? undefined : `${host.toLowerCase()}/${path}`;
}

function normalizePath(path: string, percentEncoded: boolean): string | undefined {
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    if (raw === '') continue;
    let segment = raw;
    if (percentEncoded) {
      try {
        segment = decodeURIComponent(raw);
      } catch {
        return undefined;
      }
    }
    if (segment === '.' || segment === '..' || UNSAFE_IN_PATH.test(segment) || !segment.isWellFormed()) return undefined;
    segments.push(segment);
  }
  // `a/b`, `a/b.git` and `a/b/.git` are one repository to git's own server side (enter_repo).
  const last = segments.at(-1);
  if (last === '.git') segments.pop();
  else if (last !== undefined && last.endsWith('.git')) segments[segments.length - 1] = last.slice(0, -'.git'.length);
  return segments.length === 0 ? undefined : segments.join('/');
}

// ---------------------------------------------------------------------------------------------
// git config files

/** One variable of a git config file: `name` is `section[.subsection].key`, section and key lower-cased. */
export interface GitConfigEntry {
  readonly name: string;
  /** null for a bare `key` line (git reads it as boolean true). */
  readonly value: string | null;
}

const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\v' || c === '\f' || c === '\r';
const isAlpha = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
const isKeyChar = (c: string): boolean => isAlpha(c) || (c >= '0' && c <= '9') || c === '-';

/**
 * The variables of a git config file, in file order, read as git's own parser (config.c) reads
 * them: `[section]`, `[section "subsection"]` (case kept, `\` escapes the next character), the old
 * `[section.subsection]` (lower-cased), `key = value` or a bare `key`, `#`/`;` comments, double
 * quotes, the escapes `\\ \" \n \t \b`, a `\` line continuation, CRLF, a UTF-8 BOM. Includes are
 * returned as ordinary variables, never followed. A line git would refuse gives `{ error }`.
 */
export function parseGitConfig(text: string): readonly GitConfigEntry[] | { readonly error: string } {
  const src = text.startsWith('\uFEFF') ? text.slice(1) : text;
  let at = 0;
  let line = 1;
  // git reads CRLF as LF, and the end of input as a final LF.
  const next = (): string => {
    if (at >= src.length) {
      at++;
      return '\n';
    }
    let c = src[at++]!;
    if (c === '\r' && src[at] === '\n') c = src[at++]!;
    if (c === '\n') line++;
    return c;
  };
  const eof = (): boolean => at > src.length;
  const fail = (what: string) => ({ error: `line ${line}: ${what}` });

  const entries: GitConfigEntry[] = [];
  let section: string | null = null;
  for (;;) {
    let c = next();
    if (c === '\n') {
      if (eof()) return entries;
      continue;
    }
    if (isSpace(c)) continue;
    if (c === '#' || c === ';') {
      while (next() !== '\n');
      if (eof()) return entries;
      continue;
    }
    if (c === '[') {
      let name = '';
      for (;;) {
        c = next();
        if (eof() || c === '\n') return fail('unterminated section header');
        if (c === ']') break;
        if (isSpace(c)) {
          while (isSpace(c) && c !== '\n') c = next();
          if (c !== '"') return fail('a subsection must be in double quotes');
          name += '.';
          for (;;) {
            c = next();
            if (c === '\n') return fail('unterminated subsection');
            if (c === '"') break;
            if (c === '\\') {
              c = next();
              if (c === '\n') return fail('unterminated subsection');
            }
            name += c;
          }
          if (next() !== ']') return fail('text after the subsection');
          break;
        }
        if (!isKeyChar(c) && c !== '.') return fail(`bad character in a section name`);
        name += c.toLowerCase();
      }
      // Only the section part is lower-cased; a quoted subsection keeps its case.
      section = name;
      continue;
    }
    if (!isAlpha(c)) return fail('bad config line');
    if (section === null) return fail('a variable outside any section');
    let key = c.toLowerCase();
    for (;;) {
      c = next();
      if (eof() || !isKeyChar(c)) break;
      key += c.toLowerCase();
    }
    while (c === ' ' || c === '\t') c = next();
    if (c === '\n') {
      entries.push({ name: `${section}.${key}`, value: null });
      if (eof()) return entries;
      continue;
    }
    if (c !== '=') return fail(`expected "=" after ${key}`);
    const value = parseValue(next);
    if (value === undefined) return fail(`bad value of ${key}`);
    entries.push({ name: `${section}.${key}`, value });
    if (eof()) return entries;
  }
}

/** git's parse_value: reads up to and including the end of the line. */
function parseValue(next: () => string): string | undefined {
  let value = '';
  let quote = false;
  let comment = false;
  let trimAt = 0;
  for (;;) {
    let c = next();
    if (c === '\n') {
      if (quote) return undefined;
      return trimAt ? value.slice(0, trimAt) : value;
    }
    if (comment) continue;
    if (isSpace(c) && !quote) {
      if (!trimAt) trimAt = value.length;
      if (value.length) value += c;
      continue;
    }
    if (!quote && (c === ';' || c === '#')) {
      comment = true;
      continue;
    }
    trimAt = 0;
    if (c === '\\') {
      c = next();
      if (c === '\n') continue;
      if (c === 't') c = '\t';
      else if (c === 'b') c = '\b';
      else if (c === 'n') c = '\n';
      else if (c !== '\\' && c !== '"') return undefined;
      value += c;
      continue;
    }
    if (c === '"') {
      quote = !quote;
      continue;
    }
    value += c;
  }
}

/** The last value of a variable (git's rule for single-valued variables); undefined when absent. */
export function gitConfigValue(entries: readonly GitConfigEntry[], name: string): string | null | undefined {
  let value: string | null | undefined;
  for (const entry of entries) if (entry.name === name) value = entry.value;
  return value;
}

/** git's boolean reading of a variable's last value; false when absent. */
export function gitConfigFlag(entries: readonly GitConfigEntry[], name: string): boolean {
  const value = gitConfigValue(entries, name);
  if (value === undefined) return false;
  if (value === null) return true;
  const lower = value.toLowerCase();
  return lower === 'true' || lower === 'yes' || lower === 'on' || (/^-?\d+$/.test(lower) && Number(lower) !== 0);
}

export type OriginLookup = { readonly url: string } | { readonly exotic: string } | undefined;

/**
 * The fetch URL of `origin`, when the entries say it with certainty; `{ exotic }` when they may say
 * something else to git (includes, an `insteadOf` that rewrites it, several URLs, a remote helper);
 * undefined when there is no origin URL.
 */
export function originOf(entries: readonly GitConfigEntry[]): OriginLookup {
  const urls: (string | null)[] = [];
  const rewrites: (string | null)[] = [];
  for (const { name, value } of entries) {
    if (name === 'include.path' || (name.startsWith('includeif.') && name.endsWith('.path')))
      return { exotic: 'the git config has include directives, which Turnkeeper does not follow' };
    if (name === 'remote.origin.url') urls.push(value);
    else if (name === 'remote.origin.vcs') return { exotic: 'origin uses a remote helper (remote.origin.vcs)' };
    else if (name.startsWith('url.') && name.endsWith('.insteadof')) rewrites.push(value);
  }
  if (urls.length === 0) return undefined;
  if (urls.length > 1) return { exotic: 'origin has more than one URL' };
  const url = urls[0]!;
  if (url === null || url === '') return { exotic: 'origin has an empty URL' };
  if (rewrites.some((prefix) => prefix === null || url.startsWith(prefix))) return { exotic: 'a url.<base>.insteadOf rule rewrites the origin URL' };
  return { url };
}

/** `originOf` of one config file's text; a file git would refuse is exotic. */
export function parseGitConfigOrigin(text: string): OriginLookup {
  const entries = parseGitConfig(text);
  return 'error' in entries ? { exotic: `the git config cannot be read: ${entries.error}` } : originOf(entries);
}

// ---------------------------------------------------------------------------------------------
// Display name

/**
 * The repository's folder name, from its common git directory: `/src/app/.git` → `app` (for every
 * worktree of it too), `/srv/app.git` → `app`, `/src/proj/.bare` → `proj`, a submodule's
 * `/super/.git/modules/lib` → `lib`. Outside git, the folder's own name.
 */
export function displayNameOf(commonDir: string | null, checkout: string): string {
  if (commonDir === null) return baseName(checkout) || checkout;
  let name = baseName(commonDir);
  if (name.endsWith('.git')) name = name.slice(0, -'.git'.length);
  if (name === '' || name.startsWith('.')) name = baseName(parentOf(commonDir));
  return name || commonDir;
}

// Plain string helpers: core does not import node:path, and these paths are absolute POSIX realpaths.
function baseName(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

function parentOf(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  const cut = trimmed.lastIndexOf('/');
  return cut <= 0 ? '/' : trimmed.slice(0, cut);
}
