// How fast `queryStats` answers over a loaded stream, from raw rows and from the rollups.
//
//   CLICKHOUSE_URL=http://127.0.0.1:18123 node bench/stats.bench.ts [--rows 10000000]
//     [--batch-rows 1000000] [--runs 50] [--keep] [--database NAME]
//
// It makes a fresh database, applies every migration (so the rollup views run on each insert),
// loads `--rows` events spanning 24 h into one stream, in time order, as `--batch-rows`-row
// TabSeparated inserts generated in this process, and reports:
// - the load rate, and what the three rollup views add to an insert (the same batch into a
//   database with and without migration 003);
// - p50/p95 of queryStats over the whole 24 h (events_1m series, events_dims_1h top lists plus
//   raw rows for the partial hours at both ends) and over the last 15 min and 6 h (raw rows).
// The database is dropped at the end unless `--keep`; `--database NAME` reuses a kept one
// (no load) to measure queries again.
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { cpus } from 'node:os'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { migrate, migrations } from '../lib/storage/migrate.ts'
import { createLogger } from '../lib/logger.ts'
import { eventColumns } from '../lib/ingest/parse-task.ts'
import { queryStats } from '../lib/query/stats-query.ts'
import type { StatsSource } from '../lib/query/stats-query.ts'

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    'batch-rows': { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '50' },
    keep: { type: 'boolean', default: false },
    database: { type: 'string' },
  },
})
const totalRows = Number(args.rows)
const batchRows = Number(args['batch-rows'])
const runs = Number(args.runs)

const url = process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:18123'
const user = process.env.CLICKHOUSE_USER ?? 'default'
const password = process.env.CLICKHOUSE_PASSWORD ?? ''
const log = createLogger({ level: 'silent' })

const orgId = 'org_bench'
const stream = 'web'
/** 2025-11-20T00:00:00Z: a fixed day, so every run stores and reads the same rows. */
const startMs = 1_763_596_800_000
const spanMs = 86_400_000 // 24 h of events
const minute = 60_000
const hour = 3_600_000

