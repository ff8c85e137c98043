// "Machines" sharing one PostgreSQL team store: four process groups, each with its own
// TURNKEEPER_HOME and HOME and its own clone of one repository (same origin URL, hence one Goal),
// race 64 real hook processes (`dist/cli.js hook`, Codex payloads, distinct sessions) for one Todo.
// The server decides: exactly one lease, 63 [lease_held] naming the winner's checkout, a verifying
// chain, no internal error, and nothing local — no SQLite file on any machine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceiptDocument } from '../../src/core/receipts';
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, contextOf } from '../support/world';
import { pgEnv, usePostgres } from '../support/postgres';
import { filesUnder, makeMachine, makeUpstream, untilAllReadStdin } from '../support/teamMachine';
import { openAuthority } from '../../src/ledger/open';
import { resolveGoal } from '../../src/checkout/goal';

const server = usePostgres({ beforeAll, afterAll });
const ORIGIN = 'https://example.invalid/acme/app.git';
const MACHINES = 4;
const RACERS = 64;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}
interface Machine {
  name: string;
  home: string;
  userHome: string;
  clone: string;
  run(args: string[], input?: string): Promise<Run>;
  /** Starts `args` with stdin held open: `release` writes `input`, ends stdin and starts the clock. */
  start(args: string[]): { pid: number; release(input: string): void; done: Promise<Run> };
}

let root: string;
let store: string;
const machines: Machine[] = [];

