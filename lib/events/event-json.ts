// The events API's JSON of one event (docs/api.md section 7.3), written as UTF-8 bytes from an
// event row: the one writer of that shape, used by GET /events (lib/query/events-query.ts), the
// tail's SSE frames (lib/live/tail-frames.ts) and the tests. `id` first (eventId: the stored
// row's ts and seq, which the context route reads back), then the members in the field table's
// order (fields.ts), absent fields null, then `attrs` (its JSON object text spliced in, not
// parsed and re-encoded) and `received_at`.
//
// Strings are escaped as JSON.stringify escapes them: `"`, `\` and the control characters;
// everything else, UTF-8 included, as it is (a row's strings are valid UTF-8 with no lone
// surrogate). Numbers as JSON.stringify writes them (String(value)).
import { Buffer } from 'node:buffer'
import type { EventRow } from './event-row.ts'
import { eventFields, fieldCount, fTs, isStringField } from './fields.ts'

const encoder = new TextEncoder()
const ascii = (text: string): Uint8Array => encoder.encode(text)

const nullText = ascii('null')
const keyId = ascii('{"id":"')
/** Per field: `,"name":`. */
const memberKeys = eventFields.map((f) => ascii(',' + JSON.stringify(f.name) + ':'))
/** Per field: 0 a string, 1 an integer, 2 any other number. */
const memberKinds = Uint8Array.from(eventFields, (f, i) => isStringField[i] ? 0 : f.rule === 'seconds' ? 2 : 1)
const keyAttrs = ascii(',"attrs":')
const keyReceivedAt = ascii(',"received_at":')
/** Bytes of an event's JSON besides its strings and attrs, at most (keys, numbers, nulls). */
const fixedBytesAtMost = keyId.length + 40 + memberKeys.reduce((sum, key) => sum + key.length + 24, 0) + keyAttrs.length + keyReceivedAt.length + 24

/**
 * An event's id (docs/api.md section 7.3): `<ts>-<seq>` in decimal. seq is unique per stored
 * line (lib/storage/row-seq.ts) and ts is in the sort key, so the id finds the row by the key.
 */
export function eventId (ts: number, seq: number): string {
  return `${ts}-${seq}`
}

const eventIdPattern = /^(\d{1,16})-(\d{1,16})$/

/** An id's ts and seq, or null when the text is not an id this server gives out. */
export function parseEventId (id: string): { ts: number, seq: number } | null {
  const m = eventIdPattern.exec(id)
  if (m === null) return null
  const ts = Number(m[1])
  const seq = Number(m[2])
  return Number.isSafeInteger(ts) && Number.isSafeInteger(seq) ? { ts, seq } : null
}

const hex = ascii('0123456789abcdef')
/** For each byte below 0x60: 0 copied as it is, else the letter of its short escape, or 0x75 (`u`). */
const escapeOf = new Uint8Array(0x60)
for (let b = 0; b < 0x20; b++) escapeOf[b] = 0x75
escapeOf[0x08] = 0x62 // \b
escapeOf[0x09] = 0x74 // \t
escapeOf[0x0a] = 0x6e // \n
escapeOf[0x0c] = 0x66 // \f
escapeOf[0x0d] = 0x72 // \r
escapeOf[0x22] = 0x22 // \"
escapeOf[0x5c] = 0x5c // \\

/** Bytes writeEventJson() writes for `row` at most. */
export function eventJsonBytesAtMost (row: EventRow): number {
  let stringBytes = row.attrsLength
  const sources = row.source
  for (let f = 0; f < fieldCount; f++) if (sources[f] !== null) stringBytes += row.end[f] - row.start[f]
  // An escaped byte takes at most 6 (\u00XX).
  return fixedBytesAtMost + 6 * stringBytes
}

/**
 * Writes the event JSON of `row`, stored with `seq`, at out[at] (room for
 * eventJsonBytesAtMost(row)); returns the index after it.
 */
export function writeEventJson (out: Uint8Array, at: number, row: EventRow, receivedAt: number, seq: number): number {
  const numbers = row.number
  at = put(out, at, keyId)
  at = putAscii(out, at, eventId(numbers[fTs], seq))
  out[at++] = 0x22 // "
  for (let f = 0; f < fieldCount; f++) {
    at = put(out, at, memberKeys[f])
    const kind = memberKinds[f]
    if (kind === 0) {
      at = writeString(out, at, row, f)
    } else {
      const value = numbers[f]
      if (value < 0) at = put(out, at, nullText)
      else if (kind === 1 && value < 10) out[at++] = 0x30 + value
      else at = putAscii(out, at, String(value))
    }
  }
  at = put(out, at, keyAttrs)
  const attrs = row.attrsBytes
  const attrsLength = row.attrsLength
  if (attrsLength > 64) {
    out.set(attrs.subarray(0, attrsLength), at)
    at += attrsLength
  } else {
    for (let k = 0; k < attrsLength; k++) out[at++] = attrs[k]
  }
  at = put(out, at, keyReceivedAt)
  at = putAscii(out, at, String(receivedAt))
  out[at++] = 0x7d // }
  return at
}

function put (out: Uint8Array, at: number, constant: Uint8Array): number {
  for (let i = 0; i < constant.length; i++) out[at++] = constant[i]
  return at
}

function putAscii (out: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i)
  return at
}

/** String field `field` as a JSON string, or null when absent. */
function writeString (out: Uint8Array, at: number, row: EventRow, field: number): number {
  const src = row.source[field]
  if (src === null) return put(out, at, nullText)
  out[at++] = 0x22
  for (let i = row.start[field], end = row.end[field]; i < end; i++) {
    const b = src[i]
    const escape = b < 0x60 ? escapeOf[b] : 0
    if (escape === 0) {
      out[at++] = b
    } else if (escape !== 0x75) {
      out[at++] = 0x5c
      out[at++] = escape
    } else {
      out[at++] = 0x5c
      out[at++] = 0x75
      out[at++] = 0x30
      out[at++] = 0x30
      out[at++] = hex[b >> 4]
      out[at++] = hex[b & 15]
    }
  }
  out[at++] = 0x22
  return at
}

/** A growing byte buffer of event JSON texts (for a page of the events API, and the tests). */
export class EventJsonBuffer {
  bytes = new Uint8Array(16 * 1024)
  length = 0

  /** Makes room for `count` more bytes. */
  reserve (count: number): void {
    if (this.length + count <= this.bytes.length) return
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + count))
    grown.set(this.bytes.subarray(0, this.length))
    this.bytes = grown
  }

  /** Appends ASCII text (punctuation between events). */
  ascii (text: string): void {
    this.reserve(text.length)
    this.length = putAscii(this.bytes, this.length, text)
  }

  /** Appends the event JSON of `row`, stored with `seq`. */
  event (row: EventRow, receivedAt: number, seq: number): void {
    this.reserve(eventJsonBytesAtMost(row))
    this.length = writeEventJson(this.bytes, this.length, row, receivedAt, seq)
  }

  /** The bytes written since the last clear(). */
  view (): Uint8Array {
    return this.bytes.subarray(0, this.length)
  }

  clear (): void {
    this.length = 0
  }
}

/** The event JSON of `row` as a string (tests, and one-off uses). */
export function eventJsonText (row: EventRow, receivedAt: number, seq = 0): string {
  const out = new EventJsonBuffer()
  out.event(row, receivedAt, seq)
  return Buffer.from(out.bytes.buffer, 0, out.length).toString('utf8')
}
