// Stream names stay unique under concurrent creation, on one node and across two nodes sharing a
// ClickHouse database; a deleted stream's data never shows in a stream created again under its
// name, from raw rows or rollups, neither while the delete runs nor after.
import t from 'tap'
import type { Test } from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import { streamDataTables } from '../../lib/storage/retention-ttl.ts'
import { waitFor } from '../helpers/wait-for.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

interface Outcome { status: number, error?: string, description?: string }

async function createFrom (server: TestServer, name: string, description: string): Promise<Outcome> {
  const r = await server.api('POST', '/api/streams', { body: { name, description } })
  return { status: r.status, error: r.body?.error, description: r.body?.description }
}

function checkOneWinner (t: Test, outcomes: Outcome[]): Outcome {
  const won = outcomes.filter((o) => o.status === 201)
  t.equal(won.length, 1, 'exactly one creator gets 201')
  t.same(outcomes.filter((o) => o.status !== 201).map((o) => [o.status, o.error]), Array(outcomes.length - 1).fill([409, 'conflict']),
    'every other one gets 409 conflict')
  return won[0]
}

t.test('ten concurrent creations of one name on one node: one 201, nine 409, the winner\'s settings kept', async (t) => {
  const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => createFrom(s, 'race', `creator ${i}`)))
  const winner = checkOneWinner(t, outcomes)
  const got = await s.api('GET', '/api/streams/race')
  t.equal(got.body.description, winner.description, 'the loaded stream is the winner\'s')
  await s.app.store.reload()
  t.equal((await s.api('GET', '/api/streams/race')).body.description, winner.description, 'and so is what ClickHouse holds')
  const [claims] = await s.app.clickhouse.query<{ n: number }>("SELECT count() AS n FROM stream_claims WHERE name = 'race'")
  t.equal(Number(claims.n), 1, 'the losers dropped their claims: one is left')
})

t.test('ten concurrent creations across two nodes sharing one database: one 201', async (t) => {
  const other = await startServer(t, {}, { database: s.database, dataDir: s.dataDir })
  const nodes = [s, other]
  const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => createFrom(nodes[i % 2], 'shared', `creator ${i}`)))
  const winner = checkOneWinner(t, outcomes)
  for (const node of nodes) {
    await node.app.store.reload()
    const got = await node.api('GET', '/api/streams/shared')
    t.equal(got.body.description, winner.description, 'both nodes load the winner\'s stream')
  }
  const again = await createFrom(other, 'shared', 'late')
  t.same([again.status, again.error], [409, 'conflict'])
})

t.test('five concurrent deletions of one stream on one node: one 204 and one audit entry, four 404', async (t) => {
  t.equal((await createFrom(s, 'felled', 'x')).status, 201)
  const statuses = await Promise.all(Array.from({ length: 5 }, async () => {
    const r = await s.api('DELETE', '/api/streams/felled')
    return r.status === 204 ? '204' : `${r.status} ${r.body?.error}`
  }))
  t.same(statuses.sort(), ['204', '404 not_found', '404 not_found', '404 not_found', '404 not_found'])
  const audit = await s.api('GET', '/api/audit?limit=100')
  t.equal((audit.body.entries as Array<{ action: string, target: { id: string } }>).filter((e) => e.action === 'stream.deleted' && e.target.id === 'felled').length, 1)
})

