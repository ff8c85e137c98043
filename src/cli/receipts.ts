// `turnkeeper receipts export|attestation`, `turnkeeper checkpoint` and `turnkeeper verify --bundle`
// (docs/receipts.md, "Checkpoints", "Export", "Launch attestations"). Plain `turnkeeper receipts`
// (the log, newest first) stays in inspect.ts.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { writeFileAtomicStreaming } from '../files/atomicFile';
import { checkpointsOf, SigningRefused } from '../ledger/checkpoints';
import { BundleUnreadable, checkInclusionProof, exportBundle, ExportRefused, signersOf, verifyBundleFile } from '../ledger/bundle';
import { launchAttestation } from '../ledger/attestation';
import { readPublicKey, trustedKeys, type TrustedKey } from '../ledger/keys';
import { storePath } from '../store/location';
import { EXIT, goalFrom, openStore, parse, printJson, UsageError, type Io } from './io';

export async function receiptsCommand(args: string[], io: Io): Promise<number> {
  if (args[0] === 'export') return exportCommand(args.slice(1), io);
  if (args[0] === 'attestation') return attestationCommand(args.slice(1), io);
  if (args[0] === 'prove') return proveCommand(args.slice(1), io);
  if (args[0] === 'consistency') return consistencyCommand(args.slice(1), io);
  return (await import('./inspect')).receiptsCommand(args, io);
}

/** The current directory's Goal, or '' outside any (a checkpoint belongs to the chain, not a Goal). */
function goalOrNone(io: Io): string {
  try {
    return goalFrom(io, undefined);
  } catch {
    return '';
  }
}

const noStore = (io: Io, json: boolean | undefined): number => {
  const message = `no store at ${storePath(io.env)}`;
  if (json) printJson(io, { ok: false, error: { code: 'no_store', message } });
  else io.err(`${message}\n`);
  return EXIT.refused;
};

async function exportCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper receipts export [--from <seq>] [--out <file>] [--json]';
  const { values } = parse(args, { from: { type: 'string' }, out: { type: 'string' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage });
  const from = Number(values.from ?? 1);
  if (!Number.isSafeInteger(from) || from < 1) throw new UsageError(`--from takes a receipt seq (1 or more)\nusage: ${usage}`);
  if (values.json && values.out === undefined) throw new UsageError(`--json reports on an export written to --out <file>\nusage: ${usage}`);
  const store = await openStore(io, false);
  if (!store) return noStore(io, values.json);
  const out = values.out === undefined ? undefined : resolve(io.cwd, values.out);
  try {
    // To a file: written beside the target and renamed over it only once the export succeeded, so a
    // refused export (a broken chain) leaves the previous bundle as it was. To stdout: in the chunks
    // exportBundle writes (about 64 KiB each).
    const exportTo = (write: (text: string) => void) => exportBundle(store, goalOrNone(io), from, write);
    const result = out === undefined ? await exportTo((text) => io.out(text)) : await writeFileAtomicStreaming(out, 0o644, exportTo);
    if (values.json)
      printJson(io, {
        ok: true,
        file: out,
        from: result.from,
        to: result.to,
        origin: result.checkpoint.origin,
        key: result.checkpoint.key,
        checkpointReceipt: result.checkpoint.receipt,
      });
    else
      io.err(
        `exported receipts ${result.from}..${result.to}${out ? ` to ${out}` : ''}, signed by ${result.checkpoint.key} (checkpoint receipt #${result.checkpoint.receipt})\n`,
      );
    return EXIT.done;
  } catch (error) {
    if (!(error instanceof ExportRefused) && !(error instanceof SigningRefused)) throw error;
    return refusedSigning(io, values.json, error);
  } finally {
    store.close();
  }
}

/** A chain that does not verify, or a head that does not extend what was signed: named breaks, exit 1. */
function refusedSigning(io: Io, json: boolean | undefined, error: ExportRefused | SigningRefused): number {
  const breaks = error instanceof ExportRefused ? error.report.breaks : error.breaks;
  if (json) printJson(io, { ok: false, reason: 'chain_broken', breaks, error: { code: 'chain_broken', message: error.message } });
  else io.err(`${error.message}\n`);
  return EXIT.refused;
}

/** A positive receipt seq (or tree size) from an argument, else a usage error. */
function countOf(value: string | undefined, what: string, usage: string): number {
  const n = Number(value);
  if (value === undefined || !/^[1-9]\d*$/.test(value) || !Number.isSafeInteger(n))
    throw new UsageError(`${what} takes a receipt seq (1 or more), not ${JSON.stringify(value)}\nusage: ${usage}`);
  return n;
}

