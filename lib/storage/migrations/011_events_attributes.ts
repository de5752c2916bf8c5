// Application-log fields and queryable attributes (docs/api.md section 6.4, "Attributes"):
// - service, trace_id, span_id: columns of the field table (lib/events/fields.ts), NULL when a
//   line carries none. Nullable(String) as every text column (18.16 has LowCardinality only
//   behind an experimental setting).
// - attr_keys, attr_values: attrs flattened to dotted paths and value texts, parallel arrays
//   (lib/events/attr-flatten.ts), so reads filter and group by any attribute with has() and
//   indexOf() instead of parsing JSON per row: ClickHouse 18.16 has no JSON functions beyond
//   visitParam*, and no Map type. Measured against the alternatives in bench/README.md
//   ("Attribute layout").
// Rows stored before this migration keep empty arrays; their attributes are read from the attrs
// text instead (lib/query/attr-sql.ts, "Rows from before migration 11"), so they stay findable
// without rewriting old parts. The time this migration was applied (schema_migrations) bounds them.
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 11,
  name: 'events_attributes',
  // One ALTER of five columns, not five ALTERs: in cluster mode each is an ON CLUSTER DDL that
  // waits for every host, and five of them (times the local and Distributed tables) passed a
  // node's 60 s request timeout at its first start on a loaded 2 x 2 cluster. ClickHouse applies
  // an ALTER's commands together, so a rerun finds all five columns or none.
  statements: [
    `ALTER TABLE events ADD COLUMN service Nullable(String) AFTER level, ADD COLUMN trace_id Nullable(String) AFTER service,
      ADD COLUMN span_id Nullable(String) AFTER trace_id, ADD COLUMN attr_keys Array(String) AFTER attrs,
      ADD COLUMN attr_values Array(String) AFTER attr_keys`,
  ],
}
