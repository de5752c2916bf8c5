// One measured run of the ingest benchmark: empty the target's tables, drive the load
// (load-driver.ts), and read around the window what it cost: CPU of Sluice (per thread group),
// of ClickHouse, of this process (the load generator) and of everyone else on the machine; the
// writer's inserts and queues from Sluice's /metrics; peak RSS. After the drain it checks
// durability: the rows ClickHouse gained must equal the rows the 2xx answers said were stored.
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { runLoad } from './load-driver.ts'
import type { LoadOptions, LoadResult, LoadTarget } from './load-driver.ts'
import { machineCpuSeconds, namedThreadCpuSeconds, processCpuSeconds, RssSampler, threadCpuSeconds, threadGroups } from './proc-stats.ts'
import type { ThreadGroup } from './proc-stats.ts'
import type { SluiceChild } from './sluice-child.ts'
import type { Body } from './body-pool.ts'

export interface RunCpu {
  /** CPU seconds during the window. */
  sluice: number
  sluiceThreads: Record<ThreadGroup, number>
  clickhouse: number
  /** Of `clickhouse`: its background merges (threads named BackgrProcPool). */
  clickhouseMerges: number
  loadGenerator: number
  /** CPU seconds of every other process on the machine. */
  others: number
  /** The machine's CPU seconds available in the window (cores x seconds). */
  capacity: number
}

export interface WriterStats {
  inserts: number
  rowsPerInsert: number
  meanInsertMs: number
  /** Inserts that took longer than 250 ms (the default flush interval), from the histogram's bucket. */
  insertsOver250Ms?: number
  /** Share of the window the one-at-a-time writer spent inside an insert. */
  busyShare: number
  maxPendingRows: number
  maxWorkerQueue: number
  maxUncommittedBytes: number
  /** The main thread's V8 heap (reserved) and external memory at their highest (/metrics). */
  maxHeapTotalBytes?: number
  maxExternalBytes?: number
}

export interface RunRecord {
  label: string
  load: LoadResult
  eventsPerS: number
  requestsPerS: number
  chDelta: number
  /** Every acknowledged row is in ClickHouse: chDelta >= rows that 2xx answers said were stored. */
  isDurable: boolean
  /** chDelta === rows acknowledged, to the row. */
  isExact: boolean
  cpu: RunCpu
  writer: WriterStats | null
  /** Sluice's peak RSS during the run (sampleRss only): VmRSS sampled every 100 ms, and VmHWM. */
  peakRss: { sampled: number, hwm: number } | null
}

export interface RunContext {
  /** 0 when ClickHouse runs inside Sluice (the embedded engine). */
  clickhousePid: number
  sluice: SluiceChild | null
  /** The database the target writes to, for counting and emptying `events`. */
  database: ClickHouse
}

const eventsTables = (db: ClickHouse): Promise<Array<{ name: string }>> => db.query<{ name: string }>(
  `SELECT name FROM system.tables WHERE database = '${db.database}' AND name LIKE 'events%' AND engine LIKE '%MergeTree'`)

/** Empties `events` and its rollups, so that every run starts alike (no merges left over). */
export async function truncateEvents (db: ClickHouse): Promise<void> {
  for (const { name } of await eventsTables(db)) await db.command(`TRUNCATE TABLE \`${name}\``)
}

export async function countEvents (db: ClickHouse): Promise<number> {
  const [{ n }] = await db.query<{ n: number }>('SELECT count() AS n FROM events')
  return Number(n)
}

interface Snapshot {
  sluice: number
  threads: Record<ThreadGroup, number>
  clickhouse: number
  clickhouseMerges: number
  bench: number
  machine: { busy: number, total: number }
}

function snapshot (context: RunContext): Snapshot {
  const pid = context.sluice?.pid
  const usage = process.cpuUsage()
  return {
    sluice: pid ? processCpuSeconds(pid) : 0,
    threads: pid ? threadCpuSeconds(pid) : { main: 0, workers: 0, libuv: 0, v8: 0, other: 0 },
    // 0: ClickHouse runs inside Sluice (the embedded engine); its CPU is in `sluice`.
    clickhouse: context.clickhousePid > 0 ? processCpuSeconds(context.clickhousePid) : 0,
    clickhouseMerges: context.clickhousePid > 0 ? namedThreadCpuSeconds(context.clickhousePid, 'BackgrProcPool') : 0,
    bench: (usage.user + usage.system) / 1e6,
    machine: machineCpuSeconds(),
  }
}

/** A histogram's observations between two scrapes: their sum, count, and count up to a bucket's bound. */
function histogramDelta (after: Map<string, number>, before: Map<string, number>, name: string): { sum: number, count: number, atMost: (le: number) => number } {
  const d = (key: string): number => (after.get(key) ?? 0) - (before.get(key) ?? 0)
  return { sum: d(`${name}_sum`), count: d(`${name}_count`), atMost: (le) => d(`${name}_bucket{le="${le}"}`) }
}

