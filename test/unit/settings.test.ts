// Settings read from the environment that a repository can reach (an agent's environment may come
// from the repository's `.env`): such a setting may narrow a window, never widen it.
import { describe, expect, it } from 'vitest';
import { hookServerIdleMs } from '../../src/config/settings';

describe('the warm hook server idle time', () => {
  it('is 10 minutes by default; TURNKEEPER_HOOK_SERVER_IDLE_MS shortens it (control), and a longer value is still 10 minutes', () => {
    expect(hookServerIdleMs({})).toBe(600_000);
    expect(hookServerIdleMs({ TURNKEEPER_HOOK_SERVER_IDLE_MS: '20000' })).toBe(20_000);
    expect(hookServerIdleMs({ TURNKEEPER_HOOK_SERVER_IDLE_MS: String(24 * 3600_000) })).toBe(600_000);
    for (const bad of ['0', '-5', 'soon', '1e400']) expect(hookServerIdleMs({ TURNKEEPER_HOOK_SERVER_IDLE_MS: bad })).toBe(600_000);
  });
});
