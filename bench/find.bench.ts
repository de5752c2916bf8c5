// The find benchmark (issue 22): how fast the read API finds anything in 24 h of a 30 M-event
// stream of access and application logs (find-dataset.ts), through Sluice's HTTP API, and what
// heavy reads cost ingest.
//
//   CLICKHOUSE_URL=http://127.0.0.1:28123 node bench/find.bench.ts [--rows 30000000]
//     [--batch-rows 250000] [--database NAME] [--keep] [--runs 30] [--slow-runs 10] [--only find,export,ingest]
//     [--export-minutes 50] [--ingest-pairs 2] [--duration 8] [--connections 256]
//     [--sluice-data DIR] [--sluice-main OTHER_CHECKOUT/lib/main.ts] [--env NAME=VALUE]...
//     [--scenarios a,b,...] [--profile DIR] (Sluice runs with --cpu-prof into DIR)
//
// Setup: a fresh database (or `--database NAME`, kept from an earlier run with --keep), Sluice
// started on it as a child process (bench/sluice-child.ts: it applies the migrations and creates
// org `default` at its first start; its admin token stays in `--sluice-data`, by default
// $TMPDIR/sluice-find-<database>, for the next run), the stream `find` made through the API, then
// `--rows` events loaded straight into `events` under that org (find-dataset.ts; the rollup views
// fill as on ingest). Nothing is loaded when the stream already holds events.
//
// Phases:
// - find: each scenario (the issue's targets (a)-(f)) 3 warm-ups, then `--runs` GETs one after
//   another, wall clock from the request to the end of the body: p50/p95/max; Sluice CPU per call
//   (/proc/<pid>/stat around the runs); then one more call, alone, whose ClickHouse statements
//   are read from system.query_log (the server needs query_log configured and log_queries=1 for
//   Sluice's queries): their count, rows and bytes read, summed query_duration_ms, CPU
//   (ProfileEvents UserTimeMicroseconds + SystemTimeMicroseconds) and peak memory_usage.
// - export: GET /export over `--export-minutes` of the middle of the day (>= 1 M events at 30 M a
//   day for 50 minutes), body read as fast as it comes: events/s, Sluice RSS sampled every 100 ms
//   (first, middle, last tenth and peak), Sluice CPU.
// - ingest: ingest throughput (ingest.bench.ts's load: 50 bodies of 1,000 mixed lines, closed
//   loop at `--connections`) into another stream of the same Sluice, alone and with four loops of
//   `stats?by=user_id` over the whole 24 h of the big stream running, alternating, `--ingest-pairs`
//   times. Durable events/s: `ingested` of the 2xx answers in the window / the window; the rows
//   ClickHouse gained in that stream must equal what all 2xx answers acknowledged.
// The machine is shared: the load average and the CPU other processes took are printed with each
// table. A 429 (too_many_reads) or 422/504 answer is a result and is counted, not a failure.
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { envPairs, SluiceChild } from './sluice-child.ts'
import { buildBodyPool } from './body-pool.ts'
import { sluiceTarget } from './ingest-runs.ts'
import { quantile, runLoad } from './load-driver.ts'
import { machineCpuSeconds, processCpuSeconds, rssBytes } from './proc-stats.ts'
import { endMs, hotService, insertSettings, loadFindEvents, needlePhrase, needleUser, services, startMs, stream } from './find-dataset.ts'

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '30000000' },
    'batch-rows': { type: 'string', default: '250000' },
    database: { type: 'string' },
    keep: { type: 'boolean', default: false },
    runs: { type: 'string', default: '30' },
    'slow-runs': { type: 'string', default: '10' },
    only: { type: 'string', default: 'find,export,ingest' },
    'export-minutes': { type: 'string', default: '50' },
    'ingest-pairs': { type: 'string', default: '2' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '256' },
    'sluice-data': { type: 'string' },
    'sluice-main': { type: 'string' },
    profile: { type: 'string' },
    env: { type: 'string', multiple: true },
    scenarios: { type: 'string' },
  },
})
const totalRows = Number(args.rows)
const batchRows = Number(args['batch-rows'])
const runs = Number(args.runs)
const phases = new Set(args.only.split(','))
const url = process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:18123'
const user = process.env.CLICKHOUSE_USER ?? 'default'
const password = process.env.CLICKHOUSE_PASSWORD ?? ''
const progress = (text: string): void => { process.stderr.write(`[find] ${text}\n`) }
const fmt = (n: number): string => Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'
const ms = (n: number): string => Number.isFinite(n) ? n.toFixed(1) : '-'
const loadAverage = (): string => loadavg()[0].toFixed(1)

