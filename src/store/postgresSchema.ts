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
  // v2: the database enforces the chain (docs/team.md, "The chain is the server's"). Every row inserted
  // into receipts, by any role, must extend the head: the next seq, the head's hash as its prevHash,
  // its own hash the digest of its stored text, and the head moves in the same statement. Hooks append
  // through one SECURITY DEFINER function (the receipt, its lookup row and the head, for every receipt
  // of a transaction in one call), and no role but the owner may write receipts, receipt_index or
  // receipt_head directly: a junk row is refused, and it cannot wedge the store.
  `
  CREATE FUNCTION turnkeeper.receipt_extends_head() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  DECLARE
    head_seq int8;
    head_hash text;
    doc jsonb;
  BEGIN
    SELECT seq, hash INTO head_seq, head_hash FROM turnkeeper.receipt_head WHERE id = 1 FOR UPDATE;
    IF NEW.seq IS DISTINCT FROM head_seq + 1 THEN
      RAISE EXCEPTION 'turnkeeper receipt % does not extend the chain: the head is receipt %', NEW.seq, head_seq
        USING ERRCODE = 'check_violation', HINT = 'receipts are appended by turnkeeper.append_receipts, one after the head';
    END IF;
    IF NEW.hash IS DISTINCT FROM 'sha256:' || encode(sha256(convert_to(NEW.doc, 'UTF8')), 'hex') THEN
      RAISE EXCEPTION 'turnkeeper receipt %: its hash is not the digest of its document', NEW.seq USING ERRCODE = 'check_violation';
    END IF;
    BEGIN
      doc := NEW.doc::jsonb;
    EXCEPTION WHEN others THEN
      RAISE EXCEPTION 'turnkeeper receipt %: its document is not JSON', NEW.seq USING ERRCODE = 'check_violation';
    END;
    IF jsonb_typeof(doc) IS DISTINCT FROM 'object' OR doc->>'schema' IS DISTINCT FROM 'turnkeeper.receipt/v1'
       OR doc->'seq' IS DISTINCT FROM to_jsonb(NEW.seq) OR doc->>'prevHash' IS DISTINCT FROM head_hash THEN
      RAISE EXCEPTION 'turnkeeper receipt %: its document does not name seq % and the head''s hash as prevHash', NEW.seq, NEW.seq
        USING ERRCODE = 'check_violation';
    END IF;
    UPDATE turnkeeper.receipt_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
    RETURN NEW;
  END $$;
  CREATE TRIGGER receipts_extend_head BEFORE INSERT ON turnkeeper.receipts
    FOR EACH ROW EXECUTE FUNCTION turnkeeper.receipt_extends_head();

  -- The one way a hook appends: each receipt with its lookup columns (which must be the document's),
  -- in seq order, in one statement. Returns the new head seq.
  CREATE FUNCTION turnkeeper.append_receipts(seqs int8[], docs text[], hashes text[], goals text[], todos text[], captures text[], kinds text[])
    RETURNS int8 LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  DECLARE
    n int := coalesce(array_length(seqs, 1), 0);
    doc jsonb;
  BEGIN
    IF coalesce(array_length(docs, 1), 0) <> n OR coalesce(array_length(hashes, 1), 0) <> n OR coalesce(array_length(goals, 1), 0) <> n
       OR coalesce(array_length(todos, 1), 0) <> n OR coalesce(array_length(captures, 1), 0) <> n OR coalesce(array_length(kinds, 1), 0) <> n THEN
      RAISE EXCEPTION 'turnkeeper.append_receipts: the arrays differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR i IN 1 .. n LOOP
      INSERT INTO turnkeeper.receipts (seq, doc, hash) VALUES (seqs[i], docs[i], hashes[i]);
      doc := docs[i]::jsonb;
      IF doc->>'goal' IS DISTINCT FROM goals[i] OR doc->>'todo' IS DISTINCT FROM todos[i]
         OR doc->>'capture' IS DISTINCT FROM captures[i] OR doc->>'kind' IS DISTINCT FROM kinds[i] THEN
        RAISE EXCEPTION 'turnkeeper receipt %: its lookup columns are not its document''s', seqs[i] USING ERRCODE = 'check_violation';
      END IF;
      INSERT INTO turnkeeper.receipt_index (seq, goal, todo, capture, kind) VALUES (seqs[i], goals[i], todos[i], captures[i], kinds[i]);
    END LOOP;
    RETURN (SELECT seq FROM turnkeeper.receipt_head WHERE id = 1);
  END $$;
  -- A write's first read of the head locks it until the transaction ends (appends take turns). FOR
  -- UPDATE needs UPDATE rights on the table, which no hook role has: the lock is taken here.
  CREATE FUNCTION turnkeeper.lock_chain_head(OUT seq int8, OUT hash text) LANGUAGE sql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT h.seq, h.hash FROM turnkeeper.receipt_head h WHERE h.id = 1 FOR UPDATE
  $$;
  REVOKE ALL ON FUNCTION turnkeeper.lock_chain_head() FROM PUBLIC;
  REVOKE ALL ON FUNCTION turnkeeper.append_receipts(int8[], text[], text[], text[], text[], text[], text[]) FROM PUBLIC;
  REVOKE ALL ON FUNCTION turnkeeper.receipt_extends_head() FROM PUBLIC;

  -- Roles granted under v1 (store init --hook-role) move to the function: no direct writes of the chain.
  DO $$
  DECLARE
    grantee_name text;
  BEGIN
    FOR grantee_name IN
      SELECT DISTINCT a.grantee::regrole::text FROM pg_class c, aclexplode(c.relacl) a
      WHERE c.oid IN ('turnkeeper.receipts'::regclass, 'turnkeeper.receipt_index'::regclass, 'turnkeeper.receipt_head'::regclass)
        AND a.grantee <> c.relowner AND a.grantee <> 0 AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
    LOOP
      EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON turnkeeper.receipts, turnkeeper.receipt_index, turnkeeper.receipt_head FROM %s', grantee_name);
      EXECUTE format('GRANT UPDATE (goal, todo) ON turnkeeper.receipt_index TO %s', grantee_name);
      EXECUTE format('GRANT EXECUTE ON FUNCTION turnkeeper.append_receipts(int8[], text[], text[], text[], text[], text[], text[]), turnkeeper.lock_chain_head() TO %s', grantee_name);
    END LOOP;
  END $$;

  UPDATE turnkeeper.store_meta SET value = '2' WHERE key = 'schema_version';
  `,
  // v3: the receipt log as an RFC 6962 Merkle tree (src/core/merkle.ts; docs/receipts.md, "The Merkle
  // tree"): the hash of every complete, aligned subtree, (level, idx) covering leaves
  // [idx * 2^level, (idx + 1) * 2^level), leaf i being receipt i + 1. Written by the chain trigger, as
  // the owner, in the statement that admits the receipt: the server computes the tree from the text it
  // stored, so no client (and no hook role, which may only read the table) can plant a node that
  // disagrees with the chain. The receipts already there get their rows here, in seq order.
  `
  CREATE TABLE turnkeeper.receipt_tree (level int4 NOT NULL, idx int8 NOT NULL, hash bytea NOT NULL, PRIMARY KEY (level, idx));

  CREATE FUNCTION turnkeeper.receipt_tree_append(leaf_seq int8, leaf_doc text) RETURNS void LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
  DECLARE
    at int8 := leaf_seq - 1;
    lvl int4 := 0;
    node bytea := sha256('\\x00'::bytea || convert_to(leaf_doc, 'UTF8'));
    sibling bytea;
  BEGIN
    INSERT INTO turnkeeper.receipt_tree (level, idx, hash) VALUES (0, at, node);
    WHILE at % 2 = 1 LOOP
      SELECT t.hash INTO sibling FROM turnkeeper.receipt_tree t WHERE t.level = lvl AND t.idx = at - 1;
      IF sibling IS NULL THEN
        RAISE EXCEPTION 'turnkeeper receipt %: the receipt tree has no node (%, %)', leaf_seq, lvl, at - 1 USING ERRCODE = 'check_violation';
      END IF;
      node := sha256('\\x01'::bytea || sibling || node);
      lvl := lvl + 1;
      at := at / 2;
      INSERT INTO turnkeeper.receipt_tree (level, idx, hash) VALUES (lvl, at, node);
    END LOOP;
  END $$;
  REVOKE ALL ON FUNCTION turnkeeper.receipt_tree_append(int8, text) FROM PUBLIC;

  DO $$
  DECLARE
    r record;
  BEGIN
    FOR r IN SELECT seq, doc FROM turnkeeper.receipts ORDER BY seq LOOP
      PERFORM turnkeeper.receipt_tree_append(r.seq, r.doc);
    END LOOP;
  END $$;

  CREATE OR REPLACE FUNCTION turnkeeper.receipt_extends_head() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  DECLARE
    head_seq int8;
    head_hash text;
    doc jsonb;
  BEGIN
    SELECT seq, hash INTO head_seq, head_hash FROM turnkeeper.receipt_head WHERE id = 1 FOR UPDATE;
    IF NEW.seq IS DISTINCT FROM head_seq + 1 THEN
      RAISE EXCEPTION 'turnkeeper receipt % does not extend the chain: the head is receipt %', NEW.seq, head_seq
        USING ERRCODE = 'check_violation', HINT = 'receipts are appended by turnkeeper.append_receipts, one after the head';
    END IF;
    IF NEW.hash IS DISTINCT FROM 'sha256:' || encode(sha256(convert_to(NEW.doc, 'UTF8')), 'hex') THEN
      RAISE EXCEPTION 'turnkeeper receipt %: its hash is not the digest of its document', NEW.seq USING ERRCODE = 'check_violation';
    END IF;
    BEGIN
      doc := NEW.doc::jsonb;
    EXCEPTION WHEN others THEN
      RAISE EXCEPTION 'turnkeeper receipt %: its document is not JSON', NEW.seq USING ERRCODE = 'check_violation';
    END;
    IF jsonb_typeof(doc) IS DISTINCT FROM 'object' OR doc->>'schema' IS DISTINCT FROM 'turnkeeper.receipt/v1'
       OR doc->'seq' IS DISTINCT FROM to_jsonb(NEW.seq) OR doc->>'prevHash' IS DISTINCT FROM head_hash THEN
      RAISE EXCEPTION 'turnkeeper receipt %: its document does not name seq % and the head''s hash as prevHash', NEW.seq, NEW.seq
        USING ERRCODE = 'check_violation';
    END IF;
    UPDATE turnkeeper.receipt_head SET seq = NEW.seq, hash = NEW.hash WHERE id = 1;
    PERFORM turnkeeper.receipt_tree_append(NEW.seq, NEW.doc);
    RETURN NEW;
  END $$;

  -- Roles granted before read the tree as they read the receipts.
  DO $$
  DECLARE
    grantee_name text;
  BEGIN
    FOR grantee_name IN
      SELECT DISTINCT a.grantee::regrole::text FROM pg_class c, aclexplode(c.relacl) a
      WHERE c.oid = 'turnkeeper.receipts'::regclass AND a.grantee <> c.relowner AND a.grantee <> 0 AND a.privilege_type = 'SELECT'
    LOOP
      EXECUTE format('GRANT SELECT ON turnkeeper.receipt_tree TO %s', grantee_name);
    END LOOP;
  END $$;

  UPDATE turnkeeper.store_meta SET value = '3' WHERE key = 'schema_version';
  `,
  // v4 (issue 19, live rows): the same indexes as SQLite's v4 (src/store/schema.ts): status, the views
  // and `todo list` read the live rows and page the rest. Indexes only, no grants needed.
  `
  CREATE INDEX todos_by_status ON turnkeeper.todos (status, goal, created_at, id);
  CREATE INDEX captures_recent ON turnkeeper.captures (created_at DESC, id);
  CREATE INDEX captures_recent_of_goal ON turnkeeper.captures (goal, created_at DESC, id);
  CREATE INDEX receipt_index_by_kind ON turnkeeper.receipt_index (kind, seq);
  CREATE INDEX receipt_index_by_goal ON turnkeeper.receipt_index (goal, seq);
  UPDATE turnkeeper.store_meta SET value = '4' WHERE key = 'schema_version';
  `,
  // v5 (issue 20, dependencies): as SQLite's v5 (src/store/schema.ts). Roles granted before may read the
  // edges and add or remove them (todo add --after, todo block|unblock --after, each with its receipt),
  // never UPDATE one: an edge is not rewritten in place, and a rename or a Goal move carries edges by the
  // foreign keys' cascade, which runs as the table's owner. The database refuses an edge to an unknown
  // Todo or to itself whatever role writes it.
  `
  ALTER TABLE turnkeeper.todos ADD COLUMN block_reason text;
  CREATE TABLE turnkeeper.todo_deps (
    goal text NOT NULL, todo text NOT NULL, dependency text NOT NULL, created_at int8 NOT NULL,
    PRIMARY KEY (goal, todo, dependency),
    CHECK (todo <> dependency),
    FOREIGN KEY (goal, todo) REFERENCES turnkeeper.todos (goal, id) ON UPDATE CASCADE,
    FOREIGN KEY (goal, dependency) REFERENCES turnkeeper.todos (goal, id) ON UPDATE CASCADE
  );
  CREATE INDEX todo_deps_by_dependency ON turnkeeper.todo_deps (goal, dependency);

  DO $$
  DECLARE
    grantee_name text;
  BEGIN
    FOR grantee_name IN
      SELECT DISTINCT a.grantee::regrole::text FROM pg_class c, aclexplode(c.relacl) a
      WHERE c.oid = 'turnkeeper.todos'::regclass AND a.grantee <> c.relowner AND a.grantee <> 0 AND a.privilege_type = 'INSERT'
    LOOP
      EXECUTE format('GRANT SELECT, INSERT, DELETE ON turnkeeper.todo_deps TO %s', grantee_name);
    END LOOP;
  END $$;

  UPDATE turnkeeper.store_meta SET value = '5' WHERE key = 'schema_version';
  `,
  // v6 (issue 20) The same session columns as SQLite's step (src/store/schema.ts): live state and the
  // turn's base. The hook role's table-wide SELECT, INSERT, UPDATE on sessions covers new columns.
  `
  ALTER TABLE turnkeeper.sessions ADD COLUMN state text, ADD COLUMN state_at int8, ADD COLUMN turn_id text,
    ADD COLUMN turn_at int8, ADD COLUMN turn_head text, ADD COLUMN turn_tree text;
  UPDATE turnkeeper.store_meta SET value = '6' WHERE key = 'schema_version';
  `,
];

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/** The signature of the append function, as GRANT names it. */
const APPEND_FUNCTION = 'turnkeeper.append_receipts(int8[], text[], text[], text[], text[], text[], text[])';

