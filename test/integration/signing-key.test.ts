// The signing key as a process that lives on uses it (the warm hook server signs checkpoints for many
// hooks): each use checks the keys directory and the key file again, as a cold hook's first use does;
// only the parse of the file's text is kept (src/ledger/keys.ts).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signingKey } from '../../src/ledger/keys';

let home: string;
let env: Record<string, string>;
beforeEach(() => {
  home = realpathSync(mkdtempSync(join(tmpdir(), 'tk-signing-key-')));
  env = { TURNKEEPER_HOME: home };
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe('the signing key in a process that lives on', () => {
  it('keys/ moved away: the next signature is by the key the home holds now, a new one (control: left in place, the same key)', () => {
    const first = signingKey(env);
    expect(signingKey(env)).toBe(first); // control: the parse is kept while the file is the same
    renameSync(join(home, 'keys'), join(home, 'keys.moved'));
    const next = signingKey(env);
    expect(next.name).not.toBe(first.name);
    expect(JSON.parse(readFileSync(join(home, 'keys', 'signing.key'), 'utf8'))).toMatchObject({ name: next.name });
  });

  it('keys/ replaced by a link to the moved directory: refused, as a cold hook refuses it', () => {
    signingKey(env);
    renameSync(join(home, 'keys'), join(home, 'keys.moved'));
    symlinkSync(join(home, 'keys.moved'), join(home, 'keys'));
    expect(() => signingKey(env)).toThrow(/is not a directory \(a symlink or a file\)/);
  });

  it('the key file replaced by another key: that one signs from the next use', () => {
    const first = signingKey(env);
    const other = mkdtempSync(join(tmpdir(), 'tk-signing-other-'));
    try {
      const second = signingKey({ TURNKEEPER_HOME: other });
      renameSync(join(other, 'keys', 'signing.key'), join(home, 'keys', 'signing.key'));
      expect(signingKey(env).name).toBe(second.name);
      expect(second.name).not.toBe(first.name);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
