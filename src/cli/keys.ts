// `turnkeeper keys show|trust`: this installation's signing key and the teammates' keys it trusts
// (docs/receipts.md, "Keys"). The private key is never printed.
import { keysDir, publicKeyPem, readPublicKey, signingKey, trustKey, trustedKeysPath, verifierKey } from '../ledger/keys';
import { EXIT, parse, printJson, unknownSubcommand, UsageError, type Io } from './io';

const USAGE = 'turnkeeper keys show [--pem] [--json] | turnkeeper keys trust <file|key> [--json]';

export function keysCommand(args: string[], io: Io): number {
  const [sub, ...rest] = args;
  if (sub === 'show') return show(rest, io);
  if (sub === 'trust') return trust(rest, io);
  throw unknownSubcommand('keys', sub, ['show', 'trust'], USAGE);
}

function show(args: string[], io: Io): number {
  const { values } = parse(args, { pem: { type: 'boolean' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage: USAGE });
  const key = signingKey(io.env);
  const vkey = verifierKey(key);
  if (values.json) printJson(io, { ok: true, keyId: key.name, publicKey: vkey, pem: publicKeyPem(key.publicKey), dir: keysDir(io.env) });
  else if (values.pem) io.out(publicKeyPem(key.publicKey));
  else io.out(`key id:     ${key.name}\npublic key: ${vkey}\n(give the public key to teammates: turnkeeper keys trust <public key>)\n`);
  return EXIT.done;
}

function trust(args: string[], io: Io): number {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, { min: 1, max: 1, usage: USAGE });
  const given = positionals[0]!;
  const read = readPublicKey(given, io.cwd);
  if ('problem' in read) {
    throw new UsageError(
      read.problem === 'unreadable'
        ? `${JSON.stringify(given)} is neither a public key (name+hash+key, as turnkeeper keys show prints it) nor a readable file\nusage: ${USAGE}`
        : `${given} holds no public key turnkeeper keys show printed (name+hash+key)\nusage: ${USAGE}`,
    );
  }
  const key = read.key;
  if (key.name === null)
    throw new UsageError('a PEM key has no key id: trust the key turnkeeper keys show prints (name+hash+key); --key on verify --bundle takes a PEM');
  const added = trustKey(io.env, key);
  if (values.json) printJson(io, { ok: true, keyId: key.name, added, file: trustedKeysPath(io.env) });
  else io.out(`${added ? 'trusted' : 'already trusted'}: ${key.name} (${trustedKeysPath(io.env)})\n`);
  return EXIT.done;
}
