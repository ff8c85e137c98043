// The files `hooks install` edits, kept safe (spec §8): bytes read and written whole and losslessly,
// symlinks followed to the file they name (and confined to the project at project scope), a backup of
// every file changed, a retry when the agent rewrites its own file meanwhile, and the record that
// install created a file from nothing, so uninstall may delete it. What is edited inside the text is
// install.ts's business (the byte-keeping JSONC editor).
//
// Files are bytes, not text: a config may hold bytes that are not UTF-8 (a Latin-1 `é` in a comment),
// and a UTF-8 decode would turn each into U+FFFD for good. `decodeBytes` maps every byte that is not
// part of a well-formed UTF-8 sequence to a lone surrogate U+DC80..U+DCFF (Python's "surrogateescape"),
// which no UTF-8 text can produce, and `encodeText` maps those back to the very byte. So jsonc-parser
// and the edits below see the file's real text (non-ASCII keys and values compare as they should),
// and everything outside an edit encodes back to the bytes it came from. A stray byte outside a
// string or comment is no more valid JSON than before: it is refused, not rewritten.
import { chmodSync, closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { createHash } from 'node:crypto';
import { parse as parseJsonc, type ParseError } from 'jsonc-parser';
import { syncDir, writeAll, writeFileAtomic } from '../files/atomicFile';
import { readConfigFile } from '../files/boundedFile';

export interface InstallResult {
  readonly path: string;
  readonly changed: boolean;
  /** The pre-change copy (its exact bytes, under the backup directory), when an existing file was changed. */
  readonly backup?: string;
  /** Uninstall deleted the config, because install had created it and nobody has changed it since. */
  readonly deleted?: true;
}

export interface WriteOptions {
  /**
   * Where backups and creation records go: `$TURNKEEPER_HOME/backups` (doctor/installation.ts),
   * never beside the config, which may sit in a repository. Created with mode 0700.
   */
  readonly backupDir: string;
  /** Clock for backup names; tests pin it. */
  readonly now?: () => Date;
}

/** The config file cannot be edited safely; nothing was changed. */
export class HookConfigError extends Error {
  override readonly name = 'HookConfigError';
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`${path}: ${detail}. Turnkeeper left the file unchanged; fix it by hand and run the command again.`);
  }
}

/** What the editor says about its own texts, for the creation record: a blank file, and what removing every hook leaves of one install made. */
export interface RewriteShapes {
  readonly isBlank: (text: string) => boolean;
  readonly emptied: string;
  /**
   * The file is Turnkeeper's own through and through (OpenCode's plugin): an uninstall that empties
   * it deletes it even without a creation record (a lost backup directory), instead of leaving an empty file.
   */
  readonly wholeFile?: true;
}

/** The text without a leading byte-order mark, and the mark (or ''). */
export function splitBom(text: string): { bom: string; body: string } {
  return text.startsWith('\uFEFF') ? { bom: '\uFEFF', body: text.slice(1) } : { bom: '', body: text };
}

/** The file's bytes, or undefined when there is none; a file that cannot be read as a config is a HookConfigError. */
function readBytes(path: string): Buffer | undefined {
  const read = readConfigFile(path);
  if (read.kind === 'refused') throw new HookConfigError(path, read.problem);
  return read.kind === 'bytes' ? read.bytes : undefined;
}

/** A JSON-with-comments file's value, or undefined when it is missing or cannot be read as one (doctor's trust checks). */
export function readJsonConfig(path: string): unknown {
  const read = readConfigFile(path);
  if (read.kind !== 'bytes') return undefined;
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(splitBom(decodeBytes(read.bytes)).body, errors, { allowTrailingComma: true, disallowComments: false });
  return errors.length === 0 ? value : undefined;
}

/**
 * Lossless bytes-to-text (see the top of this file): well-formed UTF-8 decodes as usual (Unicode
 * Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), any other byte b becomes
 * the lone surrogate U+DC00 + b.
 */
