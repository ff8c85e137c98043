// Every platform without a proven launch strategy (docs/launcher.md §6): nothing native is loaded, and
// anything that would attest or launch refuses `unsupported_platform`. Liveness answers "unknown".
import type { LaunchBackend } from './index';
import { LaunchRefused } from '../refusals';

const refuse = (): never => {
  throw new LaunchRefused(
    'unsupported_platform',
    `${process.platform}-${process.arch} has no launch backend yet (Linux x64 only): agents are not launched here, while hooks, leases and receipts work`,
  );
};

export const unsupportedBackend: LaunchBackend = {
  name: 'unsupported',
  native: refuse,
  entryShape: refuse,
  imageMismatch: refuse,
  loaderMismatch: refuse,
  processStart: () => undefined,
  processStopped: () => undefined,
  currentBoot: () => null,
  machineId: () => null,
  processes: () => undefined,
  packagePlatform: () => ({ npm: `${process.platform}-${process.arch}`, rustTarget: undefined }),
};
