// tap `before`: gives the whole test run one ClickHouse, unless CLICKHOUSE_URL names one already or
// the run is on the embedded engine (SLUICE_TEST_ENGINE=chdb).
// The server is detached so it outlives this script (tap waits for the script to exit); its URL
// goes to .tap/clickhouse-url for ./clickhouse.ts and its pid to .tap/clickhouse-pid for
// ./global-teardown.ts.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createLogger } from '../../lib/logger.ts'
import { startManagedClickHouse, terminateClickHouse } from '../../lib/storage/managed-clickhouse.ts'
import { urlFile } from './clickhouse.ts'

const tapDir = dirname(urlFile)
const dataDir = join(tapDir, 'test-clickhouse')
const pidFile = join(tapDir, 'clickhouse-pid')

// A run interrupted before its teardown leaves its server running, holding ports and files.
let leftoverPid = Number.NaN
try {
  leftoverPid = Number(readFileSync(pidFile, 'utf8'))
} catch {}
await terminateClickHouse(leftoverPid, dataDir, 15_000)
rmSync(urlFile, { force: true })
rmSync(pidFile, { force: true })

// SLUICE_TEST_ENGINE=chdb: every test file runs its own embedded engine (./clickhouse.ts).
if (!process.env.CLICKHOUSE_URL && process.env.SLUICE_TEST_ENGINE !== 'chdb') {
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(tapDir, { recursive: true })
  const clickhouse = await startManagedClickHouse({
    dataDir,
    startTimeoutMs: 60_000, // a cold CI disk; a warm one answers in well under a second
    log: createLogger({ level: 'warn', fd: 2 }), // stdout belongs to tap
    restart: false, // nothing is left to supervise it once this script exits
  })
  writeFileSync(urlFile, clickhouse.url)
  writeFileSync(pidFile, String(clickhouse.detach()))
}
