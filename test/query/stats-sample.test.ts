// stats?by= over more events than `sample` (lib/query/stats-groups.ts, docs/api.md section 7.4):
// counted over one slice of each point and scaled, `sampled` true; `sample=0` exact.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import { groupSlices, sliceRanges, slicedRowsSql } from '../../lib/query/stats-groups.ts'
import { planStats } from '../../lib/query/stats-plan.ts'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { createLogger } from '../../lib/logger.ts'
import { rawSql, sql } from '../../lib/storage/sql.ts'

const hour = 3_600_000
const base = Math.floor((Date.now() - 3 * hour) / hour) * hour

t.test('groupSlices: about `sample` events, a slice per point inside it, none when few', async (t) => {
  const plan = planStats({ orgId: 'o', stream: 's', from: base, to: base + hour, stepMs: 60_000 })
  const slices = groupSlices(plan, 1_000_000, 50_000)!
  t.equal(slices.widthMs, 3000, '5% of each minute')
  t.equal(groupSlices(plan, 40_000, 50_000), null, 'fewer events than the sample: exact')
  t.equal(groupSlices(plan, 1_000_000, 0), null, 'sample=0: exact')
  t.equal(groupSlices(plan, 90_000, 50_000), null, 'a slice past half its point: exact')
})

t.test('a sampled by=: scaled counts close to the exact ones, the points adding up, sampled true', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'big')
  // 24,000 events over an hour: user "a" 60%, "b" 30%, "c" 10%; evenly over time.
  const users = (i: number): string => i % 10 < 6 ? 'a' : i % 10 < 9 ? 'b' : 'c'
  for (let part = 0; part < 4; part++) {
    const lines = Array.from({ length: 6000 }, (_, j) => {
      const i = part * 6000 + j
      return JSON.stringify({ ts: base + Math.floor(i * hour / 24_000), msg: 'x', user: { id: users(i) } })
    })
    const r = await postIngest(tgt, lines.join('\n'))
    t.equal(r.body.ingested, 6000)
  }
  const range = `from=${base}&to=${base + hour}&step=1m&by=user.id`
  const exact = await s.api('GET', `/api/streams/big/stats?${range}&sample=0`)
  t.equal(exact.status, 200)
  t.equal(exact.body.sampled, false)
  t.same(exact.body.groups, [{ value: 'a', count: 14_400 }, { value: 'b', count: 7200 }, { value: 'c', count: 2400 }])
  const sampled = await s.api('GET', `/api/streams/big/stats?${range}&sample=4000`)
  t.equal(sampled.status, 200)
  t.equal(sampled.body.sampled, true)
  t.same(sampled.body.groups.map((g: { value: string }) => g.value), ['a', 'b', 'c'], 'the same order')
  for (const g of sampled.body.groups as Array<{ value: string, count: number }>) {
    const want = exact.body.groups.find((e: { value: string }) => e.value === g.value).count
    t.ok(Math.abs(g.count - want) <= want * 0.1, `${g.value}: ${g.count} within 10% of ${want}`)
  }
  const summed: Record<string, number> = {}
  for (const point of sampled.body.series as Array<{ groups: Record<string, number> }>) {
    for (const [v, n] of Object.entries(point.groups)) summed[v] = (summed[v] ?? 0) + n
  }
  t.same(Object.fromEntries((sampled.body.groups as Array<{ value: string, count: number }>).map((g) => [g.value, g.count])), summed, 'the groups are the sums of the points')
  // With q, the matches decide: 9,600 events of b and c, at most sample=10000 of the 24,000 in
  // range, are counted exactly (explore28b M1: a q of 9 matches over 1.2 M events was sampled).
  const narrow = await s.api('GET', `/api/streams/big/stats?${range}&sample=10000&q=${encodeURIComponent('-user.id:a')}`)
  t.equal(narrow.status, 200)
  t.equal(narrow.body.sampled, false, 'fewer matches than the sample: exact')
  t.same(narrow.body.groups, [{ value: 'b', count: 7200 }, { value: 'c', count: 2400 }])
  t.equal((narrow.body.series as Array<{ groups: Record<string, number> }>).reduce((n, p) => n + (p.groups.c ?? 0), 0), 2400, 'the points exact too')
  const wide = await s.api('GET', `/api/streams/big/stats?${range}&sample=4000&q=${encodeURIComponent('-user.id:a')}`)
  t.equal(wide.body.sampled, true, 'more matches than the sample: sampled')
  const bad = await s.api('GET', `/api/streams/big/stats?${range}&sample=-1`)
  t.equal(bad.status, 400)
  t.equal(bad.body.error, 'invalid_query')
})

