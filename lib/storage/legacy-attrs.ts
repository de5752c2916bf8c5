// Rows stored before migration 11 carry their attributes only in the attrs text, not in
// attr_keys/attr_values (lib/query/attr-sql.ts reads them from the text). This finds whether a
// database has any: the received_at bound of such rows, or 0 when there are none (a database
// created since, where reads then compile no legacy branch at all). Read once at start.
import type { ClickHouse } from './clickhouse.ts'
import { sql } from './sql.ts'

export async function legacyAttrsBefore (clickhouse: ClickHouse): Promise<number> {
  const [applied] = await clickhouse.query<{ at: number }>('SELECT max(applied_at) AS at FROM schema_migrations WHERE id = 11')
  const at = Number(applied?.at ?? 0)
  if (at === 0) return 0
  // LIMIT 1 stops at the first old row; a database without one reads received_at once, which
  // compresses to almost nothing (a request's rows share it). A row with arrays, or without any
  // attribute, is not legacy: rows imported from another database (an upgrade by export and
  // re-import, docs/schema-versions.md) carry their arrays and old receive times.
  const old = await clickhouse.query(sql`SELECT 1 FROM events
    WHERE received_at <= ${at} AND empty(attr_keys) AND attrs NOT IN ('', '{}') LIMIT 1`)
  return old.length > 0 ? at : 0
}