/** mulberry32: a tiny seeded generator; the same seed gives the same data set. */
function createRandom (seed: number): () => number {
  let state = seed >>> 0
  return function next (): number {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// Cardinalities of a busy web service: a dozen hosts, ~5,000 paths (a few hot ones, then
// /items/<id>), ~20,000 client addresses, a few dozen user agents. Skew comes from squaring a
// uniform number, so low indexes are hot.
const hosts = Array.from({ length: 12 }, (_, i) => `web-${String(i + 1).padStart(2, '0')}.prod.eu-west-1`)
const hotPaths = ['/', '/login', '/logout', '/health', '/api/v1/orders', '/api/v1/orders/search', '/api/v1/users/me',
  '/api/v2/invoices/export', '/static/app.3f9a1c.js', '/static/style.8e1b.css', '/images/logo.png', '/favicon.ico']
const itemPaths = Array.from({ length: 5000 }, (_, i) => `/api/v1/items/${i}`)
const statuses = [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201, 204, 301, 304, 400, 401, 404, 404, 429, 500, 502, 503]
const methods = ['GET', 'GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE']
const sources = Array.from({ length: 20_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
const userAgents = Array.from({ length: 30 }, (_, i) => i % 3 === 0 ? `curl/8.${i}.0` : `Mozilla/5.0 (X11; Linux x86_64) Chrome/${100 + i}.0 Safari/537.36`)
const filenames = ['/var/log/nginx/access.log', '/var/log/containers/web-7d9f.log']

/**
 * Rows `first` to `first + count - 1` of the data set as TabSeparated in `eventColumns` order.
 * Row i is at startMs + i * spanMs / totalRows, so the rows come in time order as ingest sends
 * them; absent fields are \N (5% of rt, 2% of bytes, half the filenames).
 */
function generateBatch (first: number, count: number): Buffer {
  const random = createRandom(first + 1)
  const skewed = <T>(list: readonly T[]): T => list[Math.floor(random() * random() * list.length)]
  const parts: string[] = new Array(count)
  for (let k = 0; k < count; k++) {
    const i = first + k
    const ts = startMs + Math.floor(i * spanMs / totalRows)
    const path = random() < 0.6 ? skewed(hotPaths) : itemPaths[Math.floor(random() * itemPaths.length)]
    const status = statuses[Math.floor(random() * statuses.length)]
    const method = methods[Math.floor(random() * methods.length)]
    // Milliseconds with a long tail: mostly tens of ms, now and then seconds.
    const rt = random() < 0.05 ? '\\N' : (Math.round(1000 * 0.02 / (0.01 + random())) / 1000).toString()
    const bytes = random() < 0.02 ? '\\N' : String(Math.floor(random() * 50_000))
    const filename = random() < 0.5 ? '\\N' : filenames[k & 1]
    parts[k] = `${orgId}\t${stream}\t${ts}\t${ts + 150}\t${skewed(hosts)}\t${path}\t${method}\t${status}\t${rt}\t${bytes}\t` +
      `${skewed(sources)}\t${skewed(userAgents)}\t${method} ${path} ${status}\t${filename}\t{}\n`
  }
  return Buffer.from(parts.join(''))
}

const insertStatement = `INSERT INTO events (${eventColumns.join(', ')}) FORMAT TabSeparated`
// One insert of a whole batch makes one block, as the batch writer's large batches do.
const insertSettings = { max_insert_block_size: String(Math.max(batchRows, 1_048_576)) }

function openDatabase (database: string): ClickHouse {
  return createClickHouse({ url, user, password, database, requestTimeoutMs: 600_000 })
}

async function load (clickhouse: ClickHouse): Promise<void> {
  let insertMs = 0
  const started = performance.now()
  for (let first = 0; first < totalRows; first += batchRows) {
    const body = generateBatch(first, Math.min(batchRows, totalRows - first))
    const insertStarted = performance.now()
    await clickhouse.insertRaw(insertStatement, body, undefined, insertSettings)
    insertMs += performance.now() - insertStarted
  }
  const totalS = (performance.now() - started) / 1000
  console.log(`loaded ${fmt(totalRows)} rows in ${totalS.toFixed(1)} s (inserts ${(insertMs / 1000).toFixed(1)} s, ` +
    `${fmt(totalRows / (insertMs / 1000))} rows/s into events with its rollup views)`)
}

/** Milliseconds to insert the same batch with and without the rollup views, median of 3 each. */
async function measureViewCost (): Promise<void> {
  const body = generateBatch(0, batchRows)
  const results: string[] = []
  for (const withRollups of [false, true]) {
    const database = `sluice_bench_${randomBytes(4).toString('hex')}`
    const clickhouse = openDatabase(database)
    try {
      await migrate(clickhouse, log, withRollups ? migrations : migrations.filter((m) => m.id < 3))
      const times: number[] = []
      for (let round = 0; round < 3; round++) {
        const started = performance.now()
        await clickhouse.insertRaw(insertStatement, body, undefined, insertSettings)
        times.push(performance.now() - started)
      }
      times.sort((a, b) => a - b)
      results.push(`| ${withRollups ? 'events + 3 rollup views' : 'events only'} | ${fmt(batchRows)} | ${fmt(times[1])} | ${fmt(batchRows / (times[1] / 1000))} |`)
    } finally {
      await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``)
      await clickhouse.close()
    }
  }
  console.log('\n## Insert cost of the rollup views (one batch, median of 3)')
  console.log('| target | rows | ms | rows/s |')
  console.log('|---|---:|---:|---:|')
  for (const line of results) console.log(line)
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

interface Scenario {
  name: string
  from: number
  to: number
  source?: StatsSource
}

async function measureQueries (clickhouse: ClickHouse): Promise<void> {
  const end = startMs + spanMs
  // "now" is 7 minutes past a minute, as a dashboard's would be: the 24 h range then has partial
  // hours at both ends, the rollup path's worst case.
  const now = end - 23 * minute
  const scenarios: Scenario[] = [
    { name: 'last 24 h (auto)', from: now - 24 * hour, to: now },
    { name: 'whole 24 h, hour-aligned (auto)', from: startMs, to: end },
    { name: 'last 24 h, raw rows (forced)', from: now - 24 * hour, to: now, source: 'events' },
    { name: 'last 6 h (auto)', from: now - 6 * hour, to: now },
    { name: 'last 6 h from events_1m (forced)', from: now - 6 * hour, to: now, source: 'events_1m' },
    { name: 'last 15 min (auto)', from: now - 15 * minute, to: now },
  ]
  console.log(`\n## queryStats, ${runs} runs each after 3 warm-ups (${fmt(totalRows)} events over 24 h in one stream)`)
  console.log('| range | source | step | series points | p50 ms | p95 ms | max ms |')
  console.log('|---|---|---:|---:|---:|---:|---:|')
  for (const s of scenarios) {
    const params = { orgId, stream, from: s.from, to: s.to, source: s.source }
    const forced = s.name.includes('forced') && s.name.includes('raw') ? 3 : runs
    let last = await queryStats(clickhouse, params)
    for (let i = 0; i < 2; i++) last = await queryStats(clickhouse, params)
    const times: number[] = []
    for (let i = 0; i < forced; i++) {
      const started = performance.now()
      last = await queryStats(clickhouse, params)
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    console.log(`| ${s.name} | ${last.source} | ${last.step_ms / 1000} s | ${last.series.length} | ` +
      `${percentile(times, 0.5).toFixed(1)} | ${percentile(times, 0.95).toFixed(1)} | ${times[times.length - 1].toFixed(1)} |`)
  }
}

const version = await openDatabase('default').version()
console.log(`# stats bench: ClickHouse ${version} at ${url}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}`)
const database = args.database ?? `sluice_bench_${randomBytes(4).toString('hex')}`
const clickhouse = openDatabase(database)
try {
  if (!args.database) {
    await migrate(clickhouse, log)
    await load(clickhouse)
    await measureViewCost()
  }
  await measureQueries(clickhouse)
} finally {
  if (args.keep || args.database) {
    console.log(`\nkept database ${database}`)
  } else {
    await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``)
  }
  await clickhouse.close()
}
