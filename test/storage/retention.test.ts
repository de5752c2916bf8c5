// Retention: partitions past every stream's retention are dropped; a stream that keeps less
// loses its older rows; everything younger stays.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget } from '../helpers/ingest.ts'
import { enforceRetention } from '../../lib/storage/retention.ts'
import { createLogger } from '../../lib/logger.ts'
import { eventColumns } from '../../lib/ingest/parse-task.ts'
import { tsvRow } from '../helpers/events.ts'

const day = 86_400_000

t.test('old partitions are dropped and short-retention streams trimmed', async (t) => {
  const s = await startServer(t)
  await createIngestTarget(s, 'keep30')
  await createIngestTarget(s, 'keep1', 1)
  const org = s.app.store.orgByName('default')!.id
  const now = Date.now()
  const row = (stream: string, ts: number, i: number) =>
    tsvRow({ org_id: org, stream, ts, received_at: now, host: 'h', path: '/p', method: 'GET', status: 200, rt: 0.1, bytes: 1, attrs: '{}', seq: i, size: 10 })
  const rows = [
    row('keep30', now - 40 * day, 1), // past every retention: its day partition goes
    row('keep30', now - 3 * day, 2), // within 30 days: stays
    row('keep1', now - 3 * day, 3), // past keep1's 1 day: deleted by mutation
    row('keep1', now - 3_600_000, 4), // within 1 day: stays
  ]
  await s.app.clickhouse.insertRaw(`INSERT INTO events (${eventColumns.join(', ')}) FORMAT TabSeparated`, Buffer.from(rows.join('\n') + '\n'))
  const result = await enforceRetention(s.app.clickhouse, s.app.store, now, createLogger({ level: 'silent' }))
  t.ok(result.droppedPartitions >= 1, `dropped ${result.droppedPartitions} partitions`)
  t.equal(result.deletedStreams, 1)
  let seqs: number[] = []
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    seqs = (await s.app.clickhouse.query<{ seq: number }>(`SELECT seq FROM events WHERE org_id = '${org}' ORDER BY seq`)).map((r) => r.seq)
    if (seqs.length === 2) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.same(seqs, [2, 4])
  let rolled = -1
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    rolled = (await s.app.clickhouse.query<{ n: number }>(`SELECT sum(n) AS n FROM events_1h WHERE org_id = '${org}' AND stream = 'keep1'`))[0].n
    if (rolled === 1) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.equal(rolled, 1, 'the rollups lose the same old events')
  const again = await enforceRetention(s.app.clickhouse, s.app.store, now, createLogger({ level: 'silent' }))
  t.same(again, { droppedPartitions: 0, deletedStreams: 0 }, 'a second run has nothing to do')
})
