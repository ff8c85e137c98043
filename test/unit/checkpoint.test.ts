// The signed-note and DSSE formats of src/core/checkpoint.ts and src/ledger/keys.ts against
// published vectors of other implementations: the example of golang.org/x/mod/sumdb/note (the
// reference implementation of c2sp.org/signed-note; Ed25519 is deterministic, so our signing must
// reproduce its note byte for byte) and the PAE example of the DSSE protocol.
import { describe, expect, it } from 'vitest';
import { createPrivateKey, sign } from 'node:crypto';
import { checkpointText, parseCheckpoint, preAuthEncoding, signedNote, type ParsedCheckpoint } from '../../src/core/checkpoint';
import { keyHashOf, noteVerifier, parsePublicKey, verifierKey } from '../../src/ledger/keys';

const GO_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const GO_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const GO_NOTE = `${GO_TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

/** The Go signer key's Ed25519 seed as a node:crypto private key. */
function goPrivateKey() {
  const seed = Buffer.from(GO_SKEY.split('+').slice(4).join('+'), 'base64').subarray(1);
  return createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
}
/** A note of any text as the verifier sees it (the checkpoint fields are not used by signature checks). */
const asParsed = (text: string, signatures: ParsedCheckpoint['signatures']): ParsedCheckpoint => ({
  origin: '',
  seq: 0,
  hash: '',
  time: '',
  version: 1,
  text,
  signatures,
});

describe('signed notes, against golang.org/x/mod/sumdb/note', () => {
  it('reads its verifier key: name, key hash and key (and refuses it with another key hash)', () => {
    const key = parsePublicKey(GO_VKEY)!;
    expect(key.name).toBe('PeterNeumann');
    expect(keyHashOf('PeterNeumann', key.publicKey).toString('hex')).toBe('c74f20a3');
    expect(verifierKey({ name: 'PeterNeumann', publicKey: key.publicKey })).toBe(GO_VKEY);
    expect(parsePublicKey(GO_VKEY.replace('c74f20a3', 'c74f20a4'))).toBeUndefined();
  });

  it('signs its example note byte for byte, and verifies it', () => {
    const key = parsePublicKey(GO_VKEY)!;
    const signature = sign(null, Buffer.from(GO_TEXT), goPrivateKey());
    expect(signedNote(GO_TEXT, [{ name: 'PeterNeumann', keyHash: keyHashOf('PeterNeumann', key.publicKey), signature }])).toBe(GO_NOTE);
    const blob = Buffer.from(GO_NOTE.trim().split(' ').at(-1)!, 'base64');
    const signatures = [{ name: 'PeterNeumann', keyHash: blob.subarray(0, 4), signature: blob.subarray(4) }];
    expect(noteVerifier([key])(asParsed(GO_TEXT, signatures))).toEqual({ ok: true, signer: 'PeterNeumann' });
    expect(noteVerifier([key])(asParsed(GO_TEXT.replace('cryptography', 'cryptographY'), signatures))).toEqual({ ok: false, kind: 'signature_invalid' });
    expect(noteVerifier([parsePublicKey('EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop')!])(asParsed(GO_TEXT, signatures))).toEqual({
      ok: false,
      kind: 'untrusted_key',
    });
  });
});

describe('the signer is named by the trusted key, never by the note', () => {
  it('a key trusted without a name (a PEM): its fingerprint, whatever name the signature line claims', () => {
    const named = parsePublicKey(GO_VKEY)!;
    const nameless = { ...named, name: null };
    const claimed = 'turnkeeper-someone-else-000000000000';
    const signature = sign(null, Buffer.from(GO_TEXT), goPrivateKey());
    const note = asParsed(GO_TEXT, [{ name: claimed, keyHash: keyHashOf(claimed, named.publicKey), signature }]);
    const verdict = noteVerifier([nameless])(note);
    expect(verdict).toMatchObject({ ok: true });
    expect(verdict.ok && verdict.signer).toMatch(/^ed25519:[0-9a-f]{16}$/);
    // Control: with the name trusted, the name it was trusted under.
    const own = asParsed(GO_TEXT, [{ name: 'PeterNeumann', keyHash: keyHashOf('PeterNeumann', named.publicKey), signature }]);
    expect(noteVerifier([named])(own)).toEqual({ ok: true, signer: 'PeterNeumann' });
  });
});

describe('checkpoint text', () => {
  const body = { origin: 'turnkeeper/store/0123456789abcdef0123456789abcdef', seq: 41, hash: `sha256:${'ab'.repeat(32)}`, time: '2026-11-30T12:29:38.791Z' };
  const note = signedNote(checkpointText(body), [{ name: 'turnkeeper-host-000000000000', keyHash: Buffer.alloc(4), signature: Buffer.alloc(64) }]);

  it('version 1 (no `head` line, as written before the Merkle tree): origin, size, the head hash as the root line, a time extension line; still read as before', () => {
    expect(checkpointText(body)).toBe(`${body.origin}\n41\n${Buffer.from('ab'.repeat(32), 'hex').toString('base64')}\ntime ${body.time}\n`);
    expect(parseCheckpoint(note)).toMatchObject({ ...body, version: 1, text: checkpointText(body) });
    expect(parseCheckpoint(note)!.root).toBeUndefined();
  });

  it('version 2: the Merkle root on the root line, the head hash in a `head` extension line before the time', () => {
    const root = `sha256:${'cd'.repeat(32)}`;
    const v2 = { ...body, root };
    const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');
    expect(checkpointText(v2)).toBe(`${body.origin}\n41\n${b64('cd'.repeat(32))}\nhead ${b64('ab'.repeat(32))}\ntime ${body.time}\n`);
    const signed = signedNote(checkpointText(v2), [{ name: 'turnkeeper-host-000000000000', keyHash: Buffer.alloc(4), signature: Buffer.alloc(64) }]);
    expect(parseCheckpoint(signed)).toMatchObject({ ...v2, version: 2, text: checkpointText(v2) });
    // Two head lines, or one that is not a 32-byte hash, is not a checkpoint.
    expect(parseCheckpoint(signed.replace('\nhead ', `\nhead ${b64('ab'.repeat(32))}\nhead `))).toBeUndefined();
    expect(parseCheckpoint(signed.replace(/\nhead \S+\n/, '\nhead q83vEjRWeJq=\n'))).toBeUndefined();
  });

  it('refuses what is not one: no signature, no blank line, a root that is not 32 bytes in canonical base64, no time', () => {
    expect(parseCheckpoint(checkpointText(body))).toBeUndefined();
    expect(parseCheckpoint(note.replace('\n\n', '\n'))).toBeUndefined();
    expect(parseCheckpoint(note.replace(/\n[A-Za-z0-9+/]{43}=\n/, '\nq83vEjRWeJq=\n'))).toBeUndefined();
    expect(parseCheckpoint(note.replace(`time ${body.time}\n`, ''))).toBeUndefined();
    expect(parseCheckpoint(note.replace('\n41\n', '\n041\n'))).toBeUndefined();
    expect(parseCheckpoint(42)).toBeUndefined();
  });
});

describe('DSSE pre-authentication encoding', () => {
  it('matches the example of the DSSE protocol', () => {
    expect(preAuthEncoding('http://example.com/HelloWorld', Buffer.from('hello world')).toString()).toBe(
      'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
    );
  });
});
