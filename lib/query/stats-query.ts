// Stats over one stream: a series per step, totals and top lists, in the shape of docs/api.md section 7.4.
// stats-plan.ts picks the source, step and aligned range; this file writes the SQL and assembles
// the answer.
//
// Contract:
// - Statements: the series; from a rollup, a look at the minute rollup around the range's partial
//   edge hours (an edge hour with no events outside the range is read from its hourly row, not
//   from raw rows); then at once the count-only top lists (hosts, status, sources, user agents,
//   filenames, levels, and the number of distinct sources) and the path counts; last, the rt digests of
//   the busiest paths only. The series runs beside all of them.
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
import { rawSql, sql, joinSql, uint64List } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { countColumns, countDims, dimTable, pathColumns, rtDigestArguments, rtLevels, seriesColumns } from '../storage/migrations/003_rollups.ts'
import type { CountDim, Dim, RollupColumn } from '../storage/migrations/003_rollups.ts'
import { levelDim, levelPresent } from '../storage/migrations/007_level_rollup.ts'
import { maxTopN, planStats } from './stats-plan.ts'
import { finishSampledGroups, queryGroups } from './stats-groups.ts'
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
  /** With `by`: the count of each listed group value in this bucket (values without events left out). */
  groups?: Record<string, number>
}

export interface StatsResult {
  /** The aligned range, ms: [from, to). */
  from: number
  to: number
  step_ms: number
  series: SeriesPoint[]
  /** unique_sources: null without the top lists (`lists=none`). */
  totals: { count: number, error_rate: number, bytes: number, unique_sources: number | null }
  /** With `by`: the field's top values over the range, count descending. */
  groups?: Array<{ value: string, count: number }>
  /** With `by`: the groups were counted over slices of the range and scaled up (stats-groups.ts). */
  sampled?: boolean
  top: {
    paths: Array<{ path: string, count: number, error_share: number, rt_p95: number | null }>
    hosts: Array<{ host: string, count: number }>
    status: Array<{ status: number, count: number }>
    sources: Array<{ src: string, count: number }>
    user_agents: Array<{ user_agent: string, count: number }>
    filenames: Array<{ filename: string, count: number }>
    /** trace|debug|info|warn|error|fatal (migration 6's events.level), events without one left out. */
    levels: Array<{ level: string, count: number }>
    not_found_paths: Array<{ path: string, count: number }>
    slowest_paths: Array<{ path: string, rt_p95: number, count: number }>
  }
}

const rtLevelList = rtLevels.join(', ')
const p95Index = rtLevels.indexOf(0.95) + 1 // ClickHouse arrays count from 1
const hourMs = 3_600_000

const digestMerge = `quantilesTDigestIfMerge(${rtLevelList})(rt_digest)`

function streamIs (plan: StatsPlan): SqlFragment {
  return sql`org_id = ${plan.orgId} AND stream = ${plan.stream}`
}

/** streamIs for raw `events` rows: also hides those of a deleted stream of the same name. */
function rawStreamIs (plan: StatsPlan): SqlFragment {
  return plan.hiddenBefore > 0 ? sql`${streamIs(plan)} AND received_at > ${plan.hiddenBefore}` : streamIs(plan)
}

/**
 * A series row: t (ms) and each series column as `<column>_total`, the digest as rt_quantiles.
 * No alias names a column of the table read: 18.16 and the analyzer of current ClickHouse
 * resolve such a shadowing alias differently.
 */
interface SeriesRow {
  t: number
  n_total: number
  n_2xx_total: number
  n_3xx_total: number
  n_4xx_total: number
  n_5xx_total: number
  bytes_sum_total: number
  rt_n_total: number
  rt_quantiles: number[]
}

