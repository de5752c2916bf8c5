// `stats?by=<field>`: the top values of any field over the range, overall and per series point
// (docs/api.md section 7.4, "Grouping"). Read from raw events (the rollups hold no attributes):
// first the top `topN` values by count (ties by value), then the series counts of those values
// only. Events without the field belong to no group.
//
// Sampling: a range whose events (the minute rollup's count, before q) pass plan.groupSample is
// read over one slice of each series point, slices holding about groupSample events together, and
// each point's counts are scaled by its span over its slice's; `sampled` is then true. A point
// whose scaled counts cannot be right (more than its events, or none) is read whole
// (finishSampledGroups). Two full
// scans of an attribute over 30 M events read 2 x 10 GB of arrays (12-31 s on 18.16), the slices
// of 500,000 about 180 MB (bench/README.md, "Find anything"). A slice starts at a different
// offset in each point (the golden-ratio sequence), so a pattern that repeats with the step (a
// cron at :00) is not always in or always out. Each slice is a statement of its own with its ts
// range in PREWHERE, so ClickHouse finds its granules by the sort key and reads the other columns
// only for them (slicedCountsSql).
import type { ClickHouse } from '../storage/clickhouse.ts'
import { joinSql, sql, uint64List } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import type { StatsPlan } from './stats-plan.ts'
import { byCountThenValue } from './field-ref.ts'

/** The grouping field as SQL (lib/query/field-ref.ts): its value text, and whether an event has it. */
export interface GroupBy {
  text: SqlFragment
  present: SqlFragment
  /**
   * The field is the `level` column, which the hourly rollup events_by_level_1h counts: a plan
   * without q over a day or more reads the groups from it (stats-plan.ts `groupsFromRollup`).
   */
  isLevel?: boolean
}

export interface StatsGroups {
  groups: Array<{ value: string, count: number }>
  /** Per series point start (ms): count per listed value. */
  byPoint: Map<number, Record<string, number>>
  /** Counted over slices of the range and scaled up. */
  sampled: boolean
  /** Sampled: the counts per point and value of whole points (finishSampledGroups reads those whose scaled counts cannot be right). */
  readPoints?: (points: number[]) => Promise<Array<{ t: number, value: string, n: number }>>
}

const minuteMs = 60_000
/** A slice is at least this long (ms): shorter ones read whole granules for a few rows. */
const minSliceMs = 1000
/** The offsets' multiplier over 2^16: about 2^16 times the golden ratio's fraction. */
const offsetStep = 40_503

/** The slices of a sampled by=: in the point of step k (from k * stepMs), [offset(k), offset(k) + widthMs). */
export interface GroupSlices {
  stepMs: number
  widthMs: number
}

/** The slices that hold about `sample` of `total` events spread evenly over the plan's points, or null to count them all. */
export function groupSlices (plan: StatsPlan, total: number, sample: number): GroupSlices | null {
  if (sample === 0 || total <= sample) return null
  const widthMs = Math.max(minSliceMs, Math.floor(plan.stepMs * sample / total))
  if (widthMs * 2 > plan.stepMs) return null
  return { stepMs: plan.stepMs, widthMs }
}

/**
 * Whether a row's ts is in its point's slice. The slice of point k (its step's number since the
 * epoch) starts at ((k * offsetStep) mod 2^16) / 2^16 of the room left in the step: the
 * golden-ratio sequence k * 0.618 mod 1, in integers.
 */
function inSliceSql (slices: GroupSlices): SqlFragment {
  const step = slices.stepMs
  const offset = sql`intDiv(((intDiv(ts, ${step}) * ${offsetStep}) % 65536) * ${step - slices.widthMs}, 65536)`
  return sql`(ts % ${step}) >= ${offset} AND (ts % ${step}) < ${offset} + ${slices.widthMs}`
}

/** Events of the range by the minute rollup (before q), an estimate that only sizes the slices. */
async function eventsInRange (clickhouse: ClickHouse, plan: StatsPlan): Promise<number> {
  const [{ n }] = await clickhouse.query<{ n: number }>(sql`SELECT sum(n) AS n FROM events_1m
    WHERE org_id = ${plan.orgId} AND stream = ${plan.stream}
      AND minute_ts >= ${Math.floor(plan.from / minuteMs) * minuteMs} AND minute_ts < ${plan.to}`)
  return Number(n)
}

