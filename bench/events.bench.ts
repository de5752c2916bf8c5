// How fast the events API's query (queryEvents, lib/query/events-query.ts) answers selective
// filters over a day of a busy stream: first pages (the default limit, 100) over the last 24 h of
// the data set of stats.bench.ts (query-dataset.ts: 10 M events in 24 h), and one second page.
//
//   CLICKHOUSE_URL=http://127.0.0.1:18123 node bench/events.bench.ts [--rows 10000000]
//     [--batch-rows 1000000] [--runs 50] [--single-runs 5] [--keep] [--database NAME]
//   CLICKHOUSE_URL=chdb:DIR node bench/events.bench.ts ...   (26.x, the embedded engine)
//
// It makes a fresh database, applies every migration and loads `--rows` events (the same rows as
// stats.bench.ts, so `--database NAME` measures a database either benchmark kept with --keep).
// For each filter it reports:
// - the matches in the 24 h (one count() query), so that "selective" and "non-empty" show;
// - p50/p95/max of `--runs` calls of queryEvents (after 3 warm-ups), wall clock, with the load
//   average beside them (the machine may run other work);
// - from one more call with log_queries=1 (system.query_log, which 18.16 has; EXPLAIN it has not):
//   the ClickHouse queries of the page (the page is read in time windows), the rows they read,
//   their summed query_duration_ms and their CPU (UserTimeMicroseconds + SystemTimeMicroseconds:
//   what the page costs ClickHouse whatever the neighbours do);
// - the same for one query over the whole range (`windowed: false`: the plan before windows, and the
//   page on servers with skip indexes; the filter in PREWHERE now), with `--single-runs` calls (0 skips it).
// The filter is compiled as the events route compiles it on this server: with the skip indexes'
// pre-filters and the server's text folding where it has them (26.x), where the page is also one
// statement (events-route.ts `windowed: !indexes`). The embedded engine has no system.query_log:
// there the ClickHouse columns show '-'.
// The database is dropped at the end unless `--keep` or `--database`.
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { createClient } from '@clickhouse/client'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import type { SqlFragment } from '../lib/storage/sql.ts'
import { migrate } from '../lib/storage/migrate.ts'
import { createLogger } from '../lib/logger.ts'
import { defaultEventsLimit, queryEvents, queryEventsJson } from '../lib/query/events-query.ts'
import type { EventsParams } from '../lib/query/events-query.ts'
import { parseFilter } from '../lib/query/filter-parser.ts'
import { detectFold, filterToSql } from '../lib/query/filter-sql.ts'
import { serverFeatures } from '../lib/storage/server-features.ts'
import { quantile } from './load-driver.ts'
import { endMs, hosts, loadEvents, orgId, rareStatus, rareWord, releaseDatabase, stream } from './query-dataset.ts'

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    'batch-rows': { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '50' },
    'single-runs': { type: 'string', default: '5' },
    keep: { type: 'boolean', default: false },
    database: { type: 'string' },
  },
})
let totalRows = Number(args.rows)
const batchRows = Number(args['batch-rows'])
const runs = Number(args.runs)
const singleRuns = Number(args['single-runs'])

const url = process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:18123'
const embedded = url.startsWith('chdb:')
const user = process.env.CLICKHOUSE_USER ?? 'default'
const password = process.env.CLICKHOUSE_PASSWORD ?? ''
const hour = 3_600_000
const targetMs = 100

const fmt = (n: number): string => Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'
const ms = (n: number): string => Number.isFinite(n) ? n.toFixed(1) : '-'
const loadAverage = (): string => loadavg()[0].toFixed(1)

/** The rarest host of the data set (the skew makes the last one rare: about 0.4% of events). */
const rareHost = hosts[hosts.length - 1]

interface Scenario {
  name: string
  q: string
  /** 2: the page after the first (its cursor fetched once before timing). */
  page: 1 | 2
}

