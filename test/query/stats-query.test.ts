// Stats against a real ClickHouse: a seeded data set over two days in three streams of two orgs,
// checked against a reference computed here from the same rows. Counts, totals and top lists must
// match exactly from raw rows and from each rollup; rt percentiles (t-digest estimates) must fall
// within a rank tolerance of the exact ones.
import t from 'tap'
import type { Test } from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { createLogger } from '../../lib/logger.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { rawSql } from '../../lib/storage/sql.ts'
import { queryStats, planStats, roundPercentile } from '../../lib/query/stats-query.ts'
import { parseFilter } from '../../lib/query/filter-parser.ts'
import { filterToSql } from '../../lib/query/filter-sql.ts'
import type { StatsResult, StatsSource } from '../../lib/query/stats-query.ts'
import type { ClickHouse, RequestOptions } from '../../lib/storage/clickhouse.ts'
import type { SqlFragment } from '../../lib/storage/sql.ts'
import { fieldPresentSql, fieldTextSql, resolveField } from '../../lib/query/field-ref.ts'
import { noLegacyRows } from '../../lib/query/attr-sql.ts'
import { readError } from '../../lib/query/read-limits.ts'
import { SluiceError } from '../../lib/errors.ts'
import { createRandom } from '../../bench/payload.ts' // seeded, so every run stores the same rows

const minute = 60_000
const hour = 60 * minute
const day0 = 1_763_596_800_000 // 2025-11-20T00:00:00Z
const gap: [number, number] = [day0 + 5 * hour, day0 + 6 * hour] // no events of org_a/web
const noRtHour: [number, number] = [day0 + 20 * hour, day0 + 21 * hour] // events, none with an rt

interface Row {
  org_id: string
  stream: string
  ts: number
  host: string | null
  path: string | null
  method: string | null
  status: number | null
  rt: number | null
  bytes: number | null
  src: string | null
  user_agent: string | null
  filename: string | null
  /** events.level (migration 6); '' stands for an empty string stored by some writer: no level. */
  level: string | null
}

const paths = ['/', '/login', '/api/orders', '/api/orders/search', '/api/users', '/static/app.js', '/health', '/missing', '/slow', '/x\ty', "/it's"]
const statuses = [200, 200, 200, 200, 200, 201, 204, 301, 304, 400, 404, 404, 500, 503, 101, null]
const hosts = ['web-1', 'web-2', 'web-3', null]
const agents = ['curl/8.5.0', 'Mozilla/5.0', 'Go-http-client/2.0', 'kube-probe/1.30', null]
const filenames = ['/var/log/app.log', '/var/log/nginx/access.log', null, null]
const levels = ['info', 'info', 'info', 'warn', 'error', 'debug', 'fatal', 'trace', null, '']

/** `n` rows of one stream spread over two days; every nullable field is sometimes absent. */
function generateRows (orgId: string, stream: string, n: number, seed: number): Row[] {
  const random = createRandom(seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * random() * list.length)]
  const rows: Row[] = []
  while (rows.length < n) {
    // Every 50th event sits exactly on an hour boundary: half-open ranges must place it once.
    const ts = rows.length % 50 === 0
      ? day0 + Math.floor(random() * 48) * hour
      : day0 + Math.floor(random() * 48 * hour)
    if (stream === 'web' && orgId === 'org_a' && ts >= gap[0] && ts < gap[1]) continue
    const path = random() < 0.05 ? null : pick(paths)
    const status = path === '/missing' ? 404 : pick(statuses)
    const inNoRtHour = ts >= noRtHour[0] && ts < noRtHour[1]
    const rt = inNoRtHour || random() < 0.1
      ? null
      : Math.round((path === '/slow' ? 2 + 3 * random() : random() * random() * 1.5) * 1000) / 1000
    rows.push({
      org_id: orgId,
      stream,
      ts,
      host: pick(hosts),
      path,
      method: random() < 0.1 ? null : 'GET',
      status,
      rt,
      bytes: random() < 0.05 ? null : Math.floor(random() * 10_000),
      src: random() < 0.03 ? null : `10.0.${Math.floor(random() * 4)}.${Math.floor(random() * random() * 40)}`,
      user_agent: pick(agents),
      filename: pick(filenames),
      level: levels[rows.length % levels.length], // not from random(): the other fields stay as they were
    })
  }
  return rows
}

