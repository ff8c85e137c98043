// A team server made slow at one statement at a time (a BEFORE trigger that runs pg_sleep), swept
// across the write's time bound: each statement of a claim, and each statement of the checkpoint that
// the same transaction signs (TURNKEEPER_CHECKPOINT_EVERY=1), slowed to well inside the bound, just past
// it, and past the client's own timer. Whatever the hook answers (a claim, or [store_unavailable]),
// an append is all or nothing: after every claim the head names the newest receipt, the next write
// goes through, and the chain verifies.
//
// The bug this pins: a statement timed out by the client inside the checkpoint was swallowed, the
// COMMIT that followed committed a receipt without the head move, and every later write failed on
// receipts_pkey. Run against that code, the "just past" and "past the client's timer" cases of the
// checkpoint's receipt_index insert leave head = last - 1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { contextOf, runCli, type CliRun } from '../support/world';
import { holdInTransaction, usePostgres } from '../support/postgres';
import { makeMachine, type TeamMachine } from '../support/teamMachine';
import { buildReceipt } from '../../src/core/receipts';
import { openPostgresRows } from '../../src/store/postgres';

const server = usePostgres({ beforeAll, afterAll });
const ORIGIN = 'https://example.invalid/acme/app.git';
const READY = /^Turnkeeper: Todo ([a-z0-9_-]+) · capture (cap_[0-9a-f]{24}) · epoch (\d+)$/m;
/** The hook's write budget for this test (TURNKEEPER_BUSY_TIMEOUT_MS): short, so the sweep is quick. */
const BUDGET_MS = 800;
/** Well inside the budget; just past it (the server's statement_timeout); past the client's own timer (+500 ms), and past the previous release's 1.8 s transaction bound. */
const DELAYS_MS = [Math.round(BUDGET_MS * 0.5), Math.round(BUDGET_MS * 1.1), 1900];

/** A statement to slow: a table, the trigger operation, and whether only the checkpoint's row is slowed. */
interface Slowed {
  readonly table: string;
  readonly op: 'INSERT' | 'UPDATE';
  readonly checkpointOnly: boolean;
}
const CLAIM_STATEMENTS: Slowed[] = ['sessions', 'captures', 'leases', 'ready_captures', 'receipts', 'receipt_index'].map((table) => ({
  table,
  op: 'INSERT',
  checkpointOnly: false,
}));
const CHECKPOINT_STATEMENTS: Slowed[] = [
  { table: 'store_meta', op: 'INSERT', checkpointOnly: true },
  { table: 'receipts', op: 'INSERT', checkpointOnly: true },
  { table: 'receipt_index', op: 'INSERT', checkpointOnly: true },
  // The head moves once per receipt, the checkpoint's last.
  { table: 'receipt_head', op: 'UPDATE', checkpointOnly: false },
];

let root: string;
let url: string;
let machine: TeamMachine;
let admin: pg.Client;
let cases = 0;

const run = (args: string[], input?: string, env: Record<string, string> = {}): Promise<CliRun> =>
  runCli(args, {
    cwd: machine.checkout,
    env: { ...machine.env, TURNKEEPER_CHECKPOINT_EVERY: '1', TURNKEEPER_BUSY_TIMEOUT_MS: String(BUDGET_MS), ...env },
    input,
    timeoutMs: 30_000,
  });

const prompt = (session: string, todo: string) =>
  JSON.stringify({
    session_id: session,
    turn_id: 'turn-1',
    transcript_path: join(machine.userHome, `${session}.jsonl`),
    cwd: machine.checkout,
    hook_event_name: 'UserPromptSubmit',
    model: 'gpt-test',
    permission_mode: 'default',
    prompt: `please work on #todo:${todo}`,
  });

async function slow(statement: Slowed | undefined, ms = 0): Promise<void> {
  await admin.query('DELETE FROM tk_test.delay');
  if (statement) await admin.query('INSERT INTO tk_test.delay VALUES ($1, $2, $3, $4)', [statement.table, statement.op, statement.checkpointOnly, ms]);
}

