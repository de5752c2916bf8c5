// The JSON of one event as the tail sends it: the shape of the events API (format-1 names,
// absent fields null, attrs an object, received_at), built in the parse worker from the row it
// just validated. Rows the line scanner read are written from their bytes instead
// (tail-frames.ts), to the same bytes; this is the reference, and serves the reference path. fast-json-stringify compiles the fixed fields (about 1.8× JSON.stringify on
// this shape); attrs is already JSON text, so it is spliced in rather than parsed and re-encoded.
import fastJson from 'fast-json-stringify'
import type { EventRow } from '../ingest/event-schema.ts'

const nullableString = { type: 'string', nullable: true } as const

const stringifyFixed = fastJson({
  type: 'object',
  properties: {
    ts: { type: 'integer' },
    host: nullableString,
    path: nullableString,
    status: { type: 'integer', nullable: true },
    rt: { type: 'number', nullable: true },
    bytes: { type: 'integer', nullable: true },
    method: nullableString,
    src: nullableString,
    user_agent: nullableString,
    message: nullableString,
    filename: nullableString,
    received_at: { type: 'integer' },
  },
  required: ['ts', 'host', 'path', 'status', 'rt', 'bytes', 'method', 'src', 'user_agent', 'message', 'filename', 'received_at'],
})

export function serializeTailEvent (row: EventRow, receivedAt: number): string {
  const fixed = stringifyFixed({
    ts: row.ts, host: row.host, path: row.path, status: row.status, rt: row.rt, bytes: row.bytes,
    method: row.method, src: row.src, user_agent: row.userAgent, message: row.message, filename: row.filename,
    received_at: receivedAt,
  })
  // `{..."received_at":N}` → `{..."attrs":{...},"received_at":N}`: attrs before received_at, as the events API orders them.
  const at = fixed.lastIndexOf(',"received_at":')
  return fixed.slice(0, at) + ',"attrs":' + row.attrs + fixed.slice(at)
}
