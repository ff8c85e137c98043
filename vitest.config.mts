import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Two projects: `fast` runs files in parallel; `serial` holds the tests that load the machine on
// purpose (64 racing processes, real agents) and would make each other flaky if run side by side.
const SERIAL = [
  'test/integration/races.test.ts',
  'test/integration/goals-worktrees.test.ts',
  // 64 hook processes across four "machines", and a claim storm through a server crash: load on purpose.
  'test/integration/postgres-machines.test.ts',
  'test/integration/postgres-faults.test.ts',
  // 64 hook processes from eight "machines" through PgBouncer (a pool of 4), and the change feed's timing.
  'test/integration/postgres-pooler.test.ts',
  // The same burst straight to the server, once with connection slots too few for it.
  'test/integration/postgres-burst.test.ts',
  // A clone, npm run demo, npm pack and a global install from a loopback registry: minutes of both cores.
  'test/integration/newcomer.test.ts',
  // A server crashed and restarted, and latencies measured against 1 s windows: load beside it skews them.
  'test/integration/postgres-follow.test.ts',
  // A whole PostgreSQL server for one test.
  'test/integration/bundle-postgres.test.ts',
  // Eight copies of a 96 MB package and their snapshots.
  'test/launcher/closures.test.ts',
  'test/e2e/**/*.test.ts',
];

// Real agents headless, each against its own stand-in model, home and ports, with no terminal and no
// machine-wide process search: two at a time, in the same vitest run as `serial` but never beside it.
// Order in that run (vitest's groupSpecs): `e2e` (groupOrder 1), then `warm-serial` (2), then `serial`
// last: a project of one worker with the default groupOrder 0 is vitest's "sequential" group, which
// it always runs after the numbered ones. The TUI files (tmux, /proc) and the load tests stay in `serial`.
const E2E_PARALLEL = [
  'test/e2e/claude-launch.test.ts',
  'test/e2e/claude.test.ts',
  'test/e2e/codex-resume.test.ts',
  'test/e2e/codex.test.ts',
  'test/e2e/copilot.test.ts',
  'test/e2e/gemini-launch.test.ts',
  'test/e2e/gemini-start.test.ts',
  'test/e2e/gemini.test.ts',
  'test/e2e/opencode.test.ts',
  'test/e2e/parallel-worktrees.test.ts',
  'test/e2e/postgres-codex.test.ts',
  'test/e2e/qwen-start.test.ts',
  'test/e2e/qwen.test.ts',
  'test/e2e/start-worktree.test.ts',
  'test/e2e/start.test.ts',
  'test/e2e/worktrees.test.ts',
  // The packaged extension in code-server (Codex TUI in its terminal, its own CODEX_HOME and ports):
  // its code-server install and its run overlap the files above on the other worker.
  'test/e2e/vscode.test.ts',
];

// The warm hook path (spec §2, src/cli/hookServer.ts) is the path agents' hooks take by default on
// Linux, the cold one its fallback: these files, every one that runs hook processes, run again with
// each hook run as an agent runs it: the command `hooks install` writes (the shim, which execs the
// native client), to a hook server (test/support/world.ts cliProcess).
const WARM = [
  'test/integration/hook-decisions.test.ts',
  'test/integration/hook-rejections.test.ts',
  'test/integration/hook-robustness.test.ts',
  'test/integration/turns.test.ts',
  'test/integration/copilot-hooks.test.ts',
  'test/integration/chain-damage.test.ts',
];
// The rest of the hook-running files on the warm path: `npm run test:warm` runs them with the above
// (all pass); npm test leaves them out to keep CI within its 20 minutes on two cores.
const WARM_MORE = [
  'test/integration/hook-notices.test.ts',
  'test/integration/presentation.test.ts',
  'test/integration/terminal-safety.test.ts',
  'test/integration/lease-hardening.test.ts',
  'test/integration/qwen-hooks.test.ts',
  'test/integration/opencode-hooks.test.ts',
  'test/integration/home-ownership.test.ts',
  'test/integration/goal-change.test.ts',
  'test/integration/migration.test.ts',
  'test/integration/postgres-slow-server.test.ts',
];
// The same on the warm path for the files that load the machine on purpose (64 racing hooks): alone,
// between the e2e and serial groups (see the order above). Beside the serial project (as it ran before) its 64 racing hooks
// shared the two cores with whichever load test ran then, the 64-hook bursts included.
const WARM_SERIAL = ['test/integration/races.test.ts'];

export default defineConfig({
  // Extension code runs in plain Node against a hand-written double of the editor API.
  resolve: { alias: { vscode: fileURLToPath(new URL('./test/support/vscode.ts', import.meta.url)) } },
  test: {
    globalSetup: ['test/support/globalSetup.ts'],
    // Integration tests start real processes and real SQLite files; 2 cores make them slow, not flaky.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'fast', include: ['test/**/*.test.ts'], exclude: SERIAL, maxWorkers: 2 } },
      { extends: true, test: { name: 'serial', include: SERIAL, exclude: E2E_PARALLEL, fileParallelism: false, maxWorkers: 1 } },
      { extends: true, test: { name: 'e2e', include: E2E_PARALLEL, maxWorkers: 2, sequence: { groupOrder: 1 } } },
      // `warm` runs beside `fast` (one vitest run: the same two workers); `warm-serial` alone, between `e2e` and `serial`.
      { extends: true, test: { name: 'warm', include: WARM, maxWorkers: 2, env: { TURNKEEPER_TEST_HOOK_PATH: 'warm' } } },
      { extends: true, test: { name: 'warm-more', include: WARM_MORE, maxWorkers: 2, env: { TURNKEEPER_TEST_HOOK_PATH: 'warm' } } },
      {
        extends: true,
        test: {
          name: 'warm-serial',
          include: WARM_SERIAL,
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
          env: { TURNKEEPER_TEST_HOOK_PATH: 'warm' },
        },
      },
    ],
  },
});
