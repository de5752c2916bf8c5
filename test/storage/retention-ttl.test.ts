// Retention as a table TTL (lib/storage/retention-ttl.ts, docs/schema-versions.md "Retention by
// TTL"): the TTL text for a set of streams, and on a real server:
// - 18.16 (no TTL gate): the tables keep no TTL, the janitor alone;
// - 26.x (the embedded engine): every stream data table's TTL says each stream's retention, a
//   retention change through the API changes it, ClickHouse's own merges delete what the janitor
//   would delete and keep what it would keep, and a second sync runs nothing.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget } from '../helpers/ingest.ts'
import { onChdb } from '../helpers/clickhouse.ts'
import { eventColumns } from '../../lib/ingest/parse-task.ts'
import { tsvRow } from '../helpers/events.ts'
import { currentTtl, maxTtlChars, plannedTtlStatements, retentionTtl, streamDataTables, syncRetentionTtl, timeColumnOf } from '../../lib/storage/retention-ttl.ts'

const day = 86_400_000

t.test('the TTL text: one rule per shorter retention, the longest for every other row', async (t) => {
  t.equal(retentionTtl([], 'ts'), '', 'no stream: no TTL')
  const expiry = (days: number) => `toDateTime(intDiv(ts, 86400000) * 86400) + toIntervalDay(${days})`
  t.equal(retentionTtl([{ orgId: 'o', name: 'a', retentionDays: 30 }, { orgId: 'o', name: 'b', retentionDays: 30 }], 'ts'), expiry(31),
    'one retention: one rule without WHERE')
  t.equal(retentionTtl([
    { orgId: 'o', name: 'long', retentionDays: 90 },
    { orgId: 'p', name: 'x', retentionDays: 7 },
    { orgId: 'o', name: 'y', retentionDays: 7 },
    { orgId: 'o', name: 'one', retentionDays: 1 },
  ], 'ts'), `${expiry(2)} WHERE (org_id, stream) IN ('o', 'one'), ${expiry(8)} WHERE (org_id, stream) IN (('o', 'y'), ('p', 'x')), ${expiry(91)}`)
  const many = Array.from({ length: 3000 }, (_, i) => ({ orgId: 'org-' + String(i).padStart(30, '0'), name: `s${i}`, retentionDays: i === 0 ? 60 : 7 }))
  t.equal(retentionTtl(many, 'hour_ts'), 'toDateTime(intDiv(hour_ts, 86400000) * 86400) + toIntervalDay(61)',
    `past ${maxTtlChars} characters only the longest rule stays`)
  t.equal(timeColumnOf('events'), 'ts')
  t.equal(timeColumnOf('events_1m'), 'minute_ts')
  t.equal(timeColumnOf('events_by_status_1h'), 'hour_ts')
  t.equal(currentTtl('MergeTree ORDER BY x SETTINGS index_granularity = 8192'), '')
  t.equal(currentTtl('MergeTree ORDER BY x TTL a + 1 SETTINGS index_granularity = 8192'), 'a + 1')
  t.strictSame(plannedTtlStatements([], new Map([['events', 'MergeTree ORDER BY x TTL a + 1 SETTINGS y = 1']])), ['ALTER TABLE `events` REMOVE TTL'],
    'the last stream gone: the TTL goes')
})

t.test('on 18.16 the tables keep no TTL', { skip: onChdb && 'the embedded engine has TTL' }, async (t) => {
  const s = await startServer(t)
  await createIngestTarget(s, 'short', 1)
  const engines = await s.app.clickhouse.query<{ name: string, engine_full: string }>(
    `SELECT name, engine_full FROM system.tables WHERE database = currentDatabase() AND has(['${streamDataTables.join("','")}'], name)`)
  t.equal(engines.length, streamDataTables.length)
  for (const e of engines) t.equal(currentTtl(e.engine_full), '', `${e.name}: no TTL`)
})

