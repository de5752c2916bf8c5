// Helpers for ingest tests: a stream with an ingest token, raw POSTs with any body and headers,
// and reads of what ClickHouse stored.
import { request } from 'undici'
import type { Dispatcher } from 'undici'
import type { TestServer } from './server.ts'

export interface IngestTarget {
  server: TestServer
  stream: string
  token: string
}

export async function createIngestTarget (server: TestServer, stream: string, retentionDays?: number): Promise<IngestTarget> {
  const body: Record<string, unknown> = { name: stream }
  if (retentionDays !== undefined) body.retention_days = retentionDays
  const created = await server.api('POST', '/api/streams', { body })
  if (created.status !== 201) throw new Error(`stream ${stream}: ${created.status} ${JSON.stringify(created.body)}`)
  const tok = await server.api('POST', `/api/streams/${stream}/ingest-token`, { body: {} })
  return { server, stream, token: tok.body.token }
}

export interface IngestResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: any
}

export async function postIngest (
  target: IngestTarget,
  body: string | Buffer | Dispatcher.DispatchOptions['body'],
  headers: Record<string, string> = {},
): Promise<IngestResponse> {
  const res = await request(`${target.server.url}/api/ingest/${target.stream}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/x-ndjson', ...headers },
    body,
  })
  const text = await res.body.text()
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : null }
}

export interface StoredEvent {
  ts: number
  received_at: number
  host: string | null
  path: string | null
  method: string | null
  status: number | null
  rt: number | null
  bytes: number | null
  src: string | null
  user_agent: string | null
  message: string | null
  filename: string | null
  level: string | null
  service: string | null
  trace_id: string | null
  span_id: string | null
  attrs: string
  attr_keys: string[]
  attr_values: string[]
  size: number
}

/** The stream's stored events in insertion-independent order (by ts, then path, then message). */
export async function storedEvents (target: IngestTarget): Promise<StoredEvent[]> {
  const org = target.server.app.store.orgByName('default')!
  return target.server.app.clickhouse.query<StoredEvent>(
    `SELECT ts, received_at, host, path, method, status, rt, bytes, src, user_agent, message, filename, level, service, trace_id, span_id,
       attrs, attr_keys, attr_values, size
     FROM events WHERE org_id = '${org.id}' AND stream = '${target.stream}' ORDER BY ts, path, message`)
}

export async function countEvents (target: IngestTarget): Promise<number> {
  const org = target.server.app.store.orgByName('default')!
  const rows = await target.server.app.clickhouse.query<{ n: number }>(
    `SELECT count() AS n FROM events WHERE org_id = '${org.id}' AND stream = '${target.stream}'`)
  return rows[0].n
}