const scenarios: Scenario[] = [
  { name: `rare status (1 in ${fmt(rareStatus.every)})`, q: `status:${rareStatus.status}`, page: 1 },
  { name: 'path + status', q: 'path:/login status:401', page: 1 },
  { name: 'host + status >= 500', q: `host:${rareHost} status:>=500`, page: 1 },
  { name: `word in the message (1 in ${fmt(rareWord.every)})`, q: rareWord.suffix.trim().split(' ').pop()!, page: 1 },
  { name: 'negation', q: `host:${rareHost} -status:2xx -status:3xx`, page: 1 },
  { name: 'host + status >= 500, page 2', q: `host:${rareHost} status:>=500`, page: 2 },
  { name: 'path + status, fewer than a page (reads all 24 h)', q: 'path:/api/v1/items/42 status:404', page: 1 },
  { name: 'phrase, fewer than a page (reads all 24 h)', q: '"items/4242 404"', page: 1 },
  { name: 'no filter (reference)', q: '', page: 1 },
]

function openDatabase (database: string): ClickHouse {
  return createClickHouse({ url, user, password, database, requestTimeoutMs: 600_000 })
}

/**
 * The same database, but each SELECT runs with log_queries=1 and a query_id `${prefix}-n`, so that
 * system.query_log tells what the statements of one call read and cost.
 */
function openLoggedDatabase (clickhouse: ClickHouse, database: string): { db: ClickHouse, close: () => Promise<void>, setPrefix: (p: string) => void } {
  if (embedded) return { db: clickhouse, close: async () => {}, setPrefix: () => {} }
  const client = createClient({ url, username: user, password, database, request_timeout: 600_000 })
  let prefix = 'x'
  let n = 0
  const db: ClickHouse = {
    ...clickhouse,
    async query<T> (statement: SqlFragment | string): Promise<T[]> {
      const rs = await client.query({
        query: String(statement),
        format: 'JSONEachRow',
        query_id: `${prefix}-${n++}`,
        clickhouse_settings: { output_format_json_quote_64bit_integers: 0, log_queries: 1 },
      })
      return await rs.json<T>()
    },
  }
  return { db, close: () => client.close(), setPrefix: (p) => { prefix = p; n = 0 } }
}

interface QueryCost { queries: number, readRows: number, durationMs: number, cpuMs: number }

async function costOf (clickhouse: ClickHouse, prefix: string): Promise<QueryCost> {
  if (embedded) return { queries: NaN, readRows: NaN, durationMs: NaN, cpuMs: NaN }
  await clickhouse.command('SYSTEM FLUSH LOGS')
  const [row] = await clickhouse.query<{ queries: number, read_rows: number, duration_ms: number, cpu_us: number }>(`
    SELECT count() AS queries, sum(read_rows) AS read_rows, sum(query_duration_ms) AS duration_ms,
      sum(arraySum(arrayFilter((v, name) -> name IN ('UserTimeMicroseconds', 'SystemTimeMicroseconds'), ProfileEvents.Values, ProfileEvents.Names))) AS cpu_us
    FROM system.query_log
    WHERE type = 2 AND event_date >= yesterday() AND startsWith(query_id, '${prefix}-')`)
  return { queries: Number(row.queries), readRows: Number(row.read_rows), durationMs: Number(row.duration_ms), cpuMs: Number(row.cpu_us) / 1000 }
}

interface Timing { p50: number, p95: number, max: number, cost: QueryCost }

async function measure (clickhouse: ClickHouse, logged: ReturnType<typeof openLoggedDatabase>, params: EventsParams, n: number, label: string): Promise<Timing> {
  for (let i = 0; i < Math.min(3, n); i++) await queryEventsJson(clickhouse, params)
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const started = performance.now()
    await queryEventsJson(clickhouse, params)
    times.push(performance.now() - started)
  }
  const prefix = `events_bench_${label}_${randomBytes(4).toString('hex')}`
  logged.setPrefix(prefix)
  await queryEventsJson(logged.db, params)
  return { p50: quantile(times, 0.5), p95: quantile(times, 0.95), max: Math.max(...times), cost: await costOf(clickhouse, prefix) }
}