/**
 * Grants for the role hooks connect as: read and write rows; append receipts only through
 * `turnkeeper.append_receipts` (which checks that each extends the head), never insert, change or
 * remove them directly. Revokes first, so a role granted under an older schema ends with exactly these.
 * `goal move` relabels the lookup rows of a Goal: UPDATE of receipt_index's goal and todo columns only.
 * Dependencies (todo_deps) are added and removed, never updated: a moved or renamed Todo's edges follow
 * by the foreign keys' cascade.
 */
export function hookRoleGrants(role: string): string {
  const name = `"${role.replace(/"/g, '""')}"`;
  return `
  REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON turnkeeper.receipts, turnkeeper.receipt_index, turnkeeper.receipt_head, turnkeeper.receipt_tree FROM ${name};
  GRANT USAGE ON SCHEMA turnkeeper TO ${name};
  GRANT SELECT, INSERT, UPDATE ON turnkeeper.todos, turnkeeper.captures, turnkeeper.leases, turnkeeper.ready_captures,
    turnkeeper.sessions, turnkeeper.checkouts, turnkeeper.goals, turnkeeper.store_meta TO ${name};
  REVOKE UPDATE, TRUNCATE ON turnkeeper.todo_deps FROM ${name};
  GRANT SELECT, INSERT, DELETE ON turnkeeper.todo_deps TO ${name};
  GRANT SELECT ON turnkeeper.receipts, turnkeeper.receipt_index, turnkeeper.receipt_head, turnkeeper.receipt_tree TO ${name};
  GRANT UPDATE (goal, todo) ON turnkeeper.receipt_index TO ${name};
  GRANT EXECUTE ON FUNCTION ${APPEND_FUNCTION}, turnkeeper.lock_chain_head() TO ${name};
  `;
}
