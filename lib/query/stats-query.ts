// Stats over one stream: a series per step, totals and top lists, in the SPEC's JSON shape.
// stats-plan.ts picks the source, step and aligned range; this file writes the SQL and assembles
// the answer.
//
// Contract:
// - Three statements run at once: the series, the count-only top lists (hosts, status, sources,
//   user agents, filenames; unique sources come from the same pass) and the path counts. A
//   fourth, after the path counts, merges rt digests for the busiest paths only.
// - Counts are exact whatever the source: a rollup-served answer equals the raw-row answer over
//   the same aligned range. rt percentiles are t-digest estimates (the same estimator on raw rows
//   and rollups, so they agree closely, not to the last digit); null where no event has an rt.
// - Totals come from the series: count and bytes are their sums, error_rate is events with
//   status >= 400 over all events (0 when there are none), unique_sources the exact number of
//   distinct non-NULL src.
// - Top lists skip absent (NULL) values and rank by count descending, then value ascending.
//   paths: count, error_share (status >= 400 over the path's events), rt_p95. not_found_paths:
//   404s per path. slowest_paths: by rt p95 descending among the maxTopN busiest paths that have
//   an rt. Restricting the ranking to busy paths keeps a path hit once by a slow client from
//   topping the list, and bounds the digests merged per request to maxTopN paths.
// - Every series bucket of the range is present; one without events has zeros and null rt.
// - The answer reads what is committed when each statement runs; rows inserted meanwhile may
//   reach one statement and not another.
import type { ClickHouse } from '../storage/clickhouse.ts'
import { rawSql, sql, joinSql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { dimSources, dimTable, rtLevels } from '../storage/migrations/003_rollups.ts'
import type { Dim } from '../storage/migrations/003_rollups.ts'
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

const levels = rawSql(rtLevels.join(', '))
const p95Index = rtLevels.indexOf(0.95) + 1 // ClickHouse arrays are 1-based
const hourMs = 3_600_000

/** Series columns: the raw-row aggregate and the rollup merge of each. */
const seriesColumns: ReadonlyArray<[alias: string, raw: string, rollup: string]> = [
  ['event_count', 'count()', 'sumMerge(n)'],
  ['status_2xx', 'countIf(ifNull(status, 0) >= 200 AND ifNull(status, 0) < 300)', 'sumMerge(n_2xx)'],
  ['status_3xx', 'countIf(ifNull(status, 0) >= 300 AND ifNull(status, 0) < 400)', 'sumMerge(n_3xx)'],
  ['status_4xx', 'countIf(ifNull(status, 0) >= 400 AND ifNull(status, 0) < 500)', 'sumMerge(n_4xx)'],
  ['status_5xx', 'countIf(ifNull(status, 0) >= 500 AND ifNull(status, 0) < 600)', 'sumMerge(n_5xx)'],
  ['byte_count', 'sum(ifNull(bytes, toUInt64(0)))', 'sumMerge(bytes_sum)'],
  ['rt_count', 'countIf(isNotNull(rt))', 'sumMerge(rt_n)'],
  ['rt_quantiles', `quantilesTDigestIf(${levels})(ifNull(rt, 0.), isNotNull(rt))`, `quantilesTDigestIfMerge(${levels})(rt_digest)`],
]

interface SeriesRow {
  t: number
  event_count: number
  status_2xx: number
  status_3xx: number
  status_4xx: number
  status_5xx: number
  byte_count: number
  rt_count: number
  rt_quantiles: number[]
}

function streamIs (plan: StatsPlan): SqlFragment {
  return sql`org_id = ${plan.orgId} AND stream = ${plan.stream}`
}

function seriesSql (plan: StatsPlan): SqlFragment {
  const raw = plan.source === 'events'
  const time = rawSql(raw ? 'ts' : plan.source === 'events_1m' ? 'minute_ts' : 'hour_ts')
  const columns = rawSql(seriesColumns.map(([alias, r, m]) => `${raw ? r : m} AS ${alias}`).join(', '))
  const where = raw ? sql` AND (${plan.filter ?? rawSql('1')})` : rawSql('')
  return sql`SELECT intDiv(${time}, ${plan.stepMs}) * ${plan.stepMs} AS t, ${columns}
    FROM ${rawSql(plan.source)}
    WHERE ${streamIs(plan)} AND ${time} >= ${plan.from} AND ${time} < ${plan.to}${where}
    GROUP BY t ORDER BY t`
}

/**
 * Where top lists read from: the whole hours of the range from the hourly rollups and the raw
 * rows of the rest, or raw rows only (raw source, or no whole hour in the range).
 */
interface TopParts {
  /** Condition on `events` for the raw part, or null when rollups cover everything. */
  raw: SqlFragment | null
  /** [start, end) of the whole hours the rollups serve, ms, or null. */
  hours: [number, number] | null
}

function topParts (plan: StatsPlan): TopParts {
  const { from, to } = plan
  const firstHour = Math.ceil(from / hourMs) * hourMs
  const lastHour = Math.floor(to / hourMs) * hourMs
  const filter = plan.filter ? sql` AND (${plan.filter})` : rawSql('')
  if (plan.source === 'events' || firstHour >= lastHour) {
    return { raw: sql`${streamIs(plan)} AND ts >= ${from} AND ts < ${to}${filter}`, hours: null }
  }
  const edges: SqlFragment[] = []
  if (from < firstHour) edges.push(sql`ts >= ${from} AND ts < ${firstHour}`)
  if (lastHour < to) edges.push(sql`ts >= ${lastHour} AND ts < ${to}`)
  const raw = edges.length > 0 ? sql`${streamIs(plan)} AND (${joinSql(edges, ' OR ')})` : null
  return { raw, hours: [firstHour, lastHour] }
}

/**
 * The per-value states of one dimension over the plan's range: rollup rows for the whole hours
 * UNION ALL the same states built from raw rows. `states` maps each state column to its raw-row
 * aggregate; every branch yields `value` and those columns, for the caller to merge. `valueIs`
 * narrows the values read, given the expression of the value in each branch.
 */
function dimStates (plan: StatsPlan, parts: TopParts, dim: Dim, states: Readonly<Record<string, string>>,
  valueIs: (value: string) => SqlFragment = () => rawSql('1')): SqlFragment {
  const branches: SqlFragment[] = []
  const names = Object.keys(states)
  if (parts.hours) {
    branches.push(sql`SELECT value, ${rawSql(names.join(', '))} FROM ${rawSql(dimTable(dim))}
      WHERE ${streamIs(plan)} AND hour_ts >= ${parts.hours[0]} AND hour_ts < ${parts.hours[1]} AND ${valueIs('value')}`)
  }
  if (parts.raw) {
    const source = dimSources[dim]
    const aggregates = names.map((name) => `${states[name]} AS ${name}`).join(', ')
    branches.push(sql`SELECT assumeNotNull(${rawSql(source)}) AS value, ${rawSql(aggregates)} FROM events
      WHERE ${parts.raw} AND isNotNull(${rawSql(source)}) AND ${valueIs(source)} GROUP BY value`)
  }
  return joinSql(branches, ' UNION ALL ')
}

const countState = { n: 'sumState(toUInt64(1))' }
const countDims = ['host', 'status', 'src', 'user_agent', 'filename'] as const
type CountDim = typeof countDims[number]

interface DimRow { dim: CountDim, distinct_values: number, top: Array<[string, number]> }

/**
 * One row per count-only dimension: its number of distinct values and its top N as
 * [value as text, count]; values are ranked in their own type (status numerically).
 */
function countDimsSql (plan: StatsPlan, parts: TopParts): SqlFragment {
  const branches = countDims.map((dim) => sql`SELECT ${dim} AS dim, count() AS distinct_values,
      arrayMap(x -> (toString(x.1), x.2), arraySlice(arraySort(x -> (-x.2, x.1), groupArray((value, event_count))), 1, ${plan.topN})) AS top
    FROM (SELECT value, sumMerge(n) AS event_count FROM (${dimStates(plan, parts, dim, countState)}) GROUP BY value)`)
  return joinSql(branches, ' UNION ALL ')
}

const pathCountStates = {
  n: 'sumState(toUInt64(1))',
  n_error: 'sumState(toUInt64(ifNull(status, 0) >= 400))',
  n_404: 'sumState(toUInt64(ifNull(status, 0) = 404))',
}

interface PathCountRow {
  /** [path, count, errors], the top N by count. */
  by_count: Array<[string, number, number]>
  /** [path, 404s], the top N by 404s. */
  by_not_found: Array<[string, number]>
  /** [path, count, cityHash64(path) as text], the maxTopN busiest: whose digests to merge. */
  busiest: Array<[string, number, string]>
}

function pathCountsSql (plan: StatsPlan, parts: TopParts): SqlFragment {
  return sql`SELECT
      arraySlice(arraySort(x -> (-x.2, x.1), groupArray((value, event_count, error_count))), 1, ${plan.topN}) AS by_count,
      arraySlice(arraySort(x -> (-x.2, x.1), groupArrayIf((value, not_found_count), not_found_count > 0)), 1, ${plan.topN}) AS by_not_found,
      arrayMap(x -> (x.1, x.2, toString(cityHash64(x.1))), arraySlice(arraySort(x -> (-x.2, x.1), groupArray((value, event_count))), 1, ${maxTopN})) AS busiest
    FROM (
      SELECT value, sumMerge(n) AS event_count, sumMerge(n_error) AS error_count, sumMerge(n_404) AS not_found_count
      FROM (${dimStates(plan, parts, 'path', pathCountStates)})
      GROUP BY value
    )`
}

interface PathRtRow { value: string, rt_count: number, rt_p95: number }

/**
 * rt p95 of the paths with the given cityHash64 values (decimal strings: they pass 2^53).
 * Picking paths by hash keeps the statement small whatever the paths' length; a colliding path
 * costs a digest merge and nothing else, as the caller matches rows by value.
 */
function pathRtSql (plan: StatsPlan, parts: TopParts, hashes: string[]): SqlFragment {
  const states = {
    rt_n: 'sumState(toUInt64(isNotNull(rt)))',
    rt_digest: `quantilesTDigestIfState(${levels})(ifNull(rt, 0.), isNotNull(rt))`,
  }
  const list = rawSql(hashes.map((h) => BigInt(h).toString()).join(', '))
  const isCandidate = (value: string): SqlFragment => sql`cityHash64(${rawSql(value)}) IN (${list})`
  return sql`SELECT value, sumMerge(rt_n) AS rt_count, quantilesTDigestIfMerge(${levels})(rt_digest)[${p95Index}] AS rt_p95
    FROM (${dimStates(plan, parts, 'path', states, isCandidate)}) GROUP BY value`
}

const emptySeriesRow = { event_count: 0, status_2xx: 0, status_3xx: 0, status_4xx: 0, status_5xx: 0, byte_count: 0, rt_count: 0, rt_quantiles: [] }

function toPoint (t: number, row: Omit<SeriesRow, 't'>): SeriesPoint {
  const hasRt = row.rt_count > 0
  return {
    t,
    count: row.event_count,
    status_2xx: row.status_2xx,
    status_3xx: row.status_3xx,
    status_4xx: row.status_4xx,
    status_5xx: row.status_5xx,
    bytes: row.byte_count,
    rt_p50: hasRt ? row.rt_quantiles[0] : null,
    rt_p95: hasRt ? row.rt_quantiles[1] : null,
    rt_p99: hasRt ? row.rt_quantiles[2] : null,
  }
}

/** Every step of [from, to), with zeros where ClickHouse returned no row. */
function fillSeries (plan: StatsPlan, rows: SeriesRow[]): SeriesPoint[] {
  const byT = new Map(rows.map((row) => [row.t, row]))
  const series: SeriesPoint[] = []
  for (let t = plan.from; t < plan.to; t += plan.stepMs) series.push(toPoint(t, byT.get(t) ?? emptySeriesRow))
  return series
}

export async function queryStats (clickhouse: ClickHouse, params: StatsParams): Promise<StatsResult> {
  const plan = planStats(params)
  const parts = topParts(plan)
  const pathsAndRt = async (): Promise<[PathCountRow, PathRtRow[]]> => {
    const [counts] = await clickhouse.query<PathCountRow>(pathCountsSql(plan, parts))
    const rt = counts.busiest.length > 0 ? await clickhouse.query<PathRtRow>(pathRtSql(plan, parts, counts.busiest.map((b) => b[2]))) : []
    return [counts, rt]
  }
  const [seriesRows, dimRows, [pathCounts, pathRt]] = await Promise.all([
    clickhouse.query<SeriesRow>(seriesSql(plan)),
    clickhouse.query<DimRow>(countDimsSql(plan, parts)),
    pathsAndRt(),
  ])

  const series = fillSeries(plan, seriesRows)
  let count = 0
  let errors = 0
  let bytes = 0
  for (const point of series) {
    count += point.count
    errors += point.status_4xx + point.status_5xx
    bytes += point.bytes
  }
  const dimTop = new Map(dimRows.map((row) => [row.dim, row]))
  const topOf = (dim: CountDim): Array<[string, number]> => dimTop.get(dim)?.top ?? []
  const p95ByPath = new Map(pathRt.filter((r) => r.rt_count > 0).map((r) => [r.value, r.rt_p95]))
  const slowest = pathCounts.busiest
    .filter(([path]) => p95ByPath.has(path))
    .map(([path, n]) => ({ path, rt_p95: p95ByPath.get(path) as number, count: n }))
    .sort((a, b) => b.rt_p95 - a.rt_p95 || b.count - a.count || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .slice(0, plan.topN)

  return {
    from: plan.from,
    to: plan.to,
    step_ms: plan.stepMs,
    series,
    totals: {
      count,
      error_rate: count > 0 ? errors / count : 0,
      bytes,
      unique_sources: dimTop.get('src')?.distinct_values ?? 0,
    },
    top: {
      paths: pathCounts.by_count.map(([path, n, e]) => ({ path, count: n, error_share: e / n, rt_p95: p95ByPath.get(path) ?? null })),
      hosts: topOf('host').map(([host, n]) => ({ host, count: n })),
      status: topOf('status').map(([status, n]) => ({ status: Number(status), count: n })),
      sources: topOf('src').map(([src, n]) => ({ src, count: n })),
      user_agents: topOf('user_agent').map(([userAgent, n]) => ({ user_agent: userAgent, count: n })),
      filenames: topOf('filename').map(([filename, n]) => ({ filename, count: n })),
      not_found_paths: pathCounts.by_not_found.map(([path, n]) => ({ path, count: n })),
      slowest_paths: slowest,
    },
  }
}
