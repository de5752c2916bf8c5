// GET /api/streams/{stream}/events: a stream's events over a time range, filtered by `q`, newest
// first, in pages. The cursor is keyset pagination over the sort (ts, seq) — seq is unique per
// stored line — so a page never repeats or skips an event, however many share a timestamp, and
// pages stay fast deep into the range.
import type { Router } from '../http/router.ts'
import { sendJson } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { sql } from '../storage/sql.ts'
import { filterToSql } from './filter-sql.ts'
import { integerParam, readRequest } from './read-request.ts'

const defaultLimit = 100
const maxLimit = 1000

interface EventRowOut {
  ts: number
  seq: number
  host: string | null
  path: string | null
  status: number | null
  rt: number | null
  bytes: number | null
  method: string | null
  src: string | null
  user_agent: string | null
  message: string | null
  filename: string | null
  attrs: string
  received_at: number
}

function encodeCursor (ts: number, seq: number): string {
  return Buffer.from(`${ts}.${seq}`).toString('base64url')
}

function decodeCursor (cursor: string): { ts: number, seq: number } {
  const m = /^(\d{1,16})\.(\d{1,20})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
  if (!m) throw new SluiceError('invalid_query', 'cursor is not one this server gave out', { details: { parameter: 'cursor' } })
  return { ts: Number(m[1]), seq: Number(m[2]) }
}

/** The API's event object: format-1 names, absent fields null, attrs an object, times in ms. */
function toEventJson (r: EventRowOut) {
  return {
    ts: r.ts, host: r.host, path: r.path, status: r.status, rt: r.rt, bytes: r.bytes, method: r.method,
    src: r.src, user_agent: r.user_agent, message: r.message, filename: r.filename,
    attrs: JSON.parse(r.attrs) as unknown, received_at: r.received_at,
  }
}

export function registerEventsRoute (router: Router, deps: { auth: Authenticator, accounts: Accounts, clickhouse: ClickHouse }): void {
  const { auth, accounts, clickhouse } = deps

  router.add('GET', '/api/streams/:stream/events', async (ctx) => {
    const { orgId, stream, range, filter, params } = readRequest(ctx, auth, accounts)
    const limit = integerParam(params, 'limit', 1, maxLimit, defaultLimit)
    const where = filterToSql(filter)
    const cursor = params.get('cursor')
    const after = cursor ? decodeCursor(cursor) : null
    const keyset = after ? sql`AND (ts < ${after.ts} OR (ts = ${after.ts} AND seq < ${after.seq}))` : sql``

    // One row more than asked tells whether another page exists.
    const rows = await clickhouse.query<EventRowOut>(sql`
      SELECT ts, seq, host, path, status, rt, bytes, method, src, user_agent, message, filename, attrs, received_at
      FROM events
      WHERE org_id = ${orgId} AND stream = ${stream.name}
        AND ts >= ${range.from} AND ts < ${range.to} ${keyset} AND ${where}
      ORDER BY ts DESC, seq DESC
      LIMIT ${limit + 1}`)
    const page = rows.length > limit ? rows.slice(0, limit) : rows
    const last = page[page.length - 1]
    sendJson(ctx, 200, {
      events: page.map(toEventJson),
      next_cursor: rows.length > limit ? encodeCursor(last.ts, last.seq) : null,
    })
  })
}