t.test('on 26.x every stream data table deletes by the streams\' retention in its own merges', { skip: !onChdb && 'needs a server with TTL (npm run test:chdb)' }, async (t) => {
  const s = await startServer(t)
  const ch = s.app.clickhouse
  const ttls = async () => new Map((await ch.query<{ name: string, engine_full: string }>(
    `SELECT name, engine_full FROM system.tables WHERE database = currentDatabase() AND has(['${streamDataTables.join("','")}'], name)`))
    .map((e) => [e.name, currentTtl(e.engine_full)]))
  await createIngestTarget(s, 'keep30')
  await createIngestTarget(s, 'keep1', 1)
  const org = s.app.store.orgByName('default')!.id
  for (const [table, ttl] of await ttls()) {
    const time = timeColumnOf(table)
    t.equal(ttl, `toDateTime(intDiv(${time}, 86400000) * 86400) + toIntervalDay(2) WHERE (org_id, stream) IN ('${org}', 'keep1'), ` +
      `toDateTime(intDiv(${time}, 86400000) * 86400) + toIntervalDay(31)`, `${table}: keep1's rule and everyone's`)
  }
  t.strictSame(await syncRetentionTtl(ch, streamDataTables), [], 'a second sync finds nothing to do')

  const now = Date.now()
  const today = Math.floor(now / day) * day
  const row = (stream: string, ts: number, i: number) =>
    tsvRow({ org_id: org, stream, ts, received_at: now, host: 'h', path: '/p', method: 'GET', status: 200, rt: 0.1, bytes: 1, attrs: '{}', seq: i, size: 10 })
  const rows = [
    row('keep30', today - 31 * day + 1000, 1), // day today-31: past 30 days for the janitor too
    row('keep30', today - 30 * day + 1000, 2), // day today-30: the janitor keeps it, so must the TTL
    row('keep1', today - 2 * day + 1000, 3), // past keep1's day
    row('keep1', today - day + 1000, 4), // yesterday: kept
    row('keep1', now - 1000, 5),
  ]
  await ch.insertRaw(`INSERT INTO events (${eventColumns.join(', ')}) FORMAT TabSeparated`, Buffer.from(rows.join('\n') + '\n'))
  for (const table of streamDataTables) await ch.command(`OPTIMIZE TABLE \`${table}\` FINAL`)
  const seqs = (await ch.query<{ seq: number }>(`SELECT seq FROM events WHERE org_id = '${org}' ORDER BY seq`)).map((r) => Number(r.seq))
  t.strictSame(seqs, [2, 4, 5], 'the TTL deleted what the janitor deletes and nothing it keeps')
  const hours = await ch.query<{ stream: string, n: number }>(`SELECT stream, sum(n) AS n FROM events_1h WHERE org_id = '${org}' GROUP BY stream ORDER BY stream`)
  t.strictSame(hours.map((h) => [h.stream, Number(h.n)]), [['keep1', 2], ['keep30', 1]], 'the rollups lose the same rows')

  // A longer retention through the API: the TTL follows before the answer.
  const res = await s.api('PATCH', '/api/streams/keep1', { body: { retention_days: 90 } })
  t.equal(res.status, 200)
  const after = await ttls()
  t.equal(after.get('events'), `toDateTime(intDiv(ts, 86400000) * 86400) + toIntervalDay(31) WHERE (org_id, stream) IN ('${org}', 'keep30'), ` +
    'toDateTime(intDiv(ts, 86400000) * 86400) + toIntervalDay(91)')
  await ch.insertRaw(`INSERT INTO events (${eventColumns.join(', ')}) FORMAT TabSeparated`, Buffer.from(row('keep1', today - 60 * day, 6) + '\n'))
  await ch.command('OPTIMIZE TABLE events FINAL')
  const kept = (await ch.query<{ seq: number }>(`SELECT seq FROM events WHERE org_id = '${org}' AND stream = 'keep1' ORDER BY seq`)).map((r) => Number(r.seq))
  t.strictSame(kept, [4, 5, 6], 'an event 60 days old stays in a stream that keeps 90')

  // Every stream gone: no TTL left.
  for (const name of ['keep1', 'keep30']) t.equal((await s.api('DELETE', `/api/streams/${name}`)).status, 204)
  for (const [table, ttl] of await ttls()) t.equal(ttl, '', `${table}: no TTL without streams`)
})
