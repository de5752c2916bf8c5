// `stats?by=<field>`: the top values of any field over the range, overall and per series point
// (docs/api.md section 7.4, "Grouping"). Read from raw events (the rollups hold no attributes):
// first the top `topN` values by count (ties by value), then the series counts of those values
// only. Events without the field belong to no group.
import type { ClickHouse } from '../storage/clickhouse.ts'
import { joinSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import type { StatsPlan } from './stats-plan.ts'

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
}

export async function queryGroups (clickhouse: ClickHouse, plan: StatsPlan, by: GroupBy): Promise<StatsGroups> {
  if (plan.groupsFromRollup) return await queryLevelRollup(clickhouse, plan)
  const hidden = plan.hiddenBefore > 0 ? sql` AND received_at > ${plan.hiddenBefore}` : sql``
  const filter = plan.filter === null ? sql`` : sql` AND (${plan.filter})`
  const where = sql`org_id = ${plan.orgId} AND stream = ${plan.stream}${hidden} AND ts >= ${plan.from} AND ts < ${plan.to}${filter} AND ${by.present}`
  const groups = await clickhouse.query<{ value: string, n: number }>(sql`SELECT assumeNotNull(${by.text}) AS value, count() AS n
    FROM events WHERE ${where} GROUP BY value ORDER BY n DESC, value LIMIT ${plan.topN}`)
  const byPoint = new Map<number, Record<string, number>>()
  if (groups.length > 0) {
    const values = joinSql(groups.map((g) => sql`${g.value}`), ', ')
    const rows = await clickhouse.query<{ t: number, value: string, n: number }>(sql`SELECT intDiv(ts, ${plan.stepMs}) * ${plan.stepMs} AS t,
        assumeNotNull(${by.text}) AS value, count() AS n
      FROM events WHERE ${where} AND ${by.text} IN (${values}) GROUP BY t, value`)
    for (const row of rows) {
      const point = byPoint.get(row.t) ?? {}
      point[row.value] = row.n
      byPoint.set(row.t, point)
    }
  }
  return { groups: groups.map((g) => ({ value: g.value, count: g.n })), byPoint }
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
  return { groups: groups.map((g) => ({ value: g.value, count: Number(g.n) })), byPoint }
}
