// `keys trust <file|key>` and `verify --bundle --key <file|key>` read a public key the same way
// (src/ledger/keys.ts readPublicKey): the value itself, else a file relative to the command's
// working directory, holding a whole PEM or a line that is a verifier key.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { publicKeyPem, readPublicKey, verifierKey } from '../../src/ledger/keys';

const dir = mkdtempSync(join(tmpdir(), 'tk-read-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
const vkey = verifierKey({ name: 'turnkeeper-test-0123456789ab', publicKey: raw });

describe('readPublicKey', () => {
  it('takes the key itself, or a file relative to the given directory (a verifier key line, or a PEM)', () => {
    expect(readPublicKey(vkey, '/nonexistent')).toMatchObject({ key: { name: 'turnkeeper-test-0123456789ab', publicKey: raw } });
    writeFileSync(join(dir, 'teammate.vkey'), `# Alice's laptop\n${vkey}\n`);
    expect(readPublicKey('teammate.vkey', dir)).toMatchObject({ key: { name: 'turnkeeper-test-0123456789ab' } });
    writeFileSync(join(dir, 'teammate.pem'), publicKeyPem(raw));
    expect(readPublicKey('teammate.pem', dir)).toMatchObject({ key: { name: null, publicKey: raw } });
    // Relative to the directory given, not to this process's working directory.
    expect(readPublicKey('teammate.vkey', tmpdir())).toEqual({ problem: 'unreadable' });
  });

  it('says which: no such file, or a file without a key', () => {
    expect(readPublicKey('missing.vkey', dir)).toEqual({ problem: 'unreadable' });
    writeFileSync(join(dir, 'notes.txt'), 'no key here\n');
    expect(readPublicKey('notes.txt', dir)).toEqual({ problem: 'no_key' });
  });
});
