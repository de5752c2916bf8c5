// Single-core cost of each ingest stage, from the micro-benchmarks next to this file, each run in
// a child process of its own (a fresh heap and JIT, as when run by hand), and gunzip measured
// here. Their medians are wall-clock rates of one thread: on a machine that other processes share
// they are lower bounds of what a free core does, so each comes with how busy the machine was.
import { execFile } from 'node:child_process'
import { gunzipSync } from 'node:zlib'
import { promisify } from 'node:util'
import { machineCpuSeconds, processCpuSeconds } from './proc-stats.ts'
import type { Body } from './body-pool.ts'

const run = promisify(execFile)
const benchDir = new URL('.', import.meta.url).pathname
/** Aborting it kills a micro-benchmark still running (Ctrl-C of the whole benchmark). */
export const stageAbort = new AbortController()

export interface StageCost {
  stage: string
  /** Lines (or rows) per second on one core, median of the rounds. */
  median: number
  min: number
  max: number
  /** Share of the machine's CPU busy during the measurement, this one included (0..1). */
  machineBusy: number
  command: string
  note: string
}

const number = (text: string): number => Number(text.replaceAll(',', ''))

async function measure<T> (fn: () => Promise<T>): Promise<{ value: T, machineBusy: number }> {
  const before = machineCpuSeconds()
  const value = await fn()
  const after = machineCpuSeconds()
  return { value, machineBusy: (after.busy - before.busy) / Math.max(1e-9, after.total - before.total) }
}

async function runBench (file: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await run(process.execPath, [benchDir + file, ...args], {
    env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024, timeout: 180_000, signal: stageAbort.signal,
  })
  return stdout
}

/** `median N lines/s ... (min N, max N lines/s)` as the split and parse benchmarks print it. */
function parseMedianLine (stdout: string): { median: number, min: number, max: number } {
  const m = /median ([\d,]+) lines\/s.*\(min ([\d,]+), max ([\d,]+) lines\/s\)/.exec(stdout)
  if (!m) throw new Error(`unexpected benchmark output:\n${stdout}`)
  return { median: number(m[1]), min: number(m[2]), max: number(m[3]) }
}

export async function measureSplit (megabytes: number, rounds: number): Promise<StageCost> {
  const args = [String(megabytes), String(rounds)]
  const { value, machineBusy } = await measure(() => runBench('split.bench.ts', args))
  return { stage: 'split (main thread: line framing, 120 KiB tasks)', ...parseMedianLine(value), machineBusy, command: `node bench/split.bench.ts ${args.join(' ')}`, note: 'lines/s' }
}

export async function measureParse (lines: number, rounds: number): Promise<StageCost> {
  const args = [String(lines), String(rounds)]
  const { value, machineBusy } = await measure(() => runBench('parse.bench.ts', args))
  return { stage: 'parse (worker: JSON -> RowBinary rows)', ...parseMedianLine(value), machineBusy, command: `node bench/parse.bench.ts ${args.join(' ')}`, note: 'lines/s' }
}

/**
 * The writer benchmark's concurrent-writers table: rows/s and the median insert time; and
 * ClickHouse's CPU per row without rollup views (the benchmark's database has `events` only),
 * over all its inserts: 32 single-batch inserts (16 rounds of concat and stream) and the writers'.
 */
export async function measureWriter (clickhouseUrl: string, clickhousePid: number, seconds: number): Promise<StageCost> {
  const args = ['--seconds', String(seconds)]
  const cpuBefore = processCpuSeconds(clickhousePid)
  const { value, machineBusy } = await measure(() => runBench('writer.bench.ts', args, { CLICKHOUSE_URL: clickhouseUrl }))
  const clickhouseCpu = processCpuSeconds(clickhousePid) - cpuBefore
  const section = value.slice(value.indexOf('## Writer'))
  const row = section.split('\n').find((line) => /^\| [\d,]+ \|/.test(line))
  const batchRows = /One ([\d,]+)-row batch/.exec(value)
  const written = /rows in ClickHouse: ([\d,]+)/.exec(value)
  if (!row || !batchRows || !written) throw new Error(`unexpected writer benchmark output:\n${value}`)
  const cells = row.split('|').map((c) => c.trim())
  const rate = number(cells[1])
  const rows = 32 * number(batchRows[1]) + number(written[1])
  return {
    stage: 'batch writer -> ClickHouse (64 writers x 500 rows, `events` without rollup views)',
    median: rate, min: rate, max: rate, machineBusy,
    command: `CLICKHOUSE_URL=... node bench/writer.bench.ts ${args.join(' ')}`,
    note: `rows/s; ${cells[4]} rows/insert, insert p50/p99/max ${cells[5]} ms; ClickHouse ${(clickhouseCpu / rows * 1e6).toFixed(2)} CPU-s per 1M rows`,
  }
}

/** gunzipSync over the pool's gzip bodies: the decoder's cost, which Sluice pays on the libuv pool. */
export async function measureGunzip (bodies: readonly Body[], rounds: number): Promise<StageCost> {
  const { value: rates, machineBusy } = await measure(async () => {
    const lines = bodies.reduce((sum, b) => sum + b.lines, 0)
    for (const b of bodies) gunzipSync(b.gzip) // warm-up
    const out: number[] = []
    for (let i = 0; i < rounds; i++) {
      const start = performance.now()
      for (const b of bodies) gunzipSync(b.gzip)
      out.push(lines / ((performance.now() - start) / 1000))
    }
    return out.sort((a, b) => a - b)
  })
  return {
    stage: 'gunzip (zlib, libuv thread pool)', median: rates[Math.floor(rates.length / 2)], min: rates[0], max: rates[rates.length - 1],
    machineBusy, command: 'in bench/ingest.bench.ts (gunzipSync of the body pool)', note: 'lines/s',
  }
}
