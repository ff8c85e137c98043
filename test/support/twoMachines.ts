// One store shared by two machines, each with its own $TURNKEEPER_HOME and so its own signing key
// (docs/receipts.md, "Checkpoints"): for bundle.test.ts (one SQLite file) and bundle-postgres.test.ts
// (a PostgreSQL team server).
import { join } from 'node:path';
import { expect } from 'vitest';
import { contextOf, payload, type World } from './world';

/** Machine A adds and checkpoints, B claims and checkpoints, A exports: whose keys does each trust? */
export function signOnTwoMachines(w: World, machineA: Record<string, string>, machineB: Record<string, string>): void {
  const on = (machine: Record<string, string>, args: string[], input?: string) => w.cli(args, { env: machine, ...(input === undefined ? {} : { input }) });
  expect(on(machineA, ['todo', 'add', 'A', '--id', 'task-a']).code).toBe(0);
  const fromA = JSON.parse(on(machineA, ['checkpoint', '--json']).stdout) as { key: string; seq: number };
  expect(contextOf(on(machineB, ['hook'], payload.codexPrompt(w, 'sb', 'turn-1', '#todo:task-a')).stdout)).toContain('epoch 1');
  const fromB = JSON.parse(on(machineB, ['checkpoint', '--json']).stdout) as { key: string; seq: number };
  expect(fromA.key).not.toBe(fromB.key);
  const out = join(w.root, 'team.tkb');
  expect(on(machineA, ['receipts', 'export', '--out', out]).code).toBe(0);
  const check = (machine: Record<string, string>) =>
    JSON.parse(on(machine, ['verify', '--bundle', out, '--json']).stdout) as {
      ok: boolean;
      breaks: { seq: number; kind: string }[];
      signers?: { key: string | null; checkpoints: number[] }[];
    };
  // Machine A does not trust B's key yet: B's checkpoint is named, A's verify.
  const before = check(machineA);
  expect(before.breaks).toEqual([{ seq: fromB.seq + 1, kind: 'untrusted_key' }]);
  const vkeyB = (JSON.parse(on(machineB, ['keys', 'show', '--json']).stdout) as { publicKey: string }).publicKey;
  expect(on(machineA, ['keys', 'trust', vkeyB]).code).toBe(0);
  const after = check(machineA);
  expect(after).toMatchObject({ ok: true, breaks: [] });
  expect(after.signers).toEqual([
    { key: fromA.key, checkpoints: [fromA.seq, fromB.seq + 1] },
    { key: fromB.key, checkpoints: [fromB.seq] },
  ]);
  // Each machine keeps the witness of what it signed, and its store verify holds against it.
  expect(JSON.parse(on(machineA, ['verify', '--json']).stdout)).toMatchObject({ ok: true });
  expect(JSON.parse(on(machineB, ['verify', '--json']).stdout)).toMatchObject({ ok: true });
}