export async function measureRun (label: string, target: LoadTarget, context: RunContext, load: Omit<LoadOptions, 'target' | 'onWindowStart' | 'onWindowEnd'>, options: { sampleRss?: boolean } = {}): Promise<RunRecord> {
  const { sluice, database } = context
  await truncateEvents(database)
  const before = await countEvents(database)
  let start: Snapshot | undefined
  let end: Snapshot | undefined
  let metricsStart: Promise<Map<string, number>> | undefined
  let metricsEnd: Promise<Map<string, number>> | undefined
  const gauges = { pendingRows: 0, workerQueue: 0, uncommitted: 0, heapTotal: 0, external: 0 }
  let gaugeTimer: NodeJS.Timeout | undefined
  const rss = options.sampleRss && sluice ? new RssSampler(sluice.pid) : null

  const result = await runLoad({
    ...load,
    target,
    onWindowStart: () => {
      start = snapshot(context)
      if (!sluice) return
      metricsStart = sluice.metrics().catch(() => new Map())
      gaugeTimer = setInterval(() => {
        sluice.metrics().then((m) => {
          gauges.pendingRows = Math.max(gauges.pendingRows, m.get('sluice_writer_pending_rows') ?? 0)
          gauges.workerQueue = Math.max(gauges.workerQueue, m.get('sluice_worker_queue') ?? 0)
          gauges.uncommitted = Math.max(gauges.uncommitted, m.get('sluice_uncommitted_bytes') ?? 0)
          gauges.heapTotal = Math.max(gauges.heapTotal, m.get('nodejs_heap_size_total_bytes') ?? 0)
          gauges.external = Math.max(gauges.external, m.get('nodejs_external_memory_bytes') ?? 0)
        }, () => {})
      }, 500)
    },
    onWindowEnd: () => {
      end = snapshot(context)
      clearInterval(gaugeTimer)
      if (sluice) metricsEnd = sluice.metrics().catch(() => new Map())
    },
  })
  const peakRss = rss ? rss.stop() : null
  if (sluice) await sluice.waitIdle()
  const after = await countEvents(database)

  const s = start!
  const e = end!
  const threads = {} as Record<ThreadGroup, number>
  for (const g of threadGroups) threads[g] = e.threads[g] - s.threads[g]
  const machineBusy = e.machine.busy - s.machine.busy
  const cpu: RunCpu = {
    sluice: e.sluice - s.sluice,
    sluiceThreads: threads,
    clickhouse: e.clickhouse - s.clickhouse,
    clickhouseMerges: e.clickhouseMerges - s.clickhouseMerges,
    loadGenerator: e.bench - s.bench,
    others: 0,
    capacity: e.machine.total - s.machine.total,
  }
  cpu.others = Math.max(0, machineBusy - cpu.sluice - cpu.clickhouse - cpu.loadGenerator)

  let writer: WriterStats | null = null
  if (metricsStart && metricsEnd) {
    const [m0, m1] = await Promise.all([metricsStart, metricsEnd])
    const rows = histogramDelta(m1, m0, 'sluice_insert_rows')
    const seconds = histogramDelta(m1, m0, 'sluice_insert_duration_seconds')
    writer = {
      inserts: rows.count,
      rowsPerInsert: rows.count > 0 ? rows.sum / rows.count : 0,
      meanInsertMs: seconds.count > 0 ? seconds.sum / seconds.count * 1000 : 0,
      insertsOver250Ms: seconds.count - seconds.atMost(0.25),
      busyShare: seconds.sum / result.windowS,
      maxPendingRows: gauges.pendingRows,
      maxWorkerQueue: gauges.workerQueue,
      maxUncommittedBytes: gauges.uncommitted,
      maxHeapTotalBytes: gauges.heapTotal,
      maxExternalBytes: gauges.external,
    }
  }
  const chDelta = after - before
  return {
    label,
    load: result,
    eventsPerS: result.window.stored / result.windowS,
    requestsPerS: result.window.count((st) => st >= 200 && st < 300) / result.windowS,
    chDelta,
    isDurable: chDelta >= result.total.stored,
    isExact: chDelta === result.total.stored,
    cpu,
    writer,
    peakRss,
  }
}

/** Sluice's ingest endpoint; `gzip` sends the gzipped form of each body. */
export function sluiceTarget (url: string, stream: string, token: string, bodies: readonly Body[], form: 'plain' | 'gzip'): LoadTarget {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' }
  if (form === 'gzip') headers['content-encoding'] = 'gzip'
  return {
    url,
    requests: bodies.map((b) => ({ method: 'POST', path: `/api/ingest/${stream}`, headers, body: b[form], rows: b.lines })),
    idle: { method: 'POST', path: `/api/ingest/${stream}`, headers: { ...headers, 'content-length': '1' } },
    readAnswer (status, body) {
      let json: { ingested?: number, error?: string } = {}
      try { json = JSON.parse(body) } catch {}
      if (status >= 200 && status < 300) return { stored: json.ingested ?? 0, code: null }
      return { stored: 0, code: json.error ?? `http_${status}` }
    },
  }
}

/** ClickHouse's HTTP interface, each body as one INSERT of its rows. */
export function clickhouseTarget (url: string, database: string, table: string, bodies: readonly Body[], form: 'directJson' | 'directRowBinary'): LoadTarget {
  const format = form === 'directJson' ? 'JSONEachRow' : 'RowBinary'
  const query = encodeURIComponent(`INSERT INTO ${table} FORMAT ${format}`)
  const path = `/?database=${database}&query=${query}`
  return {
    url,
    requests: bodies.map((b) => ({ method: 'POST', path, headers: {}, body: b[form], rows: b.lines })),
    idle: { method: 'POST', path, headers: { 'content-length': '1' } },
    readAnswer (status, body, rows) {
      if (status === 200) return { stored: rows, code: null }
      const code = /Code: (\d+)/.exec(body)
      return { stored: 0, code: code ? `clickhouse_${code[1]}` : `http_${status}` }
    },
  }
}
