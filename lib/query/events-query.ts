// One page of a stream's events, newest first: the query behind GET /api/streams/{stream}/events.
// The cursor is keyset pagination over the sort (ts, seq) — seq is unique per stored line — so a
// page never repeats or skips an event, however many share a timestamp, and pages stay fast deep
// into the range.
//
// Contract and why:
// - ClickHouse 18.16 cannot read a MergeTree in key order to stop at LIMIT (optimize_read_in_order
//   came in 19.14), and has no skip indexes: `ORDER BY ts DESC LIMIT 101` over a range reads every
//   row of the range, then sorts. So a page is read in time windows, newest first, each a query
//   over [lo, hi) for the rows still missing, until the page is full or the range is done. The
//   first window is 1 s (a busy stream fills a page from it); each next one is sized from the
//   matches seen so far to hold what is missing, with a margin, between 1x and 16x the previous
//   (16x when nothing matched yet: 24 h is 5 windows). A page then reads about the span it shows,
//   not the whole range; a filter with fewer matches than a page still reads all of it.
// - The whole filter goes to PREWHERE: ClickHouse reads the filter's columns first and the rest
//   (message, attrs...) only for the granules where some row matched. Left to itself, 18.16 moves
//   a single condition there (`path:X status:404` over 2 M events: 160 ms with the whole filter
//   in PREWHERE, 760 ms without). But when the read has a pre-filter for 18.16 (an attribute
//   equality as has(attr_values, value): filter-sql.ts valuesPrefilterSql), that is the
//   PREWHERE and the filter goes to WHERE: the filter in PREWHERE would read both attribute
//   arrays of every row again.
// - On servers with skip indexes (docs/schema-versions.md; they also read a MergeTree in key order
//   and stop at LIMIT, optimize_read_in_order) a page is one statement over the whole range
//   (`windowed` false): the indexes skip the granules a rare phrase or attribute is not in, where
//   5-7 windows of 70-100 ms each made the page (bench/README.md, "Version-aware schema").
//   That statement orders by `ts` alone: ClickHouse 26.x stops reading at the LIMIT far sooner
//   than with `ts DESC, seq DESC` (`seq` is not in the sort key: status:507 over 30 M events,
//   55 against 270-350 ms). Its rows above its last `ts` are then exactly the page's; the rows at
//   that last `ts` (a whole request often shares one) are read again by a second statement over
//   that one millisecond in (ts, seq) order, which the sort key answers from a granule or two.
//   `LIMIT ... WITH TIES` would say the same in one statement, but reads everything (1.4 s).
// - Windows are disjoint and read in order, so the page is the same as one query's; each window
//   reads what is committed when it runs (an event committed meanwhile into a window already read
//   shows on no page, as one committed behind the cursor of an earlier page does).
// - A statement past max_memory_usage, also after its run with small blocks (read-limits.ts,
//   narrowBlockRows), runs once more with its filter in WHERE (no PREWHERE): 18.16 reads the
//   columns of the rows its PREWHERE keeps by reading every row before them in their granule at
//   once, so 20 events stored behind 6,000 wide ones in their granule (another stream's, or
//   another org's) took hundreds of MB for one page; read in order, in small blocks, they do not
//   (explore27d H1; test/query/wide-events.test.ts). It reads every column of the range, so only
//   then.
import { SluiceError } from '../errors.ts'
import { Buffer } from 'node:buffer'
import { EventJsonBuffer } from '../events/event-json.ts'
import { EventRow } from '../events/event-row.ts'
import { eventFields, fieldCount, fTs, isStringField } from '../events/fields.ts'
import { maxValueDepth } from '../events/normalize.ts'
import { nestsDeeper } from '../events/json-lex.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { narrowBlockRows, pastMemoryLimit } from './read-limits.ts'
import { rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'

/** Events per page when `limit` is not given, and the most a page may ask for. */
export const defaultEventsLimit = 100
export const maxEventsLimit = 1000

export interface EventsParams {
  orgId: string
  stream: string
  /** ms since the epoch, [from, to). */
  from: number
  to: number
  /** WHERE fragment from filterToSql(); none: every event. */
  filter?: SqlFragment
  /** A pre-filter (filter-sql.ts valuesPrefilterSql): then it is the PREWHERE and `filter` goes to WHERE. */
  prewhere?: SqlFragment
  limit: number
  /** next_cursor of the previous page. */
  cursor?: string | null
  /** Rows received at or before this time (ms) belong to a deleted stream of the same name: hidden. 0: none. */
  hiddenBefore?: number
  /** false: one query over the whole range (servers with skip indexes; benchmarks). Default true. */
  windowed?: boolean
}

/** An event of the events API (docs/api.md section 7.3): the field table's members, attrs, received_at. */
export type EventJson = Record<string, unknown> & { ts: number, attrs: unknown, received_at: number }

export interface EventsPage {
  events: EventJson[]
  next_cursor: string | null
}

/** A row as ClickHouse returns it: the fields' columns, seq, received_at, and attrs still JSON text. */
export type EventRowOut = Record<string, string | number | null> & { ts: number, seq: number, attrs: string, received_at: number }

export function encodeCursor (ts: number, seq: number): string {
  return Buffer.from(`${ts}.${seq}`).toString('base64url')
}

export function decodeCursor (cursor: string): { ts: number, seq: number } {
  const m = /^(\d{1,16})\.(\d{1,20})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
  if (!m) throw new SluiceError('invalid_query', 'cursor is not one this server gave out', { details: { parameter: 'cursor' } })
  return { ts: Number(m[1]), seq: Number(m[2]) }
}

/** A stored row as an event row, for the one writer of the events API's JSON (lib/events/event-json.ts). */
function fillRow (row: EventRow, r: EventRowOut): void {
  row.reset(r.received_at)
  for (let f = 0; f < fieldCount; f++) {
    const value = r[eventFields[f].column]
    if (value === null || value === undefined) continue
    if (isStringField[f]) row.setText(f, String(value))
    else row.number[f] = Number(value)
  }
  row.number[fTs] = Number(r.ts)
  row.setAttrsText(readAttrs(r.attrs))
}

/**
 * A stored attrs text as it is, or as a JSON string of itself when the object it holds nests
 * deeper than ingest now allows: a row stored before the limit (maxValueDepth, enforced since
 * issue 13) could nest thousands of levels, which a client's recursive JSON parser of the page
 * would fail on. The stored text is JSON that Sluice's own writer made, so a scan of its brackets
 * outside strings tells the depth (a JSON.parse per row took 12% of an export's CPU;
 * bench/README.md, "Find anything"; the export checks its bytes the same way, export-lines.ts).
 * A text shorter than twice the levels cannot nest that deep.
 */
export function readAttrs (text: string): string {
  // attrs is itself one level: its values may nest maxValueDepth more.
  const levels = maxValueDepth + 1
  if (text.length < 2 * (levels + 1)) return text
  const bytes = Buffer.from(text)
  return nestsDeeper(bytes, 0, bytes.length, levels) ? JSON.stringify(text) : text
}

/** The field table's columns, as the SELECT lists them. */
const selectedColumns = rawSql(eventFields.map((f) => f.column).join(', '))

/** What a read selects of each event it returns (EventRowOut): the fields, seq, attrs, received_at. */
export const eventSelectList: SqlFragment = sql`${selectedColumns}, seq, attrs, received_at`

const scratchRow = new EventRow()

/** Appends a stored event's JSON (the events API's shape, lib/events/event-json.ts) to `out`. */
export function appendStoredEvent (out: EventJsonBuffer, stored: EventRowOut): void {
  fillRow(scratchRow, stored)
  out.event(scratchRow, Number(stored.received_at), Number(stored.seq))
}

/** The first window of a page, ms. */
const firstWindowMs = 1000
/** A window is at most this many times the previous one. */
const maxGrowth = 16
/** Windows are sized to hold this many times the rows still missing (matches are not even). */
const sizingMargin = 1.5

/** The SELECT of the page's rows in [lo, hi) after the cursor's (ts, seq), at most `limit`; the filter in PREWHERE. */
function eventsWindowSql (params: EventsParams, after: { ts: number, seq: number } | null, lo: number, hi: number, limit: number,
  order: SqlFragment = byTsSeq, inOrder = false): SqlFragment {
  const keyset = after ? sql`AND (ts < ${after.ts} OR (ts = ${after.ts} AND seq < ${after.seq}))` : sql``
  const filter = params.filter ?? null
  const prewhere = inOrder ? null : params.prewhere ?? filter
  return sql`
      SELECT ${eventSelectList}
      FROM events
      ${prewhere !== null ? sql`PREWHERE ${prewhere}` : sql``}
      WHERE org_id = ${params.orgId} AND stream = ${params.stream}${params.hiddenBefore ? sql` AND received_at > ${params.hiddenBefore}` : sql``}
        AND ts >= ${lo} AND ts < ${hi} ${keyset}${filter !== null && prewhere !== filter ? sql` AND ${filter}` : sql``}
      ORDER BY ${order}
      LIMIT ${limit}`
}

const byTsSeq = rawSql('ts DESC, seq DESC')
const byTs = rawSql('ts DESC')

/**
 * Settings of a window read in order (windowRows): no PREWHERE, not even one ClickHouse would
 * add, and blocks of a quarter of narrowBlockRows: the last resort reads every column of every
 * row, and 1,024 rows of the widest lines (256 KiB, in attrs and again in the attribute arrays)
 * take more than the read's 1 GiB.
 */
const inOrderSettings = { settings: { optimize_move_to_prewhere: 0, max_block_size: narrowBlockRows / 4 } }

/** The rows of eventsWindowSql; past max_memory_usage, read again in order (see the top of the file). */
async function windowRows (clickhouse: ClickHouse, params: EventsParams, after: { ts: number, seq: number } | null, lo: number, hi: number, limit: number,
  order: SqlFragment = byTsSeq): Promise<EventRowOut[]> {
  try {
    return await clickhouse.query<EventRowOut>(eventsWindowSql(params, after, lo, hi, limit, order))
  } catch (err) {
    if (!pastMemoryLimit(err)) throw err
    return await clickhouse.query<EventRowOut>(eventsWindowSql(params, after, lo, hi, limit, order, true), inOrderSettings)
  }
}

/**
 * The first `wanted` matches over the whole range in (ts, seq) order, read in ts order: the rows
 * above the last ts read, then that ts's rows again in (ts, seq) order (see the top of the file).
 */
async function singleStatementPage (clickhouse: ClickHouse, params: EventsParams, after: { ts: number, seq: number } | null, wanted: number): Promise<EventRowOut[]> {
  const rows = await windowRows(clickhouse, params, after, params.from, params.to, wanted, byTs)
  if (rows.length < wanted) return rows.sort(newestFirst)
  const lastTs = rows[rows.length - 1].ts
  const above = rows.filter((r) => r.ts > lastTs).sort(newestFirst)
  const tied = await windowRows(clickhouse, params, after, lastTs, lastTs + 1, wanted - above.length)
  return above.concat(tied)
}

function newestFirst (a: EventRowOut, b: EventRowOut): number {
  return b.ts - a.ts || b.seq - a.seq
}

/**
 * The size of the next window, from the matches so far over the span read so far: 16x the
 * previous while nothing matched, else sized to hold what is missing with a margin, between 1x
 * and 16x the previous (also the context's windows, context-query.ts).
 */
export function nextWindowMs (previousMs: number, spanReadMs: number, found: number, missing: number): number {
  if (found === 0) return previousMs * maxGrowth
  const wanted = Math.ceil((missing * spanReadMs / found) * sizingMargin)
  return Math.min(previousMs * maxGrowth, Math.max(previousMs, wanted))
}

/** One page of events as the events API's JSON object text (`{"events":[...],"next_cursor":...}`), UTF-8. */
export async function queryEventsJson (clickhouse: ClickHouse, params: EventsParams): Promise<Uint8Array> {
  // One row more than asked tells whether another page exists.
  const wanted = params.limit + 1
  const after = params.cursor ? decodeCursor(params.cursor) : null
  // Nothing at or after the cursor's ts + 1 can be on this page.
  const top = after ? Math.min(params.to, after.ts + 1) : params.to
  let rows: EventRowOut[]
  if (params.windowed === false) {
    rows = await singleStatementPage(clickhouse, params, after, wanted)
  } else {
    rows = []
    let hi = top
    let windowMs = firstWindowMs
    while (hi > params.from && rows.length < wanted) {
      const lo = Math.max(params.from, hi - windowMs)
      const got = await windowRows(clickhouse, params, after, lo, hi, wanted - rows.length)
      for (const row of got) rows.push(row)
      hi = lo
      windowMs = nextWindowMs(windowMs, top - hi, rows.length, wanted - rows.length)
    }
  }
  const page = rows.length > params.limit ? rows.slice(0, params.limit) : rows
  const last = page[page.length - 1]
  const nextCursor = rows.length > params.limit ? encodeCursor(last.ts, last.seq) : null
  const out = new EventJsonBuffer()
  out.ascii('{"events":[')
  for (let i = 0; i < page.length; i++) {
    if (i > 0) out.ascii(',')
    appendStoredEvent(out, page[i])
  }
  out.ascii('],"next_cursor":' + JSON.stringify(nextCursor) + '}')
  return out.view()
}

/** One page of events as the object a client reads (queryEventsJson's text, parsed): for tests and benchmarks. */
export async function queryEvents (clickhouse: ClickHouse, params: EventsParams): Promise<EventsPage> {
  const json = await queryEventsJson(clickhouse, params)
  return JSON.parse(Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8')) as EventsPage
}
