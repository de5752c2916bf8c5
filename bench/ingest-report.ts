// Turns the ingest benchmark's runs into the one table it prints (Markdown, for bench/README.md):
// medians with their range over the repeated runs, each against its target, then the connection
// and knob sweeps. Nothing here measures; it only summarizes RunRecords. Run alone, it prints the
// table again from a run's --json file, e.g. after a change to this file:
//
//   node bench/ingest-report.ts results.json
import { readFileSync } from 'node:fs'
import { quantile, Tally } from './load-driver.ts'
import type { RunRecord } from './ingest-runs.ts'
import { threadGroups } from './proc-stats.ts'
import type { StageCost } from './stage-costs.ts'

export interface SweepRow {
  setting: string
  connections: number
  records: RunRecord[]
}

export interface BenchReport {
  machine: { cpu: string, cores: number, ramGiB: number, node: string, clickhouse: string }
  bodies: { count: number, lines: number, plainBytes: number, gzipBytes: number, jsonBytes: number }
  settings: { workers: string, flushMs: string, maxBatchRows: string, extra: string }
  durationS: number
  quick: boolean
  stages: StageCost[]
  plain: RunRecord[]
  gzip: RunRecord[]
  direct: RunRecord[]
  latency: RunRecord[]
  overload: RunRecord[]
  sweep: SweepRow[]
  elapsedS: number
}

