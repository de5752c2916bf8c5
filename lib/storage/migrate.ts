// Numbered schema migrations, applied in order at start. Each statement is idempotent
// (IF NOT EXISTS; an ADD COLUMN of a column that exists counts as done), and each applied migration is recorded in `schema_migrations`, so running
// migrate again — or on two nodes at once — changes nothing.
// Cluster mode (options.cluster): the database and every statement, schema_migrations' own
// included, go through lib/storage/cluster-ddl.ts (ON CLUSTER, replicated and sharded tables).
// Two nodes starting at once may both run a migration: its CREATEs are IF NOT EXISTS, and an
// ALTER that the other node applied first answers "already exists" (ClickHouse 18.16 has no
// ADD COLUMN IF NOT EXISTS), which counts as applied; schema_migrations may then hold a
// migration twice, and readers count distinct ids. A node finding every migration recorded runs
// no DDL at all, so nodes (re)start while a ClickHouse host is down.
// After the migrations, on one node, the schema is reconciled with what the server's version
// supports (lib/storage/schema-reconcile.ts, docs/schema-versions.md): state-based, so a database
// migrated on 18.16 gets the features after a server upgrade. Cluster mode stays portable.
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { quoteIdentifier, sql } from './sql.ts'
import { ClickHouseError, clickhouseCodes } from './clickhouse.ts'
import { clusterStatements } from './cluster-ddl.ts'
import { noFeatures, serverFeatures } from './server-features.ts'
import type { ServerFeatures } from './server-features.ts'
import { reconcileSchema } from './schema-reconcile.ts'
import { migration as metadata } from './migrations/001_metadata.ts'
import { migration as events } from './migrations/002_events.ts'
import { migration as rollups } from './migrations/003_rollups.ts'
import { migration as audit } from './migrations/004_audit.ts'
import { migration as streamLifecycle } from './migrations/005_stream_lifecycle.ts'
import { migration as eventsLevel } from './migrations/006_events_level.ts'
import { migration as levelRollup } from './migrations/007_level_rollup.ts'
import { migration as nodes } from './migrations/008_nodes.ts'
import { migration as idempotency } from './migrations/009_idempotency.ts'
import { migration as nodeTails } from './migrations/010_node_tails.ts'
import { migration as eventsAttributes } from './migrations/011_events_attributes.ts'
import { migration as idempotencyPending } from './migrations/012_idempotency_pending.ts'

export interface Migration {
  id: number
  name: string
  statements: string[]
}

export const migrations: readonly Migration[] = [metadata, events, rollups, audit, streamLifecycle, eventsLevel, levelRollup, nodes, idempotency, nodeTails, eventsAttributes, idempotencyPending]

/**
 * The statements that make today's `events` table alone (no rollups), in order: for tests and
 * benchmarks that need the table without the rest of the schema.
 */
export const eventsTableStatements: readonly string[] = [events, eventsLevel, eventsAttributes].flatMap((m) => m.statements)

export interface MigrateResult {
  applied: number[]
  current: number
  /** What the server supports and the schema now uses (noFeatures in cluster mode). */
  features: ServerFeatures
}

export interface MigrateOptions {
  /** Cluster name in remote_servers (clickhouse.cluster); null or absent: one ClickHouse. */
  cluster?: string | null
  /** Keep the portable schema whatever the server (benchmarks and upgrade tests: "before"); default false. */
  portable?: boolean
}

/**
 * ClickHouse codes of a cluster DDL statement that another node applied first: the table, view
 * or column exists (57, 15, 44), or is already gone (60 UNKNOWN_TABLE, 16 NO_SUCH_COLUMN_IN_TABLE).
 */
const appliedMeanwhileCodes: ReadonlySet<number> = new Set([15, 16, 44, 57, 60])

async function runClusterStatement (clickhouse: ClickHouse, statement: string, log: Logger): Promise<void> {
  try {
    await clickhouse.command(statement)
  } catch (err) {
    if (!(err instanceof ClickHouseError) || !appliedMeanwhileCodes.has(err.chCode)) throw err
    log.warn('cluster migration statement already applied (another node ran it first)', { code: err.chCode, statement: statement.slice(0, 200) })
  }
}

export async function migrate (clickhouse: ClickHouse, log: Logger, list: readonly Migration[] = migrations, options: MigrateOptions = {}): Promise<MigrateResult> {
  await clickhouse.ensureDatabase()
  const cluster = options.cluster ?? null
  const target = cluster === null ? null : { cluster, database: clickhouse.database }
  const apply = async (statement: string): Promise<void> => {
    if (target === null) {
      try {
        return await clickhouse.command(statement)
      } catch (err) {
        // ALTER ... ADD COLUMN (18.16 has no IF NOT EXISTS there) of a column already added: done.
        const exists = err instanceof ClickHouseError && /\bADD COLUMN\b/.test(statement) &&
          (err.chCode === clickhouseCodes.ILLEGAL_COLUMN || err.chCode === clickhouseCodes.DUPLICATE_COLUMN)
        if (!exists) throw err
        return
      }
    }
    for (const s of clusterStatements(statement, target)) await runClusterStatement(clickhouse, s, log)
  }
  if (target !== null) {
    // ON CLUSTER DDL waits for every host: with one down, a node could not start. When the local
    // replica of schema_migrations already lists every migration there is nothing to run.
    // Asked of system.tables rather than by catching UNKNOWN_TABLE: 18.16 closes a keep-alive
    // connection after an error answer, and the next request on it would fail.
    const [exists] = await clickhouse.query<{ n: number }>(sql`SELECT count() AS n FROM system.tables
      WHERE database = ${target.database} AND name = 'schema_migrations'`)
    const recorded = Number(exists.n) === 0 ? [] : await clickhouse.query<{ id: number }>('SELECT DISTINCT id FROM schema_migrations')
    const known = new Set(recorded.map((r) => r.id))
    if (list.every((m) => known.has(m.id))) return { applied: [], current: Math.max(0, ...list.map((m) => m.id)), features: noFeatures }
    await clickhouse.command(`CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(target.database)} ON CLUSTER ${quoteIdentifier(target.cluster)}`)
  }
  await apply(`CREATE TABLE IF NOT EXISTS schema_migrations (
    id UInt32, name String, applied_at UInt64
  ) ENGINE = MergeTree ORDER BY id`)
  const done = new Set((await clickhouse.query<{ id: number }>('SELECT DISTINCT id FROM schema_migrations')).map((r) => r.id))
  const applied: number[] = []
  for (const m of [...list].sort((a, b) => a.id - b.id)) {
    if (done.has(m.id)) continue
    for (const statement of m.statements) await apply(statement)
    await clickhouse.command(sql`INSERT INTO schema_migrations (id, name, applied_at) VALUES (${m.id}, ${m.name}, ${Date.now()})`)
    applied.push(m.id)
    log.info('migration applied', { migration: m.id, name: m.name })
  }
  let features = noFeatures
  if (target === null && options.portable !== true && list.some((m) => m.id === 2)) {
    features = serverFeatures(await clickhouse.version())
    await reconcileSchema(clickhouse, features, log)
  }
  return { applied, current: Math.max(0, ...list.map((m) => m.id)), features }
}

/** True when every known migration is recorded (readiness). */
export async function isMigrated (clickhouse: ClickHouse, list: readonly Migration[] = migrations, signal?: AbortSignal): Promise<boolean> {
  const rows = await clickhouse.query<{ n: number }>('SELECT uniqExact(id) AS n FROM schema_migrations', { signal })
  return rows[0].n >= list.length
}
