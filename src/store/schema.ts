// Forward-only migrations; the schema version lives in PRAGMA user_version (spec §4).
// A database written by a newer Turnkeeper is refused, never rewritten.
export const MIGRATIONS: readonly string[] = [
  // v1
  `
  CREATE TABLE todos (
    goal TEXT NOT NULL, id TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('open', 'done', 'blocked')),
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    PRIMARY KEY (goal, id)
  ) WITHOUT ROWID;

  CREATE TABLE captures (
    id TEXT PRIMARY KEY, goal TEXT NOT NULL, todo TEXT NOT NULL, agent TEXT NOT NULL, session TEXT NOT NULL,
    turn TEXT, cwd TEXT NOT NULL, binding TEXT NOT NULL, doc TEXT NOT NULL, original_digest TEXT NOT NULL,
    op TEXT UNIQUE, created_at INTEGER NOT NULL
  );

  CREATE TABLE leases (
    goal TEXT NOT NULL, todo TEXT NOT NULL, epoch INTEGER NOT NULL, owner TEXT NOT NULL, capture TEXT NOT NULL,
    version INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('active', 'released')),
    acquired_at INTEGER NOT NULL, renewed_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    released_at INTEGER, release_reason TEXT,
    PRIMARY KEY (goal, todo, epoch)
  );
  -- The database itself refuses two active holders, whatever the code above it does.
  CREATE UNIQUE INDEX leases_one_active_per_todo ON leases (goal, todo) WHERE status = 'active';
  CREATE UNIQUE INDEX leases_one_active_per_owner ON leases (owner) WHERE status = 'active';
  CREATE INDEX leases_by_owner ON leases (owner, acquired_at);
  CREATE INDEX leases_by_capture ON leases (capture);

  CREATE TABLE ready_captures (
    capture TEXT PRIMARY KEY REFERENCES captures (id), doc TEXT NOT NULL,
    presentation TEXT NOT NULL, ready_digest TEXT NOT NULL
  );

  CREATE TABLE sessions (
    owner TEXT PRIMARY KEY, agent TEXT NOT NULL, session TEXT NOT NULL, goal TEXT NOT NULL, cwd TEXT NOT NULL,
    transcript_path TEXT, first_hook_at INTEGER NOT NULL, last_hook_at INTEGER NOT NULL
  );

  CREATE TABLE receipts (seq INTEGER PRIMARY KEY, doc TEXT NOT NULL, hash TEXT);
  CREATE TABLE receipt_head (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL);
  -- Lookup aid for "last receipts of this Todo"; the chain itself is only the receipts table.
  CREATE TABLE receipt_index (seq INTEGER PRIMARY KEY, goal TEXT NOT NULL, todo TEXT, capture TEXT, kind TEXT NOT NULL);
  CREATE INDEX receipt_index_by_capture ON receipt_index (capture, kind);
  CREATE INDEX receipt_index_by_todo ON receipt_index (goal, todo, seq);
  `,
  // v2: the store's identity and a counter every write transaction advances (the anchor sidecar records
  // both, so a swapped database or a foreign WAL shows; src/store/anchor.ts),
  // and the lookup of an earlier claim of the same Turn (capture v2: the Turn is the identity).
  `
  CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  INSERT INTO store_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16)))), ('writes', '0');
  CREATE INDEX captures_by_turn ON captures (goal, todo, agent, session, turn);

  -- A Goal is a repository, not a path (docs/goals.md). Captures record the checkout (worktree root)
  -- they ran in, its repository's common git directory and the branch, beside their identity; stores of
  -- the previous release keyed Goals by the checkout root, so that is the checkout of their captures.
  ALTER TABLE captures ADD COLUMN checkout TEXT;
  ALTER TABLE captures ADD COLUMN common_dir TEXT;
  ALTER TABLE captures ADD COLUMN branch TEXT;
  UPDATE captures SET checkout = goal WHERE checkout IS NULL;
  -- Which Goal each place (a repository's common git directory, or a directory outside git) last used:
  -- a key that changes under a known place gives [goal_changed] instead of a silent second Goal.
  CREATE TABLE checkouts (place TEXT PRIMARY KEY, goal TEXT NOT NULL, checkout TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE goals (id TEXT PRIMARY KEY, key TEXT NOT NULL, display_name TEXT NOT NULL) WITHOUT ROWID;
  -- Rows written by the previous release name their Goal by path; they are mapped to Goal ids once,
  -- by the first process that can resolve those paths (src/ledger/ledger.ts adoptLegacyGoals).
  INSERT INTO store_meta (key, value) SELECT 'legacy_goals', 'pending'
    WHERE EXISTS (SELECT 1 FROM todos) OR EXISTS (SELECT 1 FROM captures) OR EXISTS (SELECT 1 FROM sessions);
  `,
  // v3: the receipt log as an RFC 6962 Merkle tree (src/core/merkle.ts, docs/receipts.md "The Merkle
  // tree"): the hash of every complete, aligned subtree, (level, idx) covering leaves
  // [idx * 2^level, (idx + 1) * 2^level), leaf i being receipt i + 1. Written with each receipt in its
  // transaction (sqlite.ts appendReceipt); the rows of receipts written before are computed right after
  // this statement, in the same migration transaction (sqlite.ts backfillTree: SQLite has no SHA-256).
  `
  CREATE TABLE receipt_tree (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID;
  `,
  // v4 (issue 19, live rows): indexes that serve status, the views and `todo list` from the live rows
  // (open Todos, active leases, the newest captures) and page the rest, and proof of life from the
  // launch receipts alone, never a scan of every row ever written (test/integration/live-rows.test.ts
  // pins the plans). Indexes only: no row changes, so this step merges after any other one as is.
  `
  CREATE INDEX todos_by_status ON todos (status, goal, created_at, id);
  CREATE INDEX captures_recent ON captures (created_at DESC, id);
  CREATE INDEX captures_recent_of_goal ON captures (goal, created_at DESC, id);
  CREATE INDEX receipt_index_by_kind ON receipt_index (kind, seq);
  CREATE INDEX receipt_index_by_goal ON receipt_index (goal, seq);
  `,
  // v5 (issue 20, dependencies): `todo add --after`, `todo block --after`: a Todo waits until each of its
  // dependencies is done. Whether it waits is derived when read (never a stored flag that a concurrent
  // `todo done` could leave stale: docs/spec.md §3 "Dependencies"). The database refuses an edge to a
  // Todo that does not exist and an edge to itself; a Todo renamed or moved to another Goal carries its
  // edges (ON UPDATE CASCADE). `block_reason`: why a person blocked it (`todo block --reason`).
  `
  ALTER TABLE todos ADD COLUMN block_reason TEXT;
  CREATE TABLE todo_deps (
    goal TEXT NOT NULL, todo TEXT NOT NULL, dependency TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (goal, todo, dependency),
    CHECK (todo <> dependency),
    FOREIGN KEY (goal, todo) REFERENCES todos (goal, id) ON UPDATE CASCADE,
    FOREIGN KEY (goal, dependency) REFERENCES todos (goal, id) ON UPDATE CASCADE
  ) WITHOUT ROWID;
  -- What waits on a Todo (its dependants), and the cascade's lookup of child rows by the parent key.
  CREATE INDEX todo_deps_by_dependency ON todo_deps (goal, dependency);
  `,
  // v6 (issue 20, live turn status and turn receipts) Each session's live state (working, waiting,
  // stopped) and when it last changed, written only on a change; and the turn it is in: its Turn, when
  // it began, and git HEAD and the tree digest of the checkout at its prompt, which the stop event's
  // `turn_ended` receipt compares against (src/checkout/turnChanges.ts). New nullable columns only: a
  // session written before has no state until its next hook.
  `
  ALTER TABLE sessions ADD COLUMN state TEXT;
  ALTER TABLE sessions ADD COLUMN state_at INTEGER;
  ALTER TABLE sessions ADD COLUMN turn_id TEXT;
  ALTER TABLE sessions ADD COLUMN turn_at INTEGER;
  ALTER TABLE sessions ADD COLUMN turn_head TEXT;
  ALTER TABLE sessions ADD COLUMN turn_tree TEXT;
  `,
];

/** The migration after which the receipts already stored get their tree rows (sqlite.ts). */
export const TREE_MIGRATION = 2;

export const SCHEMA_VERSION = MIGRATIONS.length;