/** The series from raw rows runs the rollup's own aggregates; from a rollup it merges them. */
function seriesSql (plan: StatsPlan): SqlFragment {
  const raw = plan.source === 'events'
  const time = rawSql(raw ? 'ts' : plan.source === 'events_1m' ? 'minute_ts' : 'hour_ts')
  const columns = rawSql(seriesColumns.map((c) => c.name === 'rt_digest'
    ? `${raw ? `quantilesTDigestIf(${rtLevelList})(${rtDigestArguments})` : digestMerge} AS rt_quantiles`
    : `${raw ? c.aggregate : `sum(${c.name})`} AS ${c.name}_total`).join(', '))
  const filter = plan.filter ? sql` AND (${plan.filter})` : rawSql('')
  return sql`SELECT intDiv(${time}, ${plan.stepMs}) * ${plan.stepMs} AS t, ${columns}
    FROM ${rawSql(plan.source)}${raw ? plan.prewhere : rawSql('')}
    WHERE ${raw ? rawStreamIs(plan) : streamIs(plan)} AND ${time} >= ${plan.from} AND ${time} < ${plan.to}${filter}
    GROUP BY t ORDER BY t`
}

/**
 * Where top lists read from: the whole hours of the range from the hourly rollups and the raw
 * rows of the rest (the partial hours at both ends), or raw rows only (raw source, or no whole
 * hour in the range).
 */
interface TopParts {
  /** Condition on `events` for the raw part, or null when rollups cover everything. */
  raw: SqlFragment | null
  /** [start, end) of the whole hours the rollups serve, ms, or null. */
  hours: [number, number] | null
}

interface EdgeRemainders { events_before: number, events_after: number }

/**
 * Events in the parts of the partial edge hours that lie outside [from, to), from the minute
 * rollup: where there are none, the edge's hourly rollup row holds exactly the edge's events and
 * can stand in for its raw rows. That is the usual case at the newer end, as `to` is about now.
 */
function edgeRemaindersSql (plan: StatsPlan, firstHour: number, lastHour: number): SqlFragment {
  return sql`SELECT sumIf(n, minute_ts < ${plan.from}) AS events_before, sumIf(n, minute_ts >= ${plan.to}) AS events_after
    FROM events_1m
    WHERE ${streamIs(plan)} AND (minute_ts >= ${firstHour - hourMs} AND minute_ts < ${plan.from}
      OR minute_ts >= ${plan.to} AND minute_ts < ${lastHour + hourMs})`
}

async function planTopParts (clickhouse: ClickHouse, plan: StatsPlan): Promise<TopParts> {
  const { from, to } = plan
  let firstHour = Math.ceil(from / hourMs) * hourMs
  let lastHour = Math.floor(to / hourMs) * hourMs
  if (plan.source === 'events' || firstHour >= lastHour) {
    const filter = plan.filter ? sql` AND (${plan.filter})` : rawSql('')
    return { raw: sql`${rawStreamIs(plan)} AND ts >= ${from} AND ts < ${to}${filter}`, hours: null }
  }
  if (from < firstHour || lastHour < to) {
    const [remainders] = await clickhouse.query<EdgeRemainders>(edgeRemaindersSql(plan, firstHour, lastHour))
    if (from < firstHour && remainders.events_before === 0) firstHour -= hourMs
    if (lastHour < to && remainders.events_after === 0) lastHour += hourMs
  }
  const edges: SqlFragment[] = []
  if (from < firstHour) edges.push(sql`ts >= ${from} AND ts < ${firstHour}`)
  if (lastHour < to) edges.push(sql`ts >= ${lastHour} AND ts < ${to}`)
  const raw = edges.length > 0 ? sql`${rawStreamIs(plan)} AND (${joinSql(edges, ' OR ')})` : null
  return { raw, hours: [firstHour, lastHour] }
}

/**
 * Rows of one dimension's rollup columns per value over the plan's range, for the caller to GROUP
 * BY value: the rollup rows of the whole hours UNION ALL the raw rows of the rest, aggregated to
 * the same columns. `valueIs` narrows the values read, given the value's expression in a branch.
 */
/** The count-only top-list dimensions: migration 3's and level (migration 7). */
type TopCountDim = CountDim | typeof levelDim
const topCountDims: readonly TopCountDim[] = [...countDims, levelDim]

/** Which raw rows have a value of dim (level: also not ''). */
function hasValue (dim: Dim | TopCountDim): SqlFragment {
  return rawSql(dim === levelDim ? levelPresent : `isNotNull(${dim})`)
}