export async function queryGroups (clickhouse: ClickHouse, plan: StatsPlan, by: GroupBy): Promise<StatsGroups> {
  if (plan.groupsFromRollup) return await queryLevelRollup(clickhouse, plan)
  const hidden = plan.hiddenBefore > 0 ? sql` AND received_at > ${plan.hiddenBefore}` : sql``
  const filter = plan.filter === null ? sql`` : sql` AND (${plan.filter})`
  const where = sql`org_id = ${plan.orgId} AND stream = ${plan.stream}${hidden} AND ts >= ${plan.from} AND ts < ${plan.to}${filter} AND ${by.present}`
  const slices = plan.groupSample === 0 ? null : groupSlices(plan, await eventsInRange(clickhouse, plan), plan.groupSample)
  if (slices !== null) return await querySampledGroups(clickhouse, plan, by, where, slices)
  // The top values come back with their cityHash64 (decimal text), and the points pick them by it:
  // the values themselves as SQL literals (stack traces, payloads of 100 KB) passed ClickHouse's
  // max_query_size of 256 KiB (a 503).
  const top = await clickhouse.query<{ value: string, n: number, h: string }>(sql`SELECT assumeNotNull(${by.text}) AS value, count() AS n,
      toString(cityHash64(value)) AS h
    FROM events${plan.prewhere} WHERE ${where} GROUP BY value ORDER BY n DESC, value LIMIT ${plan.topN}`)
  const byPoint = new Map<number, Record<string, number>>()
  if (top.length > 0) {
    const hashes = uint64List(top.map((g) => g.h))
    const rows = await clickhouse.query<{ t: number, value: string, n: number }>(sql`SELECT intDiv(ts, ${plan.stepMs}) * ${plan.stepMs} AS t,
        assumeNotNull(${by.text}) AS value, count() AS n
      FROM events${plan.prewhere} WHERE ${where} AND cityHash64(${by.text}) IN (${hashes}) GROUP BY t, value`)
    for (const row of rows) {
      const point = byPoint.get(row.t) ?? {}
      point[row.value] = row.n
      byPoint.set(row.t, point)
    }
  }
  return { groups: top.map((g) => ({ value: g.value, count: g.n })), byPoint, sampled: false }
}

/** The slices' ts ranges [lo, hi), one per point of the plan, as inSliceSql tests them. */
export function sliceRanges (plan: StatsPlan, slices: GroupSlices): Array<[number, number]> {
  const ranges: Array<[number, number]> = []
  const step = slices.stepMs
  for (let t = Math.floor(plan.from / step) * step; t < plan.to; t += step) {
    const offset = Math.floor(((t / step) * offsetStep % 65536) * (step - slices.widthMs) / 65536)
    ranges.push([t + offset, t + offset + slices.widthMs])
  }
  return ranges
}

/** Above this many characters the per-slice statements give way to one statement (their ASTs add up). */
const maxSliceUnionChars = 100_000

/**
 * The counts per point and value of the rows in a slice. `perSlice` (the default while the SQL
 * stays under maxSliceUnionChars): a UNION ALL of one statement per slice, its ts range in
 * PREWHERE, so ClickHouse finds each slice's granules by the sort key and tests a plain range
 * (bench/README.md, "Find anything": by=user_id over 30 M events read 1.7 M rows for 0.63 s of
 * CPU, where the slice test per row read all 30 M for 0.96 s, and the slices as one OR of ranges
 * 1.8 s); else one statement with the slice test per row in PREWHERE.
 */
export function slicedCountsSql (plan: StatsPlan, by: GroupBy, where: SqlFragment, slices: GroupSlices, perSlice = true): SqlFragment {
  const counts = (inSlice: SqlFragment): SqlFragment => sql`SELECT intDiv(ts, ${plan.stepMs}) * ${plan.stepMs} AS t, assumeNotNull(${by.text}) AS value, count() AS n
      FROM events PREWHERE ${inSlice} WHERE ${where} GROUP BY t, value`
  if (perSlice) {
    const union = joinSql(sliceRanges(plan, slices).map(([lo, hi]) => counts(sql`ts >= ${lo} AND ts < ${hi}`)), ' UNION ALL ')
    if (union.text.length <= maxSliceUnionChars) return union
  }
  return counts(inSliceSql(slices))
}

/**
 * The groups over the slices, in one read: the counts per point and value of the rows in a slice
 * (at most about `sample` rows, so as many groups; slicedCountsSql), then per value, the top ones
 * with their points. Each point's counts scale by its step over its slice (finishSampledGroups,
 * which also reads whole the points where that cannot be right); a value's total is the sum of its
 * points'. The plan's pre-filter (plan.prewhere) stays out: in PREWHERE it would read its column
 * for every row of the range, where the slices read a few granules.
 */
async function querySampledGroups (clickhouse: ClickHouse, plan: StatsPlan, by: GroupBy, where: SqlFragment, slices: GroupSlices): Promise<StatsGroups> {
  const rows = await clickhouse.query<{ value: string, n: number, points: Array<[number, number]> }>(sql`SELECT value, sum(n) AS total, groupArray((t, n)) AS points
    FROM (${slicedCountsSql(plan, by, where, slices)})
    GROUP BY value ORDER BY total DESC, value LIMIT ${plan.topN}`)
  const scale = plan.stepMs / slices.widthMs
  const byPoint = new Map<number, Record<string, number>>()
  const groups: Array<{ value: string, count: number }> = []
  for (const row of rows) {
    let count = 0
    for (const [t, n] of row.points) {
      const scaled = Math.round(Number(n) * scale)
      const point = byPoint.get(Number(t)) ?? {}
      point[row.value] = scaled
      byPoint.set(Number(t), point)
      count += scaled
    }
    groups.push({ value: row.value, count })
  }
  groups.sort(byCountThenValue)
  // A point's own top values, read whole (its other values would not make the groups).
  const readPoints = async (points: number[]): Promise<Array<{ t: number, value: string, n: number }>> => await clickhouse.query(
    joinSql(points.map((t) => sql`SELECT * FROM (SELECT intDiv(ts, ${plan.stepMs}) * ${plan.stepMs} AS t, assumeNotNull(${by.text}) AS value, count() AS n
      FROM events PREWHERE ts >= ${t} AND ts < ${t + plan.stepMs} WHERE ${where} GROUP BY t, value ORDER BY n DESC, value LIMIT ${plan.topN})`), ' UNION ALL '))
  return { groups, byPoint, sampled: true, readPoints }
}

