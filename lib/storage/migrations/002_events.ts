// Events: one row per ingested log event. Timestamps are UInt64 milliseconds (portable to
// ClickHouse 18.16, which has no DateTime64). Daily partitions (by UTC day number) make retention a
// DROP PARTITION; the sort key serves every read, which is always per org and stream over a time range.
// Format-1 fields absent from a line are NULL, so reads can tell "absent" from "empty".
// `seq` is unique per stored line (a random per-request base plus the line number), the tiebreak
// that makes event pages exact when many events share a ts; `size` is the line's bytes (stats).
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 2,
  name: 'events',
  statements: [
    `CREATE TABLE IF NOT EXISTS events (
      org_id String,
      stream String,
      ts UInt64,
      received_at UInt64,
      host Nullable(String),
      path Nullable(String),
      method Nullable(String),
      status Nullable(UInt16),
      rt Nullable(Float64),
      bytes Nullable(UInt64),
      src Nullable(String),
      user_agent Nullable(String),
      message Nullable(String),
      filename Nullable(String),
      attrs String,
      seq UInt64,
      size UInt32
    ) ENGINE = MergeTree
    PARTITION BY intDiv(ts, 86400000)
    ORDER BY (org_id, stream, ts)`,
  ],
}
