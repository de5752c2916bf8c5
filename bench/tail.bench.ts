// The real-time view benchmarks: how soon an ingested event reaches a live-tail client, and what
// ten tail clients cost ingest. Like bench/ingest.bench.ts it starts a ClickHouse of its own (or
// uses --clickhouse-url, in a fresh database it drops afterwards) and Sluice as a child process,
// creates a stream and an ingest token with the admin token, drives load with autocannon
// (load-driver.ts) and prints Markdown tables. See bench/README.md, "Real-time views".
//
//   node bench/tail.bench.ts [--only latency,throughput] [--rps 90] [--runs 3] [--duration S]
//     [--connections 256] [--tails 10] [--clickhouse-url URL] [--sluice-main OTHER/lib/main.ts]
//     [--keep] [--env NAME=VALUE]... [--clickhouse-dir DIR] (its ClickHouse's data under DIR)
//
// - latency: one tail client with q=host:tail-bench-marker; open-loop ingest at --rps requests/s
//   of 1,000-line bodies, each with one marker line more whose attrs.bench_id is unique. Per
//   marker: the request's start and its 200's arrival (this process's clock), and when the tail
//   delivered it. --runs runs of --duration (10) s after 2 s of warm-up.
// - throughput: closed-loop plain ingest at --connections, --runs pairs of runs of --duration (8)
//   s after 2 s of warm-up, one without tail clients and one with --tails clients reading
//   continuously, the order swapped every other pair so that a drift of the host favours neither
//   side; first one uncounted run with the tails (warm-up of the live code path).
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { startManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import type { ManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import { createLogger } from '../lib/logger.ts'
import { buildBodyPool } from './body-pool.ts'
import { envPairs, SluiceChild } from './sluice-child.ts'
import { BenchDirs } from './bench-dirs.ts'
import { measureRun, sluiceTarget } from './ingest-runs.ts'
import type { RunContext, RunRecord } from './ingest-runs.ts'
import { quantile } from './load-driver.ts'
import type { LoadTarget } from './load-driver.ts'
import { countsBetween, TailReader } from './tail-reader.ts'
import type { TailCounts } from './tail-reader.ts'

const phases = ['latency', 'throughput'] as const
type Phase = typeof phases[number]

const { values: args } = parseArgs({
  options: {
    only: { type: 'string' },
    rps: { type: 'string', default: '90' },
    runs: { type: 'string', default: '3' },
    duration: { type: 'string' },
    connections: { type: 'string', default: '256' },
    tails: { type: 'string', default: '10' },
    'clickhouse-url': { type: 'string' },
    'clickhouse-dir': { type: 'string' },
    'sluice-main': { type: 'string' },
    keep: { type: 'boolean', default: false },
    env: { type: 'string', multiple: true },
  },
})
const selected: ReadonlySet<Phase> = new Set(args.only
  ? args.only.split(',').map((p) => {
    if (!(phases as readonly string[]).includes(p)) throw new Error(`--only: unknown phase ${p} (${phases.join(', ')})`)
    return p as Phase
  })
  : phases)
const rps = Number(args.rps)
const runs = Number(args.runs)
const connections = Number(args.connections)
const tailCount = Number(args.tails)
const latencyS = Number(args.duration ?? 10)
const throughputS = Number(args.duration ?? 8)
const linesPerBody = 1000
const poolSize = 50
const streamName = 'bench'
const markerHost = 'tail-bench-marker'
/** Targets of the issue: delivery p99 after the commit and from the request's start; throughput drop. */
const targets = { afterCommitP99Ms: 100, fromStartP99Ms: 400, dropShare: 0.1 }
/**
 * The tails of the throughput runs: the first half follow every event (q empty), the others
 * filters a dashboard uses (each matches 9-14% of the payload's events: thousands a second, so
 * past the hub's 2,000 events/s per client too).
 */
const tailFilters = ['status:5xx', 'host:api-1.prod.internal', 'path:/api/* status:>=400', 'timeout', 'method:POST -status:2xx']
const filtersFor = (n: number): string[] => Array.from({ length: n }, (_, i) => i < Math.ceil(n / 2) ? '' : tailFilters[(i - Math.ceil(n / 2)) % tailFilters.length])

const log = createLogger({ level: 'warn', fd: 2 })
const progress = (text: string): void => { process.stderr.write(`[tail] ${text}\n`) }
const int = (n: number): string => Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'
const ms = (n: number): string => Number.isFinite(n) ? n.toFixed(n !== 0 && Math.abs(n) < 10 ? 1 : 0) : '-'
const pct = (n: number): string => Number.isFinite(n) ? `${(n * 100).toFixed(1)}%` : '-'

const dirs = new BenchDirs('sluice-tail-bench', args['clickhouse-dir'])
const tmp = dirs.tmp
const clickhouseDir = dirs.clickhouse
let managed: ManagedClickHouse | null = null
let sluice: SluiceChild | null = null
let externalDb: ClickHouse | null = null
const clients: ClickHouse[] = []
const openTails = new Set<TailReader>()

let cleaned: Promise<void> | null = null
/** Stops everything this benchmark started; once, whoever calls first (a signal, or the end). */
function cleanup (): Promise<void> {
  cleaned ??= (async () => {
    await Promise.all([...openTails].map((t) => t.close().catch(() => {})))
    await sluice?.stop().catch(() => {})
    if (externalDb && !args.keep) await externalDb.command(`DROP DATABASE IF EXISTS \`${externalDb.database}\``).catch(() => {})
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await managed?.stop().catch(() => {})
    if (!args.keep) dirs.remove()
  })()
  return cleaned
}
process.on('exit', () => { sluice?.killNow() })
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping Sluice and ClickHouse`)
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  })
}

async function openTail (token: string, q: string, onEvent?: (event: Record<string, unknown>, at: number) => void): Promise<TailReader> {
  const tail = await TailReader.open(sluice!.url, streamName, token, q, onEvent)
  openTails.add(tail)
  return tail
}

async function closeTails (tails: TailReader[]): Promise<void> {
  await Promise.all(tails.map(async (t) => { await t.close(); openTails.delete(t) }))
  // Until the server has seen them go, ingest still works for them (TailHub.liveRequestFor).
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline && ((await sluice!.metrics()).get('sluice_tail_clients') ?? 0) > 0) await sleep(50)
}

interface Marker {
  isInWindow: boolean
  /** performance.now() of this process: the send, the answer's arrival, the tail's delivery. */
  sentAt: number
  answeredAt: number
  deliveredAt: number
  status: number
  /** received_at of the delivered event: Sluice's Date.now() when the request arrived. */
  serverReceivedAt: number
  deliveries: number
}

interface LatencyRecord {
  run: RunRecord
  markers: Marker[]
  /** Markers in the window answered 200. */
  committed: Marker[]
  lost: number
  duplicates: number
  tail: TailCounts
  tailError: string | null
}

async function measureLatency (label: string, context: RunContext, ingestToken: string, patToken: string, bodies: ReturnType<typeof buildBodyPool>): Promise<LatencyRecord> {
  const markers = new Map<number, Marker>()
  let isInWindow = false
  let nextId = 0
  let strays = 0
  const tail = await openTail(patToken, `host:${markerHost}`, (event, at) => {
    const id = (event.attrs as { bench_id?: number } | null)?.bench_id
    const m = id === undefined ? undefined : markers.get(id)
    if (!m) { strays++; return }
    m.deliveries++
    if (m.deliveries === 1) {
      m.deliveredAt = at
      m.serverReceivedAt = event.received_at as number
    }
  })
  const target: LoadTarget = {
    ...sluiceTarget(sluice!.url, streamName, ingestToken, bodies, 'plain'),
    prepare (request) {
      const id = ++nextId
      markers.set(id, { isInWindow, sentAt: NaN, answeredAt: NaN, deliveredAt: NaN, status: 0, serverReceivedAt: NaN, deliveries: 0 })
      const line = JSON.stringify({ host: markerHost, path: '/tail-bench', method: 'POST', status: 200, bench_id: id }) + '\n'
      return { body: Buffer.concat([request.body, Buffer.from(line)]), tag: id }
    },
    onAnswer (tag, status, _body, sentAt, answeredAt) {
      const m = markers.get(tag as number)
      if (!m) return
      m.sentAt = sentAt
      m.answeredAt = answeredAt
      m.status = status
    },
    onPhase (phase) { isInWindow = phase === 'window' },
  }
  const run = await measureRun(label, target, context, { ratePerS: rps, warmupS: 2, durationS: latencyS })
  // The last markers' deliveries: a 200 means the event was published before it was sent.
  const all = [...markers.values()]
  const deadline = performance.now() + 2000
  while (performance.now() < deadline && all.some((m) => m.status === 200 && m.deliveries === 0)) await sleep(20)
  await closeTails([tail])
  const committed = all.filter((m) => m.isInWindow && m.status === 200)
  return {
    run,
    markers: all,
    committed,
    lost: all.filter((m) => m.status === 200 && m.deliveries === 0).length,
    duplicates: all.filter((m) => m.deliveries > 1).length + strays,
    tail: tail.snapshot(),
    tailError: tail.error?.message ?? null,
  }
}

interface ThroughputRecord {
  run: RunRecord
  hasTails: boolean
  /** Per tail client: its filter and what it received during the window. */
  tails: Array<{ q: string, window: TailCounts, total: TailCounts, error: string | null }>
}

async function measureThroughput (label: string, hasTails: boolean, context: RunContext, ingestToken: string, patToken: string, bodies: ReturnType<typeof buildBodyPool>, durationS = throughputS): Promise<ThroughputRecord> {
  const tails = hasTails ? await Promise.all(filtersFor(tailCount).map((q) => openTail(patToken, q))) : []
  let atStart: TailCounts[] = []
  let atEnd: TailCounts[] = []
  const target: LoadTarget = {
    ...sluiceTarget(sluice!.url, streamName, ingestToken, bodies, 'plain'),
    onPhase (phase) {
      if (phase === 'window') atStart = tails.map((t) => t.snapshot())
      else atEnd = tails.map((t) => t.snapshot())
    },
  }
  // 2 s of warm-up: a stream's first tail clients find no average of matches per request yet, so
  // for about a second the workers serialize every match (tail-hub.ts); not in the window.
  const run = await measureRun(label, target, context, { connections, warmupS: 2, durationS })
  await closeTails(tails)
  return {
    run,
    hasTails,
    tails: tails.map((t, i) => ({ q: t.q, window: countsBetween(atStart[i], atEnd[i]), total: t.snapshot(), error: t.error?.message ?? null })),
  }
}

/** "p50 / p99 / max" of a list, in ms. */
function percentiles (values: number[]): string {
  return `${ms(quantile(values, 0.5))} / ${ms(quantile(values, 0.99))} / ${ms(Math.max(...values))}`
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  if (sorted.length === 0) return NaN
  return sorted.length % 2 === 1 ? sorted[Math.floor(mid)] : (sorted[mid - 1] + sorted[mid]) / 2
}

const othersShare = (r: RunRecord): number => r.cpu.others / r.cpu.capacity
const durability = (r: RunRecord): string => r.isExact ? 'yes' : r.isDurable ? `more stored (Δ ${int(r.chDelta)}, acked ${int(r.load.total.stored)})` : `**NO: Δ ${int(r.chDelta)}, acked ${int(r.load.total.stored)}**`
/** CPU seconds over a window as cores; '-' when not measured (a ClickHouse that is not ours). */
const perSecond = (cpuS: number, windowS: number): string => Number.isFinite(cpuS) ? (cpuS / windowS).toFixed(2) : '-'
/** Answers other than 200 in the window, e.g. "429 x12" (a 429 is a result, not a failure). */
const otherAnswers = (r: RunRecord): string => {
  const list = [...r.load.window.byStatus].filter(([status]) => status !== 200).map(([status, n]) => `${status} x${int(n)}`)
  return list.length === 0 ? 'none' : list.join(', ')
}
const cores = (r: RunRecord): string => {
  const t = r.cpu.sluiceThreads
  return `${(r.cpu.sluice / r.load.windowS).toFixed(2)} (main ${(t.main / r.load.windowS).toFixed(2)}, workers ${(t.workers / r.load.windowS).toFixed(2)}, v8 ${(t.v8 / r.load.windowS).toFixed(2)})`
}

function renderLatency (records: LatencyRecord[]): string {
  const out: string[] = []
  const pooled = records.flatMap((r) => r.committed)
  const delivered = pooled.filter((m) => m.deliveries > 0)
  const fromStart = delivered.map((m) => m.deliveredAt - m.sentAt)
  const afterCommit = delivered.map((m) => m.deliveredAt - m.answeredAt)
  const p99Start = quantile(fromStart, 0.99)
  const p99Commit = quantile(afterCommit, 0.99)
  const dropped = records.reduce((s, r) => s + r.tail.dropped, 0)
  const lost = records.reduce((s, r) => s + r.lost, 0)
  out.push(`### Ingest → tail delivery, open loop at ${rps} req/s of ${linesPerBody} lines + 1 marker, one tail client (q=host:${markerHost})`, '')
  out.push('| Measurement | Result (all runs pooled) | Target |', '|---|---|---|')
  out.push(`| Delivered − request start, p50 / p99 / max ms | ${percentiles(fromStart)} | p99 < ${targets.fromStartP99Ms}: ${p99Start < targets.fromStartP99Ms ? 'met' : '**missed**'} |`)
  out.push(`| Delivered − 200 received (≈ commit), p50 / p99 / max ms; min | ${percentiles(afterCommit)}; min ${ms(Math.min(...afterCommit))} | p99 < ${targets.afterCommitP99Ms}: ${p99Commit < targets.afterCommitP99Ms ? 'met' : '**missed**'} |`)
  out.push(`| Markers delivered / committed in the windows | ${int(delivered.length)} / ${int(pooled.length)}; lost ${lost}; delivered twice ${records.reduce((s, r) => s + r.duplicates, 0)}; \`dropped\` ${dropped} | dropped 0: ${dropped === 0 && lost === 0 ? 'met' : '**missed**'} |`)
  out.push('')
  out.push('| Run | Markers (window, 200) | Delivered − start p50 / p99 / max ms | Delivered − 200 p50 / p99 / max ms (min) | Delivered − server `received_at` p50 / p99 ms | 200 − start (ingest) p50 / p99 ms | Offered req/s, late sends | Other answers | Durable: CH Δ = Σ ingested | Sluice cores | Others |')
  out.push('|---|---:|---|---|---|---|---|---|---|---|---:|')
  for (const [i, r] of records.entries()) {
    const d = r.committed.filter((m) => m.deliveries > 0)
    const start = d.map((m) => m.deliveredAt - m.sentAt)
    const commit = d.map((m) => m.deliveredAt - m.answeredAt)
    const server = d.map((m) => performance.timeOrigin + m.deliveredAt - m.serverReceivedAt)
    const ingest = r.committed.map((m) => m.answeredAt - m.sentAt)
    out.push(`| ${i + 1} | ${int(r.committed.length)} | ${percentiles(start)} | ${percentiles(commit)} (${ms(Math.min(...commit))}) | ${ms(quantile(server, 0.5))} / ${ms(quantile(server, 0.99))} | ` +
      `${ms(quantile(ingest, 0.5))} / ${ms(quantile(ingest, 0.99))} | ${int(r.run.load.window.sent / r.run.load.windowS)}, ${r.run.load.lateSends} | ${otherAnswers(r.run)} | ${durability(r.run)} | ${cores(r.run)} | ${pct(othersShare(r.run))} |`)
  }
  const errors = records.filter((r) => r.tailError !== null).map((r) => r.tailError)
  if (errors.length > 0) out.push('', `Tail errors: ${errors.join('; ')}`)
  return out.join('\n')
}

function renderThroughput (records: ThroughputRecord[]): string {
  const out: string[] = []
  const none = records.filter((r) => !r.hasTails)
  const withTails = records.filter((r) => r.hasTails)
  const drops: number[] = []
  for (let i = 0; i < Math.min(none.length, withTails.length); i++) drops.push(1 - withTails[i].run.eventsPerS / none[i].run.eventsPerS)
  const medianDrop = 1 - median(withTails.map((r) => r.run.eventsPerS)) / median(none.map((r) => r.run.eventsPerS))
  const filters = filtersFor(tailCount)
  out.push(`### Ingest throughput with ${tailCount} tail clients vs none: closed loop, ${connections} connections, ${linesPerBody}-line plain bodies, ${throughputS} s windows`, '')
  out.push(`Tails: ${filters.filter((q) => q === '').length} with q empty (every event), and ${filters.filter((q) => q !== '').map((q) => `\`${q}\``).join(', ')}.`, '')
  out.push('| Measurement | Result | Target |', '|---|---|---|')
  out.push(`| Durable events/s, no tails | ${int(median(none.map((r) => r.run.eventsPerS)))} (${none.map((r) => int(r.run.eventsPerS)).join(', ')}) | |`)
  out.push(`| Durable events/s, ${tailCount} tails | ${int(median(withTails.map((r) => r.run.eventsPerS)))} (${withTails.map((r) => int(r.run.eventsPerS)).join(', ')}) | |`)
  out.push(`| Drop (medians; per pair) | ${pct(medianDrop)} (${drops.map(pct).join(', ')}) | < ${pct(targets.dropShare)}: ${medianDrop < targets.dropShare ? 'met' : '**missed**'} |`)
  out.push('')
  out.push('| Run | Tails | Events/s | p50 / p99 ms | Other answers | Sluice cores | Sluice CPU-s per 1M events | ClickHouse / this process (load and tails) cores | Tail events/s received: q empty (each) / filtered (each) | Tail `dropped`/s (all clients) | Durable | Others |')
  out.push('|---|---:|---:|---|---|---|---:|---|---|---:|---|---:|')
  for (const [i, r] of records.entries()) {
    const s = r.run.load.windowS
    const all = r.tails.filter((t) => t.q === '')
    const filtered = r.tails.filter((t) => t.q !== '')
    const perClient = (list: typeof r.tails): string => list.length === 0 ? '-' : list.map((t) => int(t.window.events / s)).join(', ')
    const ok = r.run.load.window.okLatencyMs
    out.push(`| ${Math.floor(i / 2) + 1}${r.hasTails ? 'b' : 'a'} | ${r.tails.length} | ${int(r.run.eventsPerS)} | ${ms(quantile(ok, 0.5))} / ${ms(quantile(ok, 0.99))} | ${otherAnswers(r.run)} | ${cores(r.run)} | ` +
      `${(r.run.cpu.sluice / (r.run.load.window.stored / 1e6)).toFixed(2)} | ${perSecond(r.run.cpu.clickhouse, s)} / ${perSecond(r.run.cpu.loadGenerator, s)} | ${perClient(all)} / ${perClient(filtered)} | ${int(r.tails.reduce((n, t) => n + t.window.dropped, 0) / s)} | ${durability(r.run)} | ${pct(othersShare(r.run))} |`)
  }
  const errors = records.flatMap((r) => r.tails).filter((t) => t.error !== null).map((t) => `${t.q}: ${t.error}`)
  if (errors.length > 0) out.push('', `Tail errors: ${errors.join('; ')}`)
  return out.join('\n')
}

async function main (): Promise<void> {
  const startedAt = Date.now()
  progress(`temp dir ${tmp}; phases: ${[...selected].join(', ')}`)
  const bodies = buildBodyPool({ count: poolSize, linesPerBody, seed: 42, nowMs: Date.now(), directOrgId: 'org_direct', directStream: streamName })
  let clickhouseUrl = args['clickhouse-url']
  let database = 'sluice'
  if (clickhouseUrl) {
    database = `sluice_tail_bench_${randomBytes(4).toString('hex')}`
    externalDb = createClickHouse({ url: clickhouseUrl, user: process.env.CLICKHOUSE_USER ?? 'default', password: process.env.CLICKHOUSE_PASSWORD ?? '', database, requestTimeoutMs: 120_000 })
    clients.push(externalDb)
  } else {
    managed = await startManagedClickHouse({ dataDir: clickhouseDir, startTimeoutMs: 60_000, log })
    clickhouseUrl = managed.url
  }
  const sluiceDb = externalDb ?? createClickHouse({ url: clickhouseUrl, user: 'default', password: '', database, requestTimeoutMs: 120_000 })
  if (!externalDb) clients.push(sluiceDb)

  sluice = await SluiceChild.start({
    dataDir: join(tmp, 'sluice'), clickhouseUrl, database, mainFile: args['sluice-main'],
    env: {
      SLUICE_REQUESTS_PER_MINUTE: '100000000',
      SLUICE_CONCURRENT_REQUESTS: '100000',
      // Tails closed at the end of a run may not be gone yet when the next opens: no 429 for that.
      SLUICE_MAX_TAILS_PER_ORG: String(Math.max(50, tailCount * 2)),
      ...envPairs(args.env ?? []),
    },
  })
  const { admin, token } = await sluice.setUpStream(streamName)
  const context: RunContext = { clickhousePid: managed?.pid ?? 0, sluice, database: sluiceDb }
  const version = (await sluiceDb.query<{ v: string }>('SELECT version() AS v'))[0].v
  progress(`Sluice pid ${sluice.pid} at ${sluice.url}; ClickHouse ${version} at ${clickhouseUrl}${managed ? ` (pid ${managed.pid})` : ', not ours: its CPU is not measured'}; warming up`)
  await measureRun('warm-up', sluiceTarget(sluice.url, streamName, token, bodies, 'plain'), context, { connections: 64, warmupS: 1, durationS: 2 })

  const sections: string[] = []
  if (selected.has('latency')) {
    const records: LatencyRecord[] = []
    for (let i = 1; i <= runs; i++) {
      const r = await measureLatency(`latency ${rps} req/s #${i}`, context, token, admin, bodies)
      const d = r.committed.filter((m) => m.deliveries > 0)
      progress(`${r.run.label}: ${d.length}/${r.committed.length} markers delivered, after the 200 p99 ${ms(quantile(d.map((m) => m.deliveredAt - m.answeredAt), 0.99))} ms, from the start p99 ${ms(quantile(d.map((m) => m.deliveredAt - m.sentAt), 0.99))} ms; dropped ${r.tail.dropped}; late sends ${r.run.load.lateSends}`)
      records.push(r)
    }
    sections.push(renderLatency(records))
  }
  if (selected.has('throughput')) {
    // Not counted: so that the first measured run with tails does not pay for compiling the
    // workers' live path (filters, tail JSON) and the hub's.
    await measureThroughput('warm-up with tails', true, context, token, admin, bodies, 2)
    const records: ThroughputRecord[] = []
    for (let i = 1; i <= runs; i++) {
      const order = i % 2 === 1 ? [false, true] : [true, false]
      const pair: ThroughputRecord[] = []
      for (const hasTails of order) {
        const r = await measureThroughput(`throughput ${hasTails ? `${tailCount} tails` : 'no tails'} #${i}`, hasTails, context, token, admin, bodies)
        progress(`${r.run.label}: ${int(r.run.eventsPerS)} events/s; tail events/s ${r.tails.map((t) => int(t.window.events / r.run.load.windowS)).join(', ') || '-'}; others ${pct(othersShare(r.run))}`)
        pair.push(r)
      }
      records.push(...pair.sort((a, b) => Number(a.hasTails) - Number(b.hasTails)))
    }
    sections.push(renderThroughput(records))
  }

  const head = [
    `## Real-time views: \`node bench/tail.bench.ts ${process.argv.slice(2).join(' ')}\``, '',
    `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ClickHouse ${version}${managed ? ' (started by the benchmark)' : ` at ${clickhouseUrl}`}; ` +
      `${poolSize} bodies of ${linesPerBody} lines (payload.ts, seed 42); Sluice's defaults but org limits raised, tail.maxPerOrg ${Math.max(50, tailCount * 2)}` +
      `${args.env?.length ? `, ${args.env.join(', ')}` : ''}${args['sluice-main'] ? `; Sluice from ${args['sluice-main']}` : ''}; ${((Date.now() - startedAt) / 1000).toFixed(0)} s.`,
  ]
  process.stdout.write([...head, '', ...sections.map((s) => s + '\n')].join('\n'))
}

try {
  await main()
} catch (err) {
  if (cleaned !== null) await new Promise(() => {}) // interrupted: the signal handler exits
  process.stderr.write(`tail bench failed: ${(err as Error).stack ?? String(err)}\n`)
  const child = sluice as SluiceChild | null
  if (child) process.stderr.write(`Sluice's log ends with:\n${readFileSync(child.logFile, 'utf8').slice(-3000)}\n`)
  process.exitCode = 1
} finally {
  await cleanup()
}
