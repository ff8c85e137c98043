// Launch attestations (docs/receipts.md, "Launch attestations"): `turnkeeper receipts attestation <seq>`
// turns a `launch_committed` receipt into an in-toto Statement in a DSSE envelope signed with this
// installation's key. It is verified here by sigstore's verifier (@sigstore/verify, not written by this
// project), and fails there when any one field of the statement is changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { like } from '../support/matchers';
import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { bundleFromJSON } from '@sigstore/bundle';
import { toSignedEntity, toTrustMaterial, Verifier } from '@sigstore/verify';
import { makeWorld, type World } from '../support/world';

interface Envelope {
  payloadType: string;
  payload: string;
  signatures: { keyid: string; sig: string }[];
}
interface Statement {
  _type: string;
  subject: { name: string; digest: { sha256: string } }[];
  predicateType: string;
  predicate: Record<string, unknown> & { receipt: { seq: number; hash: string }; lease: { epoch: number; version: number } };
}

let world: World;
let launchSeq: number;
let launchHash: string;
let pem: string;
let keyId: string;
const DIGEST = 'sha256:' + 'ab'.repeat(32);

beforeAll(async () => {
  world = makeWorld('attest');
  const store = await world.store();
  try {
    // A launch_committed receipt as src/launcher/resume.ts writes it (its commit callback).
    await store.appendReceipt({ kind: 'todo_added', goal: world.goal, todo: 'fix-login' }, Date.now());
    const launch = await store.appendReceipt(
      {
        kind: 'launch_committed',
        goal: world.goal,
        todo: 'fix-login',
        capture: 'cap_' + '1'.repeat(24),
        owner: 'codex:s1',
        lease: { epoch: 3, version: 2 },
        detail: {
          launch: 'launch_0123456789abcdef',
          loader: '/lib64/ld-linux-x86-64.so.2 sha256:' + 'cd'.repeat(32),
          agent: 'codex',
          pid: 4242,
          digest: DIGEST,
          dev: 2049,
          ino: 77,
          argvDigest: 'sha256:' + '01'.repeat(32),
          envDigest: 'sha256:' + '02'.repeat(32),
          cwd: world.repo,
          loaderEnvironment: 'none',
          driftAccepted: null,
        },
      },
      Date.now(),
    );
    launchSeq = launch.seq;
    launchHash = launch.hash;
  } finally {
    store.close();
  }
  pem = world.cli(['keys', 'show', '--pem']).stdout;
  keyId = (JSON.parse(world.cli(['keys', 'show', '--json']).stdout) as { keyId: string }).keyId;
});
afterAll(() => world.cleanup());

/** Verifies a DSSE envelope with sigstore's verifier: a bundle with a public-key hint, no log, no timestamps. */
function sigstoreVerify(envelope: Envelope): void {
  const bundle = bundleFromJSON({
    mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
    verificationMaterial: { publicKey: { hint: keyId }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } },
    dsseEnvelope: envelope,
  });
  const key = createPublicKey(pem);
  const trust = toTrustMaterial(
    { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] } as unknown as Parameters<typeof toTrustMaterial>[0],
    (hint) => {
      if (hint !== keyId) throw new Error(`unknown key ${hint}`);
      return { publicKey: key, validFor: () => true };
    },
  );
  new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 }).verify(toSignedEntity(bundle));
}

const attestation = (seq: number) => world.cli(['receipts', 'attestation', String(seq)]);
const statementOf = (envelope: Envelope) => JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as Statement;
/** The envelope with one field of its statement changed, signature kept. */
function changed(envelope: Envelope, change: (statement: Statement) => void): Envelope {
  const statement = statementOf(envelope);
  change(statement);
  return { ...envelope, payload: Buffer.from(JSON.stringify(statement)).toString('base64') };
}

describe('receipts attestation <seq>', () => {
  it("emits an in-toto Statement of the launch in a DSSE envelope that sigstore's verifier accepts", () => {
    const result = attestation(launchSeq);
    expect(result.code, result.stderr).toBe(0);
    const envelope = JSON.parse(result.stdout) as Envelope;
    expect(envelope.payloadType).toBe('application/vnd.in-toto+json');
    expect(envelope.signatures).toEqual([{ keyid: keyId, sig: like.any(String) }]);
    const statement = statementOf(envelope);
    expect(statement).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'agent:codex', digest: { sha256: 'ab'.repeat(32) } }],
      predicateType: 'https://turnkeeper.dev/attestation/launch/v1',
      predicate: {
        receipt: { seq: launchSeq, hash: launchHash },
        capture: 'cap_' + '1'.repeat(24),
        todo: 'fix-login',
        goal: world.goal,
        lease: { epoch: 3, version: 2 },
        argvDigest: 'sha256:' + '01'.repeat(32),
        envDigest: 'sha256:' + '02'.repeat(32),
        cwd: world.repo,
      },
    });
    expect(() => sigstoreVerify(envelope)).not.toThrow();
  });

  it("fails sigstore's verification when any one field is changed (the untouched envelope is the control above)", () => {
    const envelope = JSON.parse(attestation(launchSeq).stdout) as Envelope;
    const changes: [string, (statement: Statement) => void][] = [
      ['lease epoch', (s) => (s.predicate.lease.epoch += 1)],
      ['subject digest', (s) => (s.subject[0]!.digest.sha256 = 'cd'.repeat(32))],
      ['argv digest', (s) => (s.predicate.argvDigest = 'sha256:' + '03'.repeat(32))],
      ['receipt seq', (s) => (s.predicate.receipt.seq += 1)],
      ['todo', (s) => (s.predicate.todo = 'fix-logout')],
    ];
    for (const [what, change] of changes) expect(() => sigstoreVerify(changed(envelope, change)), what).toThrow(/signature/i);
    expect(() => sigstoreVerify({ ...envelope, payloadType: 'application/json' }), 'payload type').toThrow(/signature/i);
    // Signed by another key under this key's id: refused too.
    const { privateKey } = generateKeyPairSync('ed25519');
    const payload = Buffer.from(envelope.payload, 'base64');
    const pae = Buffer.concat([Buffer.from(`DSSEv1 ${envelope.payloadType.length} ${envelope.payloadType} ${payload.length} `), payload]);
    // Control: these are the bytes the installation's key signed, so only the key differs below.
    expect(verify(null, pae, createPublicKey(pem), Buffer.from(envelope.signatures[0]!.sig, 'base64'))).toBe(true);
    expect(() => sigstoreVerify({ ...envelope, signatures: [{ keyid: keyId, sig: sign(null, pae, privateKey).toString('base64') }] })).toThrow(/signature/i);
  });

  it('refuses a receipt that is not a launch, and one that does not match its hash', async () => {
    const notLaunch = attestation(1);
    expect(notLaunch.code).toBe(1);
    expect(JSON.parse(notLaunch.stdout)).toMatchObject({ ok: false, reason: 'not_a_launch' });
    expect(JSON.parse(attestation(999).stdout)).toMatchObject({ ok: false, reason: 'unknown_receipt' });
    const store = await world.store();
    try {
      store.connection.prepare('UPDATE receipts SET doc = replace(doc, \'"epoch":3\', \'"epoch":4\') WHERE seq = ?').run(launchSeq);
    } finally {
      store.close();
    }
    expect(JSON.parse(attestation(launchSeq).stdout)).toMatchObject({ ok: false, reason: 'content_altered' });
  });
});
