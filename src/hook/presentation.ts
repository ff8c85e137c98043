// How often a session needs the full ready capture (docs/hook-protocol.md, "How often the full capture
// is presented"). Agents keep hook context in the conversation: they persist it and send it again
// with every later request, resumes included. Presenting the full capture on every context event of a
// holder therefore piled copies up: a session resumed twice sent five identical copies in each request. So a holder's later context event gets the full
// stored bytes only when the agent's own transcript does not already carry them (after its last
// compaction), and otherwise one line that names the capture. The check is the agent's record of
// what it sent, not Turnkeeper's record of what it printed: an output the agent dropped (a timed-out
// or failed hook, a crash before it was written down) is not in the transcript, so the next event
// presents the full bytes again. Anything unreadable or unknown presents the full bytes: the failure
// mode is the old duplication, never a missing capture.
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { fenceLine } from '../core/ready';
import { PROFILES } from '../agents/profiles';

/** How much of a transcript's end is read: a capture further back counts as absent (full bytes again). */
export const TRANSCRIPT_TAIL_BYTES = 16 * 1024 * 1024;

/**
 * Lines an agent writes to its transcript when it compacts the conversation: history before them is
 * replaced by a summary, so a capture before them no longer reaches the model. Each profile names its
 * own (`payload.compactionMarkers`); a transcript is searched for all of them (a marker of another
 * agent's format never appears in one, and finding one only presents the bytes once more).
 */
const COMPACTION_MARKERS = Object.values(PROFILES).flatMap((profile) => profile.payload.compactionMarkers.map((marker) => Buffer.from(marker)));
/**
 * Words one of which every compaction marker contains (`compact`, Qwen Code's `compress`). Searched
 * first: a marker that starts with `"type":"` is slow to search for in a JSONL transcript, where
 * nearly every line has that prefix.
 */
const COMPACTION_WORDS = [Buffer.from('compact'), Buffer.from('compress')];

/** Whether a compaction marker starts in `piece` at or after `from`. */
const compactionIn = (piece: Buffer, from: number): boolean =>
  COMPACTION_WORDS.some((word) => piece.indexOf(word, from) >= 0) && COMPACTION_MARKERS.some((marker) => piece.indexOf(marker, from) >= 0);

/**
 * The line of a (fenced, v2) presentation that only the full capture contains: the reminder and
 * guidance name the capture too, but never with this marker. Older presentations lack it, and are
 * always presented in full.
 */
export const fullCaptureMarker = (captureId: string): string => fenceLine('begin', captureId);

/** The transcript is read backwards in pieces of this size (one allocation, whatever the transcript's size). */
export const TRANSCRIPT_CHUNK_BYTES = 1024 * 1024;
/** Each piece also reads this far into the next one, so that a marker across the boundary is found whole. */
const OVERLAP = Math.max(...COMPACTION_MARKERS.map((marker) => marker.length), Buffer.byteLength(fullCaptureMarker('cap_' + '0'.repeat(24)))) - 1;

/**
 * Whether the agent's transcript holds this capture's full presentation after its last compaction.
 * Read from the end backwards, a piece at a time, at most TRANSCRIPT_TAIL_BYTES: it stops at the last
 * begin marker of the capture (the compaction markers that matter come after it, in pieces already
 * read), or at a compaction marker read before any begin marker (whatever came earlier was compacted).
 * A held context event thus reads what follows the capture in the conversation, usually a little.
 */
export function transcriptCarries(transcriptPath: string | undefined, captureId: string): boolean {
  if (transcriptPath === undefined || transcriptPath === '') return false;
  let fd: number | undefined;
  try {
    // A FIFO or a device named as a transcript is never read (opening or reading it could block, or
    // never end): checked before opening, and opened non-blocking in case it was swapped in between.
    if (!statSync(transcriptPath).isFile()) return false;
    fd = openSync(transcriptPath, constants.O_RDONLY | constants.O_NONBLOCK);
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size === 0) return false;
    const begin = Buffer.from(fullCaptureMarker(captureId));
    const limit = Math.max(0, stat.size - TRANSCRIPT_TAIL_BYTES);
    const buffer = Buffer.allocUnsafe(Math.min(TRANSCRIPT_CHUNK_BYTES + OVERLAP, stat.size - limit));
    for (let end = stat.size; end > limit;) {
      const start = Math.max(limit, end - TRANSCRIPT_CHUNK_BYTES);
      // This piece is [start, end) and the overlap after it (a marker that starts in it is whole).
      const piece = buffer.subarray(0, readAt(fd, buffer, Math.min(stat.size, end + OVERLAP) - start, start));
      const at = piece.lastIndexOf(begin);
      if (at >= 0) return !compactionIn(piece, at);
      if (compactionIn(piece, 0)) return false;
      end = start;
    }
    return false;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Reads up to `length` bytes at `position` into the start of `buffer`; returns how many (fewer at the end of the file). */
function readAt(fd: number, buffer: Buffer, length: number, position: number): number {
  let read = 0;
  while (read < length) {
    const got = readSync(fd, buffer, read, length - read, position + read);
    if (got === 0) break;
    read += got;
  }
  return read;
}

/**
 * What a holder's later context event gets when its conversation already carries the full capture:
 * the first line every presentation has (Todo, capture, epoch), and where the rest is.
 */
export function heldReminder(todo: string, captureId: string, epoch: number): string {
  return (
    `Turnkeeper: Todo ${todo} · capture ${captureId} · epoch ${epoch}\n` +
    `This session still holds the lease on Todo ${todo}. Its ready capture (the Todo's text and the facts of the claim) ` +
    `was presented earlier in this conversation; if you no longer have it, print it: turnkeeper show ${captureId}`
  );
}
