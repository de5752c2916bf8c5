// Every matching event of a range as NDJSON, oldest first: GET /api/streams/{stream}/export
// (docs/api.md section 7.8). Each line is the events API's JSON of one event
// (lib/events/event-json.ts), so an export reads back like pages of /events.
//
// Contract and why:
// - Memory stays flat whatever the range: the range is read in consecutive time windows, each one
//   query ordered by (ts, seq) and streamed row by row (clickhouse.queryRows), and the caller
//   pulls chunks of about chunkBytes only as fast as its client takes them. ClickHouse sorts one
//   window at a time, so windows are sized to hold about windowRows events (from the density seen
//   so far: 1 minute first, at most x16 per step, at most a day).
// - Windows are disjoint and ascending, so every event is exported once, in (ts, seq) order; each
//   window reads what is committed when it runs.
import type { ClickHouse } from '../storage/clickhouse.ts'
import { sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { EventJsonBuffer } from '../events/event-json.ts'
import { appendStoredEvent, eventSelectList } from './events-query.ts'
import type { EventRowOut } from './events-query.ts'

/** Events one window query aims at (ClickHouse sorts a window in memory). */
export const windowRows = 200_000
/** Bytes of NDJSON handed out at a time. */
const chunkBytes = 256 * 1024
const firstWindowMs = 60_000
const maxWindowMs = 86_400_000
const maxGrowth = 16

export interface ExportParams {
  orgId: string
  stream: string
  from: number
  to: number
  where?: SqlFragment
  hiddenBefore: number
}

/** The NDJSON of the export, in chunks of about chunkBytes (whole lines). */
export async function * exportEvents (clickhouse: ClickHouse, params: ExportParams): AsyncGenerator<Uint8Array> {
  const hidden = params.hiddenBefore > 0 ? sql` AND received_at > ${params.hiddenBefore}` : sql``
  const filter = params.where === undefined ? sql`` : sql` AND (${params.where})`
  const out = new EventJsonBuffer()
  let lo = params.from
  let windowMs = firstWindowMs
  while (lo < params.to) {
    const hi = Math.min(params.to, lo + windowMs)
    let rows = 0
    const statement = sql`SELECT ${eventSelectList} FROM events
      WHERE org_id = ${params.orgId} AND stream = ${params.stream}${hidden} AND ts >= ${lo} AND ts < ${hi}${filter}
      ORDER BY ts, seq`
    for await (const row of clickhouse.queryRows<EventRowOut>(statement)) {
      appendStoredEvent(out, row)
      out.ascii('\n')
      rows++
      if (out.length >= chunkBytes) {
        yield out.view().slice()
        out.clear()
      }
    }
    const wanted = rows === 0 ? windowMs * maxGrowth : Math.floor(windowMs * windowRows / rows)
    windowMs = Math.max(1000, Math.min(maxWindowMs, windowMs * maxGrowth, wanted))
    lo = hi
  }
  if (out.length > 0) yield out.view().slice()
}