function openDatabase (database: string): ClickHouse {
  return createClickHouse({ url, user, password, database, requestTimeoutMs: 900_000 })
}

const database = args.database ?? `sluice_find_${randomBytes(4).toString('hex')}`
const sluiceData = args['sluice-data'] ?? join(tmpdir(), `sluice-find-${database}`)
const clickhouse = openDatabase(database)
let sluice: SluiceChild | null = null
process.on('exit', () => { sluice?.killNow() })
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void sluice?.stop().finally(() => process.exit(130)) })
}

/** Each statement of the calls whose cost was read (printed at the end: what a slow read spends its time on). */
const statementLog: string[] = []

interface Cost { statements: number, readRows: number, readBytes: number, durationMs: number, cpuMs: number, memoryBytes: number, failed: number }

/**
 * What Sluice's ClickHouse statements of [t0, t1] cost, from system.query_log. query_start_time
 * has whole seconds, so the caller leaves a quiet second before and after the call.
 */
async function costBetween (t0: number, t1: number): Promise<Cost> {
  await clickhouse.command('SYSTEM FLUSH LOGS')
  const [row] = await clickhouse.query<Record<string, number>>(`
    SELECT countIf(type = 2) AS statements, countIf(type IN (3, 4)) AS failed, sum(read_rows) AS read_rows, sum(read_bytes) AS read_bytes,
      sum(query_duration_ms) AS duration_ms, max(memory_usage) AS memory,
      sum(arraySum(arrayFilter((v, name) -> name IN ('UserTimeMicroseconds', 'SystemTimeMicroseconds'), ProfileEvents.Values, ProfileEvents.Names))) AS cpu_us
    FROM system.query_log
    WHERE event_date >= yesterday() AND type IN (2, 3, 4)
      AND query_start_time >= toDateTime(${Math.floor(t0 / 1000)}) AND query_start_time <= toDateTime(${Math.ceil(t1 / 1000)})
      AND position(query, '\\'${stream}\\'') > 0 AND position(query, 'query_log') = 0`)
  const each = await clickhouse.query<Record<string, string | number>>(`
    SELECT type, query_duration_ms AS d, read_rows AS r, read_bytes AS b, memory_usage AS m,
      arraySum(arrayFilter((v, name) -> name IN ('UserTimeMicroseconds', 'SystemTimeMicroseconds'), ProfileEvents.Values, ProfileEvents.Names)) AS cpu_us,
      substring(replaceRegexpAll(query, '\\\\s+', ' '), 1, 400) AS text
    FROM system.query_log
    WHERE event_date >= yesterday() AND type IN (2, 3, 4)
      AND query_start_time >= toDateTime(${Math.floor(t0 / 1000)}) AND query_start_time <= toDateTime(${Math.ceil(t1 / 1000)})
      AND position(query, '\\'${stream}\\'') > 0 AND position(query, 'query_log') = 0
    ORDER BY query_start_time, query_duration_ms`)
  for (const e of each) {
    statementLog.push(`  type ${e.type} ${e.d} ms, ${fmt(Number(e.r))} rows, ${fmt(Number(e.b) / 2 ** 20)} MiB, CPU ${fmt(Number(e.cpu_us) / 1000)} ms, mem ${fmt(Number(e.m) / 2 ** 20)} MiB: ${e.text}`)
  }
  return {
    statements: Number(row.statements), failed: Number(row.failed), readRows: Number(row.read_rows), readBytes: Number(row.read_bytes),
    durationMs: Number(row.duration_ms), cpuMs: Number(row.cpu_us) / 1000, memoryBytes: Number(row.memory),
  }
}

async function get (path: string, token: string, signal?: AbortSignal): Promise<{ status: number, body: string, ms: number }> {
  const started = performance.now()
  const res = await fetch(sluice!.url + path, { headers: { authorization: `Bearer ${token}` }, signal })
  const body = await res.text()
  return { status: res.status, body, ms: performance.now() - started }
}

