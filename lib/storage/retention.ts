// Retention: each stream keeps `retention_days` of events (default 30). Every table with events
// data (events and its rollups) is partitioned by UTC day number, so the janitor:
// - drops whole day partitions once every stream's retention has passed them (cheap: files go);
// - for streams that keep less than the longest retention, deletes their older rows with a
//   mutation (lightweight `DELETE FROM` where the server has it, one node: docs/schema-versions.md),
//   issued only when such rows exist, so an idle janitor costs a few small queries.
// On a server with TTL (one node), the tables' TTL says the same retention and ClickHouse deletes
// expired rows in its merges as well (retention-ttl.ts); this janitor still drops whole days and
// trims a shortened stream at once, where TTL merges come when ClickHouse schedules them.
// It runs shortly after start and then every `intervalMs`; each run also drops the expired hours
// of idempotency keys (lib/storage/idempotency-store.ts). Several nodes may run it at once: a
// dropped partition is dropped once, and a repeated mutation deletes nothing more.
// Cluster mode (`cluster`): the tables are the Distributed names, their partitions are read
// from one replica of every shard, and drops and deletes go to the local tables ON CLUSTER
// (lib/storage/cluster-ddl.ts mutationTarget). Each waits at most janitorDdlWaitSeconds for the
// hosts; one slow to take its DDL queue runs it later by itself (lib/storage/on-cluster.ts).
import type { ClickHouse } from './clickhouse.ts'
import { commandOnCluster, deleteRows, janitorDdlWaitSeconds } from './on-cluster.ts'
import type { MetadataStore } from './metadata-store.ts'
import type { Logger } from '../logger.ts'
import { rawSql, sql } from './sql.ts'
import { localTableName, mutationTarget } from './cluster-ddl.ts'
import type { ClusterTarget } from './cluster-ddl.ts'
import { dropExpiredKeys } from './idempotency-store.ts'
import { timeColumnOf } from './retention-ttl.ts'

const dayMs = 86_400_000
/** ON CLUSTER, hosts that take their DDL queue late run a retention statement later (on-cluster.ts): said, not waited for. */
function lateHosts (entry: string | null, log: Logger, table: string): void {
  if (entry !== null) log.info('retention: some hosts run the statement later, from the distributed DDL queue', { table })
}

export interface RetentionResult {
  droppedPartitions: number
  deletedStreams: number
}

/** Tables whose partitions are UTC day numbers of event time. */
async function dailyTables (clickhouse: ClickHouse, target: ClusterTarget | null): Promise<string[]> {
  const engine = target === null ? rawSql("engine LIKE '%MergeTree'") : rawSql("engine = 'Distributed'")
  const rows = await clickhouse.query<{ name: string }>(sql`
    SELECT name FROM system.tables
    WHERE database = ${clickhouse.database} AND (name = 'events' OR startsWith(name, 'events_'))
      AND ${engine}`)
  return rows.map((r) => r.name)
}

export async function enforceRetention (clickhouse: ClickHouse, store: MetadataStore, now: number, log: Logger,
  cluster: string | null = null, lightweightDelete = false, ddlWaitSeconds = janitorDdlWaitSeconds): Promise<RetentionResult> {
  const target = cluster === null ? null : { cluster, database: clickhouse.database }
  const streams = store.allStreams()
  // With no stream left, nothing is anyone's: keep the default retention's worth all the same.
  const longest = streams.length > 0 ? Math.max(...streams.map((s) => s.retentionDays)) : 30
  const today = Math.floor(now / dayMs)
  // A day partition d holds [d, d + 1) days; it is past every retention once d + 1 <= today - longest.
  const lastDroppable = today - longest - 1
  let droppedPartitions = 0
  const tables = await dailyTables(clickhouse, target)
  const partsSource = target === null ? rawSql('system.parts') : sql`cluster(${target.cluster}, system, parts)`
  for (const table of tables) {
    const parts = await clickhouse.query<{ partition: string }>(sql`
      SELECT DISTINCT partition FROM ${partsSource}
      WHERE database = ${clickhouse.database} AND table = ${target === null ? table : localTableName(table)} AND active`)
    for (const { partition } of parts) {
      const day = Number(partition)
      if (!Number.isInteger(day) || day > lastDroppable) continue
      const statement = `ALTER TABLE ${mutationTarget(table, target)} DROP PARTITION ${day}`
      lateHosts(await commandOnCluster(clickhouse, statement, ddlWaitSeconds, target !== null), log, table)
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
      const where = sql`org_id = ${s.orgId} AND stream = ${s.name} AND ${rawSql(timeColumnOf(table))} < ${cutoff}`
      lateHosts(await deleteRows(clickhouse, table, where, target, lightweightDelete, ddlWaitSeconds), log, table)
    }
    deletedStreams++
  }
  if (droppedPartitions > 0 || deletedStreams > 0) log.info('retention enforced', { dropped_partitions: droppedPartitions, streams_trimmed: deletedStreams })
  return { droppedPartitions, deletedStreams }
}

export interface RetentionJanitor { stop (): void }

/** Runs enforceRetention soon after start and then every intervalMs (default hourly). */
export function startRetentionJanitor (clickhouse: ClickHouse, store: MetadataStore, log: Logger, intervalMs = 3_600_000,
  cluster: string | null = null, lightweightDelete = false): RetentionJanitor {
  const run = (): void => {
    enforceRetention(clickhouse, store, Date.now(), log, cluster, lightweightDelete).catch((err: unknown) => log.warn('retention run failed', { err }))
    // Expired idempotency keys go too (no table TTL on ClickHouse 18.16).
    dropExpiredKeys(clickhouse, Date.now()).catch((err: unknown) => log.warn('dropping expired idempotency keys failed', { err }))
  }
  const first = setTimeout(run, 10_000)
  const timer = setInterval(run, intervalMs)
  first.unref()
  timer.unref()
  return { stop () { clearTimeout(first); clearInterval(timer) } }
}
