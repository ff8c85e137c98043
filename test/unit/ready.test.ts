import { describe, expect, it } from 'vitest';
import { buildReadyCapture, CONTEXT_LIMIT } from '../../src/core/ready';
import { digestText } from '../../src/core/canonical';

const base = {
  capture: 'cap_0123456789abcdef01234567',
  originalDigest: 'sha256:' + '1'.repeat(64),
  lease: { owner: 'codex:s1' as const, epoch: 3 },
  goal: '/repo',
  history: [{ seq: 7, kind: 'lease_released', at: '2026-11-30T12:00:00.000Z', owner: 'claude:s0', epoch: 2 }],
  preconditions: { gitHead: 'a'.repeat(40), statusDigest: digestText('') },
};

describe('ready capture presentation', () => {
  it('names the Todo, the capture and the epoch on its first line, and digests the presented bytes', () => {
    const ready = buildReadyCapture({ ...base, todo: { id: 'fix-login', title: 'Fix login', body: 'Valid passwords are rejected.' } });
    expect(ready.presentation.split('\n')[0]).toBe('Turnkeeper: Todo fix-login · capture cap_0123456789abcdef01234567 · epoch 3');
    expect(ready.presentation).toContain('Valid passwords are rejected.');
    expect(ready.presentation).toContain('#7 2026-11-30T12:00:00.000Z lease_released claude:s0 epoch 2');
    expect(ready.readyDigest).toBe(digestText(ready.presentation));
  });

  it('stays under 8,000 characters and ends with the command that prints the whole (control: a short body is not cut)', () => {
    const long = buildReadyCapture({ ...base, todo: { id: 'fix-login', title: 'Fix login', body: '😀 line\n'.repeat(5000) } });
    expect(long.presentation.length).toBeLessThan(CONTEXT_LIMIT);
    expect(long.presentation.endsWith('turnkeeper show cap_0123456789abcdef01234567')).toBe(true);
    expect(long.presentation.isWellFormed()).toBe(true);
    // The document keeps the whole body: `show` prints it.
    expect(JSON.parse(long.canonical).todo.body).toHaveLength('😀 line\n'.length * 5000);
    const short = buildReadyCapture({ ...base, todo: { id: 'fix-login', title: 'Fix login', body: 'short' } });
    expect(short.presentation).not.toContain('[truncated]');
  });

  it('says when the workspace has no git, and when git has no commit yet', () => {
    const noGit = buildReadyCapture({ ...base, preconditions: { gitHead: null, statusDigest: null }, todo: { id: 'fix-login', title: 't', body: '' } });
    expect(noGit.presentation).toContain('Git at capture: (not a git repository)');
    const noCommit = buildReadyCapture({ ...base, preconditions: { gitHead: null, statusDigest: digestText('') }, todo: { id: 'fix-login', title: 't', body: '' } });
    expect(noCommit.presentation).toContain('Git at capture: (no commit yet)');
  });
});
