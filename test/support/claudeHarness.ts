// The first-run state the interactive Claude Code (2.1.332) needs to open straight onto its prompt,
// as a person who already set it up has it. Headless `claude -p` reads none of this; the interactive
// session shows, in this order, one screen per missing fact (observed in tmux, offline):
// - no `hasCompletedOnboarding`: the welcome/theme onboarding, whose connectivity check to
//   api.anthropic.com fails offline ("Unable to connect to Anthropic services") and ends the session;
// - no `projects[<dir>].hasTrustDialogAccepted`: "Accessing workspace … Is this a project you created
//   or one you trust?" (default "No, exit");
// - the key's last 20 characters not in `customApiKeyResponses.approved`: "Detected a custom API key
//   in your environment … Do you want to use this API key?" (default "No").
// Claude keeps this in `.claude.json` in $CLAUDE_CONFIG_DIR when that is set, else in $HOME.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Writes (merging into what is there) the state that skips those screens for `env`'s key and each of `dirs`. */
export function acceptClaudeFirstRun(env: NodeJS.ProcessEnv, dirs: readonly string[]): string {
  const file = join(env.CLAUDE_CONFIG_DIR ?? env.HOME ?? '', '.claude.json');
  const key = env.ANTHROPIC_API_KEY;
  if (key === undefined || (env.CLAUDE_CONFIG_DIR ?? env.HOME) === undefined)
    throw new Error('acceptClaudeFirstRun: the environment has no ANTHROPIC_API_KEY or no config dir');
  const state = (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {}) as {
    projects?: Record<string, Record<string, unknown>>;
    customApiKeyResponses?: { approved?: string[]; rejected?: string[] };
  };
  const approved = state.customApiKeyResponses?.approved ?? [];
  const projects = { ...state.projects };
  for (const dir of dirs) projects[dir] = { ...projects[dir], hasTrustDialogAccepted: true };
  const next = {
    ...state,
    hasCompletedOnboarding: true,
    projects,
    // Claude remembers a key by its last 20 characters (trimmed).
    customApiKeyResponses: { rejected: [], ...state.customApiKeyResponses, approved: [...new Set([...approved, key.trim().slice(-20)])] },
  };
  writeFileSync(file, `${JSON.stringify(next, null, 2)}\n`);
  return file;
}
