// Migrations: applied in order at start, recorded, and idempotent.
import t from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { createLogger } from '../../lib/logger.ts'
import { isMigrated, migrate, migrations } from '../../lib/storage/migrate.ts'

t.test('migrate applies every migration once and records it', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  const log = createLogger({ level: 'silent' })
  t.equal(await isMigrated(clickhouse).catch(() => false), false, 'a fresh database is not migrated')
  const first = await migrate(clickhouse, log)
  t.same(first.applied, migrations.map((m) => m.id))
  t.equal(await isMigrated(clickhouse), true)
  const second = await migrate(clickhouse, log)
  t.same(second.applied, [], 'running again applies nothing')
  const recorded = await clickhouse.query<{ id: number }>('SELECT id FROM schema_migrations ORDER BY id')
  t.same(recorded.map((r) => r.id), migrations.map((m) => m.id))
  const tables = (await clickhouse.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${clickhouse.database}' ORDER BY name`)).map((r) => r.name)
  for (const name of ['events', 'orgs', 'users', 'pats', 'streams', 'ingest_tokens', 'token_usage', 'schema_migrations']) {
    t.ok(tables.includes(name), `${name} exists`)
  }
})

t.test('a migration interrupted half way is completed by the next run', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  const log = createLogger({ level: 'silent' })
  // Simulate a crash after the first statement of migration 1: its table exists, nothing recorded.
  await clickhouse.command(migrations[0].statements[0])
  const r = await migrate(clickhouse, log)
  t.same(r.applied, migrations.map((m) => m.id))
  t.equal(await isMigrated(clickhouse), true)
})

t.test('an ADD COLUMN migration interrupted after its ALTER is completed by the next run (no IF NOT EXISTS on 18.16)', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  const log = createLogger({ level: 'silent' })
  const level = migrations.find((m) => m.name === 'events_level')!
  await migrate(clickhouse, log, migrations.filter((m) => m.id < level.id))
  for (const statement of level.statements) await clickhouse.command(statement)
  const r = await migrate(clickhouse, log)
  t.same(r.applied, migrations.filter((m) => m.id >= level.id).map((m) => m.id), 'it and the migrations after it')
  const columns = await clickhouse.query<{ type: string }>(`SELECT type FROM system.columns WHERE database = '${clickhouse.database}' AND table = 'events' AND name = 'level'`)
  // 26.x: the version-aware schema makes it LowCardinality after the migrations (docs/schema-versions.md).
  t.same(columns.map((c) => c.type), [r.features.has('lowCardinality') ? 'LowCardinality(Nullable(String))' : 'Nullable(String)'])
})
