// The burst of postgres-pooler.test.ts (test/support/burst.ts: 64 real hook processes from 8
// "machines", half on one Todo and half on a Todo each) sent straight to the server, no pooler
// between: the hooks connect as a non-superuser role with a password (SCRAM), each with its own
// connection.
//
// What each test proves:
// - a server with room (the harness's max_connections = 200): every hook answers (a claim,
//   [lease_held] or guidance), none [store_unavailable], one holder per Todo, a verifying chain, and
//   the server refused no connection;
// - control: a server started with max_connections = 28 (superuser_reserved_connections at its
//   default, 3) admits 25 connections of the hooks' role and refuses the 26th with 53300, then 3 of a
//   superuser and refuses the next with 53300 "sorry, too many clients already";
// - the same burst against that server, its slots too few for it: the server refuses connections
//   (53300, counted in its log) while the hooks' backends never exceed its slots, and still every
//   hook answers as above. The hooks of one home take turns for 4 connections first
//   (src/store/connectionSlots.ts), so the 8 homes open at most 32 at once, more than the 25 slots;
//   beyond those the hooks wait their turn at the server (connectQueued in src/store/postgres.ts
//   retries a connect the server refuses as busy, until the hook's deadline leaves it time for its
//   work); a release that failed them at once answered [store_unavailable]. With 37 slots (the
//   previous size) the homes' turns alone kept every hook within the server's slots: nothing was
//   refused, and the test would not have reached the server's refusals at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { usePostgres, type PgServer } from '../support/postgres';
import { makeUpstream } from '../support/teamMachine';
import { backendCounter, runBurst, spawnMachine } from '../support/burst';

/** The hooks' role: not a superuser, so the server's reserved slots are not theirs. */
const APP = 'tk_app';
const APP_PASSWORD = 'app "pass" :/@%';
const ORIGIN = 'https://example.invalid/acme/direct.git';
/** PostgreSQL's default superuser_reserved_connections, which the small server keeps. */
const RESERVED = 3;
/**
 * Slots for about 40% of the burst, and fewer than the 32 connections its 8 homes open at once (4 each):
 * the field's case (a team's max_connections, 100 by default, and a burst of 128 hooks from more
 * machines than 100 / 4) in proportion. Far fewer (17 for 64) is a server that needs a pooler
 * (docs/team.md, "Many agents"): its hooks wait their turn beyond any bound a prompt can take.
 */
const SMALL = 28;

/** The server's log lines for a connection it refused for want of a slot (both are SQLSTATE 53300). */
const TOO_MANY = /FATAL: {2}sorry, too many clients already/g;
const RESERVED_ONLY = /FATAL: {2}remaining connection slots are reserved for/g;
const countOf = (text: string, pattern: RegExp): number => text.match(pattern)?.length ?? 0;

let root: string;
let upstream: string;
beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'tk-pg-burst-')));
  upstream = makeUpstream(join(root, 'upstream'), 'direct\n');
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Waits until the server has no client backend but psql's own (a CLI's backend outlives its exit by a moment). */
async function untilNoClients(server: PgServer): Promise<void> {
  const deadline = performance.now() + 10_000;
  while ((await server.psql(`SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`)) !== '0') {
    if (performance.now() > deadline) throw new Error('client backends never went away');
    await new Promise((resolvePromise) => setTimeout(resolvePromise, 10));
  }
}

/** `store init` against the server as the hooks' role, which owns the database (and then the schema). */
async function storeInit(server: PgServer, database: string): Promise<void> {
  const init = await spawnMachine(join(root, `init-${server.port}`), `init-${server.port}`, {
    store: server.url(database, APP, APP_PASSWORD),
    origin: ORIGIN,
    upstream,
  }).run(['store', 'init', '--json']);
  expect(init.code, init.stdout + init.stderr).toBe(0);
}

/**
 * The burst from 8 machines straight to `server`'s `database`, as the hooks' role; the sampler counts
 * the role's backends there over one superuser connection opened before it. Returns the burst's
 * result and the connections the server refused during it (its log).
 */
async function directBurst(server: PgServer, database: string, prefix: string, via: string) {
  await storeInit(server, database);
  await untilNoClients(server);
  const counter = await backendCounter(server.url(database), APP, database);
  const refused = { tooMany: 0, reserved: 0 };
  try {
    const result = await runBurst({
      root,
      upstream,
      origin: ORIGIN,
      prefix,
      stores: server.url(database, APP, APP_PASSWORD),
      adminUrl: server.url(database),
      via,
      connections: counter,
      around() {
        const logBefore = server.log().length;
        return () => {
          const during = server.log().slice(logBefore);
          refused.tooMany = countOf(during, TOO_MANY);
          refused.reserved = countOf(during, RESERVED_ONLY);
          return (
            `the server refused ${refused.tooMany + refused.reserved} connections during the burst (53300: ` +
            `${refused.reserved} "remaining connection slots are reserved", ${refused.tooMany} "sorry, too many clients already")`
          );
        };
      },
    });
    return { ...result, refused };
  } finally {
    await counter.close();
  }
}

