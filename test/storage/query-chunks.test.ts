// queryChunks (lib/storage/clickhouse.ts) is read only as fast as its caller iterates, and a
// slow caller (an export's downloader) may leave its socket idle for longer than
// clickhouse.requestTimeoutMs: that must not cut the response (explore15 F2: an export at 50 KB/s
// ended after 30 s, 1% through).
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { createTestDatabase, onChdb } from '../helpers/clickhouse.ts'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'

t.test('a response its reader pauses past requestTimeoutMs arrives whole', { skip: onChdb && 'the embedded engine has no socket' }, async (t) => {
  const { url, database } = await createTestDatabase(t)
  const clickhouse = createClickHouse({ url, database, user: process.env.CLICKHOUSE_USER ?? 'default', password: process.env.CLICKHOUSE_PASSWORD ?? '', requestTimeoutMs: 1000 })
  t.teardown(() => clickhouse.close())
  // ~250 MB of rows: far more than the sockets and streams between ClickHouse and here buffer,
  // so ClickHouse's socket has to wait while the reader does.
  const rows = 2_000_000
  let bytes = 0
  let lines = 0
  let paused = false
  for await (const chunk of clickhouse.queryChunks(`SELECT number, concat('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx') AS pad FROM numbers(${rows})`)) {
    bytes += chunk.length
    for (const b of chunk) if (b === 10) lines++
    if (!paused) {
      paused = true
      // The slow downloader: the reader takes nothing for 2.5 requestTimeoutMs.
      await sleep(2500)
    }
  }
  t.equal(lines, rows, 'every row, after the pause')
  t.ok(bytes > 200_000_000)
})
