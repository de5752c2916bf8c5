// GET /api/streams/{stream}/stats through the real server: totals, series and top lists equal
// what was ingested (exact counts on a known data set), q narrows them, bad parameters are 400.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'

let s: TestServer
const minute = 60_000
const base = Math.floor((Date.now() - 30 * minute) / minute) * minute
t.before(async () => {
  s = await startServer(t)
  const tgt = await createIngestTarget(s, 'web')
  // 120 events over 10 minutes: paths /a (60), /b (40), /missing (20, all 404); statuses by i.
  const lines = Array.from({ length: 120 }, (_, i) => {
    const path = i < 60 ? '/a' : i < 100 ? '/b' : '/missing'
    const status = path === '/missing' ? 404 : i % 10 === 0 ? 500 : 200
    return JSON.stringify({ ts: base + (i % 10) * minute, path, status, rt: path === '/b' ? 1 : 0.1, bytes: 100, src: `10.0.0.${i % 3}`, host: i % 2 ? 'h1' : 'h2' })
  })
  const r = await postIngest(tgt, lines.join('\n'))
  if (r.body.ingested !== 120) throw new Error('setup failed')
})

const range = () => `from=${base}&to=${base + 10 * minute}`

t.test('totals, series and top lists match the data', async (t) => {
  const r = await s.api('GET', `/api/streams/web/stats?${range()}&step=1m`)
  t.equal(r.status, 200)
  t.equal(r.body.step_ms, minute)
  t.equal(r.body.series.length, 10)
  t.ok(r.body.series.every((p: { count: number }) => p.count === 12), 'twelve events a minute')
  t.equal(r.body.series.reduce((n: number, p: { status_4xx: number }) => n + p.status_4xx, 0), 20)
  t.match(r.body.totals, { count: 120, bytes: 12000, unique_sources: 3 })
  t.equal(r.body.totals.error_rate, (20 + 10) / 120, 'error rate counts 4xx and 5xx')
  t.same(r.body.top.paths.map((p: { path: string, count: number }) => [p.path, p.count]), [['/a', 60], ['/b', 40], ['/missing', 20]])
  t.same(r.body.top.not_found_paths.map((p: { path: string, count: number }) => [p.path, p.count]), [['/missing', 20]])
  t.equal(r.body.top.slowest_paths[0].path, '/b')
  t.same(r.body.top.status.map((x: { status: number, count: number }) => [x.status, x.count]), [[200, 90], [404, 20], [500, 10]])
  t.same(r.body.top.hosts.map((x: { host: string, count: number }) => x.count), [60, 60])
})

t.test('q narrows series, totals and top lists', async (t) => {
  const r = await s.api('GET', `/api/streams/web/stats?${range()}&q=${encodeURIComponent('path:/b')}`)
  t.equal(r.status, 200)
  t.equal(r.body.totals.count, 40)
  t.same(r.body.top.paths.map((p: { path: string }) => p.path), ['/b'])
})

t.test('lists=none: the same series and groups without the top lists', async (t) => {
  const all = await s.api('GET', `/api/streams/web/stats?${range()}&step=1m&by=host`)
  const none = await s.api('GET', `/api/streams/web/stats?${range()}&step=1m&by=host&lists=none`)
  t.equal(none.status, 200)
  t.same(none.body.series, all.body.series)
  t.same(none.body.groups, all.body.groups)
  t.same([none.body.totals.count, none.body.totals.bytes, none.body.totals.error_rate], [120, 12000, (20 + 10) / 120])
  t.equal(none.body.totals.unique_sources, null, 'unique sources are a top list\'s count')
  t.same(Object.values(none.body.top), Array.from({ length: 9 }, () => []), 'every list empty')
  t.same((await s.api('GET', `/api/streams/web/stats?${range()}&lists=all`)).body, (await s.api('GET', `/api/streams/web/stats?${range()}`)).body, 'all is the default')
})

t.test('bad parameters are 400 invalid_query', async (t) => {
  for (const qs of ['step=fast', 'top=0', 'top=1000', `from=${base}&to=${base - 1}`, 'q=' + encodeURIComponent('status:abc'), 'lists=some']) {
    const r = await s.api('GET', `/api/streams/web/stats?${qs}`)
    t.equal(r.status, 400, qs)
    t.equal(r.body.error, 'invalid_query')
  }
  t.equal((await s.api('GET', '/api/streams/web/stats?lists=0')).body.parameter, 'lists')
})

t.test('an rt past Float32\'s range: stats answer, its percentiles read the largest Float32 (explore34 F8)', async (t) => {
  const tgt = await createIngestTarget(s, 'rtbig')
  const hour = 3_600_000
  const at = Math.floor((Date.now() - 3 * hour) / hour) * hour + 5 * minute
  const r = await postIngest(tgt, [
    JSON.stringify({ ts: at, path: '/a', status: 200, rt: 0.2 }),
    JSON.stringify({ ts: at, path: '/huge', status: 200, rt: 1e39 }),
  ].join('\n'))
  t.equal(r.body.ingested, 2)
  // Raw rows (a few minutes), the minute rollup (hours) and the hour rollup (days).
  for (const range of [`from=${at - minute}&to=${at + minute}`, `from=${at - 2 * hour}&to=${at + 2 * hour}`, 'from=now-5d']) {
    const stats = await s.api('GET', `/api/streams/rtbig/stats?${range}`)
    t.equal(stats.status, 200, range)
    t.equal(stats.body.totals.count, 2, range)
    const p99 = Math.max(...stats.body.series.map((p: { rt_p99: number | null }) => p.rt_p99 ?? 0))
    t.equal(p99, 3.402823e38, `${range}: the point's p99`)
    t.equal(stats.body.top.slowest_paths[0].path, '/huge', range)
  }
})
