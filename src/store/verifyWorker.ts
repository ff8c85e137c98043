// Worker-thread entry (bundled to dist/verify-worker.js): walks one upper range of the receipt chain
// on its own read-only connection, for SqliteAuthority.verifyChainParallel.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteAuthority, type VerifyRangeRequest } from './sqlite';

const request = workerData as VerifyRangeRequest;
void openSqliteAuthority({ path: request.path, create: false }).then((store) => {
  if (!store) throw new Error(`no database at ${request.path}`);
  try {
    parentPort!.postMessage(store.verifyRange(request));
  } finally {
    store.close();
  }
});
