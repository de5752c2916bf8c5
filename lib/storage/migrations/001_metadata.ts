// Metadata: orgs, users, PATs, streams, ingest tokens. ClickHouse is the only stateful component,
// so these live here too. Records are versioned rows in ReplacingMergeTree tables: a change
// inserts the whole record again with a higher `version`, reads take the newest (FINAL).
// Token usage times go to their own table, where the newest time wins, so that recording a use
// can never overwrite a revocation made meanwhile on another node. Times are UInt64 ms; 0 = none.
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 1,
  name: 'metadata',
  statements: [
    `CREATE TABLE IF NOT EXISTS orgs (
      id String, name String, created_at UInt64, deleted UInt8, version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS users (
      id String, org_id String, name String, created_at UInt64, deleted UInt8, version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS pats (
      id String, org_id String, user_id String, name String, token_hash String, display String,
      abilities Array(String), created_at UInt64, expires_at UInt64, revoked_at UInt64, version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS streams (
      org_id String, name String, description String, retention_days UInt16,
      created_at UInt64, deleted UInt8, version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY (org_id, name)`,
    `CREATE TABLE IF NOT EXISTS ingest_tokens (
      id String, org_id String, stream String, name String, token_hash String, display String,
      created_at UInt64, expires_at UInt64, revoked_at UInt64, version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS token_usage (
      token_id String, last_used_at UInt64
    ) ENGINE = ReplacingMergeTree(last_used_at) ORDER BY token_id`,
  ],
}
