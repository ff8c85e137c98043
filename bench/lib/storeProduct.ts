// What bench/run.mjs seeds and measures of the product, in-process: esbuild bundles this file (so knip
// sees these imports too: an export the bench uses is used).
export { openSqliteAuthority } from '../../src/ledger/open';
export { buildCapture } from '../../src/core/capture';
export { preconditionsOf } from '../../src/checkout/workspace';
export { resolveGoal } from '../../src/checkout/goal';
// Rows C3: one checkpoint signature and its verification, in-process, through the product's code.
export { signingKey, signNote, noteVerifier } from '../../src/ledger/keys';
export { checkpointText, signedNote, parseCheckpoint } from '../../src/core/checkpoint';
// Rows B1/B2: proofs and checkpoints through the Ledger's collaborator, in-process.
export { checkpointsOf } from '../../src/ledger/checkpoints';
// Rows L1–L2 (BENCH_ONLY=live): status and one extension refresh, in-process, through the product's code.
export { statusSnapshot, RECENT_CAPTURES } from '../../src/doctor/status';
export { captureNodes, leaseNodes, todoNodes, TreeModel } from '../../src/extension/models';
