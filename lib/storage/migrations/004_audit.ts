// The audit log (lib/audit/audit-log.ts): one row per change to tokens, streams and orgs, and one
// per burst of failed authentication from a source address. Rows are never updated; reads are
// per org, newest first, in pages keyed by (at, id), which the sort key serves. Times are UInt64
// ms. Monthly partitions (30 days of ms) keep the part count low for a table this small. Nothing
// here ever holds a secret or a token hash: tokens appear by id only.
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 4,
  name: 'audit',
  statements: [
    `CREATE TABLE IF NOT EXISTS audit_log (
      org_id String,
      at UInt64,
      id String,
      action String,
      actor_user_id String,
      actor_token_id String,
      target_kind String,
      target_id String,
      request_id String,
      source String,
      details String
    ) ENGINE = MergeTree
    PARTITION BY intDiv(at, 2592000000)
    ORDER BY (org_id, at, id)`,
  ],
}
