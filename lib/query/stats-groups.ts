// `stats?by=<field>`: the top values of any field over the range, overall and per series point
// (docs/api.md section 7.4, "Grouping"). Read from raw events (the rollups hold no attributes):
// first the top `topN` values by count (ties by value), then the series counts of those values
// only. Events without the field belong to no group.
//
// Sampling: a range whose events (the minute rollup's count, before q) pass plan.groupSample,
// and with q whose matches (the series' exact counts, which stats-query.ts then reads first)
// pass it too, is read over one slice of each series point, slices holding about groupSample
// events together; `sampled` is then true. Without `sample=` (plan.groupSampleAuto), a range the
// slices would read nearly whole is counted exactly (exactGroupsCeiling). Each point's counts are
// scaled by its matching events over its slice's (a ratio estimate: the point's events are the
// series' exact count, its slice's are counted in the same statement), so a point's groups, with
// the events that lack the field, add up to its events, and a field every event has leaves
// nothing over for an `other` (explore14 F3: scaled by time, a point's groups fell 5% short or
// passed its events; explore30 finding 4).
// A point whose slice holds none of its events, or that is a burst (twice the mean point's events:
// its slice holds the burst or misses it), or whose slice held its events unevenly, is read whole
// within a budget, or past it over slices spread across it (finishSampledGroups). A value seen
// fewer than `minSampledHits` times in the slices cannot be ranked by them (a field of nearly
// unique values: the values the slices over-count make the list, at 2-6x their counts, explore14
// F2): when the list holds such a value and the range holds at most `recountEvents` x
// groupSample events, the slices' most frequent values, up to 10 x topN, are counted exactly over
// the whole range and the top ones by those counts listed.
// Two full scans of an attribute over 30 M events read 2 x 10 GB of arrays (12-31 s on 18.16), the
// slices of 500,000 about 180 MB (bench/README.md, "Find anything"). A slice starts at a different
// offset in each point (the golden-ratio sequence), so a pattern that repeats with the step (a
// cron at :00) is not always in or always out. Each slice is a statement of its own with its ts
// range in PREWHERE, so ClickHouse finds its granules by the sort key and reads the other columns
// only for them (slicedRowsSql).
import type { ClickHouse } from '../storage/clickhouse.ts'
import { joinSql, sql, uint64List } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import type { StatsPlan } from './stats-plan.ts'
import { byCountThenValue } from './field-ref.ts'
import { granuleRows, sampleSlicesOf, sliceIndexSql } from './fields-query.ts'
import { readError } from './read-limits.ts'
import { SluiceError } from '../errors.ts'
import type { Bin, Slice } from './fields-query.ts'

/** The grouping field as SQL (lib/query/field-ref.ts): its value text, and whether an event has it. */
export interface GroupBy {
  text: SqlFragment
  present: SqlFragment
  /**
   * The field is the `level` column, which the hourly rollup events_by_level_1h counts: a plan
   * without q over a day or more reads the groups from it (stats-plan.ts `groupsFromRollup`).
   */
  isLevel?: boolean
  /** The field is an attribute (not a column): a sampled read sends its points per event (querySampledGroups). */
  isAttribute?: boolean
}

export interface StatsGroups {
  groups: Array<{ value: string, count: number }>
  /** Per series point start (ms): count per listed value. */
  byPoint: Map<number, Record<string, number>>
  /** Counted over slices of the range and scaled up. */
  sampled: boolean
  /** Sampled, before finishSampledGroups: what the slices held, counts not yet scaled. */
  slices?: SampledCounts
}

/** Slices grouped: their events per point and their most frequent values, as counted there. */
export interface SliceGroups {
  /** Per point start: the matching events in its slices, with the field or without. */
  events: Map<number, number>
  /** The most frequent values in the slices (up to 10 x topN), most first: per point, the count in its slices. */
  values: Array<{ value: string, hash: string, hits: number, points: Map<number, number> }>
}