t.test('the slices as one statement each and as a test per row count the same rows', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, createLogger({ level: 'warn', fd: 2 }))
  const plan = planStats({ orgId: 'o', stream: 's', from: base, to: base + hour, stepMs: 60_000 })
  const slices = groupSlices(plan, 1_000_000, 50_000)!
  const ranges = sliceRanges(plan, slices)
  t.equal(ranges.length, 60, 'a slice per point')
  t.ok(ranges.every(([lo, hi], i) => hi - lo === slices.widthMs && lo >= base + i * 60_000 && hi <= base + (i + 1) * 60_000), 'each inside its point')
  // 36,000 events, one every 100 ms, with a host among five; slice edges fall between and on them.
  const rows = Array.from({ length: 36_000 }, (_, i) => JSON.stringify({ org_id: 'o', stream: 's', ts: base + i * 100, received_at: base, host: `h${i % 5}`, attrs: '{}', seq: i + 1, size: 10 }))
  await clickhouse.insertRaw('INSERT INTO events (org_id, stream, ts, received_at, host, attrs, seq, size) FORMAT JSONEachRow', Buffer.from(rows.join('\n')))
  const by = { text: rawSql('host'), present: rawSql('isNotNull(host)') }
  const where = sql`org_id = 'o' AND stream = 's' AND ts >= ${plan.from} AND ts < ${plan.to}`
  const counts = async (perSlice: boolean): Promise<string[]> => (await clickhouse.query<{ t: number, value: string, n: number }>(
    sql`SELECT t, value, count() AS n FROM (${slicedRowsSql(plan, by, where, slices, perSlice)}) GROUP BY t, value ORDER BY t, value`)).map((r) => `${r.t} ${r.value} ${r.n}`)
  const union = await counts(true)
  t.ok(union.length > 0)
  t.same(union, await counts(false), 'the same counts per point and value')
  const inRanges = ranges.reduce((n, [lo, hi]) => n + Math.ceil((hi - base) / 100) - Math.ceil((lo - base) / 100), 0)
  t.equal(union.reduce((n, r) => n + Number(r.split(' ')[2]), 0), inRanges, 'every event in a slice, once')
})

t.test('a sampled by=: each point scaled by its events, so a field every event has leaves nothing over; nearly unique values counted exactly', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'tiers')
  // 24,000 events over an hour, bunched unevenly within each minute (the first 20 s hold half of
  // them): every event has a tier; five hot users (200, 150, 120, 100, 80 events), the rest unique.
  const hot = [['hot-a', 200], ['hot-b', 150], ['hot-c', 120], ['hot-d', 100], ['hot-e', 80]] as const
  const users: string[] = []
  for (const [user, n] of hot) for (let k = 0; k < n; k++) users.push(user)
  const spread = Math.floor(24_000 / users.length)
  const userOf = (i: number): string => i % spread === 0 && i / spread < users.length ? users[i / spread] : `u${i}`
  const tsOf = (i: number): number => {
    const minute = Math.floor(i / 400)
    const k = i % 400
    return base + minute * 60_000 + (k < 200 ? k * 100 : 20_000 + (k - 200) * 200)
  }
  for (let part = 0; part < 4; part++) {
    const lines = Array.from({ length: 6000 }, (_, j) => {
      const i = part * 6000 + j
      return JSON.stringify({ ts: tsOf(i), msg: 'x', tier: ['free', 'pro', 'enterprise'][i % 3], user: userOf(i) })
    })
    t.equal((await postIngest(tgt, lines.join('\n'))).body.ingested, 6000)
  }
  const range = `from=${base}&to=${base + hour}&step=1m`
  const tiers = await s.api('GET', `/api/streams/tiers/stats?${range}&by=tier&sample=4000`)
  t.equal(tiers.status, 200)
  t.equal(tiers.body.sampled, true)
  t.equal(tiers.body.totals.count, 24_000)
  for (const point of tiers.body.series as Array<{ t: number, count: number, groups: Record<string, number> }>) {
    const sum = Object.values(point.groups).reduce((a, b) => a + b, 0)
    t.equal(sum, point.count, `point ${point.t}: its groups are its events`)
  }
  for (const g of tiers.body.groups as Array<{ value: string, count: number }>) t.ok(Math.abs(g.count - 8000) <= 800, `${g.value}: ${g.count} within 10% of 8000`)

  const exact = await s.api('GET', `/api/streams/tiers/stats?${range}&by=user&top=5&sample=0`)
  t.same(exact.body.groups, hot.map(([value, count]) => ({ value, count })))
  const users5 = await s.api('GET', `/api/streams/tiers/stats?${range}&by=user&top=5&sample=4000`)
  t.same(users5.body.groups, exact.body.groups, 'values seen too few times in the slices to rank them: counted exactly')
  t.equal(users5.body.sampled, true, 'and the answer says the list came from a sample (a value the slices missed would be missing)')
  t.same(users5.body.series, exact.body.series, 'the points too')
})

t.test('a burst between two slices still makes the list when the slices\' few values are counted again', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'gap')
  // An hour at 30 s points, sample 1,000 of 2,001 events: each slice about 15 s of its point.
  const plan = planStats({ orgId: 'o', stream: 'gap', from: base, to: base + hour, stepMs: 30_000 })
  const slices = groupSlices(plan, 2001, 1000)!
  const ranges = sliceRanges(plan, slices)
  // 2,000 events within 5 s outside their point's slice, and one lonely event inside another
  // point's slice: the slices see the lonely one only.
  const burstPoint = ranges.findIndex(([lo], k) => lo - (base + k * 30_000) >= 6000)
  const burstAt = base + burstPoint * 30_000
  const lonelyPoint = burstPoint + 20
  const lonelyAt = ranges[lonelyPoint][0] + 1
  const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ ts: burstAt + Math.floor(i * 2.5), service: 'api' }))
  lines.push(JSON.stringify({ ts: lonelyAt, service: 'cron' }))
  t.equal((await postIngest(tgt, lines.join('\n'))).body.ingested, 2001)
  const r = await s.api('GET', `/api/streams/gap/stats?from=${base}&to=${base + hour}&step=30s&by=service&sample=1000`)
  t.equal(r.status, 200)
  t.same(r.body.groups, [{ value: 'api', count: 2000 }, { value: 'cron', count: 1 }], 'the burst counted, exactly, beside the lonely event')
  t.equal(r.body.sampled, true)
  const burst = (r.body.series as Array<{ t: number, groups: Record<string, number> }>).find((p) => p.t === burstAt)
  t.same(burst?.groups, { api: 2000 })
})