const columns = ['org_id', 'stream', 'ts', 'received_at', 'host', 'path', 'method', 'status', 'rt', 'bytes', 'src', 'user_agent', 'filename', 'level', 'attrs'] as const

function tsvField (value: string | number | null): string {
  if (value === null) return '\\N'
  return String(value).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n')
}

function toTsv (rows: Row[]): Buffer {
  return Buffer.from(rows.map((r) => [
    r.org_id, r.stream, r.ts, r.ts + 100, r.host, r.path, r.method, r.status, r.rt, r.bytes, r.src, r.user_agent, r.filename, r.level, '{}',
  ].map(tsvField).join('\t') + '\n').join(''))
}

// ---- The reference: what the stats must be, computed from the rows. ----

interface Expected {
  series: Array<{ t: number, count: number, status_2xx: number, status_3xx: number, status_4xx: number, status_5xx: number, bytes: number, rts: number[] }>
  totals: StatsResult['totals']
  top: Omit<StatsResult['top'], 'paths' | 'slowest_paths'> & { paths: Array<{ path: string, count: number, error_share: number }> }
  /** Every path's event count and sorted rt values. */
  pathCounts: Map<string, number>
  pathRts: Map<string, number[]>
  topN: number
}

function compareValues (a: string | number, b: string | number): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function topCounts<T extends string | number> (values: Array<T | null>, n: number): Array<[T, number]> {
  const counts = new Map<T, number>()
  for (const v of values) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1)
  return [...counts].sort((a, b) => b[1] - a[1] || compareValues(a[0], b[0])).slice(0, n)
}

const classOf = (status: number | null): number => status === null ? 0 : Math.floor(status / 100)

function expectStats (all: Row[], orgId: string, stream: string, from: number, to: number, stepMs: number, topN = 10,
  keep: (r: Row) => boolean = () => true): Expected {
  const rows = all.filter((r) => r.org_id === orgId && r.stream === stream && r.ts >= from && r.ts < to && keep(r))
  const series: Expected['series'] = []
  for (let t = from; t < to; t += stepMs) {
    const inStep = rows.filter((r) => r.ts >= t && r.ts < t + stepMs)
    series.push({
      t,
      count: inStep.length,
      status_2xx: inStep.filter((r) => classOf(r.status) === 2).length,
      status_3xx: inStep.filter((r) => classOf(r.status) === 3).length,
      status_4xx: inStep.filter((r) => classOf(r.status) === 4).length,
      status_5xx: inStep.filter((r) => classOf(r.status) === 5).length,
      bytes: inStep.reduce((s, r) => s + (r.bytes ?? 0), 0),
      rts: inStep.flatMap((r) => r.rt === null ? [] : [r.rt]).sort((a, b) => a - b),
    })
  }
  const errors = (list: Row[]) => list.filter((r) => (r.status ?? 0) >= 400).length
  const pathCounts = new Map<string, number>()
  const pathRts = new Map<string, number[]>()
  for (const r of rows) {
    if (r.path === null) continue
    pathCounts.set(r.path, (pathCounts.get(r.path) ?? 0) + 1)
    const list = pathRts.get(r.path) ?? []
    if (r.rt !== null) list.push(r.rt)
    pathRts.set(r.path, list)
  }
  for (const list of pathRts.values()) list.sort((a, b) => a - b)
  return {
    series,
    totals: {
      count: rows.length,
      error_rate: rows.length > 0 ? errors(rows) / rows.length : 0,
      bytes: rows.reduce((s, r) => s + (r.bytes ?? 0), 0),
      unique_sources: new Set(rows.flatMap((r) => r.src === null ? [] : [r.src])).size,
    },
    top: {
      paths: topCounts(rows.map((r) => r.path), topN).map(([path, count]) => {
        return { path, count, error_share: errors(rows.filter((r) => r.path === path)) / count }
      }),
      hosts: topCounts(rows.map((r) => r.host), topN).map(([host, count]) => ({ host, count })),
      status: topCounts(rows.map((r) => r.status), topN).map(([status, count]) => ({ status, count })),
      sources: topCounts(rows.map((r) => r.src), topN).map(([src, count]) => ({ src, count })),
      user_agents: topCounts(rows.map((r) => r.user_agent), topN).map(([ua, count]) => ({ user_agent: ua, count })),
      filenames: topCounts(rows.map((r) => r.filename), topN).map(([filename, count]) => ({ filename, count })),
      levels: topCounts(rows.map((r) => r.level === '' ? null : r.level), topN).map(([level, count]) => ({ level, count })),
      not_found_paths: topCounts(rows.map((r) => r.status === 404 ? r.path : null), topN).map(([path, count]) => ({ path, count })),
    },
    pathCounts,
    pathRts,
    topN,
  }
}

