// The ingest benchmark: `npm run bench` (= node bench/ingest.bench.ts). It starts a ClickHouse
// of its own (temp data dir, free ports) and Sluice as a child process against it, creates a
// stream and an ingest token through the API, drives load with autocannon, and prints one table.
// See bench/README.md for what each line means and the latest results.
//
//   node bench/ingest.bench.ts [--quick] [--only stages,plain,gzip,direct,latency,overload,sweep]
//     [--sweep] [--runs 3] [--duration 8] [--connections 64,128,256] [--max-rps N]
//     [--workers N] [--flush-ms N] [--max-batch-rows N] [--json FILE] [--keep] [--profile DIR]
//     [--node-arg FLAG]... (a Node/V8 flag for Sluice's process only, e.g. --max-semi-space-size=8)
//     [--sluice-main OTHER_CHECKOUT/lib/main.ts] [--env NAME=VALUE]... [--clickhouse-dir DIR]
//     (ClickHouse's data in a temp dir under DIR instead of the temp dir, e.g. another filesystem)
//     [--engine server|chdb]
//     (chdb: Sluice runs on the embedded engine, CLICKHOUSE_URL=chdb:<temp dir>/chdb, with
//     ClickHouse inside Sluice's process: its CPU and memory count as Sluice's, rows are counted
//     through the streams API, and the stages and direct phases, which need a server, are left out)
//
// Child processes (Sluice, ClickHouse, the micro-benchmarks) are stopped on exit, on an error and
// on Ctrl-C; the temp dir is removed unless --keep. --profile DIR runs Sluice with --cpu-prof
// (main thread and workers each write a .cpuprofile into DIR when Sluice stops); --sluice-main
// runs another checkout's Sluice (a branch, a proposed fix) under the same load; --env passes
// any other setting to Sluice (e.g. --env SLUICE_MAX_UNCOMMITTED_BYTES=134217728).
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { startManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import type { ManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import { migrate } from '../lib/storage/migrate.ts'
import { loadChdb } from '../lib/storage/chdb-engine.ts'
import { createLogger } from '../lib/logger.ts'
import { buildBodyPool, meanBytes } from './body-pool.ts'
import { envPairs, SluiceChild } from './sluice-child.ts'
import { BenchDirs } from './bench-dirs.ts'
import { clickhouseTarget, measureRun, sluiceTarget, truncateEvents } from './ingest-runs.ts'
import type { RunContext, RunRecord } from './ingest-runs.ts'
import { measureGunzip, measureParse, measureSplit, measureWriter, stageAbort } from './stage-costs.ts'
import type { StageCost } from './stage-costs.ts'
import { renderReport } from './ingest-report.ts'
import { quantile } from './load-driver.ts'
import type { BenchReport, SweepRow } from './ingest-report.ts'

const phases = ['stages', 'plain', 'gzip', 'direct', 'latency', 'overload', 'sweep'] as const
type Phase = typeof phases[number]

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    sweep: { type: 'boolean', default: false },
    runs: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'max-rps': { type: 'string' },
    workers: { type: 'string' },
    'flush-ms': { type: 'string' },
    'max-batch-rows': { type: 'string' },
    json: { type: 'string' },
    keep: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'sluice-main': { type: 'string' },
    env: { type: 'string', multiple: true },
    'node-arg': { type: 'string', multiple: true },
    'clickhouse-dir': { type: 'string' },
    engine: { type: 'string', default: 'server' },
  },
})
if (args.engine !== 'server' && args.engine !== 'chdb') throw new Error(`--engine: server or chdb (got ${args.engine})`)
const onChdb = args.engine === 'chdb'
const serverOnlyPhases: readonly Phase[] = ['stages', 'direct']
const quick = args.quick
const selected: ReadonlySet<Phase> = new Set(args.only
  ? args.only.split(',').map((p) => {
    if (!(phases as readonly string[]).includes(p)) throw new Error(`--only: unknown phase ${p} (${phases.join(', ')})`)
    return p as Phase
  })
  : phases.filter((p) => p !== 'sweep' || args.sweep))
if (onChdb) for (const p of serverOnlyPhases) (selected as Set<Phase>).delete(p)
const runs = Number(args.runs ?? (quick ? 1 : 3))
const durationS = Number(args.duration ?? (quick ? 5 : 8))
const connectionSweep = (args.connections ?? (quick ? '128' : '64,128,256')).split(',').map(Number)
const linesPerBody = 1000
const poolSize = 50
const streamName = 'bench'
const log = createLogger({ level: 'warn', fd: 2 })
const progress = (text: string): void => { process.stderr.write(`[bench] ${text}\n`) }

