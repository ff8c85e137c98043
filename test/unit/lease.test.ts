import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { acquiredLease, decideClaim, decideRelease, decideRenewal, isFenced, RENEWAL_INTERVAL_MS, type Lease } from '../../src/core/lease';
import type { Owner } from '../../src/core/ids';

const TTL = 60;

/** A tiny model of the store: the lease table of one Todo, driven only by the pure decisions. */
class Model {
  leases: Lease[] = [];
  ops = new Map<string, string>();
  claim(owner: Owner, op: string, now: number) {
    const recordedCapture = this.ops.get(op);
    const recordedLease = this.leases.find((lease) => lease.capture === recordedCapture);
    const active = this.leases.find((lease) => lease.status === 'active');
    const decision = decideClaim(
      {
        active,
        lastEpoch: Math.max(0, ...this.leases.map((lease) => lease.epoch)),
        recorded: recordedLease && { capture: recordedLease.capture, epoch: recordedLease.epoch, leaseStatus: recordedLease.status },
      },
      { owner, capture: `cap-${op}`, op },
      now,
    );
    if (decision.kind === 'acquire') {
      this.leases.push(acquiredLease({ goal: 'g', todo: 't', owner, capture: `cap-${op}`, epoch: decision.epoch }, now, TTL));
      this.ops.set(op, `cap-${op}`);
    }
    return decision;
  }
  release(by: Owner, force: boolean) {
    const active = this.leases.find((lease) => lease.status === 'active');
    const decision = decideRelease(active, { by, force, reason: force ? 'test' : undefined });
    if (decision.kind === 'release') this.leases = this.leases.map((lease) => (lease === active ? decision.lease : lease));
    return decision;
  }
}

const owners: Owner[] = ['codex:a', 'claude:b', 'gemini:c', 'codex:d'];
const step = fc.oneof(
  fc.record({ type: fc.constant('claim' as const), owner: fc.constantFrom(...owners), turn: fc.nat(3), dt: fc.nat(120_000) }),
  fc.record({ type: fc.constant('release' as const), owner: fc.constantFrom(...owners), force: fc.boolean(), dt: fc.nat(120_000) }),
);

describe('lease decisions', () => {
  it('never yield two active holders, epochs only grow, expiry never steals', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const model = new Model();
        let now = 0;
        for (const s of steps) {
          now += s.dt;
          const before = model.leases.find((lease) => lease.status === 'active');
          if (s.type === 'claim') {
            const decision = model.claim(s.owner, `${s.owner}/${s.turn}`, now);
            if (before && before.owner !== s.owner) expect(decision.kind).not.toBe('acquire');
          } else {
            model.release(s.owner, s.force);
          }
          expect(model.leases.filter((lease) => lease.status === 'active').length).toBeLessThanOrEqual(1);
          const epochs = model.leases.map((lease) => lease.epoch);
          expect(epochs).toStrictEqual([...epochs].sort((a, b) => a - b));
          expect(new Set(epochs).size).toBe(epochs.length);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('replays the same op while its lease lives and refuses it once released', () => {
    const model = new Model();
    expect(model.claim('codex:a', 'op1', 0)).toStrictEqual({ kind: 'acquire', epoch: 1 });
    expect(model.claim('codex:a', 'op1', 10)).toMatchObject({ kind: 'replay', epoch: 1 });
    model.release('codex:a', false);
    expect(model.claim('codex:a', 'op1', 20)).toMatchObject({ kind: 'refuse', reason: 'capture_released' });
    // Control: a new Turn (new op) acquires a new generation.
    expect(model.claim('codex:a', 'op2', 30)).toStrictEqual({ kind: 'acquire', epoch: 2 });
  });

  it('treats an expired lease as a hold, not a release', () => {
    const model = new Model();
    model.claim('codex:a', 'op1', 0);
    expect(model.claim('claude:b', 'op2', 1000)).toMatchObject({ kind: 'refuse', reason: 'lease_held' });
    expect(model.claim('claude:b', 'op3', TTL * 1000 + 1)).toMatchObject({ kind: 'refuse', reason: 'lease_expired_hold' });
    expect(model.leases.filter((lease) => lease.status === 'active')).toHaveLength(1);
    // Control: after an explicit forced release the other owner acquires epoch 2.
    expect(model.release('claude:b', true).kind).toBe('release');
    expect(model.claim('claude:b', 'op3', TTL * 1000 + 2)).toStrictEqual({ kind: 'acquire', epoch: 2 });
  });

  it('renews only for the owner and at most once per interval', () => {
    const lease = acquiredLease({ goal: 'g', todo: 't', owner: 'codex:a', capture: 'c', epoch: 1 }, 0, TTL);
    expect(decideRenewal(lease, 'claude:b', RENEWAL_INTERVAL_MS, TTL)).toStrictEqual({ kind: 'skip', why: 'not_owner' });
    expect(decideRenewal(lease, 'codex:a', RENEWAL_INTERVAL_MS - 1, TTL)).toStrictEqual({ kind: 'skip', why: 'too_soon' });
    const renewed = decideRenewal(lease, 'codex:a', RENEWAL_INTERVAL_MS, TTL);
    expect(renewed).toMatchObject({ kind: 'renew', lease: { version: 2, expiresAt: RENEWAL_INTERVAL_MS + TTL * 1000 } });
  });

  it('requires force and a reason to release someone else’s lease', () => {
    const lease = acquiredLease({ goal: 'g', todo: 't', owner: 'codex:a', capture: 'c', epoch: 1 }, 0, TTL);
    expect(decideRelease(lease, { by: 'claude:b', force: false })).toStrictEqual({ kind: 'refuse', why: 'not_owner' });
    expect(decideRelease(lease, { by: 'claude:b', force: true, reason: ' ' })).toStrictEqual({ kind: 'refuse', why: 'force_needs_reason' });
    expect(decideRelease(lease, { by: 'claude:b', force: true, reason: 'gone' }).kind).toBe('release');
    expect(decideRelease(lease, { by: 'codex:a', force: false }).kind).toBe('release');
  });

  it('releases a lease whose launched holder is gone without force: that lease only, by owner and epoch', () => {
    const lease = acquiredLease({ goal: 'g', todo: 't', owner: 'codex:a', capture: 'c', epoch: 2 }, 0, TTL);
    expect(decideRelease(lease, { force: false, holderGone: { owner: 'codex:a', epoch: 2 } }).kind).toBe('release');
    // A claim since (another epoch) or another holder is not the one that went: refused as without it.
    expect(decideRelease(lease, { force: false, holderGone: { owner: 'codex:a', epoch: 1 } })).toStrictEqual({ kind: 'refuse', why: 'not_owner' });
    expect(decideRelease(lease, { force: false, holderGone: { owner: 'codex:b', epoch: 2 } })).toStrictEqual({ kind: 'refuse', why: 'not_owner' });
    // Under --force it is a forced release, which needs its reason as ever.
    expect(decideRelease(lease, { force: true, holderGone: { owner: 'codex:a', epoch: 2 } })).toStrictEqual({ kind: 'refuse', why: 'force_needs_reason' });
  });

  it('fences a session whose lease was released or taken over, and nobody else', () => {
    expect(isFenced(undefined, undefined)).toBe(false);
    expect(isFenced({ status: 'active', epoch: 2 }, 2)).toBe(false);
    expect(isFenced({ status: 'released', epoch: 2 }, 2)).toBe(true);
    expect(isFenced({ status: 'active', epoch: 2 }, 3)).toBe(true);
  });
});
