// Retention: each stream keeps `retention_days` of events (default 30). Every table with events
// data (events and its rollups) is partitioned by UTC day number, so the janitor:
// - drops whole day partitions once every stream's retention has passed them (cheap: files go);
// - for streams that keep less than the longest retention, deletes their older rows with a
//   mutation, issued only when such rows exist, so an idle janitor costs a few small queries.
// It runs shortly after start and then every `intervalMs`. Several nodes may run it at once: a
// dropped partition is dropped once, and a repeated mutation deletes nothing more.
import type { ClickHouse } from './clickhouse.ts'
import type { MetadataStore } from './metadata-store.ts'
import type { Logger } from '../logger.ts'
import { rawSql, sql, quoteIdentifier } from './sql.ts'

const dayMs = 86_400_000

export interface RetentionResult {
  droppedPartitions: number
  deletedStreams: number
}

/** Tables whose partitions are UTC day numbers of event time. */
async function dailyTables (clickhouse: ClickHouse): Promise<string[]> {
  const rows = await clickhouse.query<{ name: string }>(sql`
    SELECT name FROM system.tables
    WHERE database = ${clickhouse.database} AND (name = 'events' OR startsWith(name, 'events_'))
      AND engine LIKE '%MergeTree'`)
  return rows.map((r) => r.name)
}

export async function enforceRetention (clickhouse: ClickHouse, store: MetadataStore, now: number, log: Logger): Promise<RetentionResult> {
  const streams = store.allStreams()
  // With no stream left, nothing is anyone's: keep the default retention's worth all the same.
  const longest = streams.length > 0 ? Math.max(...streams.map((s) => s.retentionDays)) : 30
  const today = Math.floor(now / dayMs)
  // A day partition d holds [d, d + 1) days; it is past every retention once d + 1 <= today - longest.
  const lastDroppable = today - longest - 1
  let droppedPartitions = 0
  const tables = await dailyTables(clickhouse)
  for (const table of tables) {
    const parts = await clickhouse.query<{ partition: string }>(sql`
      SELECT DISTINCT partition FROM system.parts
      WHERE database = ${clickhouse.database} AND table = ${table} AND active`)
    for (const { partition } of parts) {
      const day = Number(partition)
      if (!Number.isInteger(day) || day > lastDroppable) continue
      await clickhouse.command(`ALTER TABLE ${quoteIdentifier(table)} DROP PARTITION ${day}`)
      droppedPartitions++
    }
  }

  let deletedStreams = 0
  for (const s of streams) {
    if (s.retentionDays >= longest) continue
    const cutoff = (today - s.retentionDays) * dayMs
    const old = await clickhouse.query<{ n: number }>(sql`
      SELECT count() AS n FROM events WHERE org_id = ${s.orgId} AND stream = ${s.name} AND ts < ${cutoff}`)
    if (old[0].n === 0) continue
    // The rollups hold the same events by bucket start; the cutoff is day-aligned, so whole
    // buckets go and the rollups stay equal to the raw rows.
    for (const table of tables) {
      const timeColumn = table === 'events' ? 'ts' : table.endsWith('_1m') ? 'minute_ts' : 'hour_ts'
      await clickhouse.command(sql`ALTER TABLE ${rawSql(quoteIdentifier(table))}
        DELETE WHERE org_id = ${s.orgId} AND stream = ${s.name} AND ${rawSql(timeColumn)} < ${cutoff}`)
    }
    deletedStreams++
  }
  if (droppedPartitions > 0 || deletedStreams > 0) log.info('retention enforced', { dropped_partitions: droppedPartitions, streams_trimmed: deletedStreams })
  return { droppedPartitions, deletedStreams }
}

export interface RetentionJanitor { stop (): void }

/** Runs enforceRetention soon after start and then every intervalMs (default hourly). */
export function startRetentionJanitor (clickhouse: ClickHouse, store: MetadataStore, log: Logger, intervalMs = 3_600_000): RetentionJanitor {
  const run = (): void => {
    enforceRetention(clickhouse, store, Date.now(), log).catch((err: unknown) => log.warn('retention run failed', { err }))
  }
  const first = setTimeout(run, 10_000)
  const timer = setInterval(run, intervalMs)
  first.unref()
  timer.unref()
  return { stop () { clearTimeout(first); clearInterval(timer) } }
}