async function headAndLast(): Promise<{ head: number; last: number }> {
  const row = (
    await admin.query<{ head: string; last: string }>(
      'SELECT (SELECT seq FROM turnkeeper.receipt_head) AS head, (SELECT COALESCE(max(seq), 0) FROM turnkeeper.receipts) AS last',
    )
  ).rows[0]!;
  return { head: Number(row.head), last: Number(row.last) };
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-slow-')));
  await server().createDatabase('slow');
  url = server().url('slow');
  machine = makeMachine(join(root, 'machine'), { store: url, origin: ORIGIN });
  const init = await run(['store', 'init']);
  expect(init.code, init.stderr).toBe(0);
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
  // The slowing trigger: test-only, in a schema of its own, on every table a claim writes.
  await admin.query(`
    CREATE SCHEMA tk_test;
    CREATE TABLE tk_test.delay (tbl text NOT NULL, op text NOT NULL, checkpoint_only boolean NOT NULL, ms int NOT NULL);
    -- ms < 0: the statement fails instead of sleeping.
    CREATE FUNCTION tk_test.slow() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      wait int;
      fields jsonb := to_jsonb(NEW);
      is_checkpoint boolean := CASE TG_TABLE_NAME
        WHEN 'store_meta' THEN fields->>'key' = 'checkpoint'
        WHEN 'receipts' THEN fields->>'doc' LIKE '%"kind":"checkpoint"%'
        WHEN 'receipt_index' THEN fields->>'kind' = 'checkpoint'
        ELSE false END;
    BEGIN
      SELECT max(ms) INTO wait FROM tk_test.delay WHERE tbl = TG_TABLE_NAME AND op = TG_OP AND (NOT checkpoint_only OR is_checkpoint);
      IF wait < 0 THEN RAISE EXCEPTION 'tk_test: % on % refused', TG_OP, TG_TABLE_NAME; END IF;
      IF wait IS NOT NULL THEN PERFORM pg_sleep(wait / 1000.0); END IF;
      RETURN NEW;
    END $$;
  `);
  for (const table of ['sessions', 'captures', 'leases', 'ready_captures', 'receipts', 'receipt_index', 'receipt_head', 'store_meta'])
    await admin.query(`CREATE TRIGGER tk_test_slow BEFORE INSERT OR UPDATE ON turnkeeper.${table} FOR EACH ROW EXECUTE FUNCTION tk_test.slow()`);
}, 120_000);

