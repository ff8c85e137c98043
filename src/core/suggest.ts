// "Did you mean": the Todo ids close to one that does not exist (spec §2 "Output"), and the commands,
// subcommands and flags close to one the command line does not know (spec §8). Pure: the hook reads
// the Goal's open Todo ids only when a claim names an unknown one, and asks here.

/** At most this many suggestions, nearest first. */
const MAX_SUGGESTIONS = 3;

/**
 * How far a suggestion may be: 1 edit for ids of up to 5 characters (the longer of the two), 2 for
 * longer ones. Closer than that, a typo is likely; further, a suggestion is mostly noise (every
 * three-letter id is three edits from every other).
 */
const suggestionLimit = (a: string, b: string): number => (Math.max(a.length, b.length) <= 5 ? 1 : 2);

/**
 * The optimal string alignment distance (insertions, deletions, substitutions and swaps of two
 * adjacent characters, each one edit), or `limit + 1` as soon as it must exceed `limit`.
 */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  // Three rows of the dynamic programme: two back (for swaps), the previous one and this one.
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > limit) return limit + 1;
    before = previous;
    previous = row;
  }
  return Math.min(previous[b.length]!, limit + 1);
}

/** The ids of `candidates` within suggestionLimit of `wanted`, nearest first (then alphabetically), at most three. */
export function nearestTodoIds(wanted: string, candidates: Iterable<string>): string[] {
  return nearest(wanted, candidates);
}

/**
 * " (did you mean status?)", " (did you mean add or list?)": the words of `candidates` near `wanted`
 * (a mistyped command, subcommand or flag), or "" when none is near enough to be a typo.
 */
export function didYouMean(wanted: string, candidates: Iterable<string>): string {
  const near = nearest(wanted, candidates);
  if (near.length === 0) return '';
  return ` (did you mean ${near.length === 1 ? near[0]! : `${near.slice(0, -1).join(', ')} or ${near.at(-1)!}`}?)`;
}

function nearest(wanted: string, candidates: Iterable<string>): string[] {
  const near: { id: string; distance: number }[] = [];
  for (const id of new Set(candidates)) {
    const limit = suggestionLimit(wanted, id);
    const distance = editDistance(wanted, id, limit);
    if (distance <= limit) near.push({ id, distance });
  }
  near.sort((x, y) => x.distance - y.distance || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  return near.slice(0, MAX_SUGGESTIONS).map((entry) => entry.id);
}