const dirs = new BenchDirs('sluice-bench', args['clickhouse-dir'])
const tmp = dirs.tmp
const clickhouseDir = dirs.clickhouse
let managed: ManagedClickHouse | null = null
let sluice: SluiceChild | null = null
const clients: ClickHouse[] = []

let cleaned: Promise<void> | null = null
/** Stops everything this benchmark started; once, whoever calls first (a signal, or the end). */
function cleanup (): Promise<void> {
  cleaned ??= (async () => {
    stageAbort.abort()
    await sluice?.stop().catch(() => {})
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await managed?.stop().catch(() => {})
    if (!args.keep) dirs.remove()
  })()
  return cleaned
}
process.on('exit', () => { sluice?.killNow() }) // the managed ClickHouse has its own exit hook
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping Sluice and ClickHouse`)
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  })
}

/** Sluice's environment for a setting; the org limits are raised so that only load limits it. */
function sluiceEnv (settings: { workers?: string, flushMs?: string, maxBatchRows?: string }): Record<string, string> {
  const env: Record<string, string> = {
    SLUICE_REQUESTS_PER_MINUTE: '100000000',
    SLUICE_CONCURRENT_REQUESTS: '100000',
  }
  Object.assign(env, envPairs(args.env ?? []))
  if (settings.workers) env.SLUICE_WORKERS = settings.workers
  if (settings.flushMs) env.SLUICE_FLUSH_INTERVAL_MS = settings.flushMs
  if (settings.maxBatchRows) {
    const file = join(tmp, `config-${settings.maxBatchRows}.json`)
    writeFileSync(file, JSON.stringify({ writer: { maxBatchRows: Number(settings.maxBatchRows) } }))
    env.SLUICE_CONFIG = file
  }
  return env
}

async function main (): Promise<void> {
  const startedAt = Date.now()
  progress(`temp dir ${tmp}; ClickHouse data in ${clickhouseDir}; phases: ${[...selected].join(', ')}`)
  const bodies = buildBodyPool({ count: poolSize, linesPerBody, seed: 42, nowMs: Date.now(), directOrgId: 'org_direct', directStream: streamName })

  // chdb: no server; ClickHouse runs in Sluice's process (pid 0: no separate ClickHouse CPU).
  managed = onChdb ? null : await startManagedClickHouse({ dataDir: clickhouseDir, startTimeoutMs: 60_000, log })
  const chPid = managed?.pid ?? 0
  const chdbUrl = `chdb:${join(tmp, 'chdb')}`
  const connect = (database: string): ClickHouse => {
    const c = createClickHouse({ url: managed!.url, user: 'default', password: '', database, requestTimeoutMs: 120_000 })
    clients.push(c)
    return c
  }
  // chdb: one process holds the data directory (Sluice), so rows are counted through its API.
  const sluiceDb: ClickHouse = onChdb ? countThroughApi(() => sluice!, streamName) : connect('sluice')
  const directDb = onChdb ? sluiceDb : connect('sluice_direct')
  if (!onChdb) await migrate(directDb, log) // the same tables and rollup views as Sluice's database
  const report: BenchReport = {
    machine: {
      cpu: cpus()[0]?.model ?? '?', cores: cpus().length, ramGiB: totalmem() / 2 ** 30,
      node: process.version,
      clickhouse: onChdb ? `${loadChdb().version().libchdb ?? '?'} (embedded: chdb)` : (await directDb.query<{ v: string }>('SELECT version() AS v'))[0].v,
    },
    bodies: { count: poolSize, lines: linesPerBody, plainBytes: meanBytes(bodies, 'plain'), gzipBytes: meanBytes(bodies, 'gzip'), jsonBytes: meanBytes(bodies, 'directJson') },
    settings: {
      workers: args.workers ?? 'default (2)', flushMs: args['flush-ms'] ?? 'default (250)', maxBatchRows: args['max-batch-rows'] ?? 'default (100000)',
      extra: [...(args['sluice-main'] ? [`Sluice from ${args['sluice-main']}`] : []), ...(args.env ?? [])].join(', '),
    },
    durationS, quick, stages: [], plain: [], gzip: [], direct: [], latency: [], overload: [], sweep: [], elapsedS: 0,
  }

  if (selected.has('stages')) {
    progress('stage costs: split, parse, gunzip, writer (single core each)')
    const stages: StageCost[] = []
    stages.push(await measureSplit(quick ? 20 : 50, 3))
    stages.push(await measureParse(quick ? 50_000 : 100_000, 5))
    stages.push(await measureGunzip(bodies, 5))
    stages.push(await measureWriter(managed!.url, chPid, quick ? 3 : 5))
    report.stages = stages
  }

  const settings = { workers: args.workers, flushMs: args['flush-ms'], maxBatchRows: args['max-batch-rows'] }
  const startSluice = async (env: Record<string, string>): Promise<{ token: string }> => {
    await sluice?.stop()
    sluice = await SluiceChild.start({
      dataDir: join(tmp, 'sluice'), clickhouseUrl: onChdb ? chdbUrl : managed!.url, database: 'sluice', env,
      nodeArgs: [...(args['node-arg'] ?? []), ...(args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : [])],
      mainFile: args['sluice-main'],
    })
    return { token: (await sluice.setUpStream(streamName)).token }
  }
  const context = (): RunContext => ({ clickhousePid: chPid, sluice, database: sluiceDb })
  const needsSluice = ['plain', 'gzip', 'latency', 'overload', 'sweep'].some((p) => selected.has(p as Phase))
  let token = ''
  if (needsSluice) {
    ;({ token } = await startSluice(sluiceEnv(settings)))
    progress(`Sluice pid ${sluice!.pid} at ${sluice!.url}; ClickHouse ${onChdb ? `in it at ${chdbUrl}` : `pid ${chPid} at ${managed!.url}`}; warming up`)
    await measureRun('warm-up', sluiceTarget(sluice!.url, streamName, token, bodies, 'plain'), context(), { connections: 64, warmupS: 1, durationS: quick ? 2 : 4 })
  }
  const closedRun = async (label: string, form: 'plain' | 'gzip', connections: number): Promise<RunRecord> => {
    const record = await measureRun(label, sluiceTarget(sluice!.url, streamName, token, bodies, form), context(), { connections, warmupS: 1, durationS })
    progress(`${label}: ${Math.round(record.eventsPerS).toLocaleString('en')} events/s, p99 ${Math.round(quantile(record.load.window.okLatencyMs, 0.99))} ms, answers ${describeAnswers(record)}; CH Δ ${record.chDelta} vs acked ${record.load.total.stored}${record.isExact ? '' : record.isDurable ? ' (more stored than acknowledged)' : ' ACKNOWLEDGED ROWS MISSING'}` +
      (record.load.unanswered > 0 ? `; ${record.load.unanswered} requests unanswered (connection errors ${record.load.requestErrors}, timeouts ${record.load.timeouts})` : ''))
    return record
  }
  /** The connection sweep, then more runs at the best count until there are `runs` there. */
  const sweepConnections = async (form: 'plain' | 'gzip'): Promise<RunRecord[]> => {
    const out: RunRecord[] = []
    for (const c of connectionSweep) out.push(await closedRun(`${form} c=${c}`, form, c))
    const best = out.reduce((a, b) => (b.eventsPerS > a.eventsPerS ? b : a)).load.connections
    for (let i = 1; i < runs; i++) out.push(await closedRun(`${form} c=${best} #${i + 1}`, form, best))
    return out
  }

  if (selected.has('plain')) report.plain = await sweepConnections('plain')
  if (selected.has('gzip')) report.gzip = await sweepConnections('gzip')
  const bestOf = (records: RunRecord[]): number | null => records.length === 0 ? null
    : records.reduce((a, b) => (b.eventsPerS > a.eventsPerS ? b : a)).load.connections
  const plainBest = bestOf(report.plain) ?? connectionSweep[connectionSweep.length - 1]

  if (selected.has('direct')) {
    // ClickHouse at each connection count of the sweep (its best is its speed), then once more
    // at its best; the managed server runs at most 100 queries at once (code 202 past that).
    const target = clickhouseTarget(managed!.url, 'sluice_direct', 'events', bodies, 'directJson')
    const directContext: RunContext = { clickhousePid: chPid, sluice: null, database: directDb }
    const directRun = async (c: number, label: string): Promise<void> => {
      const record = await measureRun(label, target, directContext, { connections: c, warmupS: 1, durationS })
      progress(`${record.label}: ${Math.round(record.eventsPerS).toLocaleString('en')} events/s; answers ${describeAnswers(record)}`)
      report.direct.push(record)
    }
    for (const c of connectionSweep) await directRun(c, `direct c=${c}`)
    const best = bestOf(report.direct)!
    if (runs > 1) await directRun(best, `direct c=${best} #2`)
    await truncateEvents(directDb)
  }

  const plainMedianRps = report.plain.length > 0
    ? median(report.plain.filter((r) => r.load.connections === plainBest).map((r) => r.requestsPerS))
    : Number(args['max-rps'] ?? NaN)
  if ((selected.has('latency') || selected.has('overload')) && !Number.isFinite(plainMedianRps)) {
    throw new Error('latency and overload need the sustainable rate: run the plain phase too, or give --max-rps')
  }
  if (selected.has('latency')) {
    const rate = Math.max(1, Math.round(plainMedianRps / 2))
    for (let i = 0; i < (quick ? 1 : 2); i++) {
      const record = await measureRun(`latency ${rate} req/s #${i + 1}`, sluiceTarget(sluice!.url, streamName, token, bodies, 'plain'), context(),
        { ratePerS: rate, warmupS: 2, durationS: quick ? 5 : 10 })
      progress(`${record.label}: ${Math.round(record.eventsPerS).toLocaleString('en')} events/s, late sends ${record.load.lateSends}`)
      report.latency.push(record)
    }
  }
  if (selected.has('overload')) {
    const rate = Math.max(1, Math.round(plainMedianRps * 10))
    const record = await measureRun(`overload ${rate} req/s`, sluiceTarget(sluice!.url, streamName, token, bodies, 'plain'), context(),
      { ratePerS: rate, warmupS: 2, durationS: quick ? 5 : 10, timeoutS: 120, drainTimeoutS: 100 }, { sampleRss: true })
    progress(`${record.label}: statuses ${JSON.stringify(Object.fromEntries(record.load.total.byStatus))}, peak RSS ${((record.peakRss?.hwm ?? 0) / 2 ** 20).toFixed(0)} MiB (VmHWM)`)
    report.overload.push(record)
  }

  if (selected.has('sweep')) {
    const c = plainBest
    const sweep: Array<{ name: string, env: Record<string, string> }> = [
      ...['1', '2', '3'].map((w) => ({ name: `SLUICE_WORKERS=${w}`, env: sluiceEnv({ ...settings, workers: w }) })),
      ...['50', '100', '250'].map((f) => ({ name: `SLUICE_FLUSH_INTERVAL_MS=${f}`, env: sluiceEnv({ ...settings, flushMs: f }) })),
      ...['25000', '50000', '100000', '250000'].map((n) => ({ name: `writer.maxBatchRows=${n}`, env: sluiceEnv({ ...settings, maxBatchRows: n }) })),
    ]
    // Rounds of every setting in turn, so that a neighbour's busy minute hits them all alike.
    const rows: SweepRow[] = sweep.map((setting) => ({ setting: setting.name, connections: c, records: [] }))
    for (let round = 1; round <= Math.max(1, runs - 1); round++) {
      for (const [i, setting] of sweep.entries()) {
        ;({ token } = await startSluice(setting.env))
        await measureRun('warm-up', sluiceTarget(sluice!.url, streamName, token, bodies, 'plain'), context(), { connections: 64, warmupS: 1, durationS: 2 })
        rows[i].records.push(await closedRun(`${setting.name} c=${c} #${round}`, 'plain', c))
      }
    }
    report.sweep = rows
  }

  report.elapsedS = (Date.now() - startedAt) / 1000
  if (args.json) writeFileSync(args.json, JSON.stringify(report, (_k, v: unknown) => v instanceof Map ? Object.fromEntries(v) : v, 2))
  process.stdout.write(renderReport(report))
}

