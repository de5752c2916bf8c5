// How fast `queryStats` answers over a loaded stream, from raw rows and from the rollups, and what
// the rollup views cost an insert.
//
//   CLICKHOUSE_URL=http://127.0.0.1:18123 node bench/stats.bench.ts [--rows 10000000]
//     [--batch-rows 1000000] [--runs 50] [--keep] [--database NAME]
//
// It makes a fresh database, applies every migration (so the rollup views run on each insert),
// and loads `--rows` events spanning 24 h into one stream, in time order, as `--batch-rows`-row
// TabSeparated inserts generated in this process. Then it reports:
// - the load rate, and the time of one batch insert into `events` alone and with the views
//   (migration 003), median of 5;
// - p50/p95 of queryStats for the ranges a dashboard asks for, each from the source the plan
//   picks (stats-plan.ts), and 24 h from raw rows for comparison.
// Timings are wall clock on a machine that may run other work: the load average is printed
// beside them. The database is dropped at the end unless `--keep`; `--database NAME` measures
// the queries again on a kept one, without loading.
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { migrate, migrations } from '../lib/storage/migrate.ts'
import { migration as rollups } from '../lib/storage/migrations/003_rollups.ts'
import { createLogger } from '../lib/logger.ts'
import { planStats, queryStats } from '../lib/query/stats-query.ts'
import type { StatsSource } from '../lib/query/stats-query.ts'
import { createRandom } from './payload.ts'

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
/**
 * 2025-11-20T00:37:00Z, fixed so every run stores and reads the same rows, and off the hour so
 * ranges ending at the newest event ("now") have partial hours, as a dashboard's do.
 */
const startMs = 1_763_596_800_000 + 37 * 60_000
const spanMs = 86_400_000 // 24 h of events
const minute = 60_000
const hour = 3_600_000

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

/** The columns the bench fills; the others take their defaults. */
const columns = ['org_id', 'stream', 'ts', 'received_at', 'host', 'path', 'method', 'status', 'rt', 'bytes', 'src',
  'user_agent', 'message', 'filename', 'attrs']

/**
 * Rows `first` to `first + count - 1` of the data set as TabSeparated in `columns` order.
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

const insertStatement = `INSERT INTO events (${columns.join(', ')}) FORMAT TabSeparated`
// One insert of a whole batch makes one block, as the batch writer's large batches do.
const insertSettings = { max_insert_block_size: String(Math.max(batchRows, 1_048_576)) }

function openDatabase (database: string): ClickHouse {
  return createClickHouse({ url, user, password, database, requestTimeoutMs: 600_000 })
}

async function loadEvents (clickhouse: ClickHouse): Promise<void> {
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

/** Milliseconds to insert the same batch with and without the rollup views, median of 5 each. */
async function measureViewCost (): Promise<void> {
  const body = generateBatch(0, batchRows)
  const results: string[] = []
  for (const withRollups of [false, true]) {
    const database = `sluice_bench_${randomBytes(4).toString('hex')}`
    const clickhouse = openDatabase(database)
    try {
      await migrate(clickhouse, log, withRollups ? migrations : migrations.filter((m) => m.id !== rollups.id))
      const times: number[] = []
      for (let round = 0; round < 5; round++) {
        const started = performance.now()
        await clickhouse.insertRaw(insertStatement, body, undefined, insertSettings)
        times.push(performance.now() - started)
      }
      times.sort((a, b) => a - b)
      results.push(`| ${withRollups ? 'events + rollup views' : 'events only'} | ${fmt(batchRows)} | ${fmt(times[2])} | ${fmt(batchRows / (times[2] / 1000))} | ${loadAverage()} |`)
    } finally {
      await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``)
      await clickhouse.close()
    }
  }
  console.log('\n## Insert cost of the rollup views (one batch, median of 5)')
  console.log('| target | rows | ms | rows/s | load avg |')
  console.log('|---|---:|---:|---:|---:|')
  for (const line of results) console.log(line)
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
/** The 1-minute load average: other work on the machine shows up in the timings. */
const loadAverage = () => loadavg()[0].toFixed(1)

interface Scenario {
  name: string
  from: number
  to: number
  /** Forced source; by default the automatic choice. */
  source?: StatsSource
  runs: number
}

async function measureQueries (clickhouse: ClickHouse): Promise<void> {
  // "now" is the newest event, as for a dashboard. A rollup-served range reads its partial hours
  // from raw rows, unless nothing lies in the rest of that hour: the newer end then costs nothing
  // (nothing after now), the older end does when older data surrounds it. "22 h, events around
  // both ends" is the worst case: both partial hours from raw rows (1 h in all).
  const now = startMs + spanMs
  const scenarios: Scenario[] = [
    { name: 'last 24 h (the whole data set)', from: now - 24 * hour, to: now, runs },
    { name: 'last 12 h', from: now - 12 * hour, to: now, runs },
    { name: '22 h, events around both ends', from: now - 23 * minute - 22 * hour, to: now - 23 * minute, runs },
    { name: 'last 7 d', from: now - 7 * 24 * hour, to: now, runs },
    { name: 'last 6 h', from: now - 6 * hour, to: now, runs },
    { name: 'last 1 h', from: now - hour, to: now, runs },
    { name: 'last 15 min', from: now - 15 * minute, to: now, runs },
    { name: 'last 24 h, raw rows forced', from: now - 24 * hour, to: now, source: 'events', runs: Math.min(runs, 5) },
  ]
  console.log(`\n## queryStats over ${fmt(totalRows)} events in 24 h (one stream), after 3 warm-ups`)
  console.log('| range | source | step | points | runs | p50 ms | p95 ms | max ms | load avg |')
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|')
  for (const s of scenarios) {
    const params = { orgId, stream, from: s.from, to: s.to, source: s.source }
    const plan = planStats(params)
    for (let i = 0; i < 3; i++) await queryStats(clickhouse, params)
    const times: number[] = []
    for (let i = 0; i < s.runs; i++) {
      const started = performance.now()
      await queryStats(clickhouse, params)
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    console.log(`| ${s.name} | ${plan.source} | ${plan.stepMs / 1000} s | ${(plan.to - plan.from) / plan.stepMs} | ${s.runs} | ` +
      `${percentile(times, 0.5).toFixed(1)} | ${percentile(times, 0.95).toFixed(1)} | ${times[times.length - 1].toFixed(1)} | ${loadAverage()} |`)
  }
}

const version = await openDatabase('default').version()
console.log(`# stats bench: ClickHouse ${version} at ${url}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, load avg ${loadAverage()}`)
const database = args.database ?? `sluice_bench_${randomBytes(4).toString('hex')}`
const clickhouse = openDatabase(database)
try {
  if (!args.database) {
    await migrate(clickhouse, log)
    await loadEvents(clickhouse)
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
