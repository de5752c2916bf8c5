// Rollups: pre-aggregated copies of `events` that stats over long ranges read instead of raw rows
// (lib/query/stats-query.ts decides which table serves which range).
//
//   events_1m, events_1h        per (org_id, stream, minute | hour): the series counters and an
//                               rt digest; the hourly table keeps a 30-day series at 720 rows
//   events_by_<dim>_1h          per (org_id, stream, hour, value of dim): what the top lists need,
//                               for dim in path, host, status, src, user_agent, filename
//
// Each table is filled by its own materialized view on `events`. A view runs its SELECT over every
// block inserted into `events`, in the inserting thread, so the views are the whole ingest-time
// cost. Measured on 18.16 for a 1M-row insert (bench/stats.bench.ts): the two series views add
// about 10% to the insert; the six per-dimension views together about 40%. One view with an ARRAY
// JOIN over all six dimensions, the obvious smaller schema, costs four times as much: 18.16 copies
// the whole inserted block, message and attrs included, once per dimension before grouping.
//
// Contract:
// - Every view reads `events` directly. Chaining (events_1m -> events_1h) would need a view that
//   writes a column named like the one it reads (`sumMergeState(n) AS n`), an alias shadowing a
//   source column, which the new analyzer of current ClickHouse resolves differently from 18.16;
//   no alias here shadows a column of the table it reads. Nor does any view use a subquery: 18.16
//   cannot run those against the inserted block.
// - A view must never throw: its exception fails the INSERT after `events` was written, and the
//   batch writer's retry would store the rows twice. Hence only total functions (ifNull, intDiv,
//   toString, comparisons) over the event columns.
// - Columns are AggregateFunction states merged by AggregatingMergeTree; read them only through
//   the matching -Merge function with GROUP BY, never as single rows.
// - No argument of an aggregate state is Nullable: 18.16 drops Nullable from the state's type
//   while current ClickHouse keeps it, so a declared column type would match only one of them.
//   Absent fields become explicit conditions (ifNull, -If) instead.
// - Status classes are 200-299 ... 500-599; an event without a status is in none of them. An
//   error is status >= 400 (4xx and 5xx), as in the SPEC's example (error_rate 0.2 = one 4xx and
//   one 5xx out of 10 events).
// - rt is in seconds. Digests are ClickHouse's t-digest (Float32 centroids) over the events that
//   have an rt; `rt_n` counts those, so a reader tells "no rt" from an empty digest.
// - Per-dimension tables hold non-NULL values only: an absent field never becomes a top value.
//   Only events_by_path_1h carries errors, 404s and an rt digest (the paths, 404 paths and slowest
//   paths lists); the other dimensions need counts only.
// - Rollups see what is inserted after this migration: events already stored are not back-filled,
//   because a re-run of a half-applied back-fill would count them twice.
// - Daily partitions, the key of `events` (intDiv(ts, 86400000)), so retention drops the same
//   partition numbers from every table.
import type { Migration } from '../migrate.ts'

/** The rt percentiles every digest is finalised at; readers index the result in this order. */
export const rtLevels = [0.5, 0.95, 0.99] as const

/** Type of every rt digest column; queries over raw rows build states of exactly this type. */
export const rtDigestType = `AggregateFunction(quantilesTDigestIf(${rtLevels.join(', ')}), Float64, UInt8)`

/** The dimensions that have a top list, each with the `events` expression of its value. */
export const dimSources = {
  path: 'path',
  host: 'host',
  status: 'status',
  src: 'src',
  user_agent: 'user_agent',
  filename: 'filename',
} as const
export type Dim = keyof typeof dimSources
/** The dimensions whose top list needs counts only; path also needs errors, 404s and rt. */
export const countDims = ['host', 'status', 'src', 'user_agent', 'filename'] as const
export type CountDim = typeof countDims[number]

export function dimTable (dim: Dim): string {
  return `events_by_${dim}_1h`
}

const seriesColumns = `
      n AggregateFunction(sum, UInt64),
      n_2xx AggregateFunction(sum, UInt64),
      n_3xx AggregateFunction(sum, UInt64),
      n_4xx AggregateFunction(sum, UInt64),
      n_5xx AggregateFunction(sum, UInt64),
      bytes_sum AggregateFunction(sum, UInt64),
      rt_n AggregateFunction(sum, UInt64),
      rt_digest ${rtDigestType}`