afterAll(async () => {
  await admin?.end().catch(() => undefined);
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('a server slow at one statement of a claim or of its checkpoint, swept across the write bound', () => {
  const sweep = [...CLAIM_STATEMENTS.map((s) => ({ ...s, of: 'claim' })), ...CHECKPOINT_STATEMENTS.map((s) => ({ ...s, of: 'checkpoint' }))];
  it.each(sweep)('$of: $op on $table slowed (checkpoint row only: $checkpointOnly)', async (statement) => {
    const outcomes: string[] = [];
    for (const ms of DELAYS_MS) {
      const todo = `slow-${++cases}`;
      await slow(undefined);
      const add = await run(['todo', 'add', `Slow case ${cases}`, '--id', todo]);
      expect(add.code, add.stderr).toBe(0);

      await slow(statement, ms);
      const hook = await run(['hook'], prompt(`s-${cases}`, todo));
      await slow(undefined);

      expect(hook.killed, hook.stderr).toBe(false);
      expect(hook.code).toBe(0);
      expect(hook.stderr).not.toMatch(/internal error/i);
      const context = contextOf(hook.stdout) ?? '';
      const outcome = READY.test(context) ? 'claimed' : /\[store_unavailable\]/.test(context) ? 'store_unavailable' : `other: ${context}`;
      outcomes.push(`${ms} ms: ${outcome} (${hook.ms} ms)`);
      expect(outcome, `${ms} ms on ${statement.table}`).toMatch(/^(claimed|store_unavailable)$/);

      // All or nothing: the head names the newest receipt, whatever the hook said.
      const { head, last } = await headAndLast();
      expect(head, `${ms} ms on ${statement.table}: head ${head}, newest receipt ${last}`).toBe(last);
      // A claim that answered is in the store with its lease; one that did not left no lease behind.
      const leases = Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM turnkeeper.leases WHERE todo = $1', [todo])).rows[0]!.n);
      expect(leases, `${ms} ms on ${statement.table}`).toBe(outcome === 'claimed' ? 1 : 0);
    }
    console.log(`${statement.table} ${statement.op}${statement.checkpointOnly ? ' (checkpoint)' : ''}: ${outcomes.join('; ')}`);
    // The store takes the next write and verifies.
    const next = await run(['todo', 'add', `After case ${cases}`, '--id', `after-${cases}`]);
    expect(next.code, next.stderr).toBe(0);
    const verify = await run(['verify', '--json']);
    expect(JSON.parse(verify.stdout), verify.stderr).toMatchObject({ ok: true, breaks: [] });
  });

  it('control: slowed inside the bound, every statement still claims (the sweep does reach the write)', async () => {
    const todo = `slow-${++cases}`;
    const add = await run(['todo', 'add', 'Control', '--id', todo]);
    expect(add.code, add.stderr).toBe(0);
    await slow({ table: 'receipt_index', op: 'INSERT', checkpointOnly: true }, 100);
    const started = Date.now();
    const hook = await run(['hook'], prompt(`s-${cases}`, todo));
    await slow(undefined);
    expect(contextOf(hook.stdout), hook.stderr).toMatch(READY);
    // The trigger really slept in the checkpoint's insert.
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(
      Number((await admin.query<{ n: string }>("SELECT count(*) AS n FROM turnkeeper.receipt_index WHERE kind = 'checkpoint'")).rows[0]!.n),
    ).toBeGreaterThan(0);
  });

  it('a statement of the checkpoint that fails leaves the claim as the server stored it: presented because committed, and no checkpoint written', async () => {
    const todo = `slow-${++cases}`;
    const add = await run(['todo', 'add', 'Refused checkpoint', '--id', todo]);
    expect(add.code, add.stderr).toBe(0);
    const before = await headAndLast();
    await slow({ table: 'store_meta', op: 'INSERT', checkpointOnly: true }, -1);
    const hook = await run(['hook'], prompt(`s-${cases}`, todo));
    await slow(undefined);
    expect(hook.code).toBe(0);
    const leases = Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM turnkeeper.leases WHERE todo = $1', [todo])).rows[0]!.n);
    const checkpoints = async () =>
      Number((await admin.query<{ n: string }>("SELECT count(*) AS n FROM turnkeeper.receipt_index WHERE kind = 'checkpoint'")).rows[0]!.n);
    // A team store appends a claim's receipts in its COMMIT, and signs the checkpoint they make due in
    // a transaction of its own after it (src/ledger/checkpoints.ts afterCommit). The previous release
    // presented the ready capture of a claim the server had rolled back; what is presented now is
    // what the server stored: the claim, committed before the checkpoint was tried.
    expect(contextOf(hook.stdout) ?? '', hook.stderr).toMatch(READY);
    expect(leases).toBe(1);
    // The failed checkpoint wrote nothing: the claim's three receipts, the head on the last of them.
    const after = await headAndLast();
    expect(after).toStrictEqual({ head: before.head + 3, last: before.last + 3 });
    const checkpointsBefore = await checkpoints();
    // Control: the same claim with the checkpoint's statement left alone writes the checkpoint too.
    const next = `slow-${++cases}`;
    expect((await run(['todo', 'add', 'Signed checkpoint', '--id', next])).code).toBe(0);
    const signed = await run(['hook'], prompt(`s-${cases}`, next));
    expect(contextOf(signed.stdout), signed.stderr).toMatch(READY);
    expect(await checkpoints()).toBeGreaterThan(checkpointsBefore);
    const verify = await run(['verify', '--json']);
    expect(JSON.parse(verify.stdout), verify.stderr).toMatchObject({ ok: true, breaks: [] });
  });

  it('a statement the client gave up on, caught inside the write: no COMMIT follows, the head names the newest receipt', async () => {
    const store = await openPostgresRows({ url, statementTimeoutMs: 2000, transactionTimeoutMs: 600 });
    try {
      const before = await headAndLast();
      let swallowed: unknown;
      await slow({ table: 'receipt_index', op: 'INSERT', checkpointOnly: false }, 1000);
      const written = store.write(async (tx) => {
        const head = await tx.chainHead();
        const receipt = buildReceipt(head, { kind: 'todo_added', goal: 'goal_slow', todo: 'probe' }, Date.now());
        try {
          await tx.appendReceipt(
            { seq: receipt.document.seq, doc: receipt.text, hash: receipt.hash, goal: 'goal_slow', todo: 'probe', capture: null, kind: 'todo_added' },
            head,
          );
          await tx.setMeta('slow_probe', 'x');
        } catch (error) {
          // What the previous release's checkpoint did with any error: go on as if nothing happened.
          swallowed = error;
        }
        // Long enough for the server to finish the slow statement, so a COMMIT would be sent and run.
        await new Promise((resolve) => setTimeout(resolve, 1500));
      });
      await expect(written).rejects.toThrow();
      await slow(undefined);
      expect(swallowed).toBeDefined();
      expect(await headAndLast()).toStrictEqual(before);
      // The store (and this connection, replaced) takes the next write.
      await store.write((tx) => tx.setMeta('slow_probe', 'after'));
      expect((await admin.query<{ value: string }>("SELECT value FROM turnkeeper.store_meta WHERE key = 'slow_probe'")).rows[0]?.value).toBe('after');
    } finally {
      store.close();
    }
    const verify = await run(['verify', '--json']);
    expect(JSON.parse(verify.stdout), verify.stderr).toMatchObject({ ok: true, breaks: [] });
  });
});

// Spec §4: a hook's append waits for the chain head as long as the head moves, until the hook's
// deadline, and gives up when it has not moved for the write bound (src/store/postgres.ts,
// lockHeadFollowingTheQueue). Every write of every machine takes the head in turn: under a burst the
// last in the queue waited longer than the bound while the queue moved (CI at f067326).
describe('the queue at the chain head', () => {
  /** No checkpoints in between: each claim holds the head once, in its COMMIT. */
  const claimsOnly = { TURNKEEPER_CHECKPOINT_EVERY: '100000' };

  it('a queue that moves for longer than the write bound: every hook waits its turn and claims', async () => {
    const todos = Array.from({ length: 6 }, (_, i) => `queue-${++cases}-${i}`);
    for (const todo of todos) expect((await run(['todo', 'add', `Queued ${todo}`, '--id', todo])).code).toBe(0);
    // Each receipt's head move takes 150 ms: a claim holds the head for a few of them, well inside
    // the bound, and six claims at once make a queue several times longer than it.
    await slow({ table: 'receipt_head', op: 'UPDATE', checkpointOnly: false }, 150);
    const started = Date.now();
    const hooks = await Promise.all(todos.map((todo, i) => run(['hook'], prompt(`s-queue-${cases}-${i}`, todo), claimsOnly)));
    const wall = Date.now() - started;
    await slow(undefined);
    const times = hooks.map((hook) => hook.ms).sort((a, b) => a - b);
    console.log(`a queue of 6 claims at the head (${BUDGET_MS} ms bound, 150 ms per head move): wall ${wall} ms, per hook ${times.join(', ')} ms`);
    for (const hook of hooks) expect(contextOf(hook.stdout), hook.stderr).toMatch(READY);
    // Control: the queue was longer than the bound, so a wait bounded by it would have given up (as it
    // did before): the head moved 150 ms per receipt, at least one receipt per claim.
    expect(wall).toBeGreaterThan(BUDGET_MS + 6 * 150);
    const leases = Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM turnkeeper.leases WHERE todo = ANY($1)', [todos])).rows[0]!.n);
    expect(leases).toBe(todos.length);
    const verify = await run(['verify', '--json']);
    expect(JSON.parse(verify.stdout), verify.stderr).toMatchObject({ ok: true, breaks: [] });
  });

  it('a head that does not move (a transaction holds it): [store_unavailable] after the write bound, long before the deadline, nothing written', async () => {
    const todo = `stuck-${++cases}`;
    expect((await run(['todo', 'add', 'Stuck head', '--id', todo])).code).toBe(0);
    const before = await headAndLast();
    const holder = await holdInTransaction(url, 'SELECT * FROM turnkeeper.lock_chain_head()');
    try {
      const hook = await run(['hook'], prompt(`s-stuck-${cases}`, todo), claimsOnly);
      console.log(`a head held by an open transaction: hook process ${hook.ms} ms`);
      expect(contextOf(hook.stdout) ?? '').toContain('[store_unavailable]');
      expect(hook.stderr).toContain(`the receipt chain's head did not move for ${BUDGET_MS} ms`);
      // Given up at the bound, not at the hook's deadline (14 s).
      expect(hook.ms).toBeLessThan(6000);
    } finally {
      await holder.release();
    }
    expect(Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM turnkeeper.leases WHERE todo = $1', [todo])).rows[0]!.n)).toBe(0);
    expect(await headAndLast()).toStrictEqual(before);
    // The store takes the next write: the same prompt claims.
    const again = await run(['hook'], prompt(`s-stuck-${cases}`, todo), claimsOnly);
    expect(contextOf(again.stdout), again.stderr).toMatch(READY);
  });
});