/**
 * A t-digest estimate is good when its rank is within `tolerance` of the level's: it lies
 * between the exact values at level - tolerance and level + tolerance (with Float32 slack).
 */
function isNearQuantile (estimate: number | null, sorted: number[], level: number, tolerance = 0.05): boolean {
  if (sorted.length === 0) return estimate === null
  if (estimate === null) return false
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))]
  const slack = 1e-6 * Math.max(1, Math.abs(estimate))
  return estimate >= at(level - tolerance) - slack && estimate <= at(level + tolerance) + slack
}

function checkAgainst (t: Test, got: StatsResult, want: Expected, label: string): void {
  t.strictSame(got.series.map(({ rt_p50: _a, rt_p95: _b, rt_p99: _c, ...counts }) => counts),
    want.series.map(({ rts: _rts, ...counts }) => counts), `${label}: series counts`)
  const badRt = got.series.filter((p, i) => {
    const rts = want.series[i].rts
    return !isNearQuantile(p.rt_p50, rts, 0.5) || !isNearQuantile(p.rt_p95, rts, 0.95) || !isNearQuantile(p.rt_p99, rts, 0.99)
  })
  t.strictSame(badRt, [], `${label}: series rt percentiles near the exact ones, null without rt`)
  t.strictSame(got.totals, want.totals, `${label}: totals`)
  const { paths, slowest_paths: slowest, ...countLists } = got.top
  const { paths: wantPaths, ...wantCountLists } = want.top
  t.strictSame(countLists, wantCountLists, `${label}: count-only top lists`)
  t.strictSame(paths.map(({ rt_p95: _p, ...p }) => p), wantPaths, `${label}: top paths`)
  const rtsOf = (path: string) => want.pathRts.get(path) ?? []
  t.strictSame(paths.filter((p) => !isNearQuantile(p.rt_p95, rtsOf(p.path), 0.95)), [], `${label}: top paths' rt p95`)
  // Every path here is among the 100 busiest, so slowest_paths ranks all those with an rt.
  const withRt = [...want.pathRts.values()].filter((rts) => rts.length > 0).length
  t.equal(slowest.length, Math.min(withRt, want.topN), `${label}: slowest paths holds the paths with an rt, up to N`)
  t.strictSame(slowest.filter((s) => !isNearQuantile(s.rt_p95, rtsOf(s.path), 0.95)), [], `${label}: slowest paths' rt p95`)
  t.ok(slowest.every((s, i) => i === 0 || slowest[i - 1].rt_p95 >= s.rt_p95), `${label}: slowest paths ranked by rt p95`)
  t.strictSame(slowest.filter((s) => s.count !== want.pathCounts.get(s.path)), [], `${label}: slowest paths' counts`)
}

/** The same request from each source, minus rt values, which are estimates. */
function countsOnly (r: StatsResult): unknown {
  return {
    ...r,
    series: r.series.map(({ rt_p50: _a, rt_p95: _b, rt_p99: _c, ...p }) => p),
    top: { ...r.top, paths: r.top.paths.map(({ rt_p95: _p, ...p }) => p), slowest_paths: r.top.slowest_paths.map((s) => s.path) },
  }
}