/**
 * The two calls measureRun makes of a database, answered through Sluice's API for the embedded
 * engine: the row count is the stream's (GET /api/streams/:name, a count() of `events`), and
 * emptying the tables is left out (each run's durability check is a difference of counts).
 */
function countThroughApi (child: () => SluiceChild, stream: string): ClickHouse {
  const api = {
    database: 'sluice',
    async query<T> (statement: string): Promise<T[]> {
      if (!/count\(\)/.test(String(statement))) return []
      const c = child()
      const admin = readFileSync(join(tmp, 'sluice', 'admin-token'), 'utf8').trim()
      const view = await c.api<{ stats: { events: number } }>('GET', `/api/streams/${stream}`, admin)
      return [{ n: view.stats.events }] as T[]
    },
    async command (): Promise<void> {},
  }
  return api as unknown as ClickHouse
}

function describeAnswers (record: RunRecord): string {
  const t = record.load.total
  return [...t.byStatus].map(([status, n]) => `${status} x${n}`).concat([...t.byCode].map(([code, n]) => `${code} x${n}`)).join(', ')
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)]
}

try {
  await main()
} catch (err) {
  if (cleaned !== null) await new Promise(() => {}) // interrupted: the signal handler exits
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}${(err as Error).cause ? `\ncause: ${String((err as Error).cause)}` : ''}\n`)
  const child = sluice as SluiceChild | null
  if (child) process.stderr.write(`Sluice's log ends with:\n${readFileSync(child.logFile, 'utf8').slice(-3000)}\n`)
  process.exitCode = 1
} finally {
  await cleanup()
}