/** `turnkeeper receipts prove <seq> [--size <n>] [--json]`: the receipt's inclusion proof in a signed checkpoint. */
async function proveCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper receipts prove <seq> [--size <n>] [--json]';
  const { values, positionals } = parse(args, { size: { type: 'string' }, json: { type: 'boolean' } }, { min: 1, max: 1, usage });
  const seq = countOf(positionals[0], '<seq>', usage);
  const size = values.size === undefined ? undefined : countOf(values.size, '--size', usage);
  const store = await openStore(io, false);
  if (!store) return noStore(io, true);
  try {
    const result = await checkpointsOf(store)!.prove(seq, size, goalOrNone(io));
    if (!result.ok) {
      if (values.json) printJson(io, { ok: false, reason: result.reason, error: { code: result.reason, message: result.message } });
      else io.err(`${result.message}\n`);
      return EXIT.refused;
    }
    const { index, size: treeSize, root, proof, checkpoint } = result;
    if (values.json) printJson(io, { index, size: treeSize, root, proof, checkpoint });
    else
      io.out(
        `receipt #${seq} is leaf ${index} of the signed tree of size ${treeSize} (root ${root}), proof of ${proof.length} hashes:\n${proof.join('\n')}\n${checkpoint}`,
      );
    return EXIT.done;
  } catch (error) {
    if (!(error instanceof SigningRefused)) throw error;
    return refusedSigning(io, values.json, error);
  } finally {
    store.close();
  }
}

/** `turnkeeper receipts consistency --from <n> --to <m> [--json]`: the tree of n receipts a prefix of the tree of m. */
async function consistencyCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper receipts consistency --from <n> --to <m> [--json]';
  const { values } = parse(args, { from: { type: 'string' }, to: { type: 'string' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage });
  const from = countOf(values.from, '--from', usage);
  const to = countOf(values.to, '--to', usage);
  if (from > to) throw new UsageError(`--from ${from} is after --to ${to}\nusage: ${usage}`);
  const store = await openStore(io, false);
  if (!store) return noStore(io, true);
  try {
    const head = await checkpointsOf(store)!.headSeq();
    if (to > head) {
      const message = `--to ${to} is past the chain's head (#${head})`;
      if (values.json) printJson(io, { ok: false, reason: 'not_in_chain', error: { code: 'not_in_chain', message } });
      else io.err(`${message}\n`);
      return EXIT.refused;
    }
    const result = await checkpointsOf(store)!.consistency(from, to);
    if (values.json) printJson(io, result);
    else io.out(`the tree of ${from} receipts is a prefix of the tree of ${to}, proof of ${result.proof.length} hashes:\n${result.proof.join('\n')}\n`);
    return EXIT.done;
  } finally {
    store.close();
  }
}

async function attestationCommand(args: string[], io: Io): Promise<number> {
  const usage = 'turnkeeper receipts attestation <seq> [--out <file>]';
  const { values, positionals } = parse(args, { out: { type: 'string' } }, { min: 1, max: 1, usage });
  const seq = Number(positionals[0]);
  if (!Number.isSafeInteger(seq) || seq < 1) throw new UsageError(`${JSON.stringify(positionals[0])} is not a receipt seq\nusage: ${usage}`);
  const store = await openStore(io, false);
  if (!store) return noStore(io, true);
  try {
    const result = await launchAttestation(store, io.env, seq);
    if (!result.ok) {
      printJson(io, { ok: false, reason: result.reason, error: { code: result.reason, message: result.message } });
      return EXIT.refused;
    }
    const text = JSON.stringify(result.envelope) + '\n';
    if (values.out === undefined) io.out(text);
    else await writeFileAtomicStreaming(resolve(io.cwd, values.out), 0o644, (write) => write(text));
    return EXIT.done;
  } finally {
    store.close();
  }
}

export async function checkpointCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' } }, { min: 0, max: 0, usage: 'turnkeeper checkpoint [--json]' });
  const store = await openStore(io, false);
  if (!store) return noStore(io, values.json);
  try {
    const checkpoints = checkpointsOf(store)!;
    let written;
    try {
      written = await checkpoints.checkpointNow(goalOrNone(io));
    } catch (error) {
      if (!(error instanceof SigningRefused)) throw error;
      return refusedSigning(io, values.json, error);
    }
    const witness = checkpoints.witness;
    if (values.json)
      printJson(io, {
        ok: true,
        origin: written.origin,
        seq: written.seq,
        hash: written.hash,
        receipt: written.receipt,
        key: written.key,
        witness,
        note: written.note,
      });
    else io.out(`checkpoint of receipt #${written.seq} signed by ${written.key} (receipt #${written.receipt}; witness ${witness ?? 'off'}):\n${written.note}`);
    return EXIT.done;
  } finally {
    store.close();
  }
}

/** Keys from `--key` (a public key, or a file of one: verifier key or PEM), else the trusted ones. */
function keysFrom(io: Io, given: readonly string[] | undefined): TrustedKey[] {
  if (!given || given.length === 0) return trustedKeys(io.env);
  return given.map((value) => {
    const read = readPublicKey(value, io.cwd);
    if ('key' in read) return read.key;
    if (read.problem === 'unreadable') throw new UsageError(`--key ${JSON.stringify(value)} is neither a public key nor a readable file`);
    throw new UsageError(`--key ${value}: no Ed25519 public key in it (turnkeeper keys show, or keys show --pem)`);
  });
}

