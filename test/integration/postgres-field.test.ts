// The team store in the field: what a person running real commands against a real PostgreSQL server
// meets, each beside its control. A role short of a privilege, a URL whose query names the host, a
// password from a pgpass file or from nowhere, doctor's text, and `store init` run twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contextOf, runCli, type CliRun } from '../support/world';
import { usePostgres } from '../support/postgres';
import { makeMachine } from '../support/teamMachine';

const server = usePostgres({ beforeAll, afterAll });
const ORIGIN = 'https://example.invalid/acme/app.git';

let root: string;
let machines = 0;
beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-field-')));
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** One machine whose store is `store`: its own HOME and TURNKEEPER_HOME, a clone of the team's repository. */
function machine(store: string) {
  const made = makeMachine(join(root, `machine-${++machines}`), { store, origin: ORIGIN });
  const run = (args: string[], options: { input?: string; env?: Record<string, string | undefined> } = {}): Promise<CliRun> => {
    const env: Record<string, string> = { ...made.env };
    for (const [key, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[key];
      else env[key] = value;
    }
    return runCli(args, { env, cwd: made.checkout, input: options.input, timeoutMs: 30_000 });
  };
  const prompt = (session: string, turn: string, text: string): string =>
    JSON.stringify({
      session_id: session,
      turn_id: turn,
      transcript_path: join(made.userHome, `${session}.jsonl`),
      cwd: made.checkout,
      hook_event_name: 'UserPromptSubmit',
      model: 'gpt-test',
      permission_mode: 'default',
      prompt: text,
    });
  return { ...made, run, prompt };
}

/** A fresh database with the schema, made by `store init` as the administrator. */
async function initializedDatabase(name: string): Promise<void> {
  await server().createDatabase(name);
  const init = await machine(server().url(name)).run(['store', 'init']);
  expect(init.code, init.stderr).toBe(0);
}

describe('a role short of a privilege', () => {
  it('a claim by a role with SELECT only is [store_unavailable], naming the privilege and the fix, never an internal error', async () => {
    await initializedDatabase('field_select_only');
    await server().createRole('tk_readonly', 'readonly-pw-1');
    await server().psql('GRANT USAGE ON SCHEMA turnkeeper TO tk_readonly; GRANT SELECT ON ALL TABLES IN SCHEMA turnkeeper TO tk_readonly', 'field_select_only');
    const admin = machine(server().url('field_select_only'));
    expect((await admin.run(['todo', 'add', 'Fix login', '--id', 'fix-login'])).code).toBe(0);

    const reader = machine(server().url('field_select_only', 'tk_readonly', 'readonly-pw-1'));
    // Control: reading works for this role.
    const status = await reader.run(['status']);
    expect(status.code, status.stderr).toBe(0);
    const claim = await reader.run(['hook'], { input: reader.prompt('s-ro', 't1', '#todo:fix-login') });
    const context = contextOf(claim.stdout) ?? '';
    expect(context, claim.stdout + claim.stderr).toContain('[store_unavailable]');
    expect(claim.stderr).not.toContain('internal error');
    for (const text of [context, claim.stderr]) {
      expect(text).toContain('permission denied');
      expect(text).toMatch(/role tk_readonly lacks a privilege/);
      expect(text).toMatch(/SELECT, INSERT and UPDATE/);
      expect(text).toContain('turnkeeper store init --hook-role tk_readonly');
    }
    // A command says the same, as a store error.
    const add = await reader.run(['todo', 'add', 'Another', '--id', 'another', '--json']);
    expect(add.code).toBe(1);
    expect(JSON.parse(add.stdout)).toMatchObject({ ok: false, error: { code: 'store_unavailable' } });
    expect(add.stderr).toContain('turnkeeper store init --hook-role tk_readonly');
  });
});
