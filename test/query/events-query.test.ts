// queryEvents reads a page in time windows, newest first (events-query.ts), or, on servers with
// skip indexes, as one statement in ts order and the last ts's rows again in (ts, seq) order. The
// pages of both must be exactly those of one query over the whole range: same events, same order, same cursors, for
// dense and sparse data, many events on one ts, filters that match often, rarely or never, and
// cursors that land anywhere.
import t from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { createLogger } from '../../lib/logger.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { queryEvents } from '../../lib/query/events-query.ts'
import type { EventsParams } from '../../lib/query/events-query.ts'
import { parseFilter } from '../../lib/query/filter-parser.ts'
import { filterToSql } from '../../lib/query/filter-sql.ts'

const hour = 3_600_000
const day0 = 1_763_596_800_000 // 2025-11-20T00:00:00Z
const end = day0 + 2 * 24 * hour

const db = await createTestDatabase(t)
await migrate(db.clickhouse, createLogger({ level: 'silent' }))

// 3,000 events: a burst of 1,000 in the last 2 s (ten per ts), 1,500 over the two days, 500 in
// one minute 30 h ago, and one rare event per 250. seq is unique (the row number).
const rows: string[] = []
for (let i = 0; i < 3000; i++) {
  const ts = i < 1000 ? end - 1 - Math.floor(i / 10) * 20
    : i < 2500 ? day0 + Math.floor((i - 1000) * (2 * 24 * hour - 10_000) / 1500)
      : end - 30 * hour + (i - 2500) * 100
  const status = i % 250 === 7 ? 507 : [200, 404, 500][i % 3]
  const host = i % 4 === 0 ? 'api' : 'web'
  rows.push(['org_a', 'web', ts, ts, host, `/p/${i % 50}`, 'GET', status, '\\N', '\\N', '\\N', '\\N', `line ${i}`, '\\N', '{}', i].join('\t'))
}
// Another stream's events in the same span must never show.
rows.push(['org_a', 'other', end - 5, end - 5, 'api', '/x', 'GET', 507, '\\N', '\\N', '\\N', '\\N', 'x', '\\N', '{}', 9999].join('\t'))
await db.clickhouse.insertRaw(
  'INSERT INTO events (org_id, stream, ts, received_at, host, path, method, status, rt, bytes, src, user_agent, message, filename, attrs, seq) FORMAT TabSeparated',
  Buffer.from(rows.join('\n') + '\n'))

/** Every page of a walk as "ts.seq" lists, and the cursors between them. */
async function walk (params: Omit<EventsParams, 'cursor'>): Promise<{ pages: string[][], cursors: Array<string | null> }> {
  const pages: string[][] = []
  const cursors: Array<string | null> = []
  let cursor: string | null = null
  do {
    const page = await queryEvents(db.clickhouse, { ...params, cursor })
    pages.push(page.events.map((e) => `${e.ts}.${e.message}`))
    cursors.push(page.next_cursor)
    cursor = page.next_cursor
  } while (cursor !== null && pages.length < 1000)
  return { pages, cursors }
}

const cases: Array<{ q: string, from: number, to: number, limit: number }> = [
  { q: '', from: day0, to: end, limit: 100 },
  { q: '', from: day0, to: end, limit: 37 },
  // Pages smaller than the burst's ten events per ts: every page boundary splits a ts.
  { q: '', from: end - 3000, to: end, limit: 3 },
  { q: '', from: end - 30 * hour - 1000, to: end - 29 * hour, limit: 33 },
  { q: 'status:507', from: day0, to: end, limit: 5 },
  { q: 'status:507 host:api', from: day0, to: end, limit: 100 },
  { q: 'status:404 -host:api', from: day0, to: end, limit: 250 },
  { q: 'line', from: day0 + hour, to: end - hour, limit: 1000 },
  { q: 'status:418', from: day0, to: end, limit: 100 },
]

for (const c of cases) {
  t.test(`q=${JSON.stringify(c.q)} limit ${c.limit} over ${(c.to - c.from) / hour} h`, async (t) => {
    const filter = c.q === '' ? undefined : filterToSql(parseFilter(c.q))
    const params = { orgId: 'org_a', stream: 'web', from: c.from, to: c.to, filter, limit: c.limit }
    const windowed = await walk(params)
    const single = await walk({ ...params, windowed: false })
    t.same(windowed.pages, single.pages, 'the same pages as one query')
    t.same(windowed.cursors, single.cursors, 'the same cursors')
    const seen = windowed.pages.flat()
    t.equal(new Set(seen).size, seen.length, 'no event twice')
    const where = filter ? `AND ${filter}` : ''
    const [{ n }] = await db.clickhouse.query<{ n: number }>(
      `SELECT count() AS n FROM events WHERE org_id = 'org_a' AND stream = 'web' AND ts >= ${c.from} AND ts < ${c.to} ${where}`)
    t.equal(seen.length, Number(n), 'every event of the range once')
  })
}