/** A sampled read's slices, and the reads that may follow them. */
export interface SampledCounts extends SliceGroups {
  /** A slice's time over its point's. */
  share: number
  /** Other slices, ts ranges [lo, hi) in time order and apart, grouped as the read's were but by range (its index) instead of point. */
  readRanges: (ranges: readonly Slice[]) => Promise<SliceGroups>
  /** The events (before q) of these points in bins of binMs (a divisor of the step). */
  pointBins: (points: number[], binMs: number) => Promise<Bin[]>
  /** The counts per point and value (with its cityHash64 as text) of whole points, each point's `limit` most frequent values. */
  readPoints: (points: number[], limit: number) => Promise<Array<{ t: number, value: string, n: number, h: string }>>
  /** Exact counts per point of the values of these hashes over the whole range. */
  recount: (hashes: string[]) => Promise<Array<{ t: number, value: string, n: number }>>
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

/**
 * Without `sample=`, a range of at most this many events is counted exactly: twice what its
 * slices would read (each reads its events and about a granule more, since ClickHouse reads whole
 * granules), at most 10 x `sample`. Over 2 M events (explore31) the exact read took 0.2-0.6 s and
 * the sampled one 0.6-1.7 s on 18.16, reading 1.7 M rows in 144 statements; bench/README.md,
 * "`stats?by=` exact up to what the slices would read".
 */
export function exactGroupsCeiling (plan: StatsPlan): number {
  const points = Math.ceil((plan.to - plan.from) / plan.stepMs)
  return Math.min(2 * (plan.groupSample + points * granuleRows), 10 * plan.groupSample)
}

/**
 * The slices that hold about `sample` of `total` events spread evenly over the plan's points, or
 * null to count them all. `auto` (no `sample=` given): null too up to exactGroupsCeiling.
 */
export function groupSlices (plan: StatsPlan, total: number, sample: number, auto = false): GroupSlices | null {
  if (sample === 0 || total <= sample) return null
  if (auto && total <= exactGroupsCeiling(plan)) return null
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

/**
 * `sent` is called once the read's main statement (the one that reads raw events) has been sent.
 * `matches`: the events `q` matches over the range when known (the series' counts): at most
 * `sample` of them are counted exactly.
 */
export async function queryGroups (clickhouse: ClickHouse, plan: StatsPlan, by: GroupBy, sent: () => void = () => {}, matches?: number): Promise<StatsGroups> {
  if (plan.groupsFromRollup) {
    sent()
    return await queryLevelRollup(clickhouse, plan)
  }
  const hidden = plan.hiddenBefore > 0 ? sql` AND received_at > ${plan.hiddenBefore}` : sql``
  const filter = plan.filter === null ? sql`` : sql` AND (${plan.filter})`
  const stream = sql`org_id = ${plan.orgId} AND stream = ${plan.stream}${hidden} AND ts >= ${plan.from} AND ts < ${plan.to}`
  const matching = sql`${stream}${filter}`
  const where = sql`${matching} AND ${by.present}`
  const total = plan.groupSample === 0 || (matches !== undefined && matches <= plan.groupSample) ? 0 : await eventsInRange(clickhouse, plan)
  const slices = groupSlices(plan, total, plan.groupSample, plan.groupSampleAuto)
  if (slices !== null) return await querySampledGroups(clickhouse, plan, by, stream, matching, slices, sent)
  try {
    return await queryExactGroups(clickhouse, plan, by, where, sent)
  } catch (err) {
    // Counted exactly only because the slices would have read about as much: a field of more
    // distinct values than a read may group (422) is sampled as `sample` says.
    const sampled = groupSlices(plan, total, plan.groupSample)
    const failure = readError(err)
    if (sampled === null || !(failure instanceof SluiceError && failure.code === 'query_too_expensive')) throw err
    return await querySampledGroups(clickhouse, plan, by, stream, matching, sampled, sent)
  }
}

/** The top values over the whole range, then their counts per point: two reads of every matching row. */
async function queryExactGroups (clickhouse: ClickHouse, plan: StatsPlan, by: GroupBy, where: SqlFragment, sent: () => void): Promise<StatsGroups> {
  // The top values come back with their cityHash64 (decimal text), and the points pick them by it:
  // the values themselves as SQL literals (stack traces, payloads of 100 KB) passed ClickHouse's
  // max_query_size of 256 KiB (a 503).
  const topRead = clickhouse.query<{ value: string, n: number, h: string }>(sql`SELECT assumeNotNull(${by.text}) AS value, count() AS n,
      toString(cityHash64(value)) AS h
    FROM events${plan.prewhere} WHERE ${where} GROUP BY value ORDER BY n DESC, value LIMIT ${plan.topN}`)
  sent()
  const top = await topRead
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
 * The rows in a slice that match `matching`, as their point (`t`), `has` (1: the row has the
 * field) and `value` (its text; '' without it), ungrouped: the caller groups them once (with a
 * GROUP BY in each slice's statement as well, the statement by=user_id over 30 M events took 810
 * ms against 579, by=region 330 against 315: bench/README.md, "`stats?by=` sampled, grouped
 * once"). `perSlice` (the default while the SQL stays under maxSliceUnionChars): a UNION ALL
 * of one statement per slice, its ts range in PREWHERE, so ClickHouse finds each slice's granules
 * by the sort key and tests a plain range
 * (bench/README.md, "Find anything": by=user_id over 30 M events read 1.7 M rows for 0.63 s of
 * CPU, where the slice test per row read all 30 M for 0.96 s, and the slices as one OR of ranges
 * 1.8 s); else one statement with the slice test per row in PREWHERE.
 */
export function slicedRowsSql (plan: StatsPlan, by: GroupBy, matching: SqlFragment, slices: GroupSlices, perSlice = true): SqlFragment {
  if (perSlice) {
    const union = joinSql(sliceRanges(plan, slices).map(([lo, hi]) => rowsIn(plan, by, matching, sql`ts >= ${lo} AND ts < ${hi}`)), ' UNION ALL ')
    if (union.text.length <= maxSliceUnionChars) return union
  }
  return rowsIn(plan, by, matching, inSliceSql(slices))
}

/** The rows matching `matching` with PREWHERE `inSlice`, as slicedRowsSql returns them, and `bucket AS p` if given. */
function rowsIn (plan: StatsPlan, by: GroupBy, matching: SqlFragment, inSlice: SqlFragment, bucket?: SqlFragment): SqlFragment {
  return sql`SELECT ${bucket === undefined ? sql`` : sql`${bucket} AS p, `}intDiv(ts, ${plan.stepMs}) * ${plan.stepMs} AS t, toUInt8(${by.present}) AS has,
      if(has = 1, assumeNotNull(${by.text}), '') AS value
      FROM events PREWHERE ${inSlice} WHERE ${matching}`
}

/**
 * The rows of slices [lo, hi) in time order and apart, `p` the slice's number: a statement
 * each, with its number as a constant, while the SQL stays under maxSliceUnionChars (a multiIf
 * over 261 ranges took 2.7 s where the constants took 0.65: explore31's cron), else one with
 * their OR. The slices' own statement computes its point numbers from t instead: constants in
 * each of its 144 statements made it 8% slower (by=user_id over 30 M events, 0.96-1.04 s
 * against 0.87-1.00).
 */
function rangeRowsSql (plan: StatsPlan, by: GroupBy, matching: SqlFragment, ranges: readonly Slice[]): SqlFragment {
  const union = joinSql(ranges.map((x, k) => rowsIn(plan, by, matching, sql`ts >= ${x.lo} AND ts < ${x.hi}`, sql`toUInt32(${k})`)), ' UNION ALL ')
  if (union.text.length <= maxSliceUnionChars) return union
  return rowsIn(plan, by, matching, joinSql(ranges.map((x) => sql`(ts >= ${x.lo} AND ts < ${x.hi})`), ' OR '),
    sql`toUInt32(${sliceIndexSql(ranges, ranges.map((_, k) => k))})`)
}

/** Candidates counted exactly past a sampled read: this many times topN. */
const candidatesPerValue = 10

/**
 * The slices, in one statement: the rows in a slice (at most about `sample`; slicedRowsSql)
 * grouped by value, the most frequent ones with their events' points, after the rows of each
 * point's events in its slice (`kind` 0, the point's number as the value: every row is counted
 * there too, by an ARRAY JOIN) and the row of the events without the field (`kind` 1). The
 * scaling, and the choice of the values listed, is finishSampledGroups'. The point's events in
 * its slice make its counts a ratio estimate whatever the values past the list hold; the second
 * grouping costs the statement about 10% (by=user_id over 30 M events, one thread: 0.91-1.04 s
 * against 0.81-0.91), where a statement of its own counting the slices took 0.21-0.34 s
 * (bench/README.md, "`stats?by=` sampled: each point's events in its slice"). The plan's
 * pre-filter (plan.prewhere) stays out: in PREWHERE it would read its column for every row of the
 * range, where the slices read a few granules.
 */
async function querySampledGroups (clickhouse: ClickHouse, plan: StatsPlan, by: GroupBy, stream: SqlFragment, matching: SqlFragment, slices: GroupSlices, sent: () => void): Promise<StatsGroups> {
  const where = sql`${matching} AND ${by.present}`
  const limit = plan.topN * candidatesPerValue
  // Each value's points by their number from the first. An attribute's come one per event, a
  // column's as a sumMap of counts per point: a sumMap took by=user_id as long as counting in
  // each slice first did and by=region 20% less, the per-event list 20% and 11% less, but it
  // sends a few values' lists of about `sample` numbers together, +45 ms of Sluice's CPU for
  // by=service (bench/README.md, "`stats?by=` sampled, grouped once"). Nearly unique values,
  // the slow case, are attributes (user and trace ids); columns are `service`, `level`, `host`...
  const origin = Math.floor(plan.from / plan.stepMs) * plan.stepMs
  const grouped = groupSliceRows(clickhouse, by, slicedRowsSql(plan, by, matching, slices), sql`toUInt32(intDiv(t - ${origin}, ${plan.stepMs}))`,
    Math.ceil((plan.to - origin) / plan.stepMs), limit)
  sent()
  // By point start instead of point number.
  const { events, values } = byPointStart(await grouped, (k) => origin + k * plan.stepMs)
  const perPoint = async (condition: SqlFragment): Promise<Array<{ t: number, value: string, n: number }>> => await clickhouse.query(sql`SELECT intDiv(ts, ${plan.stepMs}) * ${plan.stepMs} AS t,
      assumeNotNull(${by.text}) AS value, count() AS n
    FROM events${plan.prewhere} WHERE ${where} AND ${condition} GROUP BY t, value`)
  return {
    groups: [],
    byPoint: new Map(),
    sampled: true,
    slices: {
      events,
      values,
      share: slices.widthMs / slices.stepMs,
      readRanges: async (ranges) => await groupSliceRows(clickhouse, by, rangeRowsSql(plan, by, matching, ranges), sql`p`, ranges.length, limit),
      pointBins: async (points, binMs) => (await clickhouse.query<{ b: number, n: number }>(sql`SELECT intDiv(ts - ${origin}, ${binMs}) AS b, count() AS n
        FROM events PREWHERE ${joinSql(points.map((t) => sql`(ts >= ${t} AND ts < ${t + plan.stepMs})`), ' OR ')} WHERE ${stream} GROUP BY b`))
        .map((r) => ({ start: origin + Number(r.b) * binMs, end: origin + (Number(r.b) + 1) * binMs, n: Number(r.n) })),
      readPoints: async (points, limit) => await clickhouse.query(
        joinSql(points.map((t) => sql`SELECT * FROM (SELECT intDiv(ts, ${plan.stepMs}) * ${plan.stepMs} AS t, assumeNotNull(${by.text}) AS value, count() AS n,
          toString(cityHash64(value)) AS h
          FROM events PREWHERE ts >= ${t} AND ts < ${t + plan.stepMs} WHERE ${where} GROUP BY t, value ORDER BY n DESC, value LIMIT ${limit})`), ' UNION ALL ')),
      recount: async (hashes) => await perPoint(sql`cityHash64(${by.text}) IN (${uint64List(hashes)})`),
    },
  }
}

/**
 * Rows of slices (slicedRowsSql's shape) grouped: per bucket (`bucket`, below `buckets`, of the
 * rows' columns) the events in it, and the `limit` most frequent values with their events per bucket.
 */
async function groupSliceRows (clickhouse: ClickHouse, by: GroupBy, rowsSql: SqlFragment, bucket: SqlFragment, buckets: number, limit: number): Promise<SliceGroups> {
  const points = by.isAttribute === true ? sql`groupArrayIf(p, kind > 0)` : sql`sumMapIf([p], [toUInt64(1)], kind > 0)`
  const rows = await clickhouse.query<{ kind: number, value_of: string, total: number, h: string, points: number[] | [number[], number[]] }>(sql`SELECT kind,
      if(kind = 0, toString(p), value) AS value_of, count() AS total, toString(cityHash64(value_of)) AS h, ${points} AS points
    FROM (SELECT ${bucket} AS p, has, value FROM (${rowsSql}))
    ARRAY JOIN [0, has + 1] AS kind
    GROUP BY kind, value_of ORDER BY kind, total DESC, value_of LIMIT ${buckets + 1 + limit}`)
  const events = new Map<number, number>()
  const values: SampledCounts['values'] = []
  const inBucket = new Uint32Array(buckets)
  for (const row of rows) {
    const kind = Number(row.kind)
    if (kind === 0) {
      events.set(Number(row.value_of), Number(row.total))
      continue
    }
    if (kind === 1 || values.length === limit) continue
    inBucket.fill(0)
    if (by.isAttribute === true) {
      for (const k of row.points as number[]) inBucket[k]++
    } else {
      const [ks, ns] = row.points as [number[], number[]]
      ks.forEach((k, i) => { inBucket[k] = Number(ns[i]) })
    }
    const points = new Map<number, number>()
    for (let k = 0; k < inBucket.length; k++) if (inBucket[k] > 0) points.set(k, inBucket[k])
    values.push({ value: row.value_of, hash: row.h, hits: Number(row.total), points })
  }
  return { events, values }
}

/** Slice groups with their bucket numbers mapped by `key`. */
function byPointStart (groups: SliceGroups, key: (bucket: number) => number): SliceGroups {
  return {
    events: new Map([...groups.events].map(([k, n]) => [key(k), n])),
    values: groups.values.map((v) => ({ ...v, points: new Map([...v.points].map(([k, n]) => [key(k), n])) })),
  }
}

/**
 * `total` in whole parts in proportion to `weights` (largest remainders): the parts add up to
 * `total` exactly, where rounding each alone can leave a point one event over or short.
 */
export function apportion (total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0)
  if (sum <= 0) return weights.map(() => 0)
  const exact = weights.map((w) => w * total / sum)
  const parts = exact.map(Math.floor)
  let left = total - parts.reduce((a, b) => a + b, 0)
  const byRemainder = exact.map((x, i) => [x - parts[i], i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1])
  for (const [, i] of byRemainder) {
    if (left <= 0) break
    parts[i]++
    left--
  }
  return parts
}

/** The key of the events apportioned besides the values (values past the list, events without the field). */
const restKey = '\u0000rest'

/**
 * apportion() over successive points, each key carrying what it was given short of (or over) its
 * exact share to the next point: a point of one or two events gives them to one value, and
 * without the carry always to the same one, the most frequent or the first of a tie (a test's
 * most frequent value +23% over 10,800 points of about two events).
 */
export class Sharer {
  #carry = new Map<string, number>()

  share (total: number, keys: readonly string[], weights: readonly number[]): number[] {
    const sum = weights.reduce((a, b) => a + b, 0)
    if (sum <= 0) return weights.map(() => 0)
    const exact = weights.map((w, i) => Math.max(0, total * w / sum + (this.#carry.get(keys[i]) ?? 0)))
    const parts = apportion(total, exact)
    const scale = total / Math.max(Number.MIN_VALUE, exact.reduce((a, b) => a + b, 0))
    parts.forEach((n, i) => this.#carry.set(keys[i], exact[i] * scale - n))
    return parts
  }
}

/** Points read whole hold at most this many events together: a quarter of the sample, at least 100,000 (~0.1 s on 18.16). */
const wholePointsBudget = (plan: StatsPlan): number => Math.max(plan.groupSample / 4, 100_000)

/** A point this many times as busy as the range's mean point (or more) is a burst, read whole within the budget. */
const burstPoint = 2

/** A value seen fewer times than this in the slices is counted too roughly to rank it (about ±15% and worse). */
export const minSampledHits = 50

/** The candidates of a sampled read are counted exactly over ranges of at most this many times `sample` events. */
export const recountEvents = 10

/**
 * A sampled read's counts scaled, with the series' exact events per point (pointEvents): each
 * point's by its events over its slice's (a ratio estimate). A point with events but none in its
 * slice (all of them outside it), a burst (burstPoint times the mean point's events) and a point
 * whose slice held its events unevenly are read whole, exactly, the smallest first, up to
 * wholePointsBudget events together; past that, over slices spread across the point.
 * When a listed value was seen fewer than minSampledHits times in the slices and the range holds
 * at most recountEvents x sample events, the candidates (with the top values of the points whose
 * slice held none of their events, and of the bursts) are counted exactly instead. Then the top values are chosen
 * over every point.
 */
export async function finishSampledGroups (plan: StatsPlan, grouped: StatsGroups, pointEvents: ReadonlyMap<number, number>): Promise<StatsGroups> {
  const slices = grouped.slices
  if (slices === undefined) return grouped
  const byPoint = new Map<number, Record<string, number>>()
  const put = (t: number, value: string, n: number): void => {
    const point = byPoint.get(t) ?? {}
    point[value] = n
    byPoint.set(t, point)
  }
  // The top values over every point, and the points with those only. `sampled` stays true when
  // the candidates were counted exactly: they came from the slices, and a value the slices held
  // too rarely is missing from the list (explore19; docs/api.md section 7.4).
  const finished = (): StatsGroups => {
    const totals = new Map<string, number>()
    for (const counts of byPoint.values()) for (const [value, n] of Object.entries(counts)) totals.set(value, (totals.get(value) ?? 0) + n)
    const groups = [...totals].map(([value, count]) => ({ value, count })).sort(byCountThenValue).slice(0, plan.topN)
    const listed = new Set(groups.map((g) => g.value))
    for (const counts of byPoint.values()) for (const value of Object.keys(counts)) if (!listed.has(value)) delete counts[value]
    return { groups, byPoint, sampled: true }
  }

  let eventsInRange = 0
  for (const n of pointEvents.values()) eventsInRange += n
  // A point burstPoint times as busy as the mean one (an incident's minutes): its slice, a part of
  // its time, holds the burst or misses it, and its events would go to the values of the rest
  // of the point (explore28a M1). It is read whole, as the points whose slice held none of
  // their events are, within the same budget.
  const burstAt = burstPoint * eventsInRange / Math.max(1, pointEvents.size)
  const isBurst = (n: number): boolean => n > 0 && n >= burstAt
  // A point whose slice held its events at a density far from the point's, beyond chance (three
  // standard deviations, and by a third or a quarter): a burst the slice held or missed, in a
  // point not twice the mean (explore30: 5,000 events in 5 s beside a point's 6,700 were missed).
  // Not the range's first and last points: the events of a range that ends now (a dashboard's
  // last 24 h) fill a part of its last point, and its slice, if in that part, holds more than
  // its share with the same values (the 30 M find set: 0.3 M rows more read, +250 ms a read).
  const edges = new Set([Math.floor(plan.from / plan.stepMs) * plan.stepMs, Math.ceil(plan.to / plan.stepMs) * plan.stepMs - plan.stepMs])
  const isUneven = (t: number, events: number, inSlice: number): boolean => {
    if (edges.has(t)) return false
    const expected = events * slices.share
    return Math.abs(inSlice - expected) > 3 * Math.sqrt(expected) && (inSlice * 4 < expected * 3 || inSlice * 3 > expected * 4)
  }
  const listedHits = slices.values.slice(0, plan.topN).map((v) => v.hits)
  // Most points uneven: events in clumps shorter than the slices' spacing (cron batches), which
  // the slices cannot share out per point (explore31: 137 of 144 points lacked a batch service
  // they held). Counted exactly as below when the range is small enough.
  const unevenPoints = [...pointEvents].filter(([t, n]) => n > 0 && isUneven(t, n, slices.events.get(t) ?? 0)).length
  const clumped = unevenPoints * 2 > pointEvents.size
  if (listedHits.length > 0 && (clumped || Math.min(...listedHits) < minSampledHits) && eventsInRange <= recountEvents * plan.groupSample) {
    // The points whose slice held none of their events, the bursts and the uneven points add their
    // own top values to the candidates: a burst between two slices would otherwise be missing from
    // the list (a run of test/query/reads.test.ts listed a lonely event of 1 and not the burst of
    // 2,000 beside it).
    const candidates = new Set(slices.values.map((v) => v.hash))
    const inSlice = (t: number): number => slices.events.get(t) ?? 0
    const missed = wholePoints(plan, [...pointEvents].filter(([t, n]) => n > 0 && (isBurst(n) || inSlice(t) === 0 || isUneven(t, n, inSlice(t)))))
    // Their own top values: their other values would not make the list.
    if (missed.length > 0) for (const row of await slices.readPoints(missed, plan.topN)) candidates.add(row.h)
    for (const row of await slices.recount([...candidates])) put(Number(row.t), row.value, Number(row.n))
    return finished()
  }

  // Points to read whole, [t, events]: those whose slice held none of their events, bursts, and
  // those whose slice's events were uneven.
  const wanted: Array<[number, number]> = []
  // The estimates of the bursts and uneven points, kept for those the budget leaves out.
  const estimates = new Map<number, Array<[string, number]>>()
  const sharer = new Sharer()
  for (const [t, events] of pointEvents) {
    if (events === 0) continue
    const inSlice = slices.events.get(t) ?? 0
    if (inSlice === 0) {
      wanted.push([t, events])
      continue
    }
    const estimate = estimateOf(slices, t, events, inSlice, sharer)
    if (isBurst(events) || isUneven(t, events, inSlice)) {
      estimates.set(t, estimate)
      wanted.push([t, events])
      continue
    }
    for (const [value, n] of estimate) if (n > 0) put(t, value, n)
  }
  const whole = wholePoints(plan, wanted)
  const read = new Set(whole)
  // The points without any event in their slice that are not read whole (past the budget, or
  // past maxWholePoints: 10,800 points of 8 s) share their events out as all the slices held
  // theirs, the top 2 x topN values (explore31: such points counted nothing, the values 14-28%
  // short).
  const overall = slices.values.slice(0, 2 * plan.topN)
  let sliceEvents = 0
  for (const n of slices.events.values()) sliceEvents += n
  const held = [...overall.map((v) => v.hits), Math.max(0, sliceEvents - overall.reduce((sum, v) => sum + v.hits, 0))]
  // Shared with the same carries as the estimates (Sharer): a point of one or two events gave
  // them all to the most frequent value (a test's b +23%, a -19%).
  const keys = [...overall.map((v) => v.value), restKey]
  for (const [t, events] of [...wanted].sort((a, b) => a[0] - b[0])) {
    if (read.has(t) || estimates.has(t) || sliceEvents === 0) continue
    const shares = sharer.share(events, keys, held)
    overall.forEach((v, i) => { if (shares[i] > 0) put(t, v.value, shares[i]) })
  }
  // As many of their values as the slices' candidates: the values listed are chosen over every
  // point, and a point's own top values alone (all it read before) left the listed ones out of
  // it wherever many values hold about as many events (explore30 finding 4: 40 users of 10,000
  // events each, whole points counted a fifth of them).
  const wholeRead = whole.length === 0 ? [] : slices.readPoints(whole, plan.topN * candidatesPerValue)
  // The bursts and uneven points past the budget: their slice, a part of their time, held the
  // burst or missed it (explore30 finding 5: a burst of 20,000 events estimated 0). They are read
  // again over slices placed where their events are (the busiest first, at most maxSpreadSlices
  // slices in all), holding another budget's events together, and estimated from those
  // (spreadEstimates).
  const left = [...estimates.keys()].filter((t) => !read.has(t))
    .sort((a, b) => pointEvents.get(b)! - pointEvents.get(a)!).slice(0, maxSpreadSlices / minSpreadSlices)
  if (left.length > 0) for (const [t, estimate] of await spreadEstimates(plan, slices, left, pointEvents, sharer)) estimates.set(t, estimate)
  for (const [t, estimate] of estimates) if (!read.has(t)) for (const [value, n] of estimate) if (n > 0) put(t, value, n)
  for (const row of await wholeRead) put(Number(row.t), row.value, Number(row.n))
  return finished()
}

/**
 * Point t's events shared out by what its slices held: the values', and the rest (values past
 * the list, events without the field), in whole events that add up to the point's.
 */
function estimateOf (slices: SliceGroups, t: number, events: number, inSlices: number, sharer: Sharer): Array<[string, number]> {
  const here = slices.values.filter((v) => v.points.has(t))
  const counted = here.reduce((sum, v) => sum + v.points.get(t)!, 0)
  const shares = sharer.share(events, [...here.map((v) => v.value), restKey], [...here.map((v) => v.points.get(t)!), inSlices - counted])
  return here.map((v, i) => [v.value, shares[i]])
}

/**
 * Slices a point past the budget is read again over: at most this many shares, and about
 * maxSpreadSlices slices in all (as many as a day's 10-minute points: one statement each), for
 * at most maxSpreadSlices / minSpreadSlices points.
 */
const spreadSliceCount = 12
const minSpreadSlices = 4
const maxSpreadSlices = 144
/** Bins of a point whose events place its spread slices: about this many (of a second or more). */
const spreadBins = 600

/**
 * Points past the budget estimated again: their events (before q) in bins of about a second
 * (spreadBins a point, one cheap statement over their ts) place slices where the events are, as
 * /fields places its own (fields-query.ts sampleSlicesOf: a burst inside the point a slice of its
 * own, read whole or in part, the rest in equal shares), holding wholePointsBudget events together.
 * A point's values are then its events shared out by the slices' rows, each row weighted by the
 * events its slice stands for over the events the bins put in it. Evenly spaced slices missed a
 * burst of 90-120 s in an hour's point and one in the first 3 s of a 10-minute point (explore31:
 * a 600,000-event burst of one service counted 0).
 */
async function spreadEstimates (plan: StatsPlan, slices: SampledCounts, points: number[], pointEvents: ReadonlyMap<number, number>, sharer: Sharer): Promise<Map<number, Array<[string, number]>>> {
  const step = plan.stepMs
  let binMs = Math.max(1, Math.min(step, Math.max(1000, Math.floor(step / spreadBins))))
  while (step % binMs !== 0) binMs--
  const bins = await slices.pointBins(points, binMs)
  const events = points.reduce((sum, t) => sum + pointEvents.get(t)!, 0)
  const fraction = Math.min(1, wholePointsBudget(plan) / Math.max(1, events))
  // A point's slices are its `count` shares and its bursts (as many at most).
  const count = Math.max(2, Math.min(spreadSliceCount, Math.floor(maxSpreadSlices / 2 / points.length)))
  const planned = [...points].sort((a, b) => a - b).map((t) => {
    const own = bins.filter((b) => b.start >= t && b.start < t + step)
    const cut = sampleSlicesOf(own, t, t + step, count, fraction)
    // Each slice's weight: the events it stands for over those the bins put in it.
    return { t, cut, weights: cut.map((x) => x.events / Math.max(1, binEventsIn(own, x.lo, x.hi))) }
  })
  const spread = await slices.readRanges(planned.flatMap((p) => p.cut))
  const estimates = new Map<number, Array<[string, number]>>()
  let first = 0
  for (const { t, cut, weights } of planned) {
    const weighed = (counts: (k: number) => number): number => weights.reduce((sum, w, k) => sum + w * counts(first + k), 0)
    const rows = weighed((k) => spread.events.get(k) ?? 0)
    if (rows > 0) {
      const here = spread.values.map((v) => ({ value: v.value, n: weighed((k) => v.points.get(k) ?? 0) })).filter((v) => v.n > 0)
      const shares = sharer.share(pointEvents.get(t)!, [...here.map((v) => v.value), restKey], [...here.map((v) => v.n), Math.max(0, rows - here.reduce((sum, v) => sum + v.n, 0))])
      estimates.set(t, here.map((v, i) => [v.value, shares[i]]))
    }
    first += cut.length
  }
  return estimates
}

/** The events the bins put in [lo, hi), each bin's spread evenly over its time. */
function binEventsIn (bins: readonly Bin[], lo: number, hi: number): number {
  let n = 0
  for (const b of bins) if (b.end > lo && b.start < hi) n += b.n * (Math.min(hi, b.end) - Math.max(lo, b.start)) / (b.end - b.start)
  return n
}

/** Points read whole at most: one statement each (explore31: 10,800 points of 8 s answered 504 after 27 s). */
const maxWholePoints = 144

/** Of points [t, events], the ones read whole: the smallest first, up to wholePointsBudget events and maxWholePoints points together. */
function wholePoints (plan: StatsPlan, points: Array<[number, number]>): number[] {
  points.sort((a, b) => a[1] - b[1])
  let budget = wholePointsBudget(plan)
  const whole: number[] = []
  for (const [t, events] of points) {
    if (events > budget || whole.length === maxWholePoints) break
    whole.push(t)
    budget -= events
  }
  return whole
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