function dimRows (plan: StatsPlan, parts: TopParts, dim: Dim | TopCountDim, columns: RollupColumn[],
  valueIs: (value: string) => SqlFragment = () => rawSql('1')): SqlFragment {
  const branches: SqlFragment[] = []
  if (parts.hours) {
    branches.push(sql`SELECT value, ${rawSql(columns.map((c) => c.name).join(', '))} FROM ${rawSql(dimTable(dim))}
      WHERE ${streamIs(plan)} AND hour_ts >= ${parts.hours[0]} AND hour_ts < ${parts.hours[1]} AND ${valueIs('value')}`)
  }
  if (parts.raw) {
    const column = rawSql(dim)
    branches.push(sql`SELECT assumeNotNull(${column}) AS value, ${rawSql(columns.map((c) => `${c.aggregate} AS ${c.name}`).join(', '))}
      FROM events${plan.prewhere} WHERE ${parts.raw} AND ${hasValue(dim)} AND ${valueIs(dim)} GROUP BY value`)
  }
  return joinSql(branches, ' UNION ALL ')
}

interface DimRow { dim: TopCountDim, distinct_values: number, top: Array<[string, number]> }

/**
 * One row per count-only dimension: its number of distinct values and its top N as
 * [value as text, count], ranked in the value's own type (status numerically).
 */
function countDimsSql (plan: StatsPlan, parts: TopParts): SqlFragment {
  const branches = topCountDims.map((dim) => sql`SELECT ${dim} AS dim, count() AS distinct_values,
      arrayMap(x -> (toString(x.1), x.2), arraySlice(arraySort(x -> (-x.2, x.1), groupArray((value, n_total))), 1, ${plan.topN})) AS top
    FROM (SELECT value, sum(n) AS n_total FROM (${dimRows(plan, parts, dim, countColumns)}) GROUP BY value)`)
  return joinSql(branches, ' UNION ALL ')
}

const pathCountColumns = pathColumns.filter((c) => c.name === 'n' || c.name === 'n_error' || c.name === 'n_404')
const pathRtColumns = pathColumns.filter((c) => c.name === 'rt_n' || c.name === 'rt_digest')

interface PathCountRow {
  /** [path, count, errors], the top N by count. */
  by_count: Array<[string, number, number]>
  /** [path, 404s], the top N by 404s. */
  by_not_found: Array<[string, number]>
  /** [path, count, cityHash64(path) as text], the maxTopN busiest: whose rt p95 to compute. */
  busiest: Array<[string, number, string]>
}

function pathCountsSql (plan: StatsPlan, parts: TopParts): SqlFragment {
  return sql`SELECT
      arraySlice(arraySort(x -> (-x.2, x.1), groupArray((value, n_total, n_error_total))), 1, ${plan.topN}) AS by_count,
      arraySlice(arraySort(x -> (-x.2, x.1), groupArrayIf((value, n_404_total), n_404_total > 0)), 1, ${plan.topN}) AS by_not_found,
      arrayMap(x -> (x.1, x.2, toString(cityHash64(x.1))), arraySlice(arraySort(x -> (-x.2, x.1), groupArray((value, n_total))), 1, ${maxTopN})) AS busiest
    FROM (
      SELECT value, sum(n) AS n_total, sum(n_error) AS n_error_total, sum(n_404) AS n_404_total
      FROM (${dimRows(plan, parts, 'path', pathCountColumns)})
      GROUP BY value
    )`
}

interface PathRtRow { value: string, rt_n_total: number, rt_p95: number }

/**
 * rt p95 of the paths whose cityHash64 is listed (decimal text: hashes pass 2^53). Picking by
 * hash keeps the statement small however long the paths are; a colliding path costs one more
 * digest merge and nothing else, as the caller matches rows by value.
 */
