// Capture documents and the ids derived from them (spec §3). A capture has no timestamps and no
// prompt text, so the same Turn and Todo always rebuild the same document, hence the same `op`:
// that is what makes retried hooks idempotent.
import { canonicalJson, derivedHex, digestHex, digestText } from './canonical';
import type { Agent } from './ids';

/**
 * v2 identity: {goal, todo, agent, session, turn}. Where the hook ran (cwd) and how the Todo was bound
 * are stored beside the capture, never inside it: the same Turn retried from a subdirectory or through
 * another binding is the same capture, so a released one stays released (spec §3).
 */
const CAPTURE_SCHEMA = 'turnkeeper.capture/v2';
export type Binding = 'prompt' | 'env' | 'launch';

export interface CaptureIdentity {
  readonly goal: string;
  readonly todo: string;
  readonly agent: Agent;
  readonly session: string;
  readonly turn: string;
}

interface CaptureDocument extends CaptureIdentity {
  readonly schema: typeof CAPTURE_SCHEMA;
}

export interface BuiltCapture {
  readonly document: CaptureDocument;
  readonly canonical: string;
  readonly originalDigest: string;
  readonly captureId: string;
  readonly op: string;
}

export function buildCapture(fields: CaptureIdentity): BuiltCapture {
  // Named fields only: a caller's extra properties (cwd, binding) must never leak into the identity.
  const document: CaptureDocument = {
    schema: CAPTURE_SCHEMA,
    goal: fields.goal,
    todo: fields.todo,
    agent: fields.agent,
    session: fields.session,
    turn: fields.turn,
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
export const claimOperationId = (originalDigest: string): string => 'op_' + derivedHex('turnkeeper.claim/v1', originalDigest).slice(0, 32);

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
