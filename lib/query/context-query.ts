// The lines around one event: GET /api/streams/{stream}/events/{id}/context (docs/api.md section
// 7.7). The anchor is found by its id (its ts and seq: ts is in the sort key, so ClickHouse reads
// the granules of that millisecond only): first only its `same` values, then its whole row as
// the first of the 'after' side, read beside the 'before' side. `before` and `after` are the nearest events on either
// side in (ts, seq) order that share the `same` fields with the anchor (an absent field matches
// events where it is absent too), each list in ascending time.
//
// Each side is read in widening windows from the anchor, up to a day: 1 s, then x16 while nothing
// matched, else sized from the matches so far to hold what is missing (events-query.ts
// nextWindowMs). A busy stream fills a side from the first window, a rare host and service
// (10 matches in ~20 minutes of a 30 M-event day) reads about the span it needs rather than the
// next x16 (1.4 M rows a side: bench/README.md, "Find anything", f2), and a quiet stream reads at
// most a day each way, never the whole history. Filters of the `q` do not apply: context shows
// what surrounded the event.
import { SluiceError } from '../errors.ts'
import { EventJsonBuffer } from '../events/event-json.ts'
import { parseEventId } from '../events/event-json.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { joinSql, rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { appendStoredEvent, eventSelectList, nextWindowMs } from './events-query.ts'
import type { EventRowOut } from './events-query.ts'
import { fieldTextSql } from './field-ref.ts'
import type { FieldRef } from './field-ref.ts'
import type { AttrScope } from './attr-sql.ts'

/** Events per side when not given, and the most a side may ask for. */
export const defaultContextLines = 10
export const maxContextLines = 500
/** Fields shared with the anchor when `same` is not given. */
export const defaultContextSame = ['host', 'service']

const firstWindowMs = 1000
const maxSpanMs = 86_400_000

export interface ContextParams {
  orgId: string
  stream: string
  id: string
  before: number
  after: number
  same: readonly FieldRef[]
  scope: AttrScope
  hiddenBefore: number
}

function streamIs (params: ContextParams): SqlFragment {
  const hidden = params.hiddenBefore > 0 ? sql` AND received_at > ${params.hiddenBefore}` : sql``
  return sql`org_id = ${params.orgId} AND stream = ${params.stream}${hidden}`
}

/**
 * The events before or after the anchor sharing its `same` values, nearest first, at most `limit`.
 * 'after' starts at the anchor itself (its first row is the anchor): the anchor's row is read
 * with its neighbours instead of by a statement of its own before them.
 */
async function side (clickhouse: ClickHouse, params: ContextParams, anchor: { ts: number, seq: number }, sameSql: SqlFragment | null,
  direction: 'before' | 'after', limit: number): Promise<EventRowOut[]> {
  const rows: EventRowOut[] = []
  if (limit === 0) return rows
  const { ts, seq } = anchor
  const beyond = direction === 'before'
    ? sql`(ts < ${ts} OR (ts = ${ts} AND seq < ${seq}))`
    : sql`(ts > ${ts} OR (ts = ${ts} AND seq >= ${seq}))`
  const order = rawSql(direction === 'before' ? 'ts DESC, seq DESC' : 'ts ASC, seq ASC')
  let near = ts // the edge of what was read so far (exclusive of the next window)
  let windowMs = firstWindowMs
  let first = true
  while (rows.length < limit && Math.abs(near - ts) < maxSpanMs) {
    const far = direction === 'before' ? Math.max(0, near - windowMs) : near + windowMs
    // The first window includes the anchor's own millisecond (events beside it in seq order).
    const span = direction === 'before'
      ? sql`ts >= ${far} AND ts ${rawSql(first ? '<=' : '<')} ${near}`
      : sql`ts ${rawSql(first ? '>=' : '>')} ${near} AND ts < ${far}`
    // The shared fields in PREWHERE: ClickHouse reads the other columns only where they match
    // (a rare host and service in a busy stream: 3.1 M rows read for a side without it).
    const got = await clickhouse.query<EventRowOut>(sql`SELECT ${eventSelectList} FROM events
      ${sameSql === null ? sql`` : sql`PREWHERE ${sameSql}`}
      WHERE ${streamIs(params)} AND ${span} AND ${beyond}
      ORDER BY ${order} LIMIT ${limit - rows.length}`)
    for (const row of got) rows.push(row)
    if (direction === 'before' && far === 0) break
    near = direction === 'before' ? far : far - 1
    windowMs = nextWindowMs(windowMs, Math.abs(near - ts), rows.length, limit - rows.length)
    first = false
  }
  return rows
}

function notFound (id: string): SluiceError {
  return new SluiceError('not_found', 'No event has this id in this stream', { details: { id } })
}

/** The context as the API's JSON text (`{"before":[...],"event":{...},"after":[...]}`). */
export async function queryContextJson (clickhouse: ClickHouse, params: ContextParams): Promise<Uint8Array> {
  const anchor = parseEventId(params.id)
  if (anchor === null) throw new SluiceError('not_found', 'No event has this id', { details: { id: params.id } })
  const sameValues = params.same.map((ref) => ({ ref, value: fieldTextSql(ref, params.scope) }))
  // Only the anchor's `same` values first: its whole row comes with the 'after' side, read
  // beside the 'before' side (each row read costs a compressed block of every column).
  // `seq AS found`, not a constant: 18.16 fails a Distributed table's SELECT of constants only
  // (cluster mode; "Cannot find column" when `same` is empty).
  const [found] = await clickhouse.query<Record<string, string | null>>(sql`SELECT seq AS found
    ${joinSql(sameValues.map((s, i) => sql`, ${s.value} AS same_${rawSql(String(i))}`), '')}
    FROM events WHERE ${streamIs(params)} AND ts = ${anchor.ts} AND seq = ${anchor.seq} LIMIT 1`)
  if (found === undefined) throw notFound(params.id)
  const conditions = sameValues.map((s, i) => {
    const value = found[`same_${i}`]
    return value === null ? sql`isNull(${s.value})` : sql`ifNull(${s.value} = ${value}, 0)`
  })
  const sameSql = conditions.length === 0 ? null : joinSql(conditions, ' AND ')
  const [before, withAnchor] = await Promise.all([
    side(clickhouse, params, anchor, sameSql, 'before', params.before),
    side(clickhouse, params, anchor, sameSql, 'after', params.after + 1),
  ])
  const event = withAnchor.shift()
  // Deleted between the two reads (its stream's data purged): as if never found.
  if (event === undefined || event.ts !== anchor.ts || event.seq !== anchor.seq) throw notFound(params.id)
  const after = withAnchor
  const out = new EventJsonBuffer()
  const list = (rows: EventRowOut[]): void => {
    out.ascii('[')
    rows.forEach((row, i) => {
      if (i > 0) out.ascii(',')
      appendStoredEvent(out, row)
    })
    out.ascii(']')
  }
  out.ascii('{"before":')
  list(before.reverse())
  out.ascii(',"event":')
  appendStoredEvent(out, event)
  out.ascii(',"after":')
  list(after)
  out.ascii('}')
  return out.view()
}