function pathRtSql (plan: StatsPlan, parts: TopParts, hashes: string[]): SqlFragment {
  const list = uint64List(hashes)
  const isListed = (value: string): SqlFragment => sql`cityHash64(${rawSql(value)}) IN (${list})`
  return sql`SELECT value, sum(rt_n) AS rt_n_total, ${rawSql(digestMerge)}[${p95Index}] AS rt_p95
    FROM (${dimRows(plan, parts, 'path', pathRtColumns, isListed)}) GROUP BY value`
}

const noEvents: Omit<SeriesRow, 't'> = {
  n_total: 0, n_2xx_total: 0, n_3xx_total: 0, n_4xx_total: 0, n_5xx_total: 0, bytes_sum_total: 0, rt_n_total: 0, rt_quantiles: [],
}

/** Every step of [from, to), with zeros where ClickHouse returned no row. */
function fillSeries (plan: StatsPlan, rows: SeriesRow[]): SeriesPoint[] {
  const byT = new Map(rows.map((row) => [row.t, row]))
  const series: SeriesPoint[] = []
  for (let t = plan.from; t < plan.to; t += plan.stepMs) {
    const row = byT.get(t) ?? noEvents
    const hasRt = row.rt_n_total > 0
    series.push({
      t,
      count: row.n_total,
      status_2xx: row.n_2xx_total,
      status_3xx: row.n_3xx_total,
      status_4xx: row.n_4xx_total,
      status_5xx: row.n_5xx_total,
      bytes: row.bytes_sum_total,
      rt_p50: hasRt ? roundPercentile(row.rt_quantiles[0]) : null,
      rt_p95: hasRt ? roundPercentile(row.rt_quantiles[1]) : null,
      rt_p99: hasRt ? roundPercentile(row.rt_quantiles[2]) : null,
    })
  }
  return series
}

/** The largest Float32, to 7 digits: what a percentile past it reads (roundPercentile). */
const float32Max = 3.402823e38

/**
 * A t-digest percentile to 7 significant digits, about what a Float32 holds. The digest's
 * centroids are Float32, and 18.16 prints their rounding (0.38099998 and 0.053999998 for
 * estimates of rts in whole ms, where current versions print 0.381 and 0.054). An `rt` past
 * Float32's range (`1e39`, accepted: a finite number >= 0) is infinite in the digest, which
 * ClickHouse's JSON writes as null; it reads as the largest Float32 (docs/api.md section 7.4),
 * never a 500 for the stream's every stats over it (explore34 F8).
 */
export function roundPercentile (value: number | null): number {
  if (value === null || !Number.isFinite(value)) return float32Max
  return Number(value.toPrecision(7))
}

/** ClickHouse orders strings by their UTF-8 bytes; JavaScript's < compares UTF-16 units. */
function byPathBytes (a: { path: string }, b: { path: string }): number {
  return Buffer.compare(Buffer.from(a.path), Buffer.from(b.path))
}

function matchesOf (rows: SeriesRow[]): number {
  let n = 0
  for (const row of rows) n += row.n_total
  return n
}

