// `turnkeeper closures [--json]` and `turnkeeper closures prune [--all] [--json]` (docs/launcher.md §9):
// the attested snapshots of script-shaped agents under $TURNKEEPER_HOME/closures, their disk use, and
// removing the ones no installation uses now (never one a running process names).
import { listClosures, pruneClosures } from '../launcher/closure';
import { printRefusal } from './launch';
import { EXIT, parse, printJson, type Io } from './io';

const USAGE = 'turnkeeper closures [--json]  |  closures prune [--all] [--json]';

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

export function closuresCommand(args: string[], io: Io): number {
  const [sub, ...rest] = args;
  if (sub === 'prune') return prune(rest, io);
  const { values } = parse(sub === undefined || sub === 'list' ? rest : args, { json: { type: 'boolean' } }, { min: 0, max: 0, usage: USAGE });
  const listing = listClosures(io.env);
  const bytes = listing.snapshots.reduce((sum, snapshot) => sum + snapshot.bytes, 0);
  if (values.json) {
    printJson(io, { dir: listing.dir, bytes, staleBytes: listing.staleBytes, snapshots: listing.snapshots });
    return EXIT.done;
  }
  io.out(
    `${listing.dir}: ${listing.snapshots.length} snapshot(s), ${mib(bytes)}${listing.staleBytes > 0 ? `, ${mib(listing.staleBytes)} of interrupted copies` : ''}\n`,
  );
  for (const snapshot of listing.snapshots) {
    const why = [
      ...snapshot.current.map((source) => `current for ${source}`),
      ...(snapshot.inUse === 'unknown' ? ['maybe in use'] : snapshot.inUse.length > 0 ? [`in use by pid ${snapshot.inUse.join(', ')}`] : []),
    ];
    io.out(
      `  ${snapshot.digest}  ${snapshot.files} files, ${mib(snapshot.bytes)}  ${why.length > 0 ? why.join('; ') : 'unused (turnkeeper closures prune removes it)'}\n`,
    );
  }
  return EXIT.done;
}

function prune(args: string[], io: Io): number {
  const { values } = parse(args, { all: { type: 'boolean' }, json: { type: 'boolean' } }, { min: 0, max: 0, usage: USAGE });
  try {
    const result = pruneClosures(io.env, { all: values.all ?? false });
    if (values.json) printJson(io, { ok: true, ...result });
    else {
      for (const removed of result.removed) io.out(`removed ${removed.digest} (${mib(removed.bytes)})\n`);
      for (const kept of result.kept) io.out(`kept ${kept.digest}: ${kept.why}\n`);
      io.out(`freed ${mib(result.freedBytes)}\n`);
    }
    return EXIT.done;
  } catch (error) {
    return printRefusal(io, values.json ?? false, error);
  }
}