export function decodeBytes(bytes: Uint8Array): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let text = '';
  let run = 0; // start of the current stretch of well-formed UTF-8
  let at = 0;
  const continuation = (offset: number, low = 0x80, high = 0xbf): boolean => {
    const byte = buffer[at + offset];
    return byte !== undefined && byte >= low && byte <= high;
  };
  while (at < buffer.length) {
    const lead = buffer[at] ?? 0;
    let length = 0;
    if (lead < 0x80) length = 1;
    else if (lead >= 0xc2 && lead <= 0xdf) length = continuation(1) ? 2 : 0;
    else if (lead >= 0xe0 && lead <= 0xef) {
      const [low, high] = lead === 0xe0 ? [0xa0, 0xbf] : lead === 0xed ? [0x80, 0x9f] : [0x80, 0xbf];
      length = continuation(1, low, high) && continuation(2) ? 3 : 0;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      const [low, high] = lead === 0xf0 ? [0x90, 0xbf] : lead === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
      length = continuation(1, low, high) && continuation(2) && continuation(3) ? 4 : 0;
    }
    if (length > 0) {
      at += length;
      continue;
    }
    text += buffer.toString('utf8', run, at) + String.fromCharCode(0xdc00 + lead);
    at += 1;
    run = at;
  }
  return text + buffer.toString('utf8', run, at);
}

/** The inverse of `decodeBytes`: each lone U+DC80..U+DCFF is its byte again, the rest is UTF-8. */
export function encodeText(text: string): Buffer {
  const parts: Buffer[] = [];
  let run = 0;
  for (const match of text.matchAll(/(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/g)) {
    parts.push(Buffer.from(text.slice(run, match.index), 'utf8'), Buffer.of(match[0].charCodeAt(0) - 0xdc00));
    run = match.index + 1;
  }
  parts.push(Buffer.from(text.slice(run), 'utf8'));
  return Buffer.concat(parts);
}

/**
 * The file a write of `path` must replace: `path` itself, or, when it is a symlink (dotfile
 * managers link configs into a repository of their own), the file at the end of the links, even
 * one that does not exist yet. Renaming over the link would turn it into a regular file.
 */
function writeTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  let current = path;
  for (let hops = 0; hops < 40; hops++) {
    try {
      if (!lstatSync(current).isSymbolicLink()) return current;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // Not there. For the config itself, its directory is created; behind a link, creating a
      // directory (of an unmounted disk, a missing checkout) is not ours to do.
      if (current !== path && !existsSync(dirname(current))) throw new HookConfigError(path, `it is a symlink to ${current}, whose directory does not exist`);
      return current;
    }
    // A relative link is relative to the real directory that holds it.
    current = resolve(realpathSync(dirname(current)), readlinkSync(current));
  }
  throw new HookConfigError(path, 'too many levels of symbolic links');
}

/**
 * Where `path` really is: every symlink on the way resolved, dangling ones too (followed to where
 * they point), and the part that does not exist yet appended as written.
 */
function realLocation(path: string): string {
  let current = resolve(path);
  const rest: string[] = [];
  for (let hops = 0; hops < 40;) {
    try {
      return join(realpathSync(current), ...rest);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    let link: string | undefined;
    try {
      if (lstatSync(current).isSymbolicLink()) link = readlinkSync(current);
    } catch {
      // not there at all
    }
    if (link !== undefined) {
      let dir = dirname(current);
      try {
        dir = realpathSync(dir);
      } catch {
        // resolved when the walk reaches it
      }
      current = resolve(dir, link);
      hops++;
      continue;
    }
    const parent = dirname(current);
    if (parent === current) return join(current, ...rest);
    rest.unshift(basename(current));
    current = parent;
  }
  throw new HookConfigError(path, 'too many levels of symbolic links');
}

/** A project-scope config must be a file of the project, wherever its links lead. */
function confine(path: string, root: string): void {
  const realRoot = realLocation(root);
  const location = realLocation(path);
  if (location === realRoot || location.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep)) return;
  throw new HookConfigError(
    path,
    `it leads to ${location}, outside the project ${realRoot}: a project-scope install changes only files inside the repository (a link out of it may point at your own settings); to change that file, install at user scope (--scope user)`,
  );
}