/** Points read whole hold at most this many events together: a quarter of the sample, at least 100,000 (~0.1 s on 18.16). */
const wholePointsBudget = (plan: StatsPlan): number => Math.max(plan.groupSample / 4, 100_000)

/**
 * A sampled read's points checked against their events (the series' counts, exact): a point
 * whose scaled groups add up to more events than it holds (a burst inside its slice, scaled by
 * the point's time over the slice's: 2,000 events in 10 s of an hour counted 3,602 times), or to
 * none while it holds events (all of them outside its slice), is read whole, exactly, the
 * smallest first, up to wholePointsBudget events together; then the top values are chosen
 * again over every point. Evenly spread events pass the check and cost nothing more.
 */
export async function finishSampledGroups (plan: StatsPlan, grouped: StatsGroups, pointEvents: ReadonlyMap<number, number>): Promise<StatsGroups> {
  if (grouped.readPoints === undefined) return grouped
  const wrong: Array<[number, number]> = []
  for (const [t, events] of pointEvents) {
    if (events === 0) continue
    const counts = grouped.byPoint.get(t)
    const sum = counts === undefined ? 0 : Object.values(counts).reduce((a, b) => a + b, 0)
    if (sum === 0 || sum > events) wrong.push([t, events])
  }
  if (wrong.length === 0) return { groups: grouped.groups, byPoint: grouped.byPoint, sampled: true }
  wrong.sort((a, b) => a[1] - b[1])
  const whole: number[] = []
  let budget = wholePointsBudget(plan)
  for (const [t, events] of wrong) {
    if (events > budget) break
    whole.push(t)
    budget -= events
  }
  if (whole.length === 0) return { groups: grouped.groups, byPoint: grouped.byPoint, sampled: true }
  const byPoint = new Map(grouped.byPoint)
  for (const t of whole) byPoint.delete(t)
  for (const row of await grouped.readPoints(whole)) {
    const point = byPoint.get(Number(row.t)) ?? {}
    point[row.value] = Number(row.n)
    byPoint.set(Number(row.t), point)
  }
  const totals = new Map<string, number>()
  for (const counts of byPoint.values()) for (const [value, n] of Object.entries(counts)) totals.set(value, (totals.get(value) ?? 0) + n)
  const groups = [...totals].map(([value, count]) => ({ value, count }))
    .sort(byCountThenValue)
    .slice(0, plan.topN)
  return { groups, byPoint, sampled: true }
}

/**
 * Levels per step from events_by_level_1h (migration 7): the plan's range and step are whole hours
 * (stats-plan.ts), so its hourly rows add up to the same counts as raw rows, for the events
 * inserted since that migration (docs/api.md section 7.4). Two reads of a few hundred rows
 * instead of two scans of the range: over 30 M events, 5 s became milliseconds (bench/README.md,
 * "Explore: first render").
 */
async function queryLevelRollup (clickhouse: ClickHouse, plan: StatsPlan): Promise<StatsGroups> {
  const where = sql`org_id = ${plan.orgId} AND stream = ${plan.stream} AND hour_ts >= ${plan.from} AND hour_ts < ${plan.to}`
  const groups = await clickhouse.query<{ value: string, n: number }>(sql`SELECT value, sum(n) AS n
    FROM events_by_level_1h WHERE ${where} GROUP BY value ORDER BY n DESC, value LIMIT ${plan.topN}`)
  const byPoint = new Map<number, Record<string, number>>()
  if (groups.length > 0) {
    const values = joinSql(groups.map((g) => sql`${g.value}`), ', ')
    const rows = await clickhouse.query<{ t: number, value: string, n: number }>(sql`SELECT intDiv(hour_ts, ${plan.stepMs}) * ${plan.stepMs} AS t,
        value, sum(n) AS n
      FROM events_by_level_1h WHERE ${where} AND value IN (${values}) GROUP BY t, value`)
    for (const row of rows) {
      const point = byPoint.get(Number(row.t)) ?? {}
      point[row.value] = Number(row.n)
      byPoint.set(Number(row.t), point)
    }
  }
  return { groups: groups.map((g) => ({ value: g.value, count: Number(g.n) })), byPoint, sampled: false }
}
