// Idempotency keys shared by every node (lib/storage/idempotency-store.ts, docs/api.md section
// 6.7): one row per keyed request that ended with a final answer, written by the node that ran
// it, read by any node that receives the same key. `scope` is org/stream/token, `fingerprint`
// the request's (hex SHA-256 of its path and wire body; '' when its body was not read to the
// end: not compared), `answer` the stored answer as JSON text (lib/ingest/idempotency.ts).
// Times are UInt64 ms.
// Partitioned by the hour of expiry (3600000 ms): ClickHouse 18.16 has no table TTL, so the
// retention janitor drops each hour's partition once every key in it has expired.
// In cluster mode a metadata table: replicated to every host (lib/storage/cluster-ddl.ts).
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 9,
  name: 'idempotency',
  statements: [
    `CREATE TABLE IF NOT EXISTS idempotency_keys (
      scope String,
      key String,
      fingerprint String,
      answer String,
      created_at UInt64,
      expires_at UInt64
    ) ENGINE = MergeTree
    PARTITION BY intDiv(expires_at, 3600000)
    ORDER BY (scope, key)`,
  ],
}
