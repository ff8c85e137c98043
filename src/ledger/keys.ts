// Signing keys (docs/receipts.md, "Keys"): one Ed25519 key per installation, in
// `$TURNKEEPER_HOME/keys/` (a 0700 directory whose owner is checked; the private key 0600, created
// on first use, never printed), and the public keys of teammates this installation trusts.
//
// Public keys are written as C2SP signed-note verifier keys, `<name>+<hex key hash>+<base64(0x01 ||
// key)>`; the name is the key id (`turnkeeper-<host>-<12 hex of the key>`), so a checkpoint says
// which machine signed it. Crypto is node:crypto's Ed25519, loaded only when a key is used: a hook
// replay never signs, so never pays for OpenSSL's start-up (bench row S1).
import { closeSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, unlinkSync, chmodSync, appendFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { KeyObject } from 'node:crypto';
import { turnkeeperHome, type Env } from '../store/location';
import type { NoteSignature, NoteVerifier, ParsedCheckpoint } from '../core/checkpoint';
import { writeAll } from '../files/atomicFile';

type NodeCrypto = typeof import('node:crypto');
let nodeCrypto: NodeCrypto | undefined;
const crypto = (): NodeCrypto => (nodeCrypto ??= process.getBuiltinModule('node:crypto'));

const KEY_SCHEMA = 'turnkeeper.key/v1';
/** Signed-note signature type of Ed25519 (c2sp.org/signed-note). */
const ED25519 = 0x01;
/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): what `openssl pkey -pubin` reads. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

class KeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyError';
  }
}

export interface PublicKeyInfo {
  /** The key id: the signed-note key name. */
  readonly name: string;
  /** The 32 raw bytes of the Ed25519 public key. */
  readonly publicKey: Buffer;
}

export interface SigningKey extends PublicKeyInfo {
  readonly keyHash: Buffer;
  sign(message: Buffer): Buffer;
}

export const keysDir = (env: Env): string => join(turnkeeperHome(env), 'keys');
const privateKeyPath = (env: Env): string => join(keysDir(env), 'signing.key');
export const trustedKeysPath = (env: Env): string => join(keysDir(env), 'trusted');

/** First 4 bytes of SHA-256(name || "\n" || 0x01 || key): the signed-note key hash. */
export function keyHashOf(name: string, publicKey: Buffer): Buffer {
  return crypto()
    .createHash('sha256')
    .update(name)
    .update(Buffer.from([0x0a, ED25519]))
    .update(publicKey)
    .digest()
    .subarray(0, 4);
}

/** The verifier key text: `<name>+<hex key hash>+<base64(0x01 || key)>`. */
export function verifierKey(key: PublicKeyInfo): string {
  return `${key.name}+${keyHashOf(key.name, key.publicKey).toString('hex')}+${Buffer.concat([Buffer.from([ED25519]), key.publicKey]).toString('base64')}`;
}

/** The public key as PEM (SubjectPublicKeyInfo), for `openssl pkeyutl -verify`. */
export function publicKeyPem(publicKey: Buffer): string {
  const der = Buffer.concat([SPKI_PREFIX, publicKey]).toString('base64');
  return `-----BEGIN PUBLIC KEY-----\n${der}\n-----END PUBLIC KEY-----\n`;
}

/**
 * A public key from text: a verifier key (`name+hash+base64`), or an Ed25519 public key in PEM (no
 * name: it matches a signature of any name whose key hash fits). Undefined when it is neither.
 */
export function parsePublicKey(text: string): (Omit<PublicKeyInfo, 'name'> & { readonly name: string | null }) | undefined {
  const trimmed = text.trim();
  if (trimmed.startsWith('-----BEGIN PUBLIC KEY-----')) {
    try {
      const key = crypto().createPublicKey(trimmed);
      if (key.asymmetricKeyType !== 'ed25519') return undefined;
      return { name: null, publicKey: rawPublicKey(key) };
    } catch {
      return undefined;
    }
  }
  const match = /^([^\s+]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/]+={0,2})$/.exec(trimmed);
  if (!match) return undefined;
  const bytes = Buffer.from(match[3]!, 'base64');
  if (bytes.length !== 33 || bytes[0] !== ED25519) return undefined;
  const publicKey = bytes.subarray(1);
  if (keyHashOf(match[1]!, publicKey).toString('hex') !== match[2]) return undefined;
  return { name: match[1]!, publicKey };
}