/** `turnkeeper verify`: with `--bundle`, an exported bundle and no store; otherwise the store (inspect.ts). */
export async function verifyCommand(args: string[], io: Io): Promise<number> {
  const offline = ['--bundle', '--key', '--proof', '--document'];
  if (!args.some((arg) => offline.some((flag) => arg === flag || arg.startsWith(`${flag}=`)))) return (await import('./inspect')).verifyCommand(args, io);
  if (args.some((arg) => arg === '--proof' || arg.startsWith('--proof='))) return verifyProofCommand(args, io);
  const usage = 'turnkeeper verify --bundle <file> [--key <public key|file>]… [--json]';
  const { values } = parse(args, { json: { type: 'boolean' }, bundle: { type: 'string' }, key: { type: 'string', multiple: true } }, { min: 0, max: 0, usage });
  if (values.bundle === undefined) throw new UsageError(`--key goes with --bundle\nusage: ${usage}`);
  return verifyBundleCommand(values.bundle, values.key, values.json ?? false, io);
}

/**
 * `turnkeeper verify --proof <prove.json> --document <file> [--key <k>]…`: one receipt, one proof, one
 * key, no store: the proof's checkpoint is signed by a trusted key, names the proof's size and root,
 * and the proof places SHA-256(0x00 || the document's bytes, as given) at its index under that root.
 */
function verifyProofCommand(args: string[], io: Io): number {
  const usage = 'turnkeeper verify --proof <file> --document <file> [--key <public key|file>]… [--json]';
  const { values } = parse(
    args,
    { json: { type: 'boolean' }, proof: { type: 'string' }, document: { type: 'string' }, key: { type: 'string', multiple: true } },
    { min: 0, max: 0, usage },
  );
  if (values.proof === undefined || values.document === undefined) throw new UsageError(`--proof goes with --document\nusage: ${usage}`);
  let proof: { index?: unknown; size?: unknown; root?: unknown; proof?: unknown; checkpoint?: unknown };
  let document: Buffer;
  try {
    proof = JSON.parse(readFileSync(resolve(io.cwd, values.proof), 'utf8')) as typeof proof;
    document = readFileSync(resolve(io.cwd, values.document));
  } catch (error) {
    const message = `cannot read the proof or the document: ${(error as Error).message}`;
    if (values.json) printJson(io, { ok: false, error: { code: 'no_proof', message } });
    else io.err(`${message}\n`);
    return EXIT.refused;
  }
  // The document as stored is one line; a trailing newline (a file written by a shell) is not part of it.
  if (document.at(-1) === 0x0a) document = document.subarray(0, -1);
  const verdict = checkInclusionProof(proof, document, keysFrom(io, values.key));
  if (values.json) printJson(io, verdict);
  else
    io.out(
      verdict.ok
        ? `the document is receipt #${verdict.seq} of ${verdict.origin} at tree size ${verdict.size}, signed by ${verdict.signer}\n`
        : `NOT proved: ${verdict.reason}\n`,
    );
  return verdict.ok ? EXIT.done : EXIT.refused;
}

/** `turnkeeper verify --bundle <file> [--key <k>]…`: no store is opened; the file is read as a stream (ledger/bundle.ts). */
function verifyBundleCommand(file: string, keys: readonly string[] | undefined, json: boolean, io: Io): number {
  let report;
  try {
    report = verifyBundleFile(resolve(io.cwd, file), keysFrom(io, keys));
  } catch (error) {
    if (!(error instanceof BundleUnreadable)) throw error;
    const message = `cannot read ${file}: ${error.message}`;
    if (json) printJson(io, { ok: false, verified: 0, breaks: [], error: { code: 'no_bundle', message } });
    else io.err(`${message}\n`);
    return EXIT.refused;
  }
  const signers = signersOf(report);
  if (json)
    printJson(io, {
      ok: report.ok,
      verified: report.verified,
      breaks: report.breaks,
      origin: report.origin,
      from: report.from,
      to: report.to,
      signers,
      ...(report.stopped ? { stopped: true } : {}),
    });
  else {
    io.out(
      report.ok
        ? `bundle verifies: ${report.verified} receipts (${report.from}..${report.to}) of ${report.origin}\n`
        : `bundle is BROKEN: ${report.verified} receipts verify, ${report.breaks.length} breaks\n`,
    );
    for (const item of report.breaks) io.out(`  seq ${item.seq}: ${item.kind}\n`);
    if (report.stopped) io.out(`  (stopped after ${report.breaks.length} breaks: the rest of the file was not read)\n`);
    for (const signer of signers) io.out(`  checkpoints of ${signer.checkpoints.join(', ')} signed by ${signer.key ?? '(no trusted key)'}\n`);
  }
  return report.ok ? EXIT.done : EXIT.refused;
}
