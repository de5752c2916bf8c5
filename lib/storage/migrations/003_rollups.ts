// Rollups: pre-aggregated copies of `events` that stats over long ranges read instead of raw rows
// (lib/query/stats-query.ts decides which table serves which range).
//
//   events_1m       per (org_id, stream, minute): series counters and an rt digest
//   events_1h       the same per hour, so a 30-day series merges 720 rows, not 43,200
//   events_dims_1h  per (org_id, stream, hour, dim, value): what the top lists need
//
// Each table is filled by its own materialized view on `events`; an insert into `events` runs all
// three over the inserted block, so this is the whole ingest-time cost (three GROUP BYs per
// block). The views read `events` directly rather than chaining events_1m -> events_1h: a chained
// view has to write a column named like the one it reads (`sumMergeState(n) AS n`), an alias that
// shadows a source column, which ClickHouse's newer analyzer resolves differently from 18.16's.
// For the same reason no alias in these views, nor in the stats queries, names a source column.
//
// Contract:
// - Columns are AggregateFunction states merged by AggregatingMergeTree; read them only through
//   the matching -Merge function (sumMerge, quantilesTDigestIfMerge) with GROUP BY, never as rows.
// - No argument of an aggregate state is Nullable: 18.16 drops Nullable from the state's type
//   while current ClickHouse keeps it, so the declared column types would match one server only.
//   Absent fields are turned into explicit conditions (ifNull, -If) instead.
// - Status classes are 200-299 ... 500-599; an event without a status is in none of them. An
//   error is status >= 400 (4xx and 5xx), the SPEC's example error_rate (2 of 10 with one 4xx and
//   one 5xx).
// - rt is in seconds. The digest is ClickHouse's t-digest (Float32 centroids), kept only where an
//   rt is present; `rt_n` counts those events so readers can tell "no rt" from a digest of nothing.
// - events_dims_1h holds one row per non-NULL value of path, host, status (as text), src,
//   user_agent and filename; its rt digest is kept for `path` rows only (the only top list that
//   shows latency), so rows of the other dimensions carry an empty digest.
// - Rollups see only what is inserted after this migration: events already stored are not
//   back-filled, because a re-run of a half-applied back-fill would count them twice.
// - Daily partitions, the same key as `events` (intDiv(ts, 86400000)), so retention drops the same
//   partition numbers from every table.
import type { Migration } from '../migrate.ts'

/** The rt percentiles every digest is finalised at; the stats query reads them in this order. */
export const rtLevels = [0.5, 0.95, 0.99] as const

/** The state type of every rt digest column; raw-row queries build states of exactly this type. */
const rtDigestType = `AggregateFunction(quantilesTDigestIf(${rtLevels.join(', ')}), Float64, UInt8)`

/**
 * The dimensions of events_dims_1h. An Enum8 rather than a String: a one-byte group key makes the
 * view's GROUP BY about 15% cheaper on every insert. Adding a dimension appends a value
 * (ALTER ... MODIFY COLUMN, a metadata-only change).
 */
export const dims = ['path', 'host', 'status', 'src', 'user_agent', 'filename'] as const
export type Dim = typeof dims[number]
const dimType = `Enum8(${dims.map((d, i) => `'${d}' = ${i + 1}`).join(', ')})`

/** The `events` expression each dimension's value comes from (NULL when the field is absent). */
export const dimSources: Readonly<Record<Dim, string>> = {
  path: 'path',
  host: 'host',
  status: 'toString(status)',
  src: 'src',
  user_agent: 'user_agent',
  filename: 'filename',
}

/** Series counters, shared by the per-minute and per-hour tables. */
const seriesColumns = `
      n AggregateFunction(sum, UInt64),
      n_2xx AggregateFunction(sum, UInt64),
      n_3xx AggregateFunction(sum, UInt64),
      n_4xx AggregateFunction(sum, UInt64),
      n_5xx AggregateFunction(sum, UInt64),
      bytes_sum AggregateFunction(sum, UInt64),
      rt_n AggregateFunction(sum, UInt64),
      rt_digest ${rtDigestType}`

