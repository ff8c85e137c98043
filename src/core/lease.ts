// The lease rules of spec §2 as pure functions of (current lease, request, now). The store runs
// them inside its write transaction; nothing here reads a clock or a database.
import type { Owner } from './ids';

type LeaseStatus = 'active' | 'released';

export interface Lease {
  readonly goal: string;
  readonly todo: string;
  readonly owner: Owner;
  readonly capture: string;
  /** Fencing token: +1 for every new acquisition of the Todo. */
  readonly epoch: number;
  /** +1 for every renewal of this acquisition. */
  readonly version: number;
  readonly status: LeaseStatus;
  readonly acquiredAt: number;
  readonly renewedAt: number;
  readonly expiresAt: number;
}

export const DEFAULT_LEASE_TTL_SECONDS = 45 * 60;
/** Renewals are throttled so that a busy agent does not write a receipt for every tool call. */
export const RENEWAL_INTERVAL_MS = 60_000;

export interface ClaimRequest {
  readonly owner: Owner;
  readonly capture: string;
  readonly op: string;
}

/** What the store already knows about this request's operation id, if anything. */
interface RecordedOperation {
  readonly capture: string;
  readonly epoch: number;
  readonly leaseStatus: LeaseStatus;
}

export type ClaimDecision =
  | { readonly kind: 'acquire'; readonly epoch: number }
  | { readonly kind: 'replay'; readonly capture: string; readonly epoch: number }
  | { readonly kind: 'refuse'; readonly reason: 'capture_released'; readonly epoch: number }
  | { readonly kind: 'refuse'; readonly reason: 'lease_held' | 'lease_expired_hold'; readonly holder: Lease }
  | { readonly kind: 'refuse'; readonly reason: 'session_holds_other'; readonly held: Lease };

export interface ClaimState {
  /** The Todo's active lease, if any (at most one exists: the store enforces it with a unique index). */
  readonly active: Lease | undefined;
  /** Highest epoch ever issued for the Todo (0 when never leased). */
  readonly lastEpoch: number;
  readonly recorded: RecordedOperation | undefined;
  /** The requesting Owner's active lease, on any Todo (at most one: a unique index). */
  readonly ownerHolds?: Lease | undefined;
}

export function decideClaim(state: ClaimState, request: ClaimRequest, now: number): ClaimDecision {
  const { active, recorded } = state;
  if (recorded) {
    // The same Turn already claimed: replay while its lease lives, never resurrect a released one.
    if (recorded.leaseStatus === 'active') return { kind: 'replay', capture: recorded.capture, epoch: recorded.epoch };
    return { kind: 'refuse', reason: 'capture_released', epoch: recorded.epoch };
  }
  // One Owner, one Todo: a session whose concurrent prompt already claimed another Todo is told so
  // (the hook's rule 4 checks this too, but only the transaction sees a prompt that won meanwhile).
  const held = state.ownerHolds;
  if (held && !(active && held.goal === active.goal && held.todo === active.todo)) return { kind: 'refuse', reason: 'session_holds_other', held };
  if (!active) return { kind: 'acquire', epoch: state.lastEpoch + 1 };
  if (active.owner === request.owner) {
    // Same Owner, another Turn: the session keeps the capture it already has (spec §2 rule 4).
    return { kind: 'replay', capture: active.capture, epoch: active.epoch };
  }
  // Expiry is a hold, never a silent steal: only an explicit forced release frees the Todo.
  return { kind: 'refuse', reason: isExpired(active, now) ? 'lease_expired_hold' : 'lease_held', holder: active };
}

export const isExpired = (lease: Pick<Lease, 'expiresAt'>, now: number): boolean => now >= lease.expiresAt;

export function acquiredLease(fields: Pick<Lease, 'goal' | 'todo' | 'owner' | 'capture' | 'epoch'>, now: number, ttlSeconds: number): Lease {
  return { ...fields, version: 1, status: 'active', acquiredAt: now, renewedAt: now, expiresAt: now + ttlSeconds * 1000 };
}

export type RenewalDecision =
  { readonly kind: 'renew'; readonly lease: Lease } | { readonly kind: 'skip'; readonly why: 'not_owner' | 'released' | 'too_soon' };

/** Stop/PostToolUse from the Owner extend the lease, at most once per RENEWAL_INTERVAL_MS. */
export function decideRenewal(lease: Lease, owner: Owner, now: number, ttlSeconds: number): RenewalDecision {
  if (lease.owner !== owner) return { kind: 'skip', why: 'not_owner' };
  if (lease.status !== 'active') return { kind: 'skip', why: 'released' };
  // A clock stepped back (now < renewedAt) renews rather than waiting for the clock to catch up, and
  // never shortens the lease: expiry only ever moves forward.
  if (now >= lease.renewedAt && now - lease.renewedAt < RENEWAL_INTERVAL_MS) return { kind: 'skip', why: 'too_soon' };
  return {
    kind: 'renew',
    lease: { ...lease, version: lease.version + 1, renewedAt: now, expiresAt: Math.max(lease.expiresAt, now + ttlSeconds * 1000) },
  };
}

export type ReleaseDecision =
  { readonly kind: 'release'; readonly lease: Lease } | { readonly kind: 'refuse'; readonly why: 'no_active_lease' | 'not_owner' | 'force_needs_reason' };

/** An Owner releases its own lease; anyone else needs `force` and a reason that goes into the receipt. */
export function decideRelease(
  active: Lease | undefined,
  request: {
    readonly by?: Owner | undefined;
    readonly force: boolean;
    readonly reason?: string | undefined;
    readonly holderGone?: { readonly owner: Owner; readonly epoch: number } | undefined;
  },
): ReleaseDecision {
  if (!active) return { kind: 'refuse', why: 'no_active_lease' };
  if (request.by !== undefined && request.by === active.owner) return { kind: 'release', lease: { ...active, status: 'released' } };
  // The holder is an agent launched here whose process is gone: the person who launched it may end
  // its lease without force (spec §2 "Release"). Only that lease: a claim since has another epoch.
  if (!request.force && holderIsGone(active, request.holderGone)) return { kind: 'release', lease: { ...active, status: 'released' } };
  if (!request.force) return { kind: 'refuse', why: 'not_owner' };
  if (!request.reason || request.reason.trim() === '') return { kind: 'refuse', why: 'force_needs_reason' };
  return { kind: 'release', lease: { ...active, status: 'released' } };
}

/**
 * Fencing (spec §2): a write tool is allowed unless the session once held a lease on its Todo
 * that has since been released or taken over.
 */
export function isFenced(sessionLease: Pick<Lease, 'status' | 'epoch'> | undefined, currentEpochOfTodo: number | undefined): boolean {
  if (!sessionLease) return false;
  if (sessionLease.status !== 'active') return true;
  return currentEpochOfTodo !== undefined && currentEpochOfTodo !== sessionLease.epoch;
}

/** Whether `gone` names `active` itself: its owner and its epoch. */
export const holderIsGone = (active: Lease, gone: { readonly owner: Owner; readonly epoch: number } | undefined): boolean =>
  gone !== undefined && gone.owner === active.owner && gone.epoch === active.epoch;

export const isoTime = (ms: number): string => new Date(ms).toISOString();
