// Numbered schema migrations, applied in order at start. Each statement is idempotent
// (IF NOT EXISTS; an ADD COLUMN of a column that exists counts as done), and each applied migration is recorded in `schema_migrations`, so running
// migrate again — or on two nodes at once — changes nothing.
import { ClickHouseError, clickhouseCodes } from './clickhouse.ts'
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { sql } from './sql.ts'
import { migration as metadata } from './migrations/001_metadata.ts'
import { migration as events } from './migrations/002_events.ts'
import { migration as rollups } from './migrations/003_rollups.ts'
import { migration as audit } from './migrations/004_audit.ts'
import { migration as streamLifecycle } from './migrations/005_stream_lifecycle.ts'
import { migration as eventsLevel } from './migrations/006_events_level.ts'
import { migration as levelRollup } from './migrations/007_level_rollup.ts'

export interface Migration {
  id: number
  name: string
  statements: string[]
}

export const migrations: readonly Migration[] = [metadata, events, rollups, audit, streamLifecycle, eventsLevel, levelRollup]

export interface MigrateResult {
  applied: number[]
  current: number
}

export async function migrate (clickhouse: ClickHouse, log: Logger, list: readonly Migration[] = migrations): Promise<MigrateResult> {
  await clickhouse.ensureDatabase()
  await clickhouse.command(`CREATE TABLE IF NOT EXISTS schema_migrations (
    id UInt32, name String, applied_at UInt64
  ) ENGINE = MergeTree ORDER BY id`)
  const done = new Set((await clickhouse.query<{ id: number }>('SELECT DISTINCT id FROM schema_migrations')).map((r) => r.id))
  const applied: number[] = []
  for (const m of [...list].sort((a, b) => a.id - b.id)) {
    if (done.has(m.id)) continue
    for (const statement of m.statements) {
      try {
        await clickhouse.command(statement)
      } catch (err) {
        // ALTER ... ADD COLUMN (18.16 has no IF NOT EXISTS there) of a column already added: done.
        const exists = err instanceof ClickHouseError && /\bADD COLUMN\b/.test(statement) &&
          (err.chCode === clickhouseCodes.ILLEGAL_COLUMN || err.chCode === clickhouseCodes.DUPLICATE_COLUMN)
        if (!exists) throw err
      }
    }
    await clickhouse.command(sql`INSERT INTO schema_migrations (id, name, applied_at) VALUES (${m.id}, ${m.name}, ${Date.now()})`)
    applied.push(m.id)
    log.info('migration applied', { migration: m.id, name: m.name })
  }
  return { applied, current: Math.max(0, ...list.map((m) => m.id)) }
}

/** True when every known migration is recorded (readiness). */
export async function isMigrated (clickhouse: ClickHouse, list: readonly Migration[] = migrations, signal?: AbortSignal): Promise<boolean> {
  const rows = await clickhouse.query<{ n: number }>('SELECT uniqExact(id) AS n FROM schema_migrations', { signal })
  return rows[0].n >= list.length
}