function rawPublicKey(key: KeyObject): Buffer {
  return key.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
}

/**
 * The keys directory, created 0700 when missing; refused when it is a symlink, not a directory, or
 * owned by someone else; a wider mode on our own directory is narrowed.
 */
function ensureKeysDir(env: Env, create: boolean): string | undefined {
  const dir = keysDir(env);
  let stat;
  try {
    stat = lstatSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (!create) return undefined;
    mkdirSync(turnkeeperHome(env), { recursive: true, mode: 0o700 });
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw raced;
    }
    stat = lstatSync(dir);
  }
  if (!stat.isDirectory()) throw new KeyError(`${dir} is not a directory (a symlink or a file): refusing to keep a private key there`);
  const euid = process.geteuid?.();
  if (euid !== undefined && stat.uid !== euid) throw new KeyError(`${dir} belongs to uid ${stat.uid}, not to this user (${euid}): refusing to use its keys`);
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  return dir;
}

/**
 * The key last parsed, by its path and file text. Only the parse is kept: the directory's and the
 * file's checks (type, owner, mode) and the read run on every use, so a process that lives long (the
 * warm hook server) signs with what the home holds now: a keys directory moved away, replaced by a
 * link or given to another user is seen at the next signature, as a cold hook sees it.
 */
let cached: { readonly path: string; readonly text: string; readonly key: SigningKey } | undefined;

function parsedKey(text: string, path: string): SigningKey {
  if (cached?.path === path && cached.text === text) return cached.key;
  const key = loadKey(text, path);
  cached = { path, text, key };
  return key;
}

/** This installation's signing key, created on first use. */
export function signingKey(env: Env): SigningKey {
  const path = privateKeyPath(env);
  ensureKeysDir(env, true);
  let text = readPrivate(path);
  if (text === undefined) {
    createKey(path);
    text = readPrivate(path);
    if (text === undefined) throw new KeyError(`could not create ${path}`);
  }
  return parsedKey(text, path);
}

/** The public half of this installation's key, or undefined when none was created yet. */
function ownPublicKey(env: Env): PublicKeyInfo | undefined {
  const path = privateKeyPath(env);
  if (ensureKeysDir(env, false) === undefined) return undefined;
  const text = readPrivate(path);
  return text === undefined ? undefined : parsedKey(text, path);
}

function readPrivate(path: string): string | undefined {
  let stat;
  try {
    stat = lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (!stat.isFile()) throw new KeyError(`${path} is not a regular file`);
  const euid = process.geteuid?.();
  if (euid !== undefined && stat.uid !== euid) throw new KeyError(`${path} belongs to uid ${stat.uid}, not to this user`);
  if ((stat.mode & 0o077) !== 0) chmodSync(path, 0o600);
  return readFileSync(path, 'utf8');
}

function loadKey(text: string, path: string): SigningKey {
  let name: unknown;
  let pem: unknown;
  try {
    ({ name, privateKey: pem } = JSON.parse(text) as { name?: unknown; privateKey?: unknown });
  } catch {
    throw new KeyError(`${path} is not a Turnkeeper key file`);
  }
  if (typeof name !== 'string' || !/^[^\s+]+$/.test(name) || typeof pem !== 'string') throw new KeyError(`${path} is not a Turnkeeper key file`);
  const privateKey = crypto().createPrivateKey(pem);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new KeyError(`${path} does not hold an Ed25519 key`);
  const publicKey = rawPublicKey(crypto().createPublicKey(privateKey));
  const keyName = name;
  return {
    name: keyName,
    publicKey,
    keyHash: keyHashOf(keyName, publicKey),
    sign: (message) => crypto().sign(null, message, privateKey),
  };
}

/** Generates the key; two processes racing both generate, and the first link wins for both. */
function createKey(path: string): void {
  const { privateKey, publicKey } = crypto().generateKeyPairSync('ed25519');
  const raw = rawPublicKey(publicKey);
  const host =
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .slice(0, 32) || 'host';
  const name = `turnkeeper-${host}-${crypto().createHash('sha256').update(raw).digest('hex').slice(0, 12)}`;
  createExclusive(path, JSON.stringify({ schema: KEY_SCHEMA, name, privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }) }) + '\n', 0o600);
}

