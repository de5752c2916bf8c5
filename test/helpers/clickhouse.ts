// A real ClickHouse for tests. `npm test` starts one for the whole run (test/helpers/global-setup.ts
// writes its URL to .tap/clickhouse-url); CLICKHOUSE_URL points tests at an existing server instead.
// SLUICE_TEST_ENGINE=chdb (`npm run test:chdb`) runs them on the embedded engine instead: chdb
// holds one data directory per process, and each test file is a process of its own, so each gets
// a fresh `chdb:` directory of its own, removed when the process exits.
// Each test file gets its own database, dropped at teardown.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'

export const urlFile = fileURLToPath(new URL('../../.tap/clickhouse-url', import.meta.url))

/** True when the tests run on the embedded engine (SLUICE_TEST_ENGINE=chdb). */
export const onChdb = process.env.SLUICE_TEST_ENGINE === 'chdb'

let chdbUrl: string | undefined

export function clickhouseUrl (): string {
  if (onChdb) {
    if (chdbUrl === undefined) {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-chdb-test-'))
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
      chdbUrl = `chdb:${dir}`
    }
    return chdbUrl
  }
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
    // A DROP waits for the tables' running queries and merges: on a loaded CI machine one took
    // past the 30 s request timeout once. A database left behind in the test server harms no
    // other test (each has its own), so the drop is retried, then given up with a comment.
    for (let attempt = 1; ; attempt++) {
      try {
        await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``)
        break
      } catch (err) {
        if (attempt === 3) {
          t.comment(`test database ${database} left behind: ${(err as Error).message}`)
          break
        }
      }
    }
    await clickhouse.close()
  })
  return { url, database, clickhouse }
}