t.test('a deleted stream\'s data does not come back under a stream created again with its name', async (t) => {
  const now = Date.now()
  const hour = 3_600_000
  // Old events 2 h and 30 h ago: in the raw range of a 24 h read's edges and in the minute and hour rollups.
  const old = await createIngestTarget(s, 'phoenix')
  const oldLines = [2 * hour, 30 * hour, 30 * hour].map((ago) => JSON.stringify({ ts: now - ago, path: '/old', status: 500, host: 'old-host' }))
  t.equal((await postIngest(old, oldLines.join('\n'))).body.ingested, 3)
  const before = await s.api('GET', '/api/streams/phoenix/stats?from=now-7d&to=now')
  t.equal(before.body.totals.count, 3, 'the rollups hold the old events before the delete')

  t.equal((await s.api('DELETE', '/api/streams/phoenix')).status, 204)
  const fresh = await createIngestTarget(s, 'phoenix')
  const newLines = [90 * 60_000, 26 * hour].map((ago) => JSON.stringify({ ts: now - ago, path: '/new', status: 200, host: 'new-host' }))
  t.equal((await postIngest(fresh, newLines.join('\n'))).body.ingested, 2)

  const check = async (when: string): Promise<void> => {
    const events = await s.api('GET', '/api/streams/phoenix/events?from=now-7d&to=now&limit=1000')
    t.equal(events.status, 200)
    t.same(events.body.events.map((e: { path: string }) => e.path), ['/new', '/new'], `${when}: /events shows the new events only`)
    for (const [from, count] of [['now-1h', 0], ['now-2h', 1], ['now-24h', 1], ['now-7d', 2]] as const) {
      const stats = await s.api('GET', `/api/streams/phoenix/stats?from=${from}&to=now`)
      t.equal(stats.status, 200)
      t.equal(stats.body.totals.count, count, `${when}: stats from ${from} count the new events only`)
      t.equal(stats.body.totals.error_rate, 0, `${when}: none of the old 500s`)
      t.notOk(stats.body.top.paths.some((p: { path: string }) => p.path === '/old'), `${when}: no old path in the top list (${from})`)
      t.notOk(stats.body.top.hosts.some((p: { host: string }) => p.host === 'old-host'), `${when}: no old host (${from})`)
    }
    const one = await s.api('GET', '/api/streams/phoenix')
    t.equal(one.body.stats.events, 2, `${when}: the stream's own stats count the new events only`)
  }
  await check('right after the DELETE')

  // Once the deletion's mutations are done, the rollups no longer hold the old rows, and stats read them again.
  await waitFor(() => s.app.store.rollupsPurged(s.app.store.orgByName('default')!.id, 'phoenix'), { what: 'the deletion\'s mutations to finish', timeoutMs: 60_000, intervalMs: 50 })
  for (const table of streamDataTables) {
    const column = table === 'events_by_path_1h' ? 'value' : table === 'events' ? 'path' : null
    if (column === null) continue
    const [row] = await s.app.clickhouse.query<{ n: number }>(`SELECT count() AS n FROM ${table} WHERE stream = 'phoenix' AND ${column} = '/old'`)
    t.equal(Number(row.n), 0, `${table} holds no old row`)
  }
  await check('after the purge')
})

t.test('a stream deletion answers once its deletion is queued: with ClickHouse\'s merges stopped, 204 and ready (explore34b G3)', { timeout: 120_000 }, async (t) => {
  const tgt = await createIngestTarget(s, 'stalled')
  t.equal((await postIngest(tgt, Array.from({ length: 20 }, (_, i) => JSON.stringify({ path: `/p${i}` })).join('\n'))).body.ingested, 20)
  // Mutations run in the merges' background pool: stopped, a deletion that waited for its
  // mutation (26.x's lightweight DELETE before lightweight_deletes_sync = 0) would not answer.
  for (const table of streamDataTables) await s.app.clickhouse.command(`SYSTEM STOP MERGES ${table}`)
  let started = false
  const startMerges = async (): Promise<void> => {
    if (started) return
    started = true
    for (const table of streamDataTables) await s.app.clickhouse.command(`SYSTEM START MERGES ${table}`)
  }
  t.teardown(startMerges)
  t.equal((await s.api('DELETE', '/api/streams/stalled')).status, 204)
  const ready = await s.api('GET', '/readyz')
  t.equal(ready.status, 200, 'ready while the deletion waits to run')
  t.equal((await s.api('GET', '/api/streams/stalled/events?from=now-1h')).status, 404)
  await createIngestTarget(s, 'stalled')
  const events = await s.api('GET', '/api/streams/stalled/events?from=now-1h')
  t.same(events.body.events, [], 'a stream created again shows none of the deleted events')
  t.notOk(await s.app.store.rollupsPurged(s.app.store.orgByName('default')!.id, 'stalled'), 'the deletion has not run yet')
  await startMerges()
  await waitFor(() => s.app.store.rollupsPurged(s.app.store.orgByName('default')!.id, 'stalled'), { what: 'the deletion to run', timeoutMs: 60_000, intervalMs: 50 })
  const [row] = await s.app.clickhouse.query<{ n: number }>("SELECT count() AS n FROM events WHERE stream = 'stalled'")
  t.equal(Number(row.n), 0, 'its rows are gone')
})