/** The series states of a block of `events`, in `seriesColumns` order. */
const seriesStates = `
      sumState(toUInt64(1)) AS n,
      sumState(toUInt64(ifNull(status, 0) >= 200 AND ifNull(status, 0) < 300)) AS n_2xx,
      sumState(toUInt64(ifNull(status, 0) >= 300 AND ifNull(status, 0) < 400)) AS n_3xx,
      sumState(toUInt64(ifNull(status, 0) >= 400 AND ifNull(status, 0) < 500)) AS n_4xx,
      sumState(toUInt64(ifNull(status, 0) >= 500 AND ifNull(status, 0) < 600)) AS n_5xx,
      sumState(ifNull(bytes, toUInt64(0))) AS bytes_sum,
      sumState(toUInt64(isNotNull(rt))) AS rt_n,
      quantilesTDigestIfState(${rtLevels.join(', ')})(ifNull(rt, 0.), isNotNull(rt)) AS rt_digest`

function seriesStatements (table: string, timeColumn: string, bucketMs: number): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
      org_id String,
      stream String,
      ${timeColumn} UInt64,${seriesColumns}
    ) ENGINE = AggregatingMergeTree
    PARTITION BY intDiv(${timeColumn}, 86400000)
    ORDER BY (org_id, stream, ${timeColumn})`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv TO ${table} AS
    SELECT org_id, stream, intDiv(ts, ${bucketMs}) * ${bucketMs} AS ${timeColumn},${seriesStates}
    FROM events
    GROUP BY org_id, stream, ${timeColumn}`,
  ]
}

/** The path table: counts, errors and 404s, and the rt digest, as AggregatingMergeTree states. */
const pathStatements = [
  `CREATE TABLE IF NOT EXISTS ${dimTable('path')} (
      org_id String,
      stream String,
      hour_ts UInt64,
      value String,
      n AggregateFunction(sum, UInt64),
      n_error AggregateFunction(sum, UInt64),
      n_404 AggregateFunction(sum, UInt64),
      rt_n AggregateFunction(sum, UInt64),
      rt_digest ${rtDigestType}
    ) ENGINE = AggregatingMergeTree
    PARTITION BY intDiv(hour_ts, 86400000)
    ORDER BY (org_id, stream, hour_ts, value)`,
  `CREATE MATERIALIZED VIEW IF NOT EXISTS ${dimTable('path')}_mv TO ${dimTable('path')} AS
    SELECT
      org_id, stream, intDiv(ts, 3600000) * 3600000 AS hour_ts,
      assumeNotNull(path) AS value,
      sumState(toUInt64(1)) AS n,
      sumState(toUInt64(ifNull(status, 0) >= 400)) AS n_error,
      sumState(toUInt64(ifNull(status, 0) = 404)) AS n_404,
      sumState(toUInt64(isNotNull(rt))) AS rt_n,
      quantilesTDigestIfState(${rtLevels.join(', ')})(ifNull(rt, 0.), isNotNull(rt)) AS rt_digest
    FROM events
    WHERE isNotNull(path)
    GROUP BY org_id, stream, hour_ts, value`,
]

/**
 * A count-only dimension: SummingMergeTree with a plain UInt64 count, which sums on merge like a
 * sum state but reads as a number (a third cheaper to merge at query time than sumMerge), and lets
 * raw rows join it as a plain count().
 */
function countStatements (dim: CountDim): string[] {
  const table = dimTable(dim)
  const source = dimSources[dim]
  // status keeps its UInt16 type, a cheaper key than its text; the others are strings.
  const valueType = dim === 'status' ? 'UInt16' : 'String'
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
      org_id String,
      stream String,
      hour_ts UInt64,
      value ${valueType},
      n UInt64
    ) ENGINE = SummingMergeTree
    PARTITION BY intDiv(hour_ts, 86400000)
    ORDER BY (org_id, stream, hour_ts, value)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv TO ${table} AS
    SELECT org_id, stream, intDiv(ts, 3600000) * 3600000 AS hour_ts, assumeNotNull(${source}) AS value, count() AS n
    FROM events
    WHERE isNotNull(${source})
    GROUP BY org_id, stream, hour_ts, value`,
  ]
}

export const migration: Migration = {
  id: 3,
  name: 'rollups',
  statements: [
    ...seriesStatements('events_1m', 'minute_ts', 60_000),
    ...seriesStatements('events_1h', 'hour_ts', 3_600_000),
    ...pathStatements,
    ...countDims.flatMap(countStatements),
  ],
}
