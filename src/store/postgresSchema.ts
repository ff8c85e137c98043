// The team store's schema in PostgreSQL (13+), forward-only, applied by `turnkeeper store init`
// (hooks refuse a missing, older or newer schema; they never run DDL). Everything lives in the schema
// `turnkeeper`, so the database can be shared with other applications.
export const PG_MIGRATIONS: readonly string[] = [
  // v1
  `
  CREATE SCHEMA IF NOT EXISTS turnkeeper;
  CREATE TABLE turnkeeper.store_meta (key text PRIMARY KEY, value text NOT NULL);
  INSERT INTO turnkeeper.store_meta (key, value) VALUES ('store_id', md5(random()::text || clock_timestamp()::text));

  CREATE TABLE turnkeeper.todos (
    goal text NOT NULL, id text NOT NULL, title text NOT NULL, body text NOT NULL DEFAULT '',
    status text NOT NULL CHECK (status IN ('open', 'done', 'blocked')),
    created_at int8 NOT NULL, updated_at int8 NOT NULL,
    PRIMARY KEY (goal, id)
  );
  CREATE TABLE turnkeeper.captures (
    id text PRIMARY KEY, goal text NOT NULL, todo text NOT NULL, agent text NOT NULL, session text NOT NULL,
    turn text, cwd text NOT NULL, binding text NOT NULL, doc text NOT NULL, original_digest text NOT NULL,
    op text UNIQUE, created_at int8 NOT NULL, checkout text, common_dir text, branch text
  );
  CREATE INDEX captures_by_turn ON turnkeeper.captures (goal, todo, agent, session, turn);
  CREATE TABLE turnkeeper.leases (
    goal text NOT NULL, todo text NOT NULL, epoch int8 NOT NULL, owner text NOT NULL, capture text NOT NULL,
    version int8 NOT NULL, status text NOT NULL CHECK (status IN ('active', 'released')),
    acquired_at int8 NOT NULL, renewed_at int8 NOT NULL, expires_at int8 NOT NULL,
    released_at int8, release_reason text,
    PRIMARY KEY (goal, todo, epoch)
  );
  -- The database itself refuses two active holders, whatever the code above it does.
  CREATE UNIQUE INDEX leases_one_active_per_todo ON turnkeeper.leases (goal, todo) WHERE status = 'active';
  CREATE UNIQUE INDEX leases_one_active_per_owner ON turnkeeper.leases (owner) WHERE status = 'active';
  -- Fencing looks up an Owner's latest lease, released ones too, at every write tool (the partial index
  -- above holds only active ones).
  CREATE INDEX leases_by_owner ON turnkeeper.leases (owner);
  CREATE INDEX leases_by_capture ON turnkeeper.leases (capture);
  CREATE TABLE turnkeeper.ready_captures (
    capture text PRIMARY KEY REFERENCES turnkeeper.captures (id), doc text NOT NULL,
    presentation text NOT NULL, ready_digest text NOT NULL
  );
  CREATE TABLE turnkeeper.sessions (
    owner text PRIMARY KEY, agent text NOT NULL, session text NOT NULL, goal text NOT NULL, cwd text NOT NULL,
    transcript_path text, first_hook_at int8 NOT NULL, last_hook_at int8 NOT NULL
  );
  CREATE TABLE turnkeeper.checkouts (place text PRIMARY KEY, goal text NOT NULL, checkout text NOT NULL, updated_at int8 NOT NULL);
  CREATE TABLE turnkeeper.goals (id text PRIMARY KEY, key text NOT NULL, display_name text NOT NULL);

  CREATE TABLE turnkeeper.receipts (seq int8 PRIMARY KEY, doc text NOT NULL, hash text);
  -- One row, always present: appends lock it and advance it in their own transaction.
  CREATE TABLE turnkeeper.receipt_head (id int PRIMARY KEY CHECK (id = 1), seq int8 NOT NULL, hash text NOT NULL);
  INSERT INTO turnkeeper.receipt_head (id, seq, hash) VALUES (1, 0, 'sha256:' || repeat('0', 64));
  CREATE TABLE turnkeeper.receipt_index (seq int8 PRIMARY KEY, goal text NOT NULL, todo text, capture text, kind text NOT NULL);
  CREATE INDEX receipt_index_by_capture ON turnkeeper.receipt_index (capture, kind);
  CREATE INDEX receipt_index_by_todo ON turnkeeper.receipt_index (goal, todo, seq);

  -- Receipts are append-only for everyone who uses the store through its tables (docs/team.md says
  -- what an administrator can still do, and how verify shows it).
  CREATE FUNCTION turnkeeper.receipts_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    RAISE EXCEPTION 'turnkeeper receipts are append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
  END $$;
  CREATE TRIGGER receipts_no_update_delete BEFORE UPDATE OR DELETE ON turnkeeper.receipts
    FOR EACH ROW EXECUTE FUNCTION turnkeeper.receipts_are_append_only();
  CREATE TRIGGER receipts_no_truncate BEFORE TRUNCATE ON turnkeeper.receipts
    FOR EACH STATEMENT EXECUTE FUNCTION turnkeeper.receipts_are_append_only();

  -- The change feed: every receipt announces the new head on one channel (the extension LISTENs).
  CREATE FUNCTION turnkeeper.announce_receipt() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_notify('turnkeeper', NEW.seq::text);
    RETURN NULL;
  END $$;
  CREATE TRIGGER receipts_notify AFTER INSERT ON turnkeeper.receipts
    FOR EACH ROW EXECUTE FUNCTION turnkeeper.announce_receipt();

  INSERT INTO turnkeeper.store_meta (key, value) VALUES ('schema_version', '1');
  `,
];

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/**
 * Grants for the role hooks connect as: read and write rows, append receipts, never change or remove
 * them (the trigger refuses that to everyone; these grants also withhold UPDATE, DELETE and TRUNCATE).
 */
export function hookRoleGrants(role: string): string {
  const name = `"${role.replace(/"/g, '""')}"`;
  return `
  GRANT USAGE ON SCHEMA turnkeeper TO ${name};
  GRANT SELECT, INSERT, UPDATE ON turnkeeper.todos, turnkeeper.captures, turnkeeper.leases, turnkeeper.ready_captures,
    turnkeeper.sessions, turnkeeper.checkouts, turnkeeper.goals, turnkeeper.receipt_head, turnkeeper.store_meta TO ${name};
  GRANT SELECT, INSERT ON turnkeeper.receipts TO ${name};
  GRANT SELECT, INSERT, UPDATE ON turnkeeper.receipt_index TO ${name};
  `;
}
