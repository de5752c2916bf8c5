// Rollups: pre-aggregated copies of `events` that stats over long ranges read instead of raw rows
// (lib/query/stats-plan.ts decides which table serves which range).
//
//   events_1m, events_1h   per (org_id, stream, minute | hour): the series counters and an rt
//                          digest; the hourly table keeps a 30-day series at 720 rows a stream
//   events_by_<dim>_1h     per (org_id, stream, hour, value of dim) for dim in path, host,
//                          status, src, user_agent, filename: what the top lists need
//
// Each table is filled by its own materialized view on `events`. A view runs its SELECT over every
// block inserted into `events`, in the inserting thread, so the views are the whole ingest-time
// cost. Measured on 18.16 (ClickHouse CPU for one 1M-row insert, 1.1 s into `events` alone): the
// two series views add 0.13 s, the six dimension views 0.65 s. One view with an ARRAY JOIN over
// the six dimensions, the smaller schema, added 2.2 s: 18.16 copies the whole inserted block,
// message and attrs included, once per dimension before grouping it.
//
// Contract:
// - Engine: SummingMergeTree. Counters are plain UInt64 summed on merge; the rt digest is an
//   AggregateFunction state, which SummingMergeTree merges with its function as
//   AggregatingMergeTree would. Plain counters read as numbers (sum(), not sumMerge()), and raw
//   rows join them as plain count(). Every row has n >= 1, so none is ever all zeros (which
//   SummingMergeTree would drop). Readers still GROUP BY: unmerged parts hold partial rows.
// - Every view reads `events` directly, with no subquery (18.16 cannot run one against the
//   inserted block) and no alias shadowing a column of the table it reads (the analyzer of
//   current ClickHouse resolves those differently from 18.16). That rules out chaining
//   events_1m -> events_1h, which would have to write a column named like the one it reads.
// - A view must never throw: its exception fails the INSERT after `events` was written, and the
//   batch writer's retry would store the rows again. Hence only total functions (ifNull, intDiv,
//   comparisons, count, sum) over the event columns.
// - No argument of an aggregate state is Nullable: 18.16 drops Nullable from the state's type
//   while current ClickHouse keeps it, so a declared column type would match only one of them.
//   Absent fields become explicit conditions (ifNull, -If) instead.
// - Status classes are 200-299 ... 500-599; an event without a status is in none of them. An
//   error is status >= 400 (4xx and 5xx), as in docs/api.md section 7.4 (error_rate 0.2 = one 4xx and
//   one 5xx in 10 events). Bytes are the events' `bytes` field; absent counts as 0.
// - rt is in seconds. Digests are ClickHouse's t-digest (Float32 centroids) of the events that
//   have an rt; `rt_n` counts those, so a reader tells "no rt" from an empty digest.
// - Per-dimension tables hold non-NULL values only: an absent field never becomes a top value.
//   Only events_by_path_1h carries errors, 404s and an rt digest (the paths, 404 paths and slowest
//   paths lists); the other dimensions need counts only.
// - Rollups see what is inserted after this migration: events already stored are not back-filled,
//   because a re-run of a half-applied back-fill would count them twice.
// - The column lists below are both this migration's schema and what the stats query reads (and
//   computes over raw rows). An applied migration never runs again: change them only together
//   with a new migration that brings existing tables along.
// - Daily partitions, the key of `events` (intDiv(ts, 86400000)), so retention drops the same
//   partition numbers from every table (a DROP PARTITION on `events` does not reach its rollups).
import type { Migration } from '../migrate.ts'

/** The rt percentiles every digest is finalized at; readers index the result in this order. */
export const rtLevels = [0.5, 0.95, 0.99] as const

/** Type of every rt digest column; the stats queries build states of exactly this from raw rows. */
const rtDigestType = `AggregateFunction(quantilesTDigestIf(${rtLevels.join(', ')}), Float64, UInt8)`

/**
 * The dimensions with a top list, each an `events` column of the same name. The count
 * dimensions need counts only; path also needs errors, 404s and rt.
 */
export const countDims = ['host', 'status', 'src', 'user_agent', 'filename'] as const
export type CountDim = typeof countDims[number]
export type Dim = 'path' | CountDim

/** The hourly table of a top-list dimension: these and level (migration 7). */
export function dimTable (dim: Dim | 'level'): string {
  return `events_by_${dim}_1h`
}

/** A rollup column: its name and type, and the aggregate that computes it from `events` rows. */
export interface RollupColumn { name: string, type: string, aggregate: string }

