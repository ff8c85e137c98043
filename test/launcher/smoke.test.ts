import { describe, expect, it } from 'vitest';
import { attest } from '../../src/launcher/attest';
import { launchAttested } from '../../src/launcher/launch';

describe('smoke', () => {
  it('launches /bin/echo through the parked path', async () => {
    const a = await attest('/bin/echo');
    const order: string[] = [];
    const run = await launchAttested({
      attestation: a, args: ['hello', 'world'], cwd: '/tmp', env: { PATH: '/usr/bin:/bin' }, stdio: 'pipe',
      commit: async (facts) => { order.push(`commit ${facts.pid}`); return { seq: 1, hash: 'h' }; },
    });
    let out = '';
    run.stdout!.on('data', (d) => (out += d));
    const exit = await run.exited;
    await new Promise((r) => setTimeout(r, 50));
    console.log(a.digest, a.entrypoint, a.interpreter, order, exit, JSON.stringify(out));
    expect(out).toBe('hello world\n');
  });
});