/** Install made the file from nothing (or from a blank file): the bytes it replaced and a digest of what it last wrote. */
interface CreationRecord {
  readonly config: string;
  /** Base64 of the blank file install replaced; null when there was no file. */
  readonly before: string | null;
  /** SHA-256 (hex) of the bytes Turnkeeper last wrote to the config. */
  readonly written: string;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A file name that says which config it is about: the path with anything unusual as `_`, its end kept. */
const configSlug = (path: string): string =>
  path
    .replace(/^\/+/, '')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .slice(-120);
/** Keyed by the full path (slugs of two paths can collide), and checked against it when read. */
const recordPath = (backupDir: string, path: string): string => join(backupDir, `${configSlug(path)}.${sha256(Buffer.from(path)).slice(0, 12)}.created`);

function readRecord(backupDir: string, path: string): CreationRecord | undefined {
  const raw = readConfigFile(recordPath(backupDir, path));
  if (raw.kind !== 'bytes') return undefined;
  try {
    const value = JSON.parse(raw.bytes.toString('utf8')) as Partial<CreationRecord>;
    const valid = value.config === path && typeof value.written === 'string' && (value.before === null || typeof value.before === 'string');
    return valid ? (value as CreationRecord) : undefined;
  } catch {
    return undefined; // unreadable: as if there were none, and the file is kept
  }
}

function ensureBackupDir(backupDir: string): void {
  mkdirSync(backupDir, { recursive: true, mode: 0o700 });
  chmodSync(backupDir, 0o700); // also when it existed with a wider mode: backups may hold secrets
}

/**
 * Reads, transforms and writes back only when the content changes, with a backup of an existing
 * file. An agent may rewrite its own settings meanwhile, so the file is read again just before the
 * rename and the whole step retried if it moved.
 */
export function rewrite(
  path: string,
  root: string | undefined,
  options: WriteOptions,
  operation: 'install' | 'uninstall',
  shapes: RewriteShapes,
  transform: (text: string | undefined) => string | undefined,
): InstallResult {
  for (let attempt = 0; ; attempt++) {
    if (root !== undefined) confine(path, root);
    const beforeBytes = readBytes(path); // through any symlink
    const before = beforeBytes === undefined ? undefined : decodeBytes(beforeBytes);
    const after = transform(before);
    if (after === undefined || after === before) return { path, changed: false };
    const target = writeTarget(path);

    let afterBytes: Buffer | undefined = encodeText(after); // undefined: delete the file
    const record = readRecord(options.backupDir, path);
    const whollyOurs = record !== undefined && beforeBytes !== undefined && record.written === sha256(beforeBytes);
    let nextRecord: CreationRecord | undefined;
    if (operation === 'install' && (before === undefined || shapes.isBlank(before))) {
      nextRecord = { config: path, before: beforeBytes?.toString('base64') ?? null, written: sha256(afterBytes) };
    } else if (whollyOurs && operation === 'uninstall' && after === shapes.emptied) {
      afterBytes = record.before === null ? undefined : Buffer.from(record.before, 'base64');
    } else if (shapes.wholeFile === true && operation === 'uninstall' && after === shapes.emptied) {
      afterBytes = undefined;
    } else if (whollyOurs) {
      nextRecord = { ...record, written: sha256(afterBytes) };
    }

    const mode = beforeBytes === undefined ? undefined : statSync(target).mode & 0o7777; // a new file gets the umask's
    const stillCurrent = (): boolean => {
      const now = readBytes(path);
      return now === undefined ? beforeBytes === undefined : beforeBytes !== undefined && now.equals(beforeBytes);
    };
    ensureBackupDir(options.backupDir);
    const backup = beforeBytes === undefined ? undefined : writeBackup(options.backupDir, path, beforeBytes, options.now?.() ?? new Date());
    const written = afterBytes === undefined ? deleteFile(target, stillCurrent) : writeFileAtomic(target, afterBytes, mode, stillCurrent);
    if (written) {
      if (nextRecord !== undefined) writeFileAtomic(recordPath(options.backupDir, path), `${JSON.stringify(nextRecord)}\n`, 0o600);
      else if (record !== undefined) unlinkSync(recordPath(options.backupDir, path));
      return { path, changed: true, ...(backup === undefined ? {} : { backup }), ...(afterBytes === undefined ? { deleted: true as const } : {}) };
    }
    if (backup !== undefined) unlinkSync(backup);
    if (attempt >= 2) throw new Error(`${path} keeps changing while Turnkeeper edits it; try again`);
  }
}

/** `<backupDir>/<config path as a slug>.<UTC stamp>[-n]`: the original bytes, mode 0600. */
function writeBackup(backupDir: string, path: string, content: Uint8Array, now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  for (let n = 0; ; n++) {
    const candidate = join(backupDir, `${configSlug(path)}.${stamp}${n === 0 ? '' : `-${n}`}`);
    let fd: number;
    try {
      fd = openSync(candidate, 'wx', 0o600); // never overwrite an earlier backup, even within a second
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    try {
      writeAll(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return candidate;
  }
}

function deleteFile(path: string, stillCurrent: () => boolean): boolean {
  if (!stillCurrent()) return false;
  unlinkSync(path);
  syncDir(dirname(path));
  return true;
}