interface Scenario { key: string, name: string, targetMs: number, path: () => string }

const range = `from=${startMs}&to=${endMs}`
/** The day's last hour: what the dashboard's 1 h range reads. */
const lastHour = `from=${endMs - 3_600_000}&to=${endMs}`
const q = (text: string): string => `q=${encodeURIComponent(text)}`
/** The middle of the day: anchors for context, the start of the export. */
const middle = startMs + Math.floor((endMs - startMs) / 2)

async function measureFind (token: string): Promise<void> {
  // Anchors for context: an event of the hottest service in the middle of the day, and one of the rarest.
  const anchorOf = async (service: string): Promise<string> => {
    const { status, body } = await get(`/api/streams/${stream}/events?from=${middle}&to=${middle + 600_000}&limit=1000`, token)
    if (status !== 200) throw new Error(`events for an anchor: ${status} ${body}`)
    const events = (JSON.parse(body) as { events: Array<{ id: string, service: string | null, host: string | null }> }).events
    const event = events.find((e) => e.service === service) ?? events[0]
    return event.id
  }
  const hotAnchor = await anchorOf(hotService)
  const rareAnchor = await anchorOf(services[services.length - 1])
  const all: Scenario[] = [
    { key: 'a', name: `rare attribute value \`user_id:${needleUser.id}\` (75 events), first page`, targetMs: 500, path: () => `/api/streams/${stream}/events?${range}&${q(`user_id:${needleUser.id}`)}` },
    { key: 'b', name: `\`service:${hotService} level:error\`, first page`, targetMs: 100, path: () => `/api/streams/${stream}/events?${range}&${q(`service:${hotService} level:error`)}` },
    { key: 'c', name: `rare phrase \`"${needlePhrase.text}"\`, first page`, targetMs: 500, path: () => `/api/streams/${stream}/events?${range}&${q(`"${needlePhrase.text}"`)}` },
    { key: 'd', name: '/fields over 24 h', targetMs: 500, path: () => `/api/streams/${stream}/fields?${range}` },
    { key: 'd2', name: '/fields over 24 h, `sample=50000` (the dashboard\'s sidebar)', targetMs: 500, path: () => `/api/streams/${stream}/fields?${range}&sample=50000` },
    { key: 'd3', name: `/fields over 24 h with \`q=service:${services[services.length - 1]}\` (the rarest service, in every granule)`, targetMs: 500, path: () => `/api/streams/${stream}/fields?${range}&sample=50000&${q(`service:${services[services.length - 1]}`)}` },
    { key: 'd4', name: `/fields over 24 h with \`q=user_id:${needleUser.id}\` (75 events)`, targetMs: 500, path: () => `/api/streams/${stream}/fields?${range}&sample=50000&${q(`user_id:${needleUser.id}`)}` },
    { key: 'e1', name: 'stats?by=region (attribute, 8 values) over 24 h', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${range}&by=region` },
    { key: 'e2', name: 'stats?by=route (attribute, ~20 values) over 24 h', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${range}&by=route` },
    { key: 'e3', name: 'stats?by=user_id (attribute, ~1 M values) over 24 h', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${range}&by=user_id` },
    { key: 'e4', name: 'stats?by=service (column) over 24 h', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${range}&by=service` },
    { key: 'e5', name: 'stats?by=user_id over the last hour (about 1.25 M events: counted exactly since 596a1bb)', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${lastHour}&by=user_id` },
    { key: 'e6', name: 'stats?by=service over the last hour', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${lastHour}&by=service` },
    { key: 'e7', name: 'stats?by=user_id&lists=none over the last hour (the Explore histogram\'s read)', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${lastHour}&by=user_id&lists=none` },
    { key: 'e8', name: 'stats?by=service&lists=none over the last hour', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${lastHour}&by=service&lists=none` },
    { key: 'e9', name: 'stats?by=user_id&lists=none&sample=500000 over the last hour (sampled, as without sample= before 596a1bb)', targetMs: 1000, path: () => `/api/streams/${stream}/stats?${lastHour}&by=user_id&lists=none&sample=500000` },
    { key: 'e0', name: 'stats over 24 h, no by (reference: rollups)', targetMs: NaN, path: () => `/api/streams/${stream}/stats?${range}` },
    { key: 'f1', name: `context of an event (${hotService}, same host,service)`, targetMs: 50, path: () => `/api/streams/${stream}/events/${hotAnchor}/context` },
    { key: 'f2', name: `context of an event (${services[services.length - 1]}: rarest service)`, targetMs: 50, path: () => `/api/streams/${stream}/events/${rareAnchor}/context` },
  ]
  const picked = args.scenarios ? all.filter((s) => args.scenarios!.split(',').includes(s.key)) : all
  const lines: string[] = []
  for (const s of picked) {
    const path = s.path()
    const first = await get(path, token)
    let matches = '-'
    if (first.status === 200) {
      const json = JSON.parse(first.body) as { events?: unknown[], fields?: unknown[], groups?: unknown[], before?: unknown[], after?: unknown[], sampled?: boolean }
      matches = json.events ? `${json.events.length} events` : json.fields ? `${json.fields.length} fields${json.sampled ? ', sampled' : ''}`
        : json.before ? `${json.before.length} + 1 + ${json.after!.length} events` : json.groups ? `${json.groups.length} groups` : 'series'
    }
    // A slow read (over a second) runs `--slow-runs` times (p95 of 10 is the second slowest, of 5 the slowest).
    const n = first.status !== 200 ? Math.min(runs, 3) : first.ms > 1000 ? Math.min(runs, Number(args['slow-runs'])) : runs
    for (let i = 0; i < 2; i++) await get(path, token)
    const times: number[] = []
    const statuses = new Map<number, number>()
    const cpu0 = processCpuSeconds(sluice!.pid)
    const machine0 = machineCpuSeconds()
    for (let i = 0; i < n; i++) {
      const r = await get(path, token)
      times.push(r.ms)
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
    }
    const sluiceCpuMs = (processCpuSeconds(sluice!.pid) - cpu0) * 1000 / n
    const machine1 = machineCpuSeconds()
    const busyShare = (machine1.busy - machine0.busy) / (machine1.total - machine0.total)
    await sleep(1100)
    const t0 = Date.now()
    await get(path, token)
    const t1 = Date.now()
    await sleep(1100)
    statementLog.push(`${s.key}: ${path}`)
    const cost = await costBetween(t0, t1)
    const p95 = quantile(times, 0.95)
    const verdict = Number.isFinite(s.targetMs) ? (p95 <= s.targetMs ? 'met' : '**missed**') : ''
    lines.push(`| ${s.key} | ${s.name} | ${[...statuses].map(([st, c]) => `${st} x${c}`).join(', ')} | ${matches} | ${n} | ${ms(quantile(times, 0.5))} | **${ms(p95)}** | ${ms(Math.max(...times))} | ` +
      `${Number.isFinite(s.targetMs) ? `${s.targetMs}` : '-'} ${verdict} | ${cost.statements}${cost.failed ? ` (+${cost.failed} failed)` : ''} | ${fmt(cost.readRows)} | ${fmt(cost.readBytes / 2 ** 20)} | ` +
      `${fmt(cost.durationMs)} | ${fmt(cost.cpuMs)} | ${fmt(cost.memoryBytes / 2 ** 20)} | ${ms(sluiceCpuMs)} | ${(busyShare * 100).toFixed(0)}% | ${loadAverage()} |`)
    progress(`${s.key}: p50 ${ms(quantile(times, 0.5))} p95 ${ms(p95)} ms, CH rows ${fmt(cost.readRows)}, status ${first.status}${first.status !== 200 ? ` ${first.body.slice(0, 200)}` : ''}`)
  }
  console.log(`\n## Reads through the HTTP API over ${fmt(totalRows)} events in 24 h (stream \`${stream}\`), ${runs} runs each after 3 warm-ups`)
  console.log('CH = ClickHouse statements of one more call (system.query_log): count, rows and MiB read, summed query_duration_ms, CPU ms (user + system), peak memory (MiB).')
  console.log('Sluice CPU: ms per call over the runs (/proc). Machine busy: both cores over the runs, all processes (2 cores = 100%).\n')
  console.log('| | scenario | answers | result | runs | p50 ms | p95 ms | max ms | target p95 ms | CH statements | CH rows read | CH MiB read | CH duration ms (sum) | CH CPU ms | CH peak MiB | Sluice CPU ms/call | machine busy | load avg |')
  console.log('|---|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const line of lines) console.log(line)
}

async function measureExport (token: string): Promise<void> {
  const minutes = Number(args['export-minutes'])
  const from = middle
  const to = middle + minutes * 60_000
  const path = `/api/streams/${stream}/export?from=${from}&to=${to}`
  const samples: Array<{ t: number, rss: number }> = []
  const pid = sluice!.pid
  const rssBefore = rssBytes(pid)
  const cpu0 = processCpuSeconds(pid)
  const started = performance.now()
  const timer = setInterval(() => samples.push({ t: performance.now() - started, rss: rssBytes(pid) }), 100)
  const t0 = Date.now()
  const res = await fetch(sluice!.url + path, { headers: { authorization: `Bearer ${token}` } })
  let lines = 0
  let bytes = 0
  const reader = res.body!.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.length
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, i + 1)) lines++
  }
  const seconds = (performance.now() - started) / 1000
  clearInterval(timer)
  const t1 = Date.now()
  const cpu = processCpuSeconds(pid) - cpu0
  await sleep(1100)
  statementLog.push(`export: ${path}`)
  const cost = await costBetween(t0, t1)
  const tenth = (k: number): number => {
    const part = samples.filter((s) => s.t >= seconds * 1000 * k / 10 && s.t < seconds * 1000 * (k + 1) / 10)
    return part.length > 0 ? Math.max(...part.map((s) => s.rss)) : NaN
  }
  const mib = (b: number): string => (b / 2 ** 20).toFixed(0)
  console.log(`\n## Export: ${minutes} min of the middle of the day (status ${res.status})`)
  console.log('| events | MiB | seconds | events/s | target | Sluice RSS MiB: before, peak in 1st / 5th / 10th tenth, peak | Sluice CPU s (per 1M events) | CH statements | CH rows read | CH CPU ms | load avg |')
  console.log('|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|')
  console.log(`| ${fmt(lines)} | ${mib(bytes)} | ${seconds.toFixed(2)} | **${fmt(lines / seconds)}** | 200,000 ${lines / seconds >= 200_000 ? 'met' : '**missed**'} | ` +
    `${mib(rssBefore)}, ${mib(tenth(0))} / ${mib(tenth(4))} / ${mib(tenth(9))}, ${mib(Math.max(...samples.map((s) => s.rss)))} | ${cpu.toFixed(2)} (${(cpu / lines * 1e6).toFixed(2)}) | ` +
    `${cost.statements} | ${fmt(cost.readRows)} | ${fmt(cost.cpuMs)} | ${loadAverage()} |`)
  console.log(`RSS every second (MiB): ${samples.filter((_, i) => i % 10 === 0).map((s) => mib(s.rss)).join(' ')}`)
}

