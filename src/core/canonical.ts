// The one module that turns documents into bytes and bytes into digests (spec §3).
// Canonical JSON is RFC 8785 (JCS), implemented by the `canonicalize` package; this module only
// narrows the value domain (no floats, safe integers, plain objects, no lone surrogates) so that
// every document has exactly one byte form.
import canonicalize from 'canonicalize';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

type CanonicalValue = null | boolean | number | string | readonly CanonicalValue[] | { readonly [key: string]: CanonicalValue | undefined };

export class CanonicalDomainError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`not canonicalisable at ${path || '(root)'}: ${problem}`);
    this.name = 'CanonicalDomainError';
  }
}

export const ZERO_DIGEST = 'sha256:' + '0'.repeat(64);
const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;

// For a string, a plain boolean: a string that fails the check is still a string (a guard would narrow it to `never`).
export function isDigest(value: string): boolean;
export function isDigest(value: unknown): value is string;
export function isDigest(value: unknown): boolean {
  return typeof value === 'string' && DIGEST_PATTERN.test(value);
}

/** Throws CanonicalDomainError unless `value` is inside the project's JSON value domain. */
function assertCanonicalDomain(value: unknown, path = ''): asserts value is CanonicalValue {
  if (value === null || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new CanonicalDomainError(path, `number ${value} is not a safe integer`);
    return;
  }
  if (typeof value === 'string') {
    if (!value.isWellFormed()) throw new CanonicalDomainError(path, 'lone surrogate in string');
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      if (item === undefined) throw new CanonicalDomainError(`${path}[${index}]`, 'undefined array element');
      assertCanonicalDomain(item, `${path}[${index}]`);
    });
    return;
  }
  if (typeof value === 'object') {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new CanonicalDomainError(path, 'not a plain object');
    for (const [key, item] of Object.entries(value)) {
      if (!key.isWellFormed()) throw new CanonicalDomainError(path, 'lone surrogate in key');
      // Absent optional fields are written as `undefined` by builders; JSON drops them, and so do we.
      if (item === undefined) continue;
      assertCanonicalDomain(item, `${path}.${key}`);
    }
    return;
  }
  throw new CanonicalDomainError(path, `unsupported type ${typeof value}`);
}

/** RFC 8785 canonical text of `value`. */
export function canonicalJson(value: unknown): string {
  assertCanonicalDomain(value);
  const text = canonicalize(value);
  if (text === undefined) throw new CanonicalDomainError('', 'value has no JSON form');
  return text;
}

/**
 * "sha256:" + hex of the UTF-8 bytes of `text`, in pure JavaScript (@noble/hashes): loading
 * node:crypto costs a cold process several milliseconds of start-up (OpenSSL; `npm run bench` row S1),
 * a large share of a replay, while the hook only hashes a few kilobytes.
 */
export function digestText(text: string): string {
  return 'sha256:' + bytesToHex(sha256(utf8ToBytes(text)));
}

type NodeCrypto = typeof import('node:crypto');
let nodeCrypto: NodeCrypto | undefined;
/**
 * The same digest through Node's OpenSSL, several times faster per call once loaded (bench row S2):
 * for bulk work (verifying a long chain) where the load cost is paid once. Equal to `digestText` on every input.
 */
export function digestTextBulk(text: string): string {
  nodeCrypto ??= process.getBuiltinModule('node:crypto');
  return 'sha256:' + nodeCrypto.hash('sha256', text, 'hex');
}

/**
 * "sha256:" + hex of `bytes` exactly as given (no decode and re-encode: "hash what was stored"), through
 * Node's OpenSSL like digestTextBulk: for bulk work (a bundle's lines). Equal to `digestText` of the
 * text whose UTF-8 encoding the bytes are.
 */
export function digestBytesBulk(bytes: Uint8Array): string {
  nodeCrypto ??= process.getBuiltinModule('node:crypto');
  return 'sha256:' + nodeCrypto.hash('sha256', bytes, 'hex');
}

/** Digest of a document: the digest of its canonical bytes. */
export function digestDocument(value: unknown): string {
  return digestText(canonicalJson(value));
}

/** Hex digits of a digest, without the algorithm prefix. */
export function digestHex(digest: string): string {
  if (!isDigest(digest)) throw new CanonicalDomainError('', `not a digest: ${digest}`);
  return digest.slice('sha256:'.length);
}

/** Derived identifiers (operation ids) hash a domain-separated string; kept here so one module hashes. */
export function derivedHex(domain: string, input: string): string {
  return bytesToHex(sha256(utf8ToBytes(`${domain}\n${input}`)));
}
