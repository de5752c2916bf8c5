// Stats over one stream: a series per step, totals and top lists, in the SPEC's JSON shape.
// stats-plan.ts picks the source, step and aligned range; this file writes the SQL and assembles
// the answer.
//
// Contract:
// - Three statements run at once: the series, the count-only top lists (hosts, status, sources,
//   user agents, filenames, and the number of distinct sources) and the path counts. A fourth,
//   once the path counts are in, merges the rt digests of the busiest paths only.
// - Counts are exact whatever the source: the raw-row aggregates are the rollups' own
//   (003_rollups.ts), so a rollup answer equals the raw-row answer over the same aligned range.
//   rt percentiles (seconds) are t-digest estimates, the same estimator on both, so they agree
//   closely but not to the last digit; null where no event has an rt.
// - Totals: count and bytes are the series' sums; error_rate is events with status >= 400 over
//   all events (0 when there are none); unique_sources the exact number of distinct non-NULL src.
// - Top lists skip absent (NULL) values and rank by count descending, then value ascending.
//   paths: count, error_share (status >= 400 over the path's events), rt_p95. not_found_paths:
//   404s per path. slowest_paths: by rt p95 descending among the maxTopN (100) busiest paths
//   that have an rt. Ranking busy paths only keeps a path hit once by a slow client off the top,
//   and bounds the digests merged per request to 100 paths.
// - Every step of the range is in the series; one without events has zeros and null rt.
// - Each statement reads what is committed when it runs: rows inserted meanwhile may reach one
//   statement and not another.
import type { ClickHouse } from '../storage/clickhouse.ts'
import { rawSql, sql, joinSql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { countDims, dimTable, pathColumns, rtLevels, seriesColumns } from '../storage/migrations/003_rollups.ts'
import type { CountDim, Dim, RollupColumn } from '../storage/migrations/003_rollups.ts'
import { maxTopN, planStats } from './stats-plan.ts'
import type { StatsParams, StatsPlan } from './stats-plan.ts'

export { chooseStep, parseStep, planStats } from './stats-plan.ts'
export type { StatsParams, StatsPlan, StatsSource } from './stats-plan.ts'

export interface SeriesPoint {
  /** Bucket start, ms since the epoch. */
  t: number
  count: number
  status_2xx: number
  status_3xx: number
  status_4xx: number
  status_5xx: number
  bytes: number
  /** Seconds; null when no event of the bucket has an rt. */
  rt_p50: number | null
  rt_p95: number | null
  rt_p99: number | null
}

export interface StatsResult {
  /** The aligned range, ms: [from, to). */
  from: number
  to: number
  step_ms: number
  series: SeriesPoint[]
  totals: { count: number, error_rate: number, bytes: number, unique_sources: number }
  top: {
    paths: Array<{ path: string, count: number, error_share: number, rt_p95: number | null }>
    hosts: Array<{ host: string, count: number }>
    status: Array<{ status: number, count: number }>
    sources: Array<{ src: string, count: number }>
    user_agents: Array<{ user_agent: string, count: number }>
    filenames: Array<{ filename: string, count: number }>
    not_found_paths: Array<{ path: string, count: number }>
    slowest_paths: Array<{ path: string, rt_p95: number, count: number }>
  }
}

const levels = rtLevels.join(', ')
const p95Index = rtLevels.indexOf(0.95) + 1 // ClickHouse arrays count from 1
const hourMs = 3_600_000

/** How a query reads a rollup column: counters sum, the digest merges to its percentiles. */
function merged (column: RollupColumn): string {
  return column.name === 'rt_digest' ? `quantilesTDigestIfMerge(${levels})(rt_digest)` : `sum(${column.name})`
}

/** Raw-row aggregates as rollup columns, for a UNION ALL with rollup rows. */
function asColumns (columns: RollupColumn[]): string {
  return columns.map((c) => `${c.aggregate} AS ${c.name}`).join(', ')
}

function columnNames (columns: RollupColumn[]): string {
  return columns.map((c) => c.name).join(', ')
}

function streamIs (plan: StatsPlan): SqlFragment {
  return sql`org_id = ${plan.orgId} AND stream = ${plan.stream}`
}

/** One row per step with events: t, then the series columns merged, named as the rollup's. */
interface SeriesRow {
  t: number
  n: number
  n_2xx: number
  n_3xx: number
  n_4xx: number
  n_5xx: number
  bytes_sum: number
  rt_n: number
  rt_digest: number[]
}

function seriesSql (plan: StatsPlan): SqlFragment {
  const raw = plan.source === 'events'
  const time = rawSql(raw ? 'ts' : plan.source === 'events_1m' ? 'minute_ts' : 'hour_ts')
  const filter = raw && plan.filter ? sql` AND (${plan.filter})` : rawSql('')
  // Raw rows are first aggregated per ms bucket into the rollup's columns, so that both sources
  // go through the same merge; the inner GROUP BY costs little next to reading the rows.
  const rows = raw
    ? sql`SELECT ts, ${rawSql(asColumns(seriesColumns))} FROM events
        WHERE ${streamIs(plan)} AND ts >= ${plan.from} AND ts < ${plan.to}${filter} GROUP BY ts`
    : sql`SELECT * FROM ${rawSql(plan.source)} WHERE ${streamIs(plan)} AND ${time} >= ${plan.from} AND ${time} < ${plan.to}`
  return sql`SELECT intDiv(${time}, ${plan.stepMs}) * ${plan.stepMs} AS t,
      ${rawSql(seriesColumns.map((c) => `${merged(c)} AS ${c.name}_all`).join(', '))}
    FROM (${rows}) GROUP BY t ORDER BY t`
}