/** Ingest alone and with four heavy reads looping, alternating. */
async function measureIngestAgainstReads (admin: string): Promise<void> {
  const ingestStream = 'ingest'
  await createLongLivedStream(ingestStream)
  const { token } = await sluice!.setUpStream(ingestStream)
  const bodies = buildBodyPool({ count: 50, linesPerBody: 1000, seed: 42, nowMs: Date.now(), directOrgId: 'org_direct', directStream: ingestStream })
  const target = sluiceTarget(sluice!.url, ingestStream, token, bodies, 'plain')
  const connections = Number(args.connections)
  const durationS = Number(args.duration)
  /** Seconds before the load generator gives up on an ingest request (it may still be stored: then CH gains more than was acknowledged). */
  const timeoutS = 60
  const heavyPath = `/api/streams/${stream}/stats?${range}&by=user_id`
  const countIngested = async (): Promise<number> => {
    const [{ n }] = await clickhouse.query<{ n: number }>(`SELECT count() AS n FROM events WHERE stream = '${ingestStream}'`)
    return Number(n)
  }
  const rows: string[] = []
  const run = async (label: string, withReads: boolean): Promise<number> => {
    let stop = false
    // At the end of the run the reads still going are cancelled (Sluice cancels their ClickHouse
    // queries when the client goes away), so the next run starts without them.
    const aborter = new AbortController()
    const reads = { started: 0, done: 0, byStatus: new Map<number, number>(), ms: [] as number[] }
    const loops = withReads
      ? Array.from({ length: 4 }, async () => {
        while (!stop) {
          reads.started++
          const r = await get(heavyPath, admin, aborter.signal).catch(() => ({ status: 0, ms: 0, body: '' }))
          if (stop) break
          reads.done++
          reads.byStatus.set(r.status, (reads.byStatus.get(r.status) ?? 0) + 1)
          if (r.status === 200) reads.ms.push(r.ms)
          if (r.status !== 200) await sleep(1000) // a 429's Retry-After
        }
      })
      : []
    if (withReads) await sleep(3000) // the reads are running before the window opens
    const before = await countIngested()
    let s0 = { sluice: 0, ch: 0, machine: { busy: 0, total: 0 }, bench: 0 }
    let s1 = s0
    const chPid = Number(process.env.CLICKHOUSE_PID ?? 0)
    const snap = (): typeof s0 => {
      const u = process.cpuUsage()
      return { sluice: processCpuSeconds(sluice!.pid), ch: chPid ? processCpuSeconds(chPid) : NaN, machine: machineCpuSeconds(), bench: (u.user + u.system) / 1e6 }
    }
    const result = await runLoad({ target, connections, warmupS: 1, durationS, timeoutS, onWindowStart: () => { s0 = snap() }, onWindowEnd: () => { s1 = snap() } })
    stop = true
    aborter.abort()
    await Promise.all(loops)
    if (withReads) await sleep(2000) // ClickHouse sees the cancels
    await sluice!.waitIdle()
    const gained = (await countIngested()) - before
    const eventsPerS = result.window.stored / result.windowS
    const sluiceCpu = s1.sluice - s0.sluice
    const chCpu = s1.ch - s0.ch
    const others = (s1.machine.busy - s0.machine.busy) - sluiceCpu - (Number.isFinite(chCpu) ? chCpu : 0) - (s1.bench - s0.bench)
    const capacity = s1.machine.total - s0.machine.total
    rows.push(`| ${label} | **${fmt(eventsPerS)}** | ${gained === result.total.stored ? 'exact' : `CH gained ${fmt(gained)} vs acked ${fmt(result.total.stored)}`} | ` +
      `${[...result.total.byStatus].map(([st, c]) => `${st} x${c}`).join(', ')}${result.unanswered > 0 ? `, ${result.unanswered} unanswered (client timeout ${timeoutS} s)` : ''} | ${(sluiceCpu / (result.window.stored / 1e6)).toFixed(2)} | ` +
      `${Number.isFinite(chCpu) ? (chCpu / capacity * 100).toFixed(0) + '%' : '-'} | ${(others / capacity * 100).toFixed(0)}% | ` +
      `${withReads ? `${reads.started} started, ${reads.done} completed (${[...reads.byStatus].map(([st, c]) => `${st} x${c}`).join(', ')}), p50 ${fmt(quantile(reads.ms, 0.5))} ms` : '-'} | ${loadAverage()} |`)
    progress(`${label}: ${fmt(eventsPerS)} events/s${withReads ? `, reads ${reads.done} ${JSON.stringify(Object.fromEntries(reads.byStatus))}` : ''}`)
    return eventsPerS
  }
  const alone: number[] = []
  const loaded: number[] = []
  // Warm-up: one short run so the first measured one does not pay for JIT and first parts.
  await runLoad({ target, connections: 64, warmupS: 1, durationS: 3 })
  await sluice!.waitIdle()
  for (let pair = 1; pair <= Number(args['ingest-pairs']); pair++) {
    alone.push(await run(`alone #${pair}`, false))
    loaded.push(await run(`with 4 x stats?by=user_id over 24 h #${pair}`, true))
  }
  const mean = (v: number[]): number => v.reduce((a, b) => a + b, 0) / v.length
  console.log(`\n## Ingest against reads: plain bodies, ${connections} connections, ${durationS} s windows; reads: 4 loops of GET ${heavyPath.replace(range, 'from&to=24 h')}`)
  console.log('| run | durable events/s | durability | answers | Sluice CPU-s per 1M events | ClickHouse CPU (share of machine) | others | reads during the run: started, completed (statuses), p50 | load avg |')
  console.log('|---|---:|---|---|---:|---:|---:|---|---:|')
  for (const line of rows) console.log(line)
  console.log(`\nWith reads / alone: ${(mean(loaded) / mean(alone) * 100).toFixed(0)}% (means ${fmt(mean(loaded))} / ${fmt(mean(alone))}; pairs: ${alone.map((a, i) => `${(loaded[i] / a * 100).toFixed(0)}%`).join(', ')}); target >= 70%.`)
}

