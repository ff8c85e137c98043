// What bench/launcher.mjs measures of the product, in-process: esbuild bundles this file (so knip
// sees these imports too: an export the bench uses is used).
export { attest, clearAttestationCache, attestationCacheSize, releaseAttestation } from '../../src/launcher/attest';
export { launchAttested } from '../../src/launcher/launch';
export { openSqliteAuthority } from '../../src/ledger/open';
export { receiptNodes } from '../../src/extension/models';
export { parseReceipt, buildReceipt } from '../../src/core/receipts';
export { digestText, digestTextBulk } from '../../src/core/canonical';
export { closureOf, clearClosureCache, listClosures, pruneClosures } from '../../src/launcher/closure';
export { transcriptCarries, fullCaptureMarker } from '../../src/hook/presentation';
export { resolveGoal } from '../../src/checkout/goal';
