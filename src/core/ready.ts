// Ready captures (contract §3): the work context a successful claim writes, as a document plus the
// exact presentation text the hooks inject. The presentation is rendered once, at claim time, and
// from then on only its stored bytes are presented (checked against readyDigest).
import { canonicalJson, digestText } from './canonical';
import type { Owner } from './ids';

export const READY_SCHEMA = 'turnkeeper.ready/v1';
/** Context text stays under this many characters (contract §2). */
export const CONTEXT_LIMIT = 8000;

export interface HistoryEntry {
  readonly seq: number;
  readonly kind: string;
  readonly at: string;
  readonly owner?: string | undefined;
  readonly epoch?: number | undefined;
}

export interface Preconditions {
  readonly gitHead: string | null;
  readonly statusDigest: string | null;
}

export interface ReadyDocument {
  readonly schema: typeof READY_SCHEMA;
  readonly capture: string;
  readonly originalDigest: string;
  readonly lease: { readonly owner: Owner; readonly epoch: number };
  readonly todo: { readonly id: string; readonly title: string; readonly body: string };
  readonly goal: string;
  readonly history: readonly HistoryEntry[];
  readonly preconditions: Preconditions;
}

export interface ReadyCapture {
  readonly document: ReadyDocument;
  readonly canonical: string;
  readonly presentation: string;
  /** Digest of the presentation bytes: what is injected is what was digested. */
  readonly readyDigest: string;
}

export function buildReadyCapture(document: Omit<ReadyDocument, 'schema'>): ReadyCapture {
  const full: ReadyDocument = { schema: READY_SCHEMA, ...document };
  const presentation = renderPresentation(full);
  return { document: full, canonical: canonicalJson(full), presentation, readyDigest: digestText(presentation) };
}

export const showCommand = (captureId: string): string => `turnkeeper show ${captureId}`;

export function renderPresentation(ready: ReadyDocument): string {
  const head = [
    `Turnkeeper: Todo ${ready.todo.id} · capture ${ready.capture} · epoch ${ready.lease.epoch}`,
    `This turn holds the lease on Todo ${ready.todo.id} (owner ${ready.lease.owner}); no other agent may claim it while you work.`,
    '',
    `Title: ${ready.todo.title}`,
  ];
  const tail = [
    '',
    `Goal: ${ready.goal}`,
    `Git at capture: ${ready.preconditions.gitHead ?? (ready.preconditions.statusDigest === null ? '(not a git repository)' : '(no commit yet)')}${ready.preconditions.statusDigest ? ` (status ${ready.preconditions.statusDigest.slice(0, 19)}…)` : ''}`,
    ...(ready.history.length > 0
      ? ['Recent receipts of this Todo:', ...ready.history.map(renderHistoryLine)]
      : []),
    `When the Todo is finished: turnkeeper todo done ${ready.todo.id}`,
  ];
  const body = ready.todo.body === '' ? [] : ['', ready.todo.body];
  const whole = [...head, ...body, ...tail].join('\n');
  if (whole.length < CONTEXT_LIMIT) return whole;
  // Too long: keep the head, cut the body, and end with the command that prints the whole.
  const footer = `\n…\n[truncated] The whole ready capture: ${showCommand(ready.capture)}`;
  const room = CONTEXT_LIMIT - 1 - footer.length;
  return cutAtCodePoint([...head, ...body].join('\n'), room) + footer;
}

const renderHistoryLine = (entry: HistoryEntry): string =>
  `- #${entry.seq} ${entry.at} ${entry.kind}${entry.owner ? ` ${entry.owner}` : ''}${entry.epoch !== undefined ? ` epoch ${entry.epoch}` : ''}`;

/** Cut to at most `limit` UTF-16 units without splitting a surrogate pair. */
function cutAtCodePoint(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = limit;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return text.slice(0, end);
}
