// Capture documents and the ids derived from them (contract §3). A capture has no timestamps and no
// prompt text, so the same Turn and Todo always rebuild the same document, hence the same `op`:
// that is what makes retried hooks idempotent.
import { canonicalJson, derivedHex, digestHex, digestText } from './canonical';
import type { Agent } from './ids';

export const CAPTURE_SCHEMA = 'turnkeeper.capture/v1';
export type Binding = 'prompt' | 'env' | 'launch';

export interface CaptureDocument {
  readonly schema: typeof CAPTURE_SCHEMA;
  readonly goal: string;
  readonly todo: string;
  readonly agent: Agent;
  readonly session: string;
  readonly turn: string;
  readonly cwd: string;
  readonly binding: Binding;
}

export interface BuiltCapture {
  readonly document: CaptureDocument;
  readonly canonical: string;
  readonly originalDigest: string;
  readonly captureId: string;
  readonly op: string;
}

export function buildCapture(fields: Omit<CaptureDocument, 'schema'>): BuiltCapture {
  const document: CaptureDocument = {
    schema: CAPTURE_SCHEMA,
    goal: fields.goal,
    todo: fields.todo,
    agent: fields.agent,
    session: fields.session,
    turn: fields.turn,
    cwd: fields.cwd,
    binding: fields.binding,
  };
  const canonical = canonicalJson(document);
  const originalDigest = digestText(canonical);
  return {
    document,
    canonical,
    originalDigest,
    captureId: captureIdOf(originalDigest),
    op: claimOperationId(originalDigest),
  };
}

export const captureIdOf = (originalDigest: string): string => 'cap_' + digestHex(originalDigest).slice(0, 24);

/** `op = "op_" + hex(sha256("turnkeeper.claim/v1\n" + originalDigest))[0:32]` */
export const claimOperationId = (originalDigest: string): string =>
  'op_' + derivedHex('turnkeeper.claim/v1', originalDigest).slice(0, 32);

export type CaptureState = 'ready' | 'released' | 'unbound' | 'needs_recovery';

/**
 * The state a user sees (status, sidebar). Legacy captures without a Turn are `unbound`: readable,
 * never executable. A ready capture whose bytes no longer match, or whose lease expired while still
 * held, `needs_recovery`.
 */
export function captureState(facts: {
  readonly turn: string | null;
  readonly leaseStatus: 'active' | 'released' | undefined;
  readonly leaseExpired: boolean;
  readonly readyIntact: boolean;
}): CaptureState {
  if (facts.turn === null || facts.leaseStatus === undefined) return 'unbound';
  if (facts.leaseStatus === 'released') return 'released';
  if (!facts.readyIntact || facts.leaseExpired) return 'needs_recovery';
  return 'ready';
}
