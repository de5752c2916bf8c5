// Brings a database's tables to what its server supports (docs/schema-versions.md), after the
// numbered migrations, at every start. Migrations are history and portable (they run unchanged on
// 18.16); this step compares what `events` is (system.columns, system.data_skipping_indices) with
// what event-schema.ts wants on this server, and applies only the difference.
//
// Contract:
// - Idempotent and state-based, not recorded: a database made on 18.16 and opened after a server
//   upgrade gets the features at its first start on the new version, whatever schema_migrations
//   says; a second start finds nothing to do and runs no DDL. On 18.16 it runs no DDL at all.
// - Data stays: a codec change applies to parts written from then on (merges rewrite the old
//   ones); a LowCardinality change and a new index's MATERIALIZE INDEX are mutations that run in
//   the background (alter_sync = 0), so a start on a large database is not held up by them, and
//   reads meanwhile are correct (ClickHouse converts unconverted parts as it reads them; a part
//   without an index is read in full).
// - The rollup views read `events` by column name; a LowCardinality column reads as its String
//   values, so the views and their tables stay as they are (test/storage/schema-reconcile.test.ts
//   inserts through them after the change).
// - Single node only. Cluster mode keeps the portable DDL of lib/storage/cluster-ddl.ts.
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { featureMinimums } from './server-features.ts'
import type { ServerFeature, ServerFeatures } from './server-features.ts'
import { eventColumnSpecs, eventIndexes } from './event-schema.ts'
import { quoteIdentifier, sql } from './sql.ts'

export interface ReconcileResult {
  /** The ALTER statements run, in order (empty: the schema already had everything). */
  statements: string[]
}

/** The ALTERs that bring `events` to `features`, given what the table is now. */
export async function plannedStatements (clickhouse: ClickHouse, features: ServerFeatures): Promise<string[]> {
  const database = clickhouse.database
  const out: string[] = []
  // 18.16: nothing to add, and its system.columns has no compression_codec to ask about.
  if (!(Object.keys(featureMinimums) as ServerFeature[]).some((f) => features.has(f))) return out
  const columns = await clickhouse.query<{ name: string, type: string, codec: string }>(sql`
    SELECT name, type, compression_codec AS codec FROM system.columns WHERE database = ${database} AND table = 'events'`)
  if (columns.length === 0) return out
  if (features.has('codecs') || features.has('lowCardinality')) {
    const modify: string[] = []
    for (const c of columns) {
      const spec = eventColumnSpecs[c.name]
      if (spec === undefined) continue
      const type = features.has('lowCardinality') && spec.lowCardinalityType !== undefined ? spec.lowCardinalityType : spec.type
      const codec = features.has('codecs') && spec.codec !== undefined ? spec.codec : ''
      // A column changed by hand to something else (neither portable nor ours) is left alone.
      if (c.type !== type && c.type !== spec.type) continue
      if (c.type === type && c.codec === codec) continue
      modify.push(`MODIFY COLUMN ${quoteIdentifier(c.name)} ${type}${codec === '' ? '' : ` ${codec}`}`)
    }
    if (modify.length > 0) out.push(`ALTER TABLE events ${modify.join(', ')} SETTINGS alter_sync = 0, mutations_sync = 0`)
  }
  if (features.has('skipIndexes')) {
    const indexes = await clickhouse.query<{ name: string }>(sql`
      SELECT name FROM system.data_skipping_indices WHERE database = ${database} AND table = 'events'`)
    const have = new Set(indexes.map((i) => i.name))
    for (const index of eventIndexes) {
      if (have.has(index.name) || !index.requires.every((name) => columns.some((c) => c.name === name))) continue
      out.push(`ALTER TABLE events ADD INDEX IF NOT EXISTS ${index.name} ${index.expression} TYPE ${index.type} GRANULARITY ${index.granularity}`)
      // Parts written before the index have none until this mutation has run (in the background).
      out.push(`ALTER TABLE events MATERIALIZE INDEX ${index.name} SETTINGS alter_sync = 0, mutations_sync = 0`)
    }
  }
  return out
}

/** Applies plannedStatements. Single node only: the caller skips it in cluster mode. */
export async function reconcileSchema (clickhouse: ClickHouse, features: ServerFeatures, log: Logger): Promise<ReconcileResult> {
  const statements = await plannedStatements(clickhouse, features)
  for (const statement of statements) {
    await clickhouse.command(statement)
    log.info('schema reconciled with the server version', { version: features.version, statement: statement.slice(0, 200) })
  }
  return { statements }
}