/**
 * Creates `path` with `text` unless it exists: written whole to a temporary name, then hard-linked
 * into place, so a reader never sees half a file and the first of two racing writers wins.
 */
function createExclusive(path: string, text: string, mode: number): void {
  const temporary = `${path}.${process.pid}.${crypto().randomBytes(6).toString('hex')}`;
  const fd = openSync(temporary, 'wx', mode);
  try {
    writeAll(fd, text);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temporary);
  }
}

export type TrustedKey = ReturnType<typeof parsePublicKey> & {};

/** This installation's own key (when it has one) and the keys recorded by `turnkeeper keys trust`. */
export function trustedKeys(env: Env): TrustedKey[] {
  const keys: TrustedKey[] = [];
  const own = ownPublicKey(env);
  if (own) keys.push(own);
  let text = '';
  try {
    text = readFileSync(trustedKeysPath(env), 'utf8');
  } catch {
    // none trusted yet
  }
  for (const line of text.split('\n')) {
    const key = line.trim() === '' || line.startsWith('#') ? undefined : parsePublicKey(line);
    if (key) keys.push(key);
  }
  return keys;
}

/** Records a teammate's public key (a verifier key); returns whether it was new. */
export function trustKey(env: Env, key: TrustedKey): boolean {
  if (key.name === null) throw new KeyError('a trusted key needs its name: give the verifier key `turnkeeper keys show` prints (name+hash+key)');
  const present = trustedKeys(env).some((known) => known.publicKey.equals(key.publicKey) && known.name === key.name);
  if (present) return false;
  ensureKeysDir(env, true);
  appendFileSync(trustedKeysPath(env), `${verifierKey({ name: key.name, publicKey: key.publicKey })}\n`, { mode: 0o644 });
  return true;
}

/** Signs a signed-note text with this installation's key. */
export function signNote(key: SigningKey, text: string): NoteSignature {
  return { name: key.name, keyHash: key.keyHash, signature: key.sign(Buffer.from(text, 'utf8')) };
}

/**
 * Checks a note's signatures: it verifies when a trusted key (same name and key hash; a nameless PEM
 * key by its key hash alone) signed it validly. A signature by no trusted key is `untrusted_key`; one
 * by a trusted key that does not verify is `signature_invalid`.
 */
export function noteVerifier(keys: readonly TrustedKey[]): NoteVerifier {
  const objects = new Map<Buffer, KeyObject>();
  const keyObject = (raw: Buffer): KeyObject => {
    let object = objects.get(raw);
    if (!object) objects.set(raw, (object = crypto().createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' })));
    return object;
  };
  return (note: ParsedCheckpoint) => {
    let invalid = false;
    for (const signature of note.signatures) {
      for (const key of keys) {
        if (key.name !== null && key.name !== signature.name) continue;
        if (!keyHashOf(signature.name, key.publicKey).equals(signature.keyHash)) continue;
        // The signer is named by the trusted key, never by the note: a key trusted without a name (a
        // PEM) is named by its fingerprint, whatever name its holder wrote on the signature.
        if (signature.signature.length === 64 && crypto().verify(null, Buffer.from(note.text, 'utf8'), keyObject(key.publicKey), signature.signature))
          return { ok: true, signer: key.name ?? `ed25519:${crypto().hash('sha256', key.publicKey, 'hex').slice(0, 16)}` };
        invalid = true;
      }
    }
    return { ok: false, kind: invalid ? 'signature_invalid' : 'untrusted_key' };
  };
}

/**
 * A public key named on the command line (`keys trust`, `verify --key`): the key itself (a verifier
 * key or a PEM), else a file, resolved against `cwd`, holding one: a whole PEM, or a line that is a
 * verifier key.
 */
export function readPublicKey(value: string, cwd: string): { readonly key: TrustedKey } | { readonly problem: 'unreadable' | 'no_key' } {
  const direct = parsePublicKey(value);
  if (direct) return { key: direct };
  let text: string;
  try {
    text = readFileSync(resolve(cwd, value), 'utf8');
  } catch {
    return { problem: 'unreadable' };
  }
  const key =
    parsePublicKey(text) ??
    text
      .split('\n')
      .map((line) => parsePublicKey(line))
      .find((found) => found !== undefined);
  return key ? { key } : { problem: 'no_key' };
}
