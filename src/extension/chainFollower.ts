// What the Receipts view says about the chain: the walk, kept incremental while the chain is intact
// (hooks only append, so a refresh checks only what was appended since), the witness's state from the
// last walk, and the newest signed checkpoint. One store's: a switch of store starts the walk afresh.
// No `vscode` here: the extension's refresh (ctx.ts) asks, the views render.
import type { ChainReport } from '../core/receipts';
import type { Authority } from '../store/authority';
import { checkpointsOf, type CheckpointedReport } from '../ledger/checkpoints';
import type { CheckpointView } from './models';

export class ChainFollower {
  private chain: CheckpointedReport | undefined;
  /** The newest signed checkpoint of the store (store_meta), read at each follow. */
  private checkpoint: Omit<CheckpointView, 'witness' | 'witnessPath'> | undefined;
  /** The end of the prefix verified so far. */
  private verifiedUpTo: { seq: number; hash: string } | undefined;
  /** The store (its location) that `chain` and `verifiedUpTo` describe. */
  private chainOf: string | undefined;

  get report(): ChainReport | undefined {
    return this.chain;
  }

  /** The full walk (Verify Receipt Chain): rows verified earlier are checked again, so later tampering shows. */
  async verifyAll(store: Authority | undefined): Promise<ChainReport | undefined> {
    this.verifiedUpTo = undefined;
    this.chain = store ? await this.extend(store, undefined) : undefined;
    return this.chain;
  }

  /**
   * Brings the report up to the chain's head `head` (the whole store's, which another repository's
   * receipt may have moved), walking only what follows the verified prefix; then reads the newest
   * checkpoint. A broken chain is walked in full each time.
   */
  async follow(store: Authority, head: number): Promise<void> {
    if (this.chainOf !== store.location) {
      this.chain = undefined;
      this.verifiedUpTo = undefined;
    }
    if (this.chain === undefined || !this.verifiedUpTo || head !== this.verifiedUpTo.seq) this.chain = await this.extend(store, this.verifiedUpTo);
    const latest = await checkpointsOf(store)?.latest();
    this.checkpoint = latest && { seq: latest.seq, signer: latest.signatures[0]?.name ?? null, time: latest.time };
  }

  /** The newest checkpoint with the witness's state from the last walk. */
  checkpointView(): CheckpointView | null {
    const witness = this.chain?.witness;
    if (!this.checkpoint) return null;
    return { ...this.checkpoint, witness: witness?.state ?? 'unknown', witnessPath: witness?.path ?? null };
  }

  /** Verifies the rows after `from` and folds them into the report; remembers the new verified end. */
  private async extend(store: Authority, from: { seq: number; hash: string } | undefined): Promise<CheckpointedReport> {
    this.chainOf = store.location;
    const tail: CheckpointedReport = await store.verifyChain(from);
    // The witness is compared on every walk, the incremental ones too: its state is the tail's.
    const report: CheckpointedReport =
      from && this.chain
        ? {
            ok: this.chain.ok && tail.ok,
            verified: this.chain.verified + tail.verified,
            breaks: [...this.chain.breaks, ...tail.breaks],
            end: tail.end ?? from,
            ...(tail.witness ? { witness: tail.witness } : {}),
          }
        : tail;
    this.verifiedUpTo = report.ok ? report.end : undefined;
    return report;
  }
}
