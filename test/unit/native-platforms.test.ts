// Spec §6 "Platforms": where no launch backend exists (the macOS and linux-arm64 packages ship no
// launcher addon), nothing native is loaded, and attestation, hence resume and start, refuses with
// `unsupported_platform`, never `native_backend_unavailable` and never a launch by path name.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRequire } from 'node:module';

/** Native addons this process has loaded (Node's module cache is one per process). */
const loadedAddons = () => Object.keys(createRequire(__filename).cache).filter((path) => path.endsWith('.node'));

const real = { platform: process.platform, arch: process.arch };
function pretend(platform: string, arch: string): void {
  Object.defineProperty(process, 'platform', { value: platform, configurable: true });
  Object.defineProperty(process, 'arch', { value: arch, configurable: true });
}
afterEach(() => {
  pretend(real.platform, real.arch);
  vi.resetModules();
});

describe('the launcher on a platform without a backend', () => {
  for (const [platform, arch] of [
    ['darwin', 'arm64'],
    ['darwin', 'x64'],
    ['linux', 'arm64'],
    ['win32', 'x64'],
  ] as const) {
    it(`${platform}-${arch}: attest refuses unsupported_platform without loading an addon`, async () => {
      pretend(platform, arch);
      const { LAUNCH_BACKENDS, launchBackend } = await import('../../src/launcher/backends');
      const { attest } = await import('../../src/launcher/attest');
      expect(LAUNCH_BACKENDS).not.toContain(`${platform}-${arch}`);
      expect(launchBackend().name).toBe('unsupported');
      expect(() => launchBackend().native()).toThrow(expect.objectContaining({ reason: 'unsupported_platform' }));
      await expect(attest('/bin/true')).rejects.toMatchObject({ reason: 'unsupported_platform' });
      // Resume and start ask for the agent through attestAgent: the platform is the answer even when
      // the agent is not installed, rather than a missing executable the user could install in vain.
      const { attestAgent } = await import('../../src/launcher/plumbing');
      for (const agent of ['codex', 'claude', 'gemini'] as const) {
        expect(await attestAgent(agent, { env: { PATH: '' } })).toMatchObject({ ok: false, reason: 'unsupported_platform' });
        expect(await attestAgent(agent, { env: { PATH: '' }, agentBin: '/bin/true' })).toMatchObject({ ok: false, reason: 'unsupported_platform' });
      }
      expect(loadedAddons()).toStrictEqual([]);
    });
  }

  it('linux-x64 is the one backend, and it loads here', async () => {
    expect((await import('../../src/launcher/backends')).LAUNCH_BACKENDS).toStrictEqual(['linux-x64']);
    if (`${real.platform}-${real.arch}` !== 'linux-x64') return;
    const { launchBackend } = await import('../../src/launcher/backends');
    expect(launchBackend().name).toBe('linux');
    expect(typeof launchBackend().native().openExecutable).toBe('function');
    expect(loadedAddons().some((path) => path.endsWith('turnkeeper-launcher.node'))).toBe(true); // the control: loading shows
    // The control for attestAgent: with a backend, a missing agent is what it says.
    const { attestAgent } = await import('../../src/launcher/plumbing');
    expect(await attestAgent('codex', { env: { PATH: '' } })).toMatchObject({ ok: false, reason: 'agent_not_found' });
  });
});
