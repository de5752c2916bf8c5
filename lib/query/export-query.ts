// Every matching event of a range as NDJSON, oldest first: GET /api/streams/{stream}/export
// (docs/api.md section 7.8). Each line is the events API's JSON of one event (section 7.3), so an
// export reads back like pages of /events.
//
// Contract and why:
// - Memory stays flat whatever the range: the range is read in consecutive time windows, each one
//   query ordered by (ts, seq) and streamed as it comes (clickhouse.queryChunks), and the caller
//   pulls chunks of about chunkBytes only as fast as its client takes them. ClickHouse sorts one
//   window at a time, so a window holds about windowRows events and windowBytes of them.
// - Windows are planned from the stream's events and their bytes per minute (count() and
//   sum(size), the lines' bytes), a day of minutes at a time: consecutive minutes are packed until
//   the next would pass windowRows or windowBytes, and a minute holding more is cut into equal
//   parts of time. A filter only makes windows hold fewer. Counted in rows only, as the minute
//   rollup (events_1m) counts them, a window of wide events (84 KB a line, explore27d M1) held
//   1.7 GB on the embedded engine, which answers a window from memory; the plan's statement reads
//   two small columns (3 s a day of 30 M events on one thread, bench/README.md, "Find anything",
//   export). A window that still comes back much larger than planned (rows stored since the plan)
//   makes the next windows of that day smaller.
// - One window ahead: the next window's query starts when the current one starts streaming, so
//   ClickHouse sorts it while Sluice writes the current one out (one query in flight waiting,
//   at most one socket's buffers of rows held). The export waited for each window's sort before
//   (bench/README.md, "Find anything", export).
// - A window's query has no max_execution_time (the read's other limits stay): its work is bounded
//   by the plan, about windowRows rows, but it lasts as long as the client takes to download it,
//   and the query ahead waits that long too. With the read's 20 s a slow client's download, or
//   the window ahead of a busy one, was cut by 504 query_timeout (docs/api.md section 7.8).
// - ClickHouse writes the lines: the SELECT names the API's members in its order, JSONEachRow
//   escapes the strings, and only attrs (a JSON string of its text there) is put back as the
//   object, in bytes (export-lines.ts). Parsing every row into an object and writing it again
//   took most of the export's CPU (12 Sluice CPU-s per million events; bench/README.md, "Find
//   anything").
//   The lines hold the same JSON values as /events' (ClickHouse writes `/` as `\/`).
// - Windows are disjoint and ascending, so every event is exported once, in (ts, seq) order; each
//   window reads what is committed when it runs.
import type { ClickHouse } from '../storage/clickhouse.ts'
import { rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { eventFields } from '../events/fields.ts'
import { ExportLineWriter } from './export-lines.ts'

/** Events one window query aims at (ClickHouse sorts a window in memory). */
export const windowRows = 200_000
/**
 * Bytes of events (their lines' `size`) one window query aims at: a window's rows are sorted in
 * memory under the read's max_memory_usage (1 GiB), and take 2-3 times their lines' bytes there.
 */
export const windowBytes = 64 * 1024 * 1024
/** Bytes of NDJSON handed out at a time. */
const chunkBytes = 256 * 1024
const minuteMs = 60_000
/** The span of minute counts asked at a time. */
const planSpanMs = 86_400_000
/** A window query's settings over the read's: no time limit (its rows are bounded by the plan). */
const unlimitedTime = { max_execution_time: 0 }

export interface ExportParams {
  orgId: string
  stream: string
  from: number
  to: number
  where?: SqlFragment
  /** A pre-filter for PREWHERE (filter-sql.ts valuesPrefilterSql), `where` still in WHERE. */
  prewhere?: SqlFragment
  hiddenBefore: number
  /** Events a window aims at; default windowRows (tests make it small). */
  windowRows?: number
  /** Bytes a window aims at; default the engine's exportWindowBytes, or windowBytes. */
  windowBytes?: number
}

/** A window [lo, hi) of the export and the events the plan counts in it. */
export interface ExportWindow {
  lo: number
  hi: number
  rows: number
  /** A part of a minute cut into equal spans: its `rows` is the minute's share, not a count. */
  part?: true
}

/** A minute's events and their bytes. */
export interface MinuteCount {
  rows: number
  bytes: number
}

/**
 * Packs per-minute counts of [from, to) into windows of at most `limit` events and `byteLimit`
 * bytes: consecutive minutes while they fit, a minute holding more cut into equal spans. `counts`
 * maps a minute's start to its events; minutes absent count 0. The windows cover [from, to)
 * exactly, in order.
 */
export function planWindows (from: number, to: number, counts: ReadonlyMap<number, MinuteCount>, limit: number, byteLimit = Infinity): ExportWindow[] {
  const windows: ExportWindow[] = []
  let lo = from
  let rows = 0
  let bytes = 0
  for (let minute = Math.floor(from / minuteMs) * minuteMs; minute < to; minute += minuteMs) {
    const start = Math.max(from, minute)
    const end = Math.min(to, minute + minuteMs)
    const n = counts.get(minute) ?? { rows: 0, bytes: 0 }
    if (rows > 0 && (rows + n.rows > limit || bytes + n.bytes > byteLimit)) {
      windows.push({ lo, hi: start, rows })
      lo = start
      rows = 0
      bytes = 0
    }
    if (n.rows > limit || n.bytes > byteLimit) {
      if (lo < start) windows.push({ lo, hi: start, rows })
      const parts = Math.max(Math.ceil(n.rows / limit), Math.ceil(n.bytes / byteLimit))
      const step = Math.max(1, Math.ceil((end - start) / parts))
      for (let t = start; t < end; t += step) windows.push({ lo: t, hi: Math.min(end, t + step), rows: Math.ceil(n.rows / parts), part: true })
      lo = end
      continue
    }
    rows += n.rows
    bytes += n.bytes
  }
  if (lo < to) windows.push({ lo, hi: to, rows })
  return windows
}

/**
 * The windows of [from, to), planned a day of minute counts at a time. report() tells it what a
 * window held: far more than planned (rows stored since the plan) shrinks the windows planned
 * after it in that day.
 */
class WindowPlan {
  readonly #clickhouse: ClickHouse
  readonly #params: ExportParams
  #dayLo: number
  #dayHi: number
  #counts = new Map<number, MinuteCount>()
  #queue: ExportWindow[] = []
  #limit: number
  readonly #byteLimit: number
  /** The least report() shrinks the limit to: a sixteenth of the first. */
  readonly #minLimit: number

  constructor (clickhouse: ClickHouse, params: ExportParams) {
    this.#clickhouse = clickhouse
    this.#params = params
    this.#limit = params.windowRows ?? clickhouse.exportWindowRows ?? windowRows
    this.#byteLimit = params.windowBytes ?? clickhouse.exportWindowBytes ?? windowBytes
    this.#minLimit = Math.max(1, Math.floor(this.#limit / 16))
    this.#dayLo = params.from
    this.#dayHi = params.from
  }

  async next (): Promise<ExportWindow | null> {
    while (this.#queue.length === 0) {
      if (this.#dayHi >= this.#params.to) return null
      this.#dayLo = this.#dayHi
      this.#dayHi = Math.min(this.#params.to, this.#dayLo + planSpanMs)
      const rows = await this.#clickhouse.query<{ m: number, n: number, b: number }>(sql`SELECT intDiv(ts, ${minuteMs}) * ${minuteMs} AS m, count() AS n, sum(size) AS b
        FROM events
        WHERE org_id = ${this.#params.orgId} AND stream = ${this.#params.stream} AND ts >= ${this.#dayLo} AND ts < ${this.#dayHi}
        GROUP BY m`)
      this.#counts = new Map()
      for (const r of rows) this.#counts.set(Number(r.m), { rows: Number(r.n), bytes: Number(r.b) })
      this.#queue = planWindows(this.#dayLo, this.#dayHi, this.#counts, this.#limit, this.#byteLimit)
      if (rows.length === 0) await this.#skipEmpty()
    }
    return this.#queue.shift() ?? null
  }

  /**
   * After a day without events: the next day planned starts at the minute of the stream's next
   * event in the range, or the plan ends. A day at a time through empty years took 10 ms a day
   * before the first byte: 36 s for an empty stream over ten years (explore34d J3).
   */
  async #skipEmpty (): Promise<void> {
    if (this.#dayHi >= this.#params.to) return
    const [next] = await this.#clickhouse.query<{ t: number, n: number }>(sql`SELECT min(ts) AS t, count() AS n
      FROM events
      WHERE org_id = ${this.#params.orgId} AND stream = ${this.#params.stream} AND ts >= ${this.#dayHi} AND ts < ${this.#params.to}`)
    this.#dayHi = Number(next.n) === 0 ? this.#params.to : Math.max(this.#dayHi, Math.floor(Number(next.t) / minuteMs) * minuteMs)
  }

  report (window: ExportWindow, seen: number): void {
    // A part of a minute holds a share of the minute's count only on average: events come in
    // bursts (a request's events share a millisecond), and shrinking the windows for that cut
    // the next minutes into ever more, ever emptier windows, down to one event each: an export of
    // a bursty stream on the embedded engine crawled at 2,000 events/s (explore27c F2).
    if (window.part === true || seen <= 2 * Math.max(window.rows, this.#limit)) return
    this.#limit = Math.max(this.#minLimit, Math.floor(this.#limit * Math.max(window.rows, 1) / seen))
    const rest = this.#queue[0]
    if (rest !== undefined) this.#queue = planWindows(rest.lo, this.#dayHi, this.#counts, this.#limit, this.#byteLimit)
  }
}

/**
 * The export's SELECT list: attrs, then the events API's members in its order (section 7.3), so
 * that ClickHouse's JSONEachRow writes each line as the API's JSON of the event but for attrs,
 * which comes first as a JSON string of its text (ExportLineWriter puts the text in its place).
 */
const exportSelectList: SqlFragment = rawSql(['attrs', 'concat(toString(ts), \'-\', toString(seq)) AS id', ...eventFields.map((f) => f.column === f.name ? f.column : `${f.column} AS ${f.name}`), 'received_at'].join(', '))

/** The NDJSON of the export, in chunks of about chunkBytes (whole lines). */
export async function * exportEvents (clickhouse: ClickHouse, params: ExportParams): AsyncGenerator<Uint8Array> {
  const hidden = params.hiddenBefore > 0 ? sql` AND received_at > ${params.hiddenBefore}` : sql``
  const filter = params.where === undefined ? sql`` : sql` AND (${params.where})`
  const prewhere = params.prewhere === undefined ? sql`` : sql` PREWHERE ${params.prewhere}`
  /** A window's query, started: its first bytes asked for, so ClickHouse sorts it now. */
  const start = (window: ExportWindow): Started => {
    const chunks = clickhouse.queryChunks(sql`SELECT ${exportSelectList} FROM events${prewhere}
      WHERE org_id = ${params.orgId} AND stream = ${params.stream}${hidden} AND ts >= ${window.lo} AND ts < ${window.hi}${filter}
      ORDER BY ts, seq`, { settings: unlimitedTime })[Symbol.asyncIterator]()
    const first = chunks.next()
    first.catch(() => {}) // awaited in turn; a window never reached (an earlier one failed) must not be unhandled
    return { window, chunks, first }
  }
  const out = new ExportLineWriter(chunkBytes)
  const plan = new WindowPlan(clickhouse, params)
  const firstWindow = await plan.next()
  let current = firstWindow === null ? null : start(firstWindow)
  let ahead: Started | null = null
  try {
    while (current !== null) {
      let chunk = await current.first
      // The next window starts while this one streams.
      const nextWindow = await plan.next()
      ahead = nextWindow === null ? null : start(nextWindow)
      const before = out.lines
      while (chunk.done !== true) {
        out.push(chunk.value)
        const full = out.take()
        if (full !== null) yield full
        chunk = await current.chunks.next()
      }
      const rest = out.end()
      if (rest !== null) yield rest
      plan.report(current.window, out.lines - before)
      current = ahead
      ahead = null
    }
  } finally {
    await current?.chunks.return?.(undefined)
    await ahead?.chunks.return?.(undefined)
  }
}

interface Started {
  window: ExportWindow
  chunks: AsyncIterator<Uint8Array>
  first: Promise<IteratorResult<Uint8Array>>
}
