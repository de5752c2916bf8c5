// How fast `queryStats` answers over a loaded stream, from raw rows and from the rollups, and what
// the rollup views cost an insert.
//
//   CLICKHOUSE_URL=http://127.0.0.1:18123 node bench/stats.bench.ts [--rows 10000000]
//     [--batch-rows 1000000] [--runs 50] [--keep] [--database NAME]
//
// It makes a fresh database, applies every migration (so the rollup views run on each insert),
// and loads `--rows` events spanning 24 h into one stream, in time order, as `--batch-rows`-row
// TabSeparated inserts generated in this process (query-dataset.ts, shared with events.bench.ts).
// Then it reports:
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
import { endMs, generateBatch, insertSettings, insertStatement, loadEvents, orgId, releaseDatabase, stream } from './query-dataset.ts'

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

const minute = 60_000
const hour = 3_600_000

function openDatabase (database: string): ClickHouse {
  return createClickHouse({ url, user, password, database, requestTimeoutMs: 600_000 })
}

async function load (clickhouse: ClickHouse): Promise<void> {
  const { totalS, insertS } = await loadEvents(clickhouse, totalRows, batchRows)
  console.log(`loaded ${fmt(totalRows)} rows in ${totalS.toFixed(1)} s (inserts ${insertS.toFixed(1)} s, ` +
    `${fmt(totalRows / insertS)} rows/s into events with its rollup views)`)
}

/** Milliseconds to insert the same batch with and without the rollup views, median of 5 each. */
async function measureViewCost (): Promise<void> {
  const body = generateBatch(0, batchRows, totalRows)
  const results: string[] = []
  for (const withRollups of [false, true]) {
    const database = `sluice_bench_${randomBytes(4).toString('hex')}`
    const clickhouse = openDatabase(database)
    try {
      await migrate(clickhouse, log, withRollups ? migrations : migrations.filter((m) => m.id !== rollups.id))
      const times: number[] = []
      for (let round = 0; round < 5; round++) {
        const started = performance.now()
        await clickhouse.insertRaw(insertStatement, body, undefined, insertSettings(batchRows))
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
  const now = endMs
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
    await load(clickhouse)
    await measureViewCost()
  }
  await measureQueries(clickhouse)
} finally {
  await releaseDatabase(clickhouse, database, args.keep || args.database !== undefined)
}