// ---- The data set, stored once for the whole file. ----

/** A path seen only between 10:17 and 11:00 of day 0, the slowest of all: from a rollup, its rt
 * can only come from the raw rows of a partial hour. */
const edgeOnly: Row[] = [0, 1, 2].map((i) => ({
  org_id: 'org_a', stream: 'web', ts: day0 + 10 * hour + 30 * minute + i, host: 'web-1', path: '/edge-only',
  method: 'GET', status: 200, rt: 9, bytes: 10, src: '10.9.9.9', user_agent: 'curl/8.5.0', filename: null, level: 'error',
}))
const rows = [
  ...generateRows('org_a', 'web', 3000, 1),
  ...generateRows('org_a', 'api', 600, 2),
  ...generateRows('org_b', 'web', 600, 3),
  ...edgeOnly,
]
const { clickhouse } = await createTestDatabase(t, 'sluice_test_stats')
await migrate(clickhouse, createLogger({ level: 'silent' }))
// Several inserts, each a block of its own, leave several partial rows per rollup key in
// unmerged parts: reads must merge them.
const inserts = 4
for (let i = 0; i < inserts; i++) {
  await clickhouse.insertRaw(`INSERT INTO events (${columns.join(', ')}) FORMAT TabSeparated`, toTsv(rows.filter((_, k) => k % inserts === i)))
}

const stream = { orgId: 'org_a', stream: 'web' }
const sources: StatsSource[] = ['events', 'events_1m', 'events_1h']

