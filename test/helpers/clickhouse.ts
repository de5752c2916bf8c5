// A real ClickHouse for tests. `npm test` starts one for the whole run (test/helpers/global-setup.ts
// writes its URL to .tap/clickhouse-url); CLICKHOUSE_URL points tests at an existing server instead.
// Each test file gets its own database, dropped at teardown.
import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'

export const urlFile = fileURLToPath(new URL('../../.tap/clickhouse-url', import.meta.url))

export function clickhouseUrl (): string {
  if (process.env.CLICKHOUSE_URL) return process.env.CLICKHOUSE_URL
  try {
    return readFileSync(urlFile, 'utf8').trim()
  } catch {
    throw new Error('no ClickHouse for tests: run them with `npm test` (it starts one) or set CLICKHOUSE_URL')
  }
}

export interface TestDatabase {
  url: string
  database: string
  clickhouse: ClickHouse
}

/** Creates a fresh database for this test file and drops it when `t` ends. */
export async function createTestDatabase (t: Test, prefix = 'sluice_test'): Promise<TestDatabase> {
  const url = clickhouseUrl()
  const database = `${prefix}_${randomBytes(6).toString('hex')}`
  const clickhouse = createClickHouse({
    url, database, user: process.env.CLICKHOUSE_USER ?? 'default', password: process.env.CLICKHOUSE_PASSWORD ?? '', requestTimeoutMs: 30_000,
  })
  await clickhouse.ensureDatabase()
  t.teardown(async () => {
    await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``)
    await clickhouse.close()
  })
  return { url, database, clickhouse }
}
