// MetadataStore: a reload that read ClickHouse before a write through this node committed must
// not drop that write from the cache (a stream just created answered 404 on its own node until
// the next refresh; seen with a 500 ms refresh in test/cluster/).
import t from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { MetadataStore } from '../../lib/storage/metadata-store.ts'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'
import { createLogger } from '../../lib/logger.ts'

t.test('a write made while a reload runs survives the reload', async (t) => {
  const db = await createTestDatabase(t)
  const log = createLogger({ level: 'silent' })
  await migrate(db.clickhouse, log)
  // The reload's streams query reads at once, then waits for `release` before returning its rows.
  let hold = false
  let release!: () => void
  const gate = new Promise<void>((resolve) => { release = resolve })
  let read!: () => void
  const streamsRead = new Promise<void>((resolve) => { read = resolve })
  const clickhouse: ClickHouse = {
    ...db.clickhouse,
    async query<T> (statement: Parameters<ClickHouse['query']>[0], options?: Parameters<ClickHouse['query']>[1]): Promise<T[]> {
      const rows = await db.clickhouse.query<T>(statement, options)
      if (hold && String(statement).includes('FROM streams FINAL')) { read(); await gate }
      return rows
    },
  }
  const store = new MetadataStore({ clickhouse, log, refreshIntervalMs: 60_000 })
  await store.reload()
  hold = true
  const reloading = store.reload()
  await streamsRead // the reload holds the streams as they were before the write
  await store.saveStream({ orgId: 'o1', name: 'fresh', description: '', retentionDays: 30, createdAt: Date.now() })
  t.ok(store.stream('o1', 'fresh'), 'the write is in the cache')
  release()
  await reloading
  t.ok(store.stream('o1', 'fresh'), 'and still there after the reload that started before it')
  hold = false
  await store.reload()
  t.ok(store.stream('o1', 'fresh'), 'a later reload reads it from ClickHouse')
  await store.stop()
})