export async function queryStats (clickhouse: ClickHouse, params: StatsParams): Promise<StatsResult> {
  const plan = planStats(params)
  // Without the top lists (lists=none: the dashboard's histogram) their statements are not run:
  // over an hour of 1.25 M events they were most of the read (bench/README.md, "stats without its
  // top lists").
  const lists = params.lists !== false
  const partsReady = lists ? planTopParts(clickhouse, plan) : Promise.resolve({ raw: null, hours: null })
  const countLists = async (): Promise<DimRow[]> => lists ? await clickhouse.query<DimRow>(countDimsSql(plan, await partsReady)) : []
  const pathLists = async (): Promise<[PathCountRow, PathRtRow[]]> => {
    if (!lists) return [{ by_count: [], by_not_found: [], busiest: [] }, []]
    const parts = await partsReady
    const [counts] = await clickhouse.query<PathCountRow>(pathCountsSql(plan, parts))
    if (counts.busiest.length === 0) return [counts, []]
    return [counts, await clickhouse.query<PathRtRow>(pathRtSql(plan, parts, counts.busiest.map((b) => b[2])))]
  }
  // A by= read's main statement is sent first, the rollups' statements only once it is out: a
  // read's statement takes query.idleThreads only when no other statement of a read runs
  // (read-limits.ts), and beside the rollups' it started single-threaded on an idle server
  // (by=user_id over 30 M events: 1.0 s of its 1.1 s; bench/README.md, "stats?by= first").
  let sent!: () => void
  const mainSent = new Promise<void>((resolve) => { sent = resolve })
  const by = params.by
  // With q the series are the matches' exact counts, read first: a by= samples only when more
  // than `sample` events match (docs/api.md 7.4), not because the range holds more. A q of 9
  // matches over 1.2 M events was sampled, and its list lacked one of its three values (explore28b M1).
  const seriesRead = by !== undefined && plan.filter !== null && plan.groupSample !== 0 && !plan.groupsFromRollup
    ? clickhouse.query<SeriesRow>(seriesSql(plan))
    : undefined
  const groupsRead = by === undefined
    ? undefined
    : partsReady.then(async () => queryGroups(clickhouse, plan, by, sent, seriesRead === undefined ? undefined : matchesOf(await seriesRead))).finally(sent)
  if (groupsRead === undefined) sent()
  const rest = mainSent.then(() => Promise.all([seriesRead ?? clickhouse.query<SeriesRow>(seriesSql(plan)), countLists(), pathLists()]))
  const [[seriesRows, countRows, [pathCounts, pathRt]], groupedRead] = await Promise.all([rest, groupsRead])

  const series = fillSeries(plan, seriesRows)
  // A sampled read's counts are scaled by each point's events (stats-groups.ts).
  const grouped = groupedRead === undefined ? undefined : await finishSampledGroups(plan, groupedRead, new Map(series.map((point) => [point.t, point.count])))
  if (grouped !== undefined) {
    // Each point's values in the order of `groups` (count descending), whatever order ClickHouse
    // grouped them in: the same answer on every server version.
    for (const point of series) {
      const counts = grouped.byPoint.get(point.t)
      const ordered: Record<string, number> = {}
      if (counts !== undefined) for (const g of grouped.groups) if (Object.hasOwn(counts, g.value)) ordered[g.value] = counts[g.value]
      point.groups = ordered
    }
  }
  let count = 0
  let errors = 0
  let bytes = 0
  for (const point of series) {
    count += point.count
    errors += point.status_4xx + point.status_5xx
    bytes += point.bytes
  }
  const dims = new Map(countRows.map((row) => [row.dim, row]))
  const topOf = (dim: TopCountDim): Array<[string, number]> => dims.get(dim)?.top ?? []
  const p95ByPath = new Map(pathRt.filter((r) => r.rt_n_total > 0).map((r) => [r.value, roundPercentile(r.rt_p95)]))
  const slowest = pathCounts.busiest
    .flatMap(([path, n]) => {
      const p95 = p95ByPath.get(path)
      return p95 === undefined ? [] : [{ path, rt_p95: p95, count: n }]
    })
    .sort((a, b) => b.rt_p95 - a.rt_p95 || b.count - a.count || byPathBytes(a, b))
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
      unique_sources: lists ? dims.get('src')?.distinct_values ?? 0 : null,
    },
    ...(grouped === undefined ? {} : { groups: grouped.groups, sampled: grouped.sampled }),
    top: {
      paths: pathCounts.by_count.map(([path, n, e]) => ({ path, count: n, error_share: e / n, rt_p95: p95ByPath.get(path) ?? null })),
      hosts: topOf('host').map(([host, n]) => ({ host, count: n })),
      status: topOf('status').map(([status, n]) => ({ status: Number(status), count: n })),
      sources: topOf('src').map(([src, n]) => ({ src, count: n })),
      user_agents: topOf('user_agent').map(([userAgent, n]) => ({ user_agent: userAgent, count: n })),
      filenames: topOf('filename').map(([filename, n]) => ({ filename, count: n })),
      levels: topOf(levelDim).map(([level, n]) => ({ level, count: n })),
      not_found_paths: pathCounts.by_not_found.map(([path, n]) => ({ path, count: n })),
      slowest_paths: slowest,
    },
  }
}