/** The states a series view computes from a block of `events`, in `seriesColumns` order. */
const seriesStates = `
      sumState(toUInt64(1)) AS n,
      sumState(toUInt64(ifNull(status, 0) >= 200 AND ifNull(status, 0) < 300)) AS n_2xx,
      sumState(toUInt64(ifNull(status, 0) >= 300 AND ifNull(status, 0) < 400)) AS n_3xx,
      sumState(toUInt64(ifNull(status, 0) >= 400 AND ifNull(status, 0) < 500)) AS n_4xx,
      sumState(toUInt64(ifNull(status, 0) >= 500 AND ifNull(status, 0) < 600)) AS n_5xx,
      sumState(ifNull(bytes, toUInt64(0))) AS bytes_sum,
      sumState(toUInt64(isNotNull(rt))) AS rt_n,
      quantilesTDigestIfState(${rtLevels.join(', ')})(ifNull(rt, 0.), isNotNull(rt)) AS rt_digest`

export const migration: Migration = {
  id: 3,
  name: 'rollups',
  statements: [
    `CREATE TABLE IF NOT EXISTS events_1m (
      org_id String,
      stream String,
      minute_ts UInt64,${seriesColumns}
    ) ENGINE = AggregatingMergeTree
    PARTITION BY intDiv(minute_ts, 86400000)
    ORDER BY (org_id, stream, minute_ts)`,
    `CREATE TABLE IF NOT EXISTS events_1h (
      org_id String,
      stream String,
      hour_ts UInt64,${seriesColumns}
    ) ENGINE = AggregatingMergeTree
    PARTITION BY intDiv(hour_ts, 86400000)
    ORDER BY (org_id, stream, hour_ts)`,
    // dim leads the time key because each top list reads one dimension over a time range.
    `CREATE TABLE IF NOT EXISTS events_dims_1h (
      org_id String,
      stream String,
      dim ${dimType},
      hour_ts UInt64,
      value String,
      n AggregateFunction(sum, UInt64),
      n_error AggregateFunction(sum, UInt64),
      n_404 AggregateFunction(sum, UInt64),
      rt_n AggregateFunction(sum, UInt64),
      rt_digest ${rtDigestType}
    ) ENGINE = AggregatingMergeTree
    PARTITION BY intDiv(hour_ts, 86400000)
    ORDER BY (org_id, stream, dim, hour_ts, value)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS events_1m_mv TO events_1m AS
    SELECT org_id, stream, intDiv(ts, 60000) * 60000 AS minute_ts,${seriesStates}
    FROM events
    GROUP BY org_id, stream, minute_ts`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS events_1h_mv TO events_1h AS
    SELECT org_id, stream, intDiv(ts, 3600000) * 3600000 AS hour_ts,${seriesStates}
    FROM events
    GROUP BY org_id, stream, hour_ts`,
    // One input row becomes one row per present dimension (ARRAY JOIN of the values beside the
    // matching dim names); NULL values are dropped, so absent fields never show up as a top value.
    `CREATE MATERIALIZED VIEW IF NOT EXISTS events_dims_1h_mv TO events_dims_1h AS
    SELECT
      org_id, stream, dim, intDiv(ts, 3600000) * 3600000 AS hour_ts,
      assumeNotNull(dim_value) AS value,
      sumState(toUInt64(1)) AS n,
      sumState(toUInt64(ifNull(status, 0) >= 400)) AS n_error,
      sumState(toUInt64(ifNull(status, 0) = 404)) AS n_404,
      sumState(toUInt64(isNotNull(rt) AND dim = 'path')) AS rt_n,
      quantilesTDigestIfState(${rtLevels.join(', ')})(ifNull(rt, 0.), isNotNull(rt) AND dim = 'path') AS rt_digest
    FROM events
    ARRAY JOIN
      [${dims.map((d) => dimSources[d]).join(', ')}] AS dim_value,
      CAST([${dims.map((d) => `'${d}'`).join(', ')}] AS Array(${dimType})) AS dim
    WHERE isNotNull(dim_value)
    GROUP BY org_id, stream, dim, hour_ts, value`,
  ],
}