async function measureScenarios (clickhouse: ClickHouse, database: string): Promise<void> {
  const from = endMs - 24 * hour
  const to = endMs
  const logged = openLoggedDatabase(clickhouse, database)
  const features = serverFeatures(await clickhouse.version())
  const indexes = features.has('skipIndexes')
  const fold = await detectFold(clickhouse)
  const lines: string[] = []
  let missed = 0
  try {
    for (const [k, s] of scenarios.entries()) {
      const node = parseFilter(s.q)
      const filter = node === null ? undefined : filterToSql(node, undefined, { indexes, fold })
      const [{ n }] = await clickhouse.query<{ n: number }>(
        `SELECT count() AS n FROM events WHERE org_id = '${orgId}' AND stream = '${stream}' AND ts >= ${from} AND ts < ${to}${filter ? ` AND ${filter}` : ''}`)
      const params: EventsParams = { orgId, stream, from, to, filter, limit: defaultEventsLimit, windowed: !indexes }
      if (s.page === 2) {
        const first = await queryEvents(clickhouse, params)
        if (first.next_cursor === null) throw new Error(`${s.q}: no second page`)
        params.cursor = first.next_cursor
      }
      const page = await queryEvents(clickhouse, params)
      const windowed = await measure(clickhouse, logged, params, runs, `w${k}`)
      const single = singleRuns > 0 && !indexes ? await measure(clickhouse, logged, { ...params, windowed: false }, singleRuns, `s${k}`) : null
      if (!(windowed.p95 < targetMs)) missed++
      const c = windowed.cost
      lines.push(`| ${s.name} | \`${s.q === '' ? ' ' : s.q}\` | ${fmt(Number(n))} | ${page.events.length} | ${runs} | ${ms(windowed.p50)} | ` +
        `**${ms(windowed.p95)}** | ${ms(windowed.max)} | ${c.queries} | ${fmt(c.readRows)} | ${fmt(c.cpuMs)} | ` +
        (single ? `${ms(single.p50)} / ${ms(single.p95)} | ${fmt(single.cost.readRows)} | ${fmt(single.cost.cpuMs)}` : '- | - | -') +
        ` | ${loadAverage()} |`)
      process.stderr.write(`[events] ${s.name}: p95 ${ms(windowed.p95)} ms\n`)
    }
  } finally {
    await logged.close()
  }
  console.log(`\n## queryEvents over ${fmt(totalRows)} events in 24 h (one stream): the last 24 h, limit ${defaultEventsLimit}, newest first`)
  console.log(`Target: p95 < ${targetMs} ms. "Windows" is queryEvents as the API runs it; "one query" the plan before windows (\`windowed: false\`).`)
  console.log('CH = ClickHouse, from system.query_log (one call with log_queries=1): statements, rows read and CPU ms (user + system) of the page.\n')
  console.log('| filter | q | matches in 24 h | events on the page | runs | p50 ms | p95 ms | max ms | CH statements | CH rows read | CH CPU ms | one query: p50 / p95 ms | one query: rows read | one query: CPU ms | load avg |')
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const line of lines) console.log(line)
  console.log(`\nTarget p95 < ${targetMs} ms: ${missed === 0 ? 'met by every filter' : `missed by ${missed} of ${scenarios.length}`}.`)
}

const version = await openDatabase('default').version()
console.log(`# events bench: ClickHouse ${version} at ${url}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, load avg ${loadAverage()}`)
console.log(`\`node bench/events.bench.ts ${process.argv.slice(2).join(' ')}\``)
const database = args.database ?? `sluice_bench_${randomBytes(4).toString('hex')}`
const clickhouse = openDatabase(database)
try {
  if (!args.database) {
    await migrate(clickhouse, createLogger({ level: 'silent' }))
    const { totalS, insertS } = await loadEvents(clickhouse, totalRows, batchRows)
    console.log(`loaded ${fmt(totalRows)} rows in ${totalS.toFixed(1)} s (inserts ${insertS.toFixed(1)} s)`)
  } else {
    const [{ n }] = await clickhouse.query<{ n: number }>(`SELECT count() AS n FROM events WHERE org_id = '${orgId}' AND stream = '${stream}'`)
    totalRows = Number(n)
  }
  await measureScenarios(clickhouse, database)
} finally {
  await releaseDatabase(clickhouse, database, args.keep || args.database !== undefined)
}
