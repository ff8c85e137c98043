// src/store/connectionSlots.ts: the cold hooks of one home take turns for a few team-store
// connections on files of their own, before they ask the server. What holds: at most `count` slots at
// once (control: a free one is taken at once), a slot given back goes to a waiter, a slot whose holder
// was killed is taken over (control: one whose holder lives is not), and a home that is not there
// gives no slot and creates nothing (the hook then connects all the same).
import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { takeConnectionSlot } from '../../src/store/connectionSlots';

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});
function home(): string {
  const made = mkdtempSync(join(tmpdir(), 'tk-slots-'));
  homes.push(made);
  return made;
}
const slotsDir = (at: string) => join(at, 'run', 'team-connections');

describe('connection slots of one home', () => {
  it('gives at most count at once; a third waits until one is given back (control: a free slot is taken at once)', async () => {
    const at = home();
    const first = await takeConnectionSlot(at, 2, performance.now());
    const second = await takeConnectionSlot(at, 2, performance.now());
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(readdirSync(slotsDir(at)).sort()).toStrictEqual(['slot-0', 'slot-1']);
    expect((statSync(slotsDir(at)).mode & 0o777).toString(8)).toBe('700');
    // Both held: none by the deadline.
    const started = performance.now();
    expect(await takeConnectionSlot(at, 2, started + 150)).toBeUndefined();
    expect(performance.now() - started).toBeGreaterThanOrEqual(150);
    // One given back while a third waits: the waiter gets it.
    const waiting = takeConnectionSlot(at, 2, performance.now() + 5000);
    setTimeout(() => first!.release(), 50);
    const third = await waiting;
    expect(third).toBeDefined();
    second!.release();
    third!.release();
    expect(readdirSync(slotsDir(at))).toStrictEqual([]);
  });

  it('a slot whose holder is gone (kill -9) is taken over; one whose holder lives is not', async () => {
    const at = home();
    mkdirSync(slotsDir(at), { recursive: true, mode: 0o700 });
    // A process that held slot-0 and was killed: its pid names no process any more.
    const dead = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    await new Promise((resolve) => dead.once('spawn', resolve));
    const deadPid = dead.pid!;
    dead.kill('SIGKILL');
    await new Promise((resolve) => dead.once('exit', resolve));
    writeFileSync(join(slotsDir(at), 'slot-0'), String(deadPid));
    const taken = await takeConnectionSlot(at, 1, performance.now() + 2000);
    expect(taken).toBeDefined();
    taken!.release();
    // Control: a live holder (this process) keeps its slot.
    writeFileSync(join(slotsDir(at), 'slot-0'), String(process.pid));
    expect(await takeConnectionSlot(at, 1, performance.now() + 100)).toBeUndefined();
  });

  it('a FIFO planted at a slot is never read (the hook would block in it): it counts as held until the deadline', async () => {
    const at = home();
    mkdirSync(slotsDir(at), { recursive: true, mode: 0o700 });
    execFileSync('mkfifo', [join(slotsDir(at), 'slot-0')]);
    const started = performance.now();
    expect(await takeConnectionSlot(at, 1, started + 200)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(5000);
    // Control: with a second slot free, that one is taken at once.
    expect(await takeConnectionSlot(at, 2, performance.now())).toBeDefined();
  });

  it('a home that does not exist gives no slot and is not created', async () => {
    const missing = join(home(), 'no-such-home');
    expect(await takeConnectionSlot(missing, 4, performance.now() + 1000)).toBeUndefined();
    expect(existsSync(missing)).toBe(false);
  });
});
