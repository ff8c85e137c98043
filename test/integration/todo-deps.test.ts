// Issue 20 item 5 through the real CLI and hook: `todo add --after`, `todo block|unblock`, `todo list`
// showing a waiting Todo as blocked, `turnkeeper next`, and a claim or start of a blocked Todo refused
// with the blockers named to the person (the hook's notice) and the model (guidance).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseReceipt } from '../../src/core/receipts';
import { like } from '../support/matchers';
import { contextOf, makeWorld, parseHookStdout, payload, type World } from '../support/world';

let world: World;
beforeEach(() => {
  world = makeWorld('todo-deps');
});
afterEach(() => world.cleanup());

const ok = (args: string[]) => {
  const run = world.cli(args);
  expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
  return run;
};
const json = <T>(args: string[]): T => JSON.parse(ok([...args, '--json']).stdout) as T;
const nextIds = () => json<{ id: string }[]>(['next']).map((todo) => todo.id);
const hook = (session: string, turn: string, text: string) =>
  world.cli(['hook', '--agent', 'codex'], { input: payload.codexPrompt(world, session, turn, text) });
async function receiptKinds(): Promise<{ kind: string; todo?: string | undefined; detail?: Record<string, unknown> | undefined }[]> {
  const store = await world.store();
  try {
    return (await store.receipts({ limit: 1000 })).map((row) => parseReceipt(row.doc)!);
  } finally {
    store.close();
  }
}