describe('a burst straight to a server with room (max_connections 200)', () => {
  const server = usePostgres({ beforeAll, afterAll });
  beforeAll(async () => {
    await server().createRole(APP, APP_PASSWORD);
    await server().createDatabase('burst', APP);
  });

  it('64 hooks from 8 machines, half on one Todo and half on a Todo each: every hook answers, no [store_unavailable], one holder per Todo, no connection refused', async () => {
    expect(await server().psql('SHOW max_connections')).toBe('200');
    const { summary, peak, refused } = await directBurst(server(), 'burst', 'roomy', 'directly against the server (max_connections 200)');
    // Control: this server had a slot for every hook, so nothing here waited for one.
    expect(refused, summary).toStrictEqual({ tooMany: 0, reserved: 0 });
    expect(peak, summary).toBeLessThanOrEqual(64);
  });
});

describe(`a burst straight to a server with too few connection slots (max_connections ${SMALL})`, () => {
  const server = usePostgres({ beforeAll, afterAll }, { settings: { max_connections: SMALL } });
  beforeAll(async () => {
    await server().createRole(APP, APP_PASSWORD);
    await server().createDatabase('burst', APP);
    await server().createDatabase('probe', APP);
  });

  it(`control: the server admits ${SMALL - RESERVED} connections of the hooks' role and refuses the next with 53300, then ${RESERVED} of a superuser and refuses the next`, async () => {
    expect(await server().psql('SHOW max_connections')).toBe(String(SMALL));
    expect(await server().psql('SHOW superuser_reserved_connections')).toBe(String(RESERVED));
    expect(await server().psql(`SELECT rolsuper FROM pg_roles WHERE rolname = '${APP}'`)).toBe('f');
    await untilNoClients(server());
    const logBefore = server().log().length;
    const open: pg.Client[] = [];
    /** Opens clients at `url` one by one until the server refuses one: how many it admitted, and the refusal. */
    const fill = async (url: string): Promise<{ admitted: number; refusal: { code?: string; message: string } }> => {
      for (let admitted = 0; admitted <= SMALL; admitted += 1) {
        const client = new pg.Client({ connectionString: url });
        client.on('error', () => undefined);
        try {
          await client.connect();
          open.push(client);
        } catch (error) {
          await client.end().catch(() => undefined);
          return { admitted, refusal: { code: (error as { code?: string }).code, message: (error as Error).message } };
        }
      }
      throw new Error(`the server admitted more than ${SMALL} clients at ${url}`);
    };
    try {
      const app = await fill(server().url('probe', APP, APP_PASSWORD));
      const admin = await fill(server().url('probe'));
      console.log(
        `max_connections ${SMALL}: ${app.admitted} connections of ${APP} admitted, then ${JSON.stringify(app.refusal)}; ` +
          `${admin.admitted} more of tk_admin, then ${JSON.stringify(admin.refusal)}`,
      );
      expect(app.admitted).toBe(SMALL - RESERVED);
      expect(app.refusal.code).toBe('53300');
      expect(app.refusal.message).toMatch(/^remaining connection slots are reserved for/);
      expect(admin).toStrictEqual({ admitted: RESERVED, refusal: { code: '53300', message: 'sorry, too many clients already' } });
    } finally {
      await Promise.all(open.map((client) => client.end().catch(() => undefined)));
    }
    // The server logs each refusal.
    const during = server().log().slice(logBefore);
    expect(countOf(during, RESERVED_ONLY), during).toBe(1);
    expect(countOf(during, TOO_MANY), during).toBe(1);
  });

  it(`64 hooks from 8 machines with ${SMALL - RESERVED} slots for them: the server refuses connections, and still every hook answers, no [store_unavailable], one holder per Todo`, async () => {
    const { summary, peak, refused } = await directBurst(server(), 'burst', 'small', `directly against the server (max_connections ${SMALL})`);
    // The slots were too few: the server refused connections during the burst (so hooks waited for a
    // slot), and never held more of the hooks' backends than its slots for non-superusers. (The
    // sampler's own superuser connection takes one of them; the bound asserted is the server's,
    // since pg_stat_activity is read slot by slot, not at one instant.)
    expect(refused.tooMany + refused.reserved, summary).toBeGreaterThan(0);
    expect(peak, summary).toBeLessThanOrEqual(SMALL - RESERVED);
  });
});