t.test('the migration creates a table and a view per rollup', async (t) => {
  const names = (await clickhouse.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${clickhouse.database}'`)).map((r) => r.name)
  for (const table of ['events_1m', 'events_1h', 'events_by_path_1h', 'events_by_host_1h', 'events_by_status_1h', 'events_by_src_1h', 'events_by_user_agent_1h', 'events_by_filename_1h', 'events_by_level_1h']) {
    t.ok(names.includes(table), `${table} exists`)
    t.ok(names.includes(`${table}_mv`), `${table}_mv exists`)
  }
})

t.test('the answer has exactly the documented shape (docs/api.md section 7.4), numbers as numbers', async (t) => {
  const got = await queryStats(clickhouse, { ...stream, from: day0, to: day0 + 48 * hour, stepMs: hour, source: 'events_1h' })
  const keys = (o: object) => Object.keys(o).sort()
  t.strictSame(keys(got), ['from', 'series', 'step_ms', 'to', 'top', 'totals'])
  t.strictSame(keys(got.series[0]), ['bytes', 'count', 'rt_p50', 'rt_p95', 'rt_p99', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx', 't'])
  t.strictSame(keys(got.totals), ['bytes', 'count', 'error_rate', 'unique_sources'])
  t.strictSame(keys(got.top), ['filenames', 'hosts', 'levels', 'not_found_paths', 'paths', 'slowest_paths', 'sources', 'status', 'user_agents'])
  const items: Record<string, string[]> = {
    paths: ['count', 'error_share', 'path', 'rt_p95'], hosts: ['count', 'host'], status: ['count', 'status'],
    sources: ['count', 'src'], user_agents: ['count', 'user_agent'], filenames: ['count', 'filename'], levels: ['count', 'level'],
    not_found_paths: ['count', 'path'], slowest_paths: ['count', 'path', 'rt_p95'],
  }
  for (const [list, fields] of Object.entries(items)) {
    const entries = got.top[list as keyof StatsResult['top']] as object[]
    t.ok(entries.length > 0, `${list} has entries`)
    t.ok(entries.every((e) => keys(e).join() === fields.join()), `${list} entries hold ${fields.join(', ')}`)
  }
  const numbers = JSON.stringify(got).match(/"(?:count|bytes|t|from|to|step_ms|status|status_[2-5]xx|unique_sources)":"/)
  t.equal(numbers, null, 'no count, time or status is sent as a string')
})

t.test('raw rows and both rollups give the reference answer over whole hours', async (t) => {
  const from = day0
  const to = day0 + 48 * hour
  const want = expectStats(rows, 'org_a', 'web', from, to, hour)
  const answers: StatsResult[] = []
  for (const source of sources) {
    const got = await queryStats(clickhouse, { ...stream, from, to, stepMs: hour, source })
    t.equal(got.from, from)
    t.equal(got.to, to)
    t.equal(got.step_ms, hour)
    checkAgainst(t, got, want, source)
    answers.push(got)
  }
  t.same(countsOnly(answers[1]), countsOnly(answers[0]), 'events_1m answers as raw rows do')
  t.same(countsOnly(answers[2]), countsOnly(answers[0]), 'events_1h answers as raw rows do')
})

t.test('partial hours at both ends: hourly rollups plus raw edges give the raw-row answer', async (t) => {
  const from = day0 + 10 * hour + 17 * minute
  const to = day0 + 33 * hour + 43 * minute
  const want = expectStats(rows, 'org_a', 'web', from, to, minute, 5)
  const raw = await queryStats(clickhouse, { ...stream, from, to, stepMs: minute, topN: 5, source: 'events' })
  const rollup = await queryStats(clickhouse, { ...stream, from, to, stepMs: minute, topN: 5, source: 'events_1m' })
  t.equal(raw.series.length, (to - from) / minute)
  checkAgainst(t, raw, want, 'events')
  checkAgainst(t, rollup, want, 'events_1m')
  t.same(countsOnly(rollup), countsOnly(raw))
  for (const got of [raw, rollup]) {
    t.same(got.top.slowest_paths[0], { path: '/edge-only', rt_p95: 9, count: 3 }, 'a path seen in a partial hour only has its rt')
  }
  t.equal(rollup.top.sources.length, 5, 'topN sets the length of a list with more values')
})

t.test('a partial hour with no events in the rest of its hour is read from its rollup row', async (t) => {
  // from 08:17 to 10:43. Stream edges-full has events in the rest of both partial hours (08:10 and
  // 10:50), which must not count; edges-quiet has none there, so its hourly rows stand in for
  // the raw rows of 08:17-09:00 and 10:00-10:43.
  const at = (h: number, m: number) => day0 + h * hour + m * minute
  const base = { org_id: 'org_a', host: 'web-1', method: 'GET', bytes: 1, src: '10.1.1.1', user_agent: 'curl/8.5.0', filename: null, level: 'warn' }
  const make = (stream: string, times: Array<[number, number, string, number]>): Row[] =>
    times.map(([h, m, path, status], i) => ({ ...base, stream, ts: at(h, m) + i, path, status, rt: 0.01 * (i + 1) }))
  const inside: Array<[number, number, string, number]> = [[8, 20, '/a', 200], [8, 50, '/b', 404], [9, 15, '/c', 500], [10, 5, '/d', 200], [10, 30, '/d', 200]]
  const edgeRows = [
    ...make('edges-full', [[8, 10, '/x', 503], ...inside, [10, 50, '/x', 503]]),
    ...make('edges-quiet', inside),
  ]
  await clickhouse.insertRaw(`INSERT INTO events (${columns.join(', ')}) FORMAT TabSeparated`, toTsv(edgeRows))
  const from = at(8, 17)
  const to = at(10, 43)
  for (const name of ['edges-full', 'edges-quiet']) {
    const raw = await queryStats(clickhouse, { orgId: 'org_a', stream: name, from, to, stepMs: minute, source: 'events' })
    const rollup = await queryStats(clickhouse, { orgId: 'org_a', stream: name, from, to, stepMs: minute, source: 'events_1m' })
    const want = expectStats(edgeRows, 'org_a', name, from, to, minute)
    checkAgainst(t, raw, want, `${name} from raw rows`)
    checkAgainst(t, rollup, want, `${name} from rollups`)
    t.equal(rollup.totals.count, 5, `${name}: only the events inside the range count`)
  }
})

t.test('steps without events are present, with zeros and null rt', async (t) => {
  const got = await queryStats(clickhouse, { ...stream, from: day0, to: day0 + 24 * hour, stepMs: hour, source: 'events_1m' })
  const inGap = got.series.find((p) => p.t === gap[0])
  t.same(inGap, { t: gap[0], count: 0, status_2xx: 0, status_3xx: 0, status_4xx: 0, status_5xx: 0, bytes: 0, rt_p50: null, rt_p95: null, rt_p99: null })
  const noRt = got.series.find((p) => p.t === noRtHour[0])
  t.ok(noRt && noRt.count > 0, 'the hour without rt has events')
  t.same([noRt?.rt_p50, noRt?.rt_p95, noRt?.rt_p99], [null, null, null], 'and null percentiles')
})

t.test('orgs and streams are isolated', async (t) => {
  const range = { from: day0, to: day0 + 48 * hour, stepMs: hour }
  for (const [orgId, name] of [['org_a', 'api'], ['org_b', 'web']]) {
    for (const source of ['events', 'events_1h'] as const) {
      const got = await queryStats(clickhouse, { orgId, stream: name, ...range, source })
      checkAgainst(t, got, expectStats(rows, orgId, name, range.from, range.to, hour), `${orgId}/${name} from ${source}`)
    }
  }
  const none = await queryStats(clickhouse, { orgId: 'org_c', stream: 'web', ...range, source: 'events_1h' })
  t.same(none.totals, { count: 0, error_rate: 0, bytes: 0, unique_sources: 0 })
  t.ok(Object.values(none.top).every((list) => list.length === 0), 'an unknown stream has empty top lists')
  t.equal(none.series.length, 48, 'and a full series of zeros')
})

t.test('a filter is applied to raw rows, whatever the range', async (t) => {
  const from = day0
  const to = day0 + 48 * hour
  const filter = rawSql('ifNull(status, 0) >= 500')
  t.equal(planStats({ ...stream, from, to, filter }).source, 'events', 'two days with a filter read raw rows')
  const got = await queryStats(clickhouse, { ...stream, from, to, stepMs: hour, filter })
  checkAgainst(t, got, expectStats(rows, 'org_a', 'web', from, to, hour, 10, (r) => (r.status ?? 0) >= 500), 'status >= 500')
  t.equal(planStats({ ...stream, from, to, filter: rawSql('1') }).source, 'events_1m', "rawSql('1') is no filter")
  t.throws(() => planStats({ ...stream, from, to, filter, source: 'events_1h' }), TypeError, 'a rollup cannot be forced with a filter')

  // The `q` compiler's output plugs in as is.
  const q = filterToSql(parseFilter('status:5xx -host:web-1 path:/api*'))
  const keep = (r: Row) => classOf(r.status) === 5 && r.host !== 'web-1' && (r.path ?? '').startsWith('/api')
  checkAgainst(t, await queryStats(clickhouse, { ...stream, from, to, stepMs: hour, filter: q }),
    expectStats(rows, 'org_a', 'web', from, to, hour, 10, keep), 'q = status:5xx -host:web-1 path:/api*')
  t.equal(planStats({ ...stream, from, to, filter: filterToSql(parseFilter('')) }).source, 'events_1m', 'an empty q is no filter')
})

t.test('the automatic choice serves each range from its table', async (t) => {
  const now = day0 + 48 * hour - 23 * minute
  for (const [rangeMs, source] of [[15 * minute, 'events'], [24 * hour, 'events_1m'], [47 * hour, 'events_1m'], [5 * 24 * hour, 'events_1h']] as const) {
    const from = now - rangeMs
    const plan = planStats({ ...stream, from, to: now })
    t.equal(plan.source, source, `${rangeMs / minute} min reads ${source}`)
    const got = await queryStats(clickhouse, { ...stream, from, to: now })
    checkAgainst(t, got, expectStats(rows, 'org_a', 'web', got.from, got.to, got.step_ms), `${rangeMs / minute} min`)
  }
})

t.test('by= without sample= counts exactly what its slices would read nearly whole, and samples a field past the group limit', async (t) => {
  // org_a/web: 3,000 events over two days, `bytes` of about 2,700 distinct values. With `sample`
  // 500 the slices (one a point) would read a granule each: all 3,000 rows.
  const from = day0
  const to = day0 + 48 * hour
  const ref = resolveField('bytes')
  const by = { text: fieldTextSql(ref, noLegacyRows), present: fieldPresentSql(ref, noLegacyRows) }
  const exact = await queryStats(clickhouse, { ...stream, from, to, stepMs: hour, by, groupSample: 0 })
  const given = await queryStats(clickhouse, { ...stream, from, to, stepMs: hour, by, groupSample: 500 })
  t.equal(given.sampled, true, 'sample=500 given: sampled')
  const auto = await queryStats(clickhouse, { ...stream, from, to, stepMs: hour, by, groupSample: 500, groupSampleAuto: true })
  t.equal(auto.sampled, false, 'no sample= given: counted exactly')
  t.same(auto.groups, exact.groups, 'the exact top values')
  t.same(auto.series, exact.series, 'and points')

  // A read may group at most 1,000 keys: the exact read fails, and the slices' 500 events answer.
  const limited = new Proxy(clickhouse, {
    get (target, name) {
      if (name === 'query') {
        return async (statement: SqlFragment | string, options?: RequestOptions) => await target.query(statement,
          { ...options, settings: { ...options?.settings, max_rows_to_group_by: 1000, group_by_overflow_mode: 'throw', max_threads: 1 } })
      }
      const value = Reflect.get(target, name) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) satisfies ClickHouse
  const failure = await queryStats(limited, { ...stream, from, to, stepMs: hour, by, groupSample: 0 }).then(() => null, readError)
  t.equal(failure instanceof SluiceError ? failure.code : failure, 'query_too_expensive', 'an exact read is past the limit')
  const fallback = await queryStats(limited, { ...stream, from, to, stepMs: hour, by, groupSample: 500, groupSampleAuto: true })
  t.equal(fallback.sampled, true, 'sampled instead of failing')
  t.equal(fallback.totals.count, exact.totals.count, 'the series exact')
  t.ok(fallback.groups !== undefined && fallback.groups.length > 0, 'groups listed')
})

t.test('slowest paths ranks the 100 busiest paths only', async (t) => {
  const busy: Row[] = []
  const base = { org_id: 'org_a', stream: 'many', host: null, method: null, status: 200, bytes: null, src: null, user_agent: null, filename: null, level: null }
  for (let i = 0; i < 100; i++) {
    for (let k = 0; k < 3; k++) busy.push({ ...base, ts: day0 + i * minute + k, path: `/p${i}`, rt: 0.1 + i / 1000 })
  }
  busy.push({ ...base, ts: day0 + 3 * hour, path: '/rare', rt: 30 })
  await clickhouse.insertRaw(`INSERT INTO events (${columns.join(', ')}) FORMAT TabSeparated`, toTsv(busy))
  const got = await queryStats(clickhouse, { orgId: 'org_a', stream: 'many', from: day0, to: day0 + 4 * hour, source: 'events_1h' })
  t.equal(got.totals.count, 301)
  t.notOk(got.top.slowest_paths.some((p) => p.path === '/rare'), 'a path hit once, slower than all, is not among them')
  t.strictSame(got.top.slowest_paths.map((p) => p.path), Array.from({ length: 10 }, (_, i) => `/p${99 - i}`))
})

t.test('bad requests are invalid_query', async (t) => {
  const cases = [
    { from: day0 + hour, to: day0 },
    { from: day0, to: day0 },
    { from: day0, to: day0 + hour, stepMs: 100 },
    { from: day0, to: day0 + hour, topN: 0 },
    { from: day0, to: day0 + hour, topN: 101 },
    { from: -1, to: day0 },
    { from: day0 + 0.5, to: day0 + hour },
  ]
  for (const c of cases) {
    await t.rejects(queryStats(clickhouse, { ...stream, ...c }), { code: 'invalid_query' }, JSON.stringify(c))
  }
})

t.test('percentiles without Float32 noise: 7 significant digits', async (t) => {
  t.same([0.38099998, 0.053999998, 0.88920003, 0.97, 0, 1e-7, 123456.79].map(roundPercentile), [0.381, 0.054, 0.8892, 0.97, 0, 1e-7, 123456.8])
})