const codexPrompt = (machine: Machine, session: string, turn: string, prompt: string) =>
  JSON.stringify({
    session_id: session,
    turn_id: turn,
    transcript_path: join(machine.userHome, `${session}.jsonl`),
    cwd: machine.clone,
    hook_event_name: 'UserPromptSubmit',
    model: 'gpt-test',
    permission_mode: 'default',
    prompt,
  });

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-machines-')));
  await server().createDatabase('team');
  store = server().url('team');
  const upstream = makeUpstream(join(root, 'upstream'));
  for (let i = 0; i < MACHINES; i++) {
    const name = `machine-${i}`;
    const { userHome, home, checkout: clone, env } = makeMachine(join(root, name), { store, origin: ORIGIN, upstream });
    const start = (args: string[]) => {
      let started = Date.now();
      const child = spawn(process.execPath, [CLI, ...args], { cwd: clone, env });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const done = new Promise<Run>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
      });
      return {
        pid: child.pid!,
        release(input: string) {
          started = Date.now();
          child.stdin.end(input);
        },
        done,
      };
    };
    machines.push({
      name,
      home,
      userHome,
      clone,
      start,
      run: (args, input = '') => {
        const child = start(args);
        child.release(input);
        return child.done;
      },
    });
  }
  // One Goal: every clone resolves the same origin URL to the same id.
  expect(new Set(machines.map((m) => resolveGoal(m.clone).id)).size).toBe(1);
  const init = await machines[0]!.run(['store', 'init']);
  expect(init.code, init.stderr).toBe(0);
  const add = await machines[1]!.run(['todo', 'add', 'Fix login', '--id', 'fix-login']);
  expect(add.code, add.stderr).toBe(0);
  // Machines that have used Turnkeeper before: each has run a command (its compile cache is warm).
  for (const machine of machines) {
    const verify = await machine.run(['verify', '--json']);
    expect(JSON.parse(verify.stdout), verify.stderr).toMatchObject({ ok: true, verified: 1 });
  }
}, 120_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('Machines: four homes and four clones on one team server', () => {
  it('64 concurrent hooks across them: one lease, 63 [lease_held] naming the winner, nothing local', async () => {
    const before = machines.map((m) => filesUnder(m.home));
    // 64 processes starting at once on two cores would measure Node's start-up, not the store: on
    // four real machines each starts on its own CPU. So every hook process is started first and
    // waits in its read of stdin (the payload); then all payloads are written at the same moment.
    const hooks = Array.from({ length: RACERS }, (_, k) => {
      const machine = machines[k % MACHINES]!;
      return { machine, k, child: machine.start(['hook']) };
    });
    await untilAllReadStdin(hooks.map((h) => h.child.pid));
    const started = Date.now();
    for (const { machine, k, child } of hooks) child.release(codexPrompt(machine, `${machine.name}-racer-${k}`, 'turn-1', 'please work on #todo:fix-login'));
    const runs = await Promise.all(hooks.map((h) => h.child.done));
    const wall = Date.now() - started;
    const times = runs.map((r) => r.ms).sort((a, b) => a - b);
    const slowest = times.at(-1)!;
    console.log(
      `64-process race across ${MACHINES} machines (from the payload to exit): wall ${wall} ms, slowest ${slowest} ms, median ${times[RACERS / 2]} ms, fastest ${times[0]} ms`,
    );

    expect(runs.map((r) => r.code)).toStrictEqual(Array(RACERS).fill(0));
    for (const run of runs) expect(run.stderr).not.toMatch(/internal error/i);
    const contexts = runs.map((r) => contextOf(r.stdout) ?? '');
    const winners = contexts.map((text, k) => ({ text, k })).filter(({ text }) => text.startsWith('Turnkeeper: Todo fix-login'));
    const held = contexts.filter((text) => text.includes('[lease_held]'));
    const others = runs.filter((_, k) => !contexts[k]!.startsWith('Turnkeeper: Todo') && !contexts[k]!.includes('[lease_held]'));
    expect(others.map((r) => r.stdout + r.stderr)).toStrictEqual([]);
    expect(winners).toHaveLength(1);
    expect(held).toHaveLength(RACERS - 1);

    const winner = machines[winners[0]!.k % MACHINES]!;
    const authority = (await openAuthority(pgEnv(store), { create: false }))!;
    try {
      const leases = await authority.listLeases();
      expect(leases).toHaveLength(1);
      expect(leases[0]).toMatchObject({ owner: `codex:${winner.name}-racer-${winners[0]!.k}`, epoch: 1, status: 'active' });
      expect(winners[0]!.text).toContain(`owner ${leases[0]!.owner}`);
      // Every loser names the holder, its epoch and the winner's checkout (another machine's clone).
      for (const text of held) expect(text).toContain(`is leased to ${leases[0]!.owner} (epoch 1) in ${winner.clone} until`);
      expect((await authority.getCapture(leases[0]!.capture))?.checkout).toBe(winner.clone);
      const kinds = (await authority.receipts({ limit: 1000 })).map((row) => (JSON.parse(row.doc) as ReceiptDocument).kind);
      expect(kinds.filter((kind) => kind === 'lease_acquired')).toHaveLength(1);
      expect(kinds.filter((kind) => kind === 'claim_refused')).toHaveLength(RACERS - 1);
      expect((await authority.listSessions()).length).toBe(RACERS);
    } finally {
      authority.close();
    }

    for (const machine of machines) {
      const verify = await machine.run(['verify', '--json']);
      expect(verify.code, verify.stderr).toBe(0);
      expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, breaks: [] });
    }
    // Nothing local: no SQLite database on any machine, and the hooks added nothing to any home but
    // the compile cache (docs/architecture.md: the only thing a hook may create there).
    expect(filesUnder(root).filter((path) => /turnkeeper\.db/.test(path))).toStrictEqual([]);
    machines.forEach((machine, i) => {
      const added = filesUnder(machine.home).filter((path) => !before[i]!.includes(path));
      expect(
        added.filter((path) => !path.startsWith('compile-cache/')),
        machine.name,
      ).toStrictEqual([]);
      if (added.length) expect(statSync(join(machine.home, 'compile-cache')).mode & 0o777).toBe(0o700);
    });
    expect(slowest).toBeLessThan(15_000); // the hook timeout Turnkeeper installs
  });
});
