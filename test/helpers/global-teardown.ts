// tap `after`: stops the ClickHouse that ./global-setup.ts started and waits until it is gone.
// Its data dir stays in .tap/test-clickhouse for a look at the logs; the next setup removes it.
import { readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { terminateClickHouse } from '../../lib/storage/managed-clickhouse.ts'
import { urlFile } from './clickhouse.ts'

const tapDir = dirname(urlFile)
const pidFile = join(tapDir, 'clickhouse-pid')

let pid = Number.NaN
try {
  pid = Number(readFileSync(pidFile, 'utf8'))
} catch {} // CLICKHOUSE_URL was set: setup started nothing
// 15 s: ClickHouse lets running queries finish (up to 5 s) before it exits; SIGKILL after that.
await terminateClickHouse(pid, join(tapDir, 'test-clickhouse'), 15_000)
rmSync(urlFile, { force: true })
rmSync(pidFile, { force: true })
