// Retention: partitions past every stream's retention are dropped; a stream that keeps less
// loses its older rows; everything younger stays.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget } from '../helpers/ingest.ts'
import { enforceRetention } from '../../lib/storage/retention.ts'
import { createLogger } from '../../lib/logger.ts'
import { eventColumns } from '../../lib/ingest/parse-task.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { tsvRow } from '../helpers/events.ts'
import { onChdb } from '../helpers/clickhouse.ts'

const day = 86_400_000

t.test('old partitions are dropped and short-retention streams trimmed', async (t) => {
  const s = await startServer(t)
  await createIngestTarget(s, 'keep30')
  await createIngestTarget(s, 'keep1', 1)
  const org = s.app.store.orgByName('default')!.id
  // On a server with TTL the tables' TTL deletes the same rows in merges (retention-ttl.test.ts);
  // this test is the janitor's.
  if (onChdb) await s.app.clickhouse.command('SYSTEM STOP TTL MERGES')
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
  // The deletions run as mutations in the background: poll for their result.
  const seqs = await waitFor(async () => (await s.app.clickhouse.query<{ seq: number }>(`SELECT seq FROM events WHERE org_id = '${org}' ORDER BY seq`)).map((r) => r.seq),
    { until: (got) => got.length === 2, what: 'two events left', timeoutMs: 20_000, intervalMs: 100 })
  t.same(seqs, [2, 4])
  const rolled = await waitFor(async () => Number((await s.app.clickhouse.query<{ n: number }>(`SELECT sum(n) AS n FROM events_1h WHERE org_id = '${org}' AND stream = 'keep1'`))[0].n),
    { until: (n) => n === 1, what: 'one event left in the rollup', timeoutMs: 20_000, intervalMs: 100 })
  t.equal(rolled, 1, 'the rollups lose the same old events')
  const again = await enforceRetention(s.app.clickhouse, s.app.store, now, createLogger({ level: 'silent' }))
  t.same(again, { droppedPartitions: 0, deletedStreams: 0 }, 'a second run has nothing to do')
})