const int = (n: number): string => Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'
const ms = (n: number): string => Number.isFinite(n) ? `${Math.round(n)}` : '-'
const fixed = (n: number, digits = 2): string => Number.isFinite(n) ? n.toFixed(digits) : '-'
const pct = (n: number): string => Number.isFinite(n) ? `${(n * 100).toFixed(n < 0.1 ? 1 : 0)}%` : '-'
const mib = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  if (sorted.length === 0) return NaN
  return sorted.length % 2 === 1 ? sorted[Math.floor(mid)] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * Other processes' share of the machine above which a run is left out of the medians: this
 * machine is shared, and a neighbour taking a core halves a run (the per-run numbers, with their
 * neighbours' share, are in --json).
 */
const noisyShare = 0.1
const othersShare = (r: RunRecord): number => r.cpu.others / r.cpu.capacity

/** The runs without a busy neighbour; all of them when there is none. */
function quiet (records: RunRecord[]): RunRecord[] {
  const calm = records.filter((r) => othersShare(r) < noisyShare)
  return calm.length > 0 ? calm : records
}

function noisyNote (records: RunRecord[]): string {
  const noisy = records.filter((r) => othersShare(r) >= noisyShare)
  if (noisy.length === 0) return ''
  if (noisy.length === records.length) return `; **every run had a busy neighbour** (others took ${spread(records.map(othersShare), pct)} of the machine)`
  return `; ${noisy.length} of ${records.length} runs left out: other processes took ${noisy.map((r) => pct(othersShare(r))).join(', ')} of the machine (${noisy.map((r) => int(r.eventsPerS)).join(', ')} events/s)`
}

/** "median (min-max, n runs)" of a value over runs. */
function spread (values: number[], format: (n: number) => string = int): string {
  if (values.length === 0) return '-'
  if (values.length === 1) return `${format(values[0])} (1 run)`
  return `${format(median(values))} (${format(Math.min(...values))}-${format(Math.max(...values))}, ${values.length} runs)`
}

/** The quiet runs at the connection count whose single best quiet run was fastest. */
function bestRuns (records: RunRecord[]): RunRecord[] {
  const pool = quiet(records)
  if (pool.length === 0) return []
  const best = pool.reduce((a, b) => (b.eventsPerS > a.eventsPerS ? b : a)).load.connections
  return pool.filter((r) => r.load.connections === best)
}

const perMillion = (cpuS: number, r: RunRecord): number => cpuS / r.load.window.stored * 1e6
const verdict = (ok: boolean): string => ok ? 'met' : '**missed**'

function connectionLine (records: RunRecord[]): string {
  const first = new Map<number, RunRecord>()
  for (const r of records) if (!first.has(r.load.connections)) first.set(r.load.connections, r)
  return [...first.values()].map((r) => `${r.load.connections}: ${int(r.eventsPerS)}`).join(', ')
}

function durability (records: RunRecord[]): string {
  if (records.length === 0) return '-'
  const missing = records.filter((r) => !r.isDurable)
  const extra = records.filter((r) => r.isDurable && !r.isExact)
  const unanswered = records.reduce((s, r) => s + r.load.unanswered, 0)
  const parts: string[] = []
  if (missing.length === 0 && extra.length === 0) parts.push(`ClickHouse Δ = Σ acknowledged rows in all ${records.length} runs`)
  if (missing.length > 0) parts.push(`**acknowledged rows missing** in ${missing.map((r) => `${r.label} (Δ ${r.chDelta}, acked ${r.load.total.stored})`).join('; ')}`)
  if (extra.length > 0) parts.push(`more stored than acknowledged in ${extra.map((r) => `${r.label} (Δ ${r.chDelta}, acked ${r.load.total.stored})`).join('; ')}`)
  if (unanswered > 0) parts.push(`${unanswered} requests unanswered when the drain ended (a connection error, or no answer within its wait)`)
  return parts.join('; ')
}

/** Non-2xx answers over the runs, e.g. "500 internal_error x1191". */
function failures (records: RunRecord[]): string {
  const codes = new Map<string, number>()
  let answered = 0
  for (const r of records) {
    answered += r.load.total.answered
    for (const [code, n] of r.load.total.byCode) codes.set(code, (codes.get(code) ?? 0) + n)
  }
  const failed = [...codes.values()].reduce((a, b) => a + b, 0)
  if (failed === 0) return `no failed requests of ${int(answered)}`
  return `**${int(failed)} of ${int(answered)} requests failed** (${[...codes].map(([k, v]) => `${k} x${v}`).join(', ')})`
}

function throughputRows (name: string, records: RunRecord[], target: number): string[] {
  if (records.length === 0) return []
  const best = bestRuns(records)
  const m = median(best.map((r) => r.eventsPerS))
  const p99 = median(best.map((r) => quantile(r.load.window.okLatencyMs, 0.99)))
  return [
    `| Durable events/s, ${name}, ${best[0].load.connections} connections | ${spread(best.map((r) => r.eventsPerS))} | ≥ ${int(target)}: ${verdict(m >= target)} | by connections (first run): ${connectionLine(records)}; at saturation p50/p99 ${ms(median(best.map((r) => quantile(r.load.window.okLatencyMs, 0.5))))}/${ms(p99)} ms; ${failures(records)}; ${durability(records)}${noisyNote(records)} |`,
  ]
}

function cpuSplit (records: RunRecord[]): string {
  const sums: Record<string, number> = {}
  let total = 0
  let seconds = 0
  for (const r of records) {
    for (const g of threadGroups) sums[g] = (sums[g] ?? 0) + r.cpu.sluiceThreads[g]
    total += r.cpu.sluice
    seconds += r.load.windowS
  }
  const parts = threadGroups.map((g) => `${g} ${pct(sums[g] / total)}`).join(' · ')
  return `${fixed(total / seconds)} cores: ${parts}`
}

/** The writer's inserts over some runs: size, rate, duration and its tail, how busy, how far behind. */
function writerRow (what: string, runs: readonly RunRecord[]): string {
  const w = runs.map((x) => x.writer!)
  const over = w.reduce((n, x) => n + (x.insertsOver250Ms ?? 0), 0)
  const inserts = w.reduce((n, x) => n + x.inserts, 0)
  return `| Writer during ${what} | ${spread(w.map((x) => x.rowsPerInsert))} rows/insert | - | ${spread(runs.map((x) => x.writer!.inserts / x.load.windowS), (n) => fixed(n, 1))} inserts/s; mean insert ${spread(w.map((x) => x.meanInsertMs), ms)} ms; ${int(over)} of ${int(inserts)} inserts took over 250 ms; inserting ${spread(w.map((x) => x.busyShare), pct)} of the time; max rows waiting ${int(Math.max(...w.map((x) => x.maxPendingRows)))}; max parse queue ${int(Math.max(...w.map((x) => x.maxWorkerQueue)))} |`
}

export function renderReport (r: BenchReport): string {
  const out: string[] = []
  const m = r.machine
  out.push(`\n## Sluice ingest benchmark${r.quick ? ' (--quick)' : ''}\n`)
  out.push(`${m.cores} x ${m.cpu}, ${m.ramGiB.toFixed(0)} GiB RAM; Node ${m.node}; ClickHouse ${m.clickhouse}. ` +
    `Bodies: ${r.bodies.count} distinct x ${r.bodies.lines} lines, ${int(r.bodies.plainBytes)} B plain / ${int(r.bodies.gzipBytes)} B gzip, rotated per connection. ` +
    `Sluice: workers ${r.settings.workers}, flush ${r.settings.flushMs} ms, maxBatchRows ${r.settings.maxBatchRows}${r.settings.extra ? `; ${r.settings.extra}` : ''}. ` +
    `Windows of ${r.durationS} s after 1 s of warm-up; ${int(r.elapsedS)} s in all.\n`)
  out.push('| Measurement | Result: median (range, runs) | Target | Detail |')
  out.push('|---|---|---|---|')
  out.push(...throughputRows('plain', r.plain, 300_000))
  out.push(...throughputRows('gzip', r.gzip, 200_000))

  if (r.direct.length > 0) {
    const best = bestRuns(r.direct)
    const d = median(best.map((x) => x.eventsPerS))
    out.push(`| ClickHouse direct: JSONEachRow INSERTs of 1,000 rows, ${best[0].load.connections} connections | ${spread(best.map((x) => x.eventsPerS))} | - | same rows, table and rollup views as Sluice's; by connections (first run): ${connectionLine(r.direct)}; ${failures(r.direct)}; ClickHouse CPU-s per 1M rows ${spread(best.map((x) => perMillion(x.cpu.clickhouse, x)), fixed)}; ${durability(r.direct)} |`)
    if (r.plain.length > 0) {
      const ratio = median(bestRuns(r.plain).map((x) => x.eventsPerS)) / d
      out.push(`| Sluice plain ÷ ClickHouse direct | ${fixed(ratio)} | ≥ 0.5: ${verdict(ratio >= 0.5)} | medians of the best connection counts of each |`)
    }
  }

  if (r.latency.length > 0) {
    const p50s = r.latency.map((x) => quantile(x.load.window.okLatencyMs, 0.5))
    const p99s = r.latency.map((x) => quantile(x.load.window.okLatencyMs, 0.99))
    const offered = r.latency.map((x) => x.load.window.sent / x.load.windowS)
    const late = r.latency.reduce((s, x) => s + x.load.lateSends, 0)
    const non2xx = r.latency.reduce((s, x) => s + x.load.total.count((st) => st < 200 || st >= 300), 0)
    const maxMs = Math.max(...r.latency.map((x) => Math.max(...x.load.window.okLatencyMs)))
    out.push(`| Latency (time to queryable) p50 / p99, open loop at ${int(r.latency[0].load.targetRatePerS ?? NaN)} req/s (half the max) | ${spread(p50s, ms)} / ${spread(p99s, ms)} ms | p99 < 500 ms: ${verdict(median(p99s) < 500)} | offered ${spread(offered)} req/s; max ${ms(maxMs)} ms; late sends ${late}; non-2xx ${non2xx}; other processes took ${spread(r.latency.map(othersShare), pct)} of the machine; ${durability(r.latency)} |`)
  }

  for (const o of r.overload) {
    const t = o.load.total
    const answered = t.answered
    const n429 = t.count((s) => s === 429)
    const n5xx = t.count((s) => s >= 500)
    const n2xx = t.count((s) => s >= 200 && s < 300)
    const reasons = [...t.byCode].map(([k, v]) => `${k} x${v}`).join(', ')
    out.push(`| Overload: ${int(o.load.targetRatePerS ?? NaN)} req/s offered (10x), open loop, ${int(o.load.connections)} connections | 429: ${pct(n429 / answered)} of ${int(answered)} answers; 5xx: ${n5xx} | 5xx = 0: ${verdict(n5xx === 0)} | sent ${int(o.load.window.sent / o.load.windowS)} req/s in the window (a connection sends once a second, or when answered if later); 2xx ${int(n2xx)} (${int(o.eventsPerS)} events/s, p50/p99 ${ms(quantile(o.load.window.okLatencyMs, 0.5))}/${ms(quantile(o.load.window.okLatencyMs, 0.99))} ms); 429 p50 ${ms(quantile(o.load.window.rejectedLatencyMs, 0.5))} ms; ${reasons || 'no errors'}; Sluice ${cpuSplit([o])}; other processes took ${pct(othersShare(o))} of the machine; ${durability([o])} |`)
    const peak = o.peakRss ? Math.max(o.peakRss.sampled, Number.isNaN(o.peakRss.hwm) ? 0 : o.peakRss.hwm) : NaN
    out.push(`| Peak RSS of Sluice under overload | ${mib(peak)} | < 512 MiB: ${verdict(peak < 512 * 2 ** 20)} | VmHWM (reset at the start) ${mib(o.peakRss?.hwm ?? NaN)}, VmRSS sampled every 100 ms ${mib(o.peakRss?.sampled ?? NaN)}; at most ${mib(o.writer?.maxUncommittedBytes ?? NaN)} uncommitted and ${int(o.writer?.maxPendingRows ?? NaN)} rows in the writer, main thread's V8 heap at most ${mib(o.writer?.maxHeapTotalBytes ?? NaN)} and external memory ${mib(o.writer?.maxExternalBytes ?? NaN)} (/metrics every 0.5 s) |`)
  }

  for (const s of r.stages) {
    out.push(`| Stage: ${s.stage} | ${int(s.median)} ${s.note.split(';')[0]} (${int(s.min)}-${int(s.max)}) | - | ${fixed(1e6 / s.median)} µs/line; machine ${pct(s.machineBusy)} busy; ${s.note.split(';').slice(1).join(';').trim() || s.command} |`)
  }

  const plainBest = bestRuns(r.plain)
  const gzipBest = bestRuns(r.gzip)
  if (plainBest.length > 0) out.push(`| Sluice CPU by thread, plain | ${cpuSplit(plainBest)} | - | of the Sluice process's CPU over the best runs' windows |`)
  if (gzipBest.length > 0) out.push(`| Sluice CPU by thread, gzip | ${cpuSplit(gzipBest)} | - | libuv = zlib on the thread pool |`)
  for (const [name, runs] of [['plain', plainBest], ['gzip', gzipBest]] as const) {
    if (runs.length === 0) continue
    const cpu = runs.map((x) => perMillion(x.cpu.sluice, x))
    out.push(`| CPU-s per 1M events, Sluice, ${name} | ${spread(cpu, fixed)} | ≤ 3.5: ${verdict(median(cpu) <= 3.5)} | ClickHouse ${spread(runs.map((x) => perMillion(x.cpu.clickhouse, x)), fixed)}, of which merges ${spread(runs.map((x) => perMillion(x.cpu.clickhouseMerges ?? NaN, x)), fixed)}; load generator ${spread(runs.map((x) => perMillion(x.cpu.loadGenerator, x)), fixed)}; other processes used ${spread(runs.map((x) => x.cpu.others / x.cpu.capacity), pct)} of the machine |`)
  }
  if (plainBest.length > 0 && plainBest[0].writer) out.push(writerRow('plain runs', plainBest))
  if (r.latency.length > 0 && r.latency[0].writer) out.push(writerRow('latency runs', r.latency))

  if (r.sweep.length > 0) {
    out.push(`\n### Knobs (plain, ${r.sweep[0].connections} connections, Sluice restarted per setting)\n`)
    out.push('| Setting | Events/s: median (range) | Sluice CPU-s/1M | ClickHouse CPU-s/1M | p50 / p99 ms | Rows/insert | Writer busy | Quiet runs |')
    out.push('|---|---|---|---|---|---|---|---|')
    for (const row of r.sweep) {
      const rs = quiet(row.records)
      out.push(`| ${row.setting} | ${spread(rs.map((x) => x.eventsPerS))} | ${fixed(median(rs.map((x) => perMillion(x.cpu.sluice, x))))} | ${fixed(median(rs.map((x) => perMillion(x.cpu.clickhouse, x))))} | ${ms(median(rs.map((x) => quantile(x.load.window.okLatencyMs, 0.5))))} / ${ms(median(rs.map((x) => quantile(x.load.window.okLatencyMs, 0.99))))} | ${int(median(rs.map((x) => x.writer?.rowsPerInsert ?? NaN)))} | ${pct(median(rs.map((x) => x.writer?.busyShare ?? NaN)))} | ${rs.length} of ${row.records.length}${rs.length < row.records.length ? ` (left out: ${row.records.filter((x) => !rs.includes(x)).map((x) => `${int(x.eventsPerS)} with others at ${pct(othersShare(x))}`).join('; ')})` : ''} |`)
    }
  }
  return out.join('\n') + '\n'
}

/** A report read back from --json: Maps were written as objects, Tallies lost their class. */
function reviveReport (json: string): BenchReport {
  const report = JSON.parse(json) as BenchReport
  const reviveTally = (raw: Tally): Tally => Object.assign(new Tally(), raw, {
    byStatus: new Map(Object.entries(raw.byStatus).map(([k, v]) => [Number(k), v as number])),
    byCode: new Map(Object.entries(raw.byCode)),
  })
  const records = [report.plain, report.gzip, report.direct, report.latency, report.overload, ...report.sweep.map((s) => s.records)].flat()
  for (const r of records) {
    r.load.window = reviveTally(r.load.window)
    r.load.total = reviveTally(r.load.total)
  }
  return report
}

if (import.meta.main) {
  const file = process.argv[2]
  if (!file) throw new Error('usage: node bench/ingest-report.ts results.json')
  process.stdout.write(renderReport(reviveReport(readFileSync(file, 'utf8'))))
}