describe('todo add --after, todo list and turnkeeper next', () => {
  it('a Todo waits until its dependencies are done: list shows it blocked with what it waits on, next leaves it out until then', () => {
    ok(['todo', 'add', 'Schema', '--id', 'schema']);
    ok(['todo', 'add', 'Migrate', '--id', 'migrate', '--after', 'schema']);
    const added = ok(['todo', 'add', 'Deploy', '--id', 'deploy', '--after', 'schema,migrate']);
    expect(added.stdout).toContain('added Todo deploy');
    expect(added.stdout).toContain('after schema, migrate');

    const list = ok(['todo', 'list']).stdout;
    expect(list).toMatch(/^open {4}schema {19}Schema\n/);
    expect(list).toContain('blocked migrate                  Migrate  (waits on schema)');
    expect(list).toContain('blocked deploy                   Deploy  (waits on migrate, schema)');
    const listed = json<{ id: string; status: string; state: string; after?: string[]; waitingOn?: string[] }[]>(['todo', 'list']);
    expect(listed.find((todo) => todo.id === 'deploy')).toMatchObject({
      status: 'open',
      state: 'blocked',
      after: ['migrate', 'schema'],
      waitingOn: ['migrate', 'schema'],
    });
    expect(listed.find((todo) => todo.id === 'schema')).not.toHaveProperty('after');

    expect(nextIds()).toStrictEqual(['schema']);
    expect(ok(['next']).stdout).toBe(
      'schema                   Schema\nstart one: turnkeeper start schema --agent <agent>, or prompt an agent with "#todo:schema"\n',
    );
    ok(['todo', 'done', 'schema']);
    expect(nextIds()).toStrictEqual(['migrate']);
    ok(['todo', 'done', 'migrate']);
    expect(nextIds()).toStrictEqual(['deploy']);
    expect(json<{ id: string; state: string }[]>(['todo', 'list']).find((todo) => todo.id === 'deploy')?.state).toBe('open');
  });

  it('next is oldest first, leaves a held Todo out, and says on stderr when more are ready than shown', () => {
    for (const id of ['first', 'second', 'third']) ok(['todo', 'add', id, '--id', id]);
    expect(contextOf(hook('sess-a', 'turn-1', 'work on #todo:second').stdout)).toMatch(/^Turnkeeper: Todo second · capture/);
    expect(nextIds()).toStrictEqual(['first', 'third']);
    const limited = world.cli(['next', '--limit', '1', '--json']);
    expect(limited.code).toBe(0);
    expect((JSON.parse(limited.stdout) as { id: string }[]).map((todo) => todo.id)).toStrictEqual(['first']);
    expect(limited.stderr).toContain('more ready Todos than the 1 shown');
    // The control: a limit that shows them all says nothing more.
    expect(world.cli(['next', '--limit', '2']).stderr).toBe('');
    expect(world.cli(['next', '--limit', '0']).code).toBe(2);
  });

  it('refuses an unknown dependency and a cycle, naming the ids, and changes nothing', async () => {
    ok(['todo', 'add', 'API', '--id', 'api']);
    ok(['todo', 'add', 'Web', '--id', 'web', '--after', 'api']);
    const before = (await receiptKinds()).length;
    const unknown = world.cli(['todo', 'add', 'Later', '--id', 'later', '--after', 'no-such']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no Todo no-such in');
    const cycle = world.cli(['todo', 'block', 'api', '--after', 'web']);
    expect(cycle.code).toBe(1);
    expect(cycle.stderr).toBe('api waits on web waits on api: that would be a cycle, so nothing was changed\n');
    expect((await receiptKinds()).length).toBe(before);
    expect(json<{ id: string }[]>(['todo', 'list']).map((todo) => todo.id)).toStrictEqual(['api', 'web']);
    // A malformed id is a usage error before anything is opened.
    expect(world.cli(['todo', 'add', 'X', '--id', 'xyz', '--after', 'Bad Id']).code).toBe(2);
  });
});

describe('a blocked Todo is not claimed', () => {
  it('a prompt naming a waiting Todo is refused [todo_blocked], naming the undone dependencies to the person and the model; done, it is claimed', async () => {
    ok(['todo', 'add', 'Schema', '--id', 'schema']);
    ok(['todo', 'add', 'Deploy', '--id', 'deploy', '--after', 'schema']);
    const refused = parseHookStdout(hook('sess-b', 'turn-1', 'ship #todo:deploy').stdout)!;
    expect(refused.systemMessage).toBe(
      'Turnkeeper [todo_blocked]: Todo deploy waits on schema (not done yet); nothing was claimed. Ready Todos: turnkeeper next',
    );
    const context = (refused.hookSpecificOutput as { additionalContext: string }).additionalContext;
    expect(context).toContain('Turnkeeper [todo_blocked]: Todo deploy waits on schema (not done yet)');
    expect(context).toContain(
      'Recover: turnkeeper todo done schema   # when it is finished; or drop the dependency: turnkeeper todo unblock deploy --after schema',
    );
    expect((await receiptKinds())[0]).toMatchObject({ kind: 'claim_refused', todo: 'deploy', detail: { reason: 'todo_blocked', waitingOn: 'schema' } });
    expect(json<{ leases: unknown[] }>(['status']).leases).toStrictEqual([]);

    // The start of it is refused the same way, before anything is launched.
    const start = world.cli(['start', 'deploy', '--agent', 'codex', '--agent-bin', '/bin/true', '--prompt', 'ship it', '--json']);
    expect(start.code).toBe(1);
    expect(JSON.parse(start.stdout)).toMatchObject({
      ok: false,
      reason: 'todo_blocked',
      guidance: like.stringContaining('Todo deploy waits on schema (not done yet)'),
    });

    // The control: once the dependency is done, the same prompt (a new Turn) claims it.
    ok(['todo', 'done', 'schema']);
    expect(contextOf(hook('sess-b', 'turn-2', 'ship #todo:deploy').stdout)).toMatch(/^Turnkeeper: Todo deploy · capture/);
  });

  it("todo block --reason releases the blocker's own lease, refuses claims with the reason, and todo unblock lifts it", async () => {
    ok(['todo', 'add', 'Fix login', '--id', 'fix-login']);
    expect(contextOf(hook('sess-c', 'turn-1', 'fix #todo:fix-login').stdout)).toMatch(/^Turnkeeper: Todo fix-login/);
    // Someone else's lease: not without --force.
    const other = world.cli(['todo', 'block', 'fix-login', '--reason', 'waiting for the API key']);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('blocking it releases that lease');
    const blocked = world.cli(['todo', 'block', 'fix-login', '--reason', 'waiting for the API key', '--owner', 'codex:sess-c']);
    expect(blocked.code, blocked.stderr).toBe(0);
    expect(blocked.stdout).toContain('released the lease of codex:sess-c');
    expect(blocked.stdout).toContain('Todo fix-login is blocked: waiting for the API key');
    expect(ok(['todo', 'list']).stdout).toContain('blocked fix-login                Fix login  (blocked: waiting for the API key)');
    const refused = parseHookStdout(hook('sess-d', 'turn-1', 'fix #todo:fix-login').stdout)!;
    expect(refused.systemMessage).toBe(
      'Turnkeeper [todo_blocked]: Todo fix-login was blocked by a person: "waiting for the API key"; nothing was claimed. Ready Todos: turnkeeper next',
    );
    expect((await receiptKinds()).find((doc) => doc.kind === 'todo_status_changed')).toMatchObject({
      detail: { from: 'open', to: 'blocked', reason: 'waiting for the API key' },
    });
    expect(nextIds()).toStrictEqual([]);

    expect(ok(['todo', 'unblock', 'fix-login']).stdout).toBe('Todo fix-login is open again (it was blocked: waiting for the API key)\n');
    expect(ok(['todo', 'list']).stdout).toBe('open    fix-login                Fix login\n');
    expect(nextIds()).toStrictEqual(['fix-login']);
    expect(contextOf(hook('sess-d', 'turn-2', 'fix #todo:fix-login').stdout)).toMatch(/^Turnkeeper: Todo fix-login · capture .* · epoch 2$/m);
  });

  it('todo unblock --after drops a dependency with its receipt; todo block needs a reason or a dependency', async () => {
    ok(['todo', 'add', 'Schema', '--id', 'schema']);
    ok(['todo', 'add', 'Deploy', '--id', 'deploy', '--after', 'schema']);
    expect(world.cli(['todo', 'block', 'deploy']).code).toBe(2);
    const dropped = ok(['todo', 'unblock', 'deploy', '--after', 'schema', '--after', 'nothing']);
    expect(dropped.stdout).toBe('Todo deploy no longer waits on schema\nnothing: not a dependency of deploy; nothing to drop\nit waits on nothing now\n');
    expect((await receiptKinds())[0]).toMatchObject({
      kind: 'todo_dependencies_changed',
      todo: 'deploy',
      detail: { added: '', removed: 'schema', waitingOn: '' },
    });
    expect(nextIds()).toStrictEqual(['schema', 'deploy']);
    const again = ok(['todo', 'block', 'deploy', '--after', 'schema']);
    expect(again.stdout).toBe('Todo deploy waits on schema\n');
    expect(nextIds()).toStrictEqual(['schema']);
  });
});

describe('store copy', () => {
  it("carries the open Todos' dependencies and a person's block reason into the other store", () => {
    ok(['todo', 'add', 'Schema', '--id', 'schema']);
    ok(['todo', 'add', 'Deploy', '--id', 'deploy', '--after', 'schema']);
    ok(['todo', 'add', 'Needs a key', '--id', 'needs-key']);
    ok(['todo', 'block', 'needs-key', '--reason', 'waiting for the API key']);
    const target = `sqlite:${world.root}/copy.db`;
    const copy = world.cli(['store', 'copy', '--to', target]);
    expect(copy.code, copy.stderr).toBe(0);
    const there = world.cli(['todo', 'list', '--json'], { env: { TURNKEEPER_STORE: target } });
    expect(there.code, there.stderr).toBe(0);
    const listed = JSON.parse(there.stdout) as { id: string; state: string; waitingOn?: string[]; blockReason?: string }[];
    expect(listed.map((todo) => [todo.id, todo.state])).toStrictEqual([
      ['schema', 'open'],
      ['deploy', 'blocked'],
      ['needs-key', 'blocked'],
    ]);
    expect(listed[1]).toMatchObject({ waitingOn: ['schema'] });
    expect(listed[2]).toMatchObject({ blockReason: 'waiting for the API key' });
  });
});
