// What a role may do in schema `turnkeeper`, read from the server, for `store init --hook-role`: read
// before and after its GRANTs, the difference is what the run created (or revoked), so a second run
// says "already granted" instead of claiming to create what was in place. The privileges are the
// role's effective ones (has_*_privilege: its own and those of roles it inherits), beyond what PUBLIC
// has anyway (EXECUTE on functions, by default), whatever statements postgresSchema.ts grants them
// with: the report follows the server, not a copy of those statements.
import { connectClient } from './postgres';

/** One privilege on one object: `INSERT` on `turnkeeper.todos`, `UPDATE (goal, todo)` on a table's columns. */
export interface Privilege {
  readonly privilege: string;
  readonly object: string;
}

const SQL = `
  SELECT 'USAGE' AS privilege, 'schema turnkeeper' AS object WHERE has_schema_privilege($1, 'turnkeeper', 'USAGE') AND NOT has_schema_privilege('public', 'turnkeeper', 'USAGE')
  UNION ALL
  SELECT p.privilege, 'turnkeeper.' || c.relname
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS p(privilege)
  WHERE n.nspname = 'turnkeeper' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND has_table_privilege($1, c.oid, p.privilege)
    AND NOT has_table_privilege('public', c.oid, p.privilege)
  UNION ALL
  SELECT p.privilege || ' (' || string_agg(a.attname, ', ' ORDER BY a.attnum) || ')', 'turnkeeper.' || c.relname
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) AS p(privilege)
  WHERE n.nspname = 'turnkeeper' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND NOT has_table_privilege($1, c.oid, p.privilege) AND has_column_privilege($1, c.oid, a.attnum, p.privilege)
    AND NOT has_column_privilege('public', c.oid, a.attnum, p.privilege)
  GROUP BY p.privilege, c.relname
  UNION ALL
  SELECT p.privilege, 'sequence turnkeeper.' || c.relname
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  CROSS JOIN unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) AS p(privilege)
  WHERE n.nspname = 'turnkeeper' AND c.relkind = 'S' AND has_sequence_privilege($1, c.oid, p.privilege)
    AND NOT has_sequence_privilege('public', c.oid, p.privilege)
  UNION ALL
  SELECT 'EXECUTE', 'function ' || f.oid::regprocedure::text
  FROM pg_proc f JOIN pg_namespace n ON n.oid = f.pronamespace
  WHERE n.nspname = 'turnkeeper' AND has_function_privilege($1, f.oid, 'EXECUTE')
    AND NOT has_function_privilege('public', f.oid, 'EXECUTE')`;

/** The role's privileges in schema `turnkeeper`; none for a role that does not exist (its GRANT then fails and says so). */
export async function privilegesOf(url: string, role: string): Promise<Privilege[]> {
  const client = await connectClient({ url, statementTimeoutMs: 30_000 });
  try {
    if ((await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount === 0) return [];
    return (await client.query<Privilege>(SQL, [role])).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const key = (p: Privilege): string => `${p.privilege} on ${p.object}`;

/** What is in `after` and not in `before`, and the other way round. */
export function privilegeChanges(before: readonly Privilege[], after: readonly Privilege[]): { added: Privilege[]; removed: Privilege[] } {
  const had = new Set(before.map(key));
  const has = new Set(after.map(key));
  return { added: after.filter((p) => !had.has(key(p))), removed: before.filter((p) => !has.has(key(p))) };
}

/**
 * Privileges for people, grouped as a GRANT names them: "SELECT, INSERT, UPDATE on turnkeeper.todos,
 * turnkeeper.leases; USAGE on schema turnkeeper". Objects with the same privileges share a group.
 */
export function describePrivileges(privileges: readonly Privilege[]): string {
  const byObject = new Map<string, string[]>();
  for (const p of [...privileges].sort(inOrder)) byObject.set(p.object, [...(byObject.get(p.object) ?? []), p.privilege]);
  const byRights = new Map<string, string[]>();
  for (const [object, rights] of byObject) {
    const named = rights.join(', ');
    byRights.set(named, [...(byRights.get(named) ?? []), object]);
  }
  return [...byRights].map(([rights, objects]) => `${rights} on ${objects.join(', ')}`).join('; ');
}

const PRIVILEGE_ORDER = ['USAGE', 'SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER', 'EXECUTE'];
const OBJECT_ORDER = ['schema ', 'turnkeeper.', 'sequence ', 'function '];
const rank = (order: readonly string[], matches: (entry: string) => boolean): number => order.findIndex(matches);
/** The schema, then tables, sequences and functions, each by name; privileges in GRANT's usual order. */
function inOrder(a: Privilege, b: Privilege): number {
  const kind = (p: Privilege) => rank(OBJECT_ORDER, (prefix) => p.object.startsWith(prefix));
  const right = (p: Privilege) => rank(PRIVILEGE_ORDER, (name) => p.privilege.split(' ')[0] === name);
  return kind(a) - kind(b) || a.object.localeCompare(b.object) || right(a) - right(b) || a.privilege.localeCompare(b.privilege);
}