/** Arguments of every rt digest: the rt of the events that have one. */
export const rtDigestArguments = 'ifNull(rt, 0.), isNotNull(rt)'

const digest: RollupColumn = {
  name: 'rt_digest',
  type: rtDigestType,
  aggregate: `quantilesTDigestIfState(${rtLevels.join(', ')})(${rtDigestArguments})`,
}

/**
 * Columns of events_1m and events_1h. The stats query reads them by these names, and runs the
 * same aggregates over raw rows, so both sources count alike by construction.
 */
export const seriesColumns: RollupColumn[] = [
  { name: 'n', type: 'UInt64', aggregate: 'count()' },
  { name: 'n_2xx', type: 'UInt64', aggregate: 'countIf(ifNull(status, 0) >= 200 AND ifNull(status, 0) < 300)' },
  { name: 'n_3xx', type: 'UInt64', aggregate: 'countIf(ifNull(status, 0) >= 300 AND ifNull(status, 0) < 400)' },
  { name: 'n_4xx', type: 'UInt64', aggregate: 'countIf(ifNull(status, 0) >= 400 AND ifNull(status, 0) < 500)' },
  { name: 'n_5xx', type: 'UInt64', aggregate: 'countIf(ifNull(status, 0) >= 500 AND ifNull(status, 0) < 600)' },
  { name: 'bytes_sum', type: 'UInt64', aggregate: 'sum(ifNull(bytes, toUInt64(0)))' },
  { name: 'rt_n', type: 'UInt64', aggregate: 'countIf(isNotNull(rt))' },
  digest,
]

/** Columns of events_by_path_1h beyond its key; read like seriesColumns. */
export const pathColumns: RollupColumn[] = [
  { name: 'n', type: 'UInt64', aggregate: 'count()' },
  { name: 'n_error', type: 'UInt64', aggregate: 'countIf(ifNull(status, 0) >= 400)' },
  { name: 'n_404', type: 'UInt64', aggregate: 'countIf(ifNull(status, 0) = 404)' },
  { name: 'rt_n', type: 'UInt64', aggregate: 'countIf(isNotNull(rt))' },
  digest,
]

/** Columns of the count-only dimension tables beyond their key. */
export const countColumns: RollupColumn[] = [{ name: 'n', type: 'UInt64', aggregate: 'count()' }]

/**
 * A rollup table and the view that fills it. `key` is the time column (ms, the bucket's start)
 * and, for a dimension table, `value`, each with the expression computing it from an `events`
 * row; `where` (SQL or '') keeps only the rows with a value.
 */
export function rollupStatements (table: string, key: Array<{ name: string, type: string, expression: string }>,
  columns: RollupColumn[], where: string): string[] {
  const timeColumn = key[0].name
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
      org_id String,
      stream String,
      ${[...key, ...columns].map((c) => `${c.name} ${c.type}`).join(',\n      ')}
    ) ENGINE = SummingMergeTree
    PARTITION BY intDiv(${timeColumn}, 86400000)
    ORDER BY (org_id, stream, ${key.map((k) => k.name).join(', ')})`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${table}_mv TO ${table} AS
    SELECT
      org_id, stream,
      ${[...key.map((k) => `${k.expression} AS ${k.name}`), ...columns.map((c) => `${c.aggregate} AS ${c.name}`)].join(',\n      ')}
    FROM events${where ? `\n    WHERE ${where}` : ''}
    GROUP BY org_id, stream, ${key.map((k) => k.name).join(', ')}`,
  ]
}

const minuteKey = { name: 'minute_ts', type: 'UInt64', expression: 'intDiv(ts, 60000) * 60000' }
export const hourKey = { name: 'hour_ts', type: 'UInt64', expression: 'intDiv(ts, 3600000) * 3600000' }

function dimStatements (dim: Dim): string[] {
  // status keeps its UInt16 type, a cheaper key than its text; the other dimensions are strings.
  const value = { name: 'value', type: dim === 'status' ? 'UInt16' : 'String', expression: `assumeNotNull(${dim})` }
  return rollupStatements(dimTable(dim), [hourKey, value], dim === 'path' ? pathColumns : countColumns, `isNotNull(${dim})`)
}

export const migration: Migration = {
  id: 3,
  name: 'rollups',
  statements: [
    ...rollupStatements('events_1m', [minuteKey], seriesColumns, ''),
    ...rollupStatements('events_1h', [hourKey], seriesColumns, ''),
    ...dimStatements('path'),
    ...countDims.flatMap(dimStatements),
  ],
}