/**
 * The stream with the longest retention (3650 days), unless it exists: the data set's days lie in
 * the past (2025-11-20), and the retention janitor would drop them under the default 30 days.
 */
async function createLongLivedStream (name: string): Promise<void> {
  const admin = readFileSync(join(sluiceData, 'admin-token'), 'utf8').trim()
  const { streams } = await sluice!.api<{ streams: Array<{ name: string }> }>('GET', '/api/streams', admin)
  if (!streams.some((s) => s.name === name)) await sluice!.api('POST', '/api/streams', admin, { name, retention_days: 3650 })
}

async function main (): Promise<void> {
  const version = await openDatabase('default').version()
  console.log(`# find bench: ClickHouse ${version} at ${url}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ` +
    `database ${database}, ${new Date().toISOString()}, load avg ${loadAverage()}`)
  console.log(`\`node bench/find.bench.ts ${process.argv.slice(2).join(' ')}\``)
  const env: Record<string, string> = { SLUICE_REQUESTS_PER_MINUTE: '100000000', SLUICE_CONCURRENT_REQUESTS: '100000', ...envPairs(args.env ?? []) }
  const nodeArgs = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : []
  sluice = await SluiceChild.start({ dataDir: sluiceData, clickhouseUrl: url, database, env, mainFile: args['sluice-main'], nodeArgs })
  await createLongLivedStream(stream)
  const { admin } = await sluice.setUpStream(stream)
  const [org] = await clickhouse.query<{ id: string }>("SELECT id FROM orgs FINAL WHERE name = 'default' AND deleted = 0")
  const [{ n }] = await clickhouse.query<{ n: number }>(`SELECT count() AS n FROM events WHERE org_id = '${org.id}' AND stream = '${stream}'`)
  if (Number(n) < totalRows && Number(n) % batchRows === 0) {
    // Empty, or a load cut short between whole batches (each batch is one insert): go on from there.
    progress(`loading ${fmt(totalRows - Number(n))} events into ${database} (org ${org.id}) from row ${fmt(Number(n))}`)
    const { totalS, insertS } = await loadFindEvents(clickhouse, org.id, totalRows, batchRows, progress, Number(n))
    console.log(`loaded ${fmt(totalRows)} rows in ${totalS.toFixed(0)} s (inserts ${insertS.toFixed(0)} s; batches of ${fmt(batchRows)}, ${JSON.stringify(insertSettings(batchRows))})`)
    // Sluice read legacyAttrsBefore at its start, on an empty table: restart it as an operator would.
    await sluice.stop()
    sluice = await SluiceChild.start({ dataDir: sluiceData, clickhouseUrl: url, database, env, mainFile: args['sluice-main'], nodeArgs })
  } else {
    console.log(`stream ${stream} holds ${fmt(Number(n))} events; not loading`)
  }
  const [parts] = await clickhouse.query<{ parts: number, rows: number, bytes: number, merges: number }>(`
    SELECT count() AS parts, sum(rows) AS rows, sum(bytes) AS bytes, (SELECT count() FROM system.merges WHERE database = '${database}') AS merges
    FROM system.parts WHERE database = '${database}' AND table = 'events' AND active`)
  console.log(`events: ${fmt(parts.rows)} rows in ${parts.parts} active parts, ${fmt(parts.bytes / 2 ** 20)} MiB on disk; merges running: ${parts.merges}`)
  const token = admin
  if (phases.has('find')) await measureFind(token)
  if (phases.has('export')) await measureExport(token)
  if (phases.has('ingest')) await measureIngestAgainstReads(admin)
  if (statementLog.length > 0) console.log(`\n## Statements of the calls measured in system.query_log\n\n\`\`\`\n${statementLog.join('\n')}\n\`\`\``)
}

try {
  await main()
} catch (err) {
  process.stderr.write(`find bench failed: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
} finally {
  await (sluice as SluiceChild | null)?.stop().catch(() => {})
  if (!args.keep && args.database === undefined) await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``).catch(() => {})
  else console.log(`\nkept database ${database} (Sluice data ${sluiceData})`)
  await clickhouse.close()
}
