// An event row (lib/events/event-row.ts) -> one JSONCompactEachRow line (`[v1,v2,...]\n`), columns
// in `eventColumns` order (lib/events/fields.ts), for
// `INSERT INTO events (<eventColumns>) FORMAT JSONCompactEachRow`. The embedded engine (chdb,
// lib/storage/chdb-clickhouse.ts) takes text formats only, so there the workers write this
// instead of RowBinary (row-serializer.ts): same rows, same columns, same interface; the engine
// picks the format (ClickHouse#insertFormat) and the writer only carries the bytes.
//
// Why JSONCompactEachRow: positional like RowBinary (no column names per row), line-delimited
// (a '\n' is always a row boundary, which the batch writer and chdb's raw insert both rely on),
// and strings need escaping of '"', '\\' and control bytes only (TabSeparated also escapes
// arrays' quotes). Measured on 26.7 in chdb, 300k bench/payload.ts rows into `events` with its
// rollup views: bench/README.md, "Embedded engine (chdb)".
//
// The encoding:
// - String: '"', the UTF-8 bytes with '"' and '\\' escaped by a backslash and bytes below 0x20 as
//   \n, \t, \r or \u00XX, '"'. Other bytes are copied as they are (rows hold valid UTF-8).
// - NULL: null. UInt16, UInt64: decimal integers. Float64: JS's shortest round-trip decimal.
// - Array(String): '[', the strings separated by ',', ']'.
import { Buffer } from 'node:buffer'
import { threadPairs } from '../events/attr-flatten.ts'
import { withRoom } from '../events/json-lex.ts'
import type { EventRow } from '../events/event-row.ts'
import { fieldCount, fieldsByColumnKind } from '../events/fields.ts'

const tsField = fieldsByColumnKind.ts
const stringFields = Int32Array.from(fieldsByColumnKind.strings)
const numberFields = Int32Array.from([...fieldsByColumnKind.uint16, ...fieldsByColumnKind.float64, ...fieldsByColumnKind.uint64])

const quote = 0x22
const backslash = 0x5c
const comma = 0x2c
const hex = Buffer.from('0123456789abcdef')
// Per byte below 0x20: its short escape letter, or 0 for \u00XX.
const shortEscape = new Uint8Array(0x20)
shortEscape[0x0a] = 0x6e // \n
shortEscape[0x09] = 0x74 // \t
shortEscape[0x0d] = 0x72 // \r
shortEscape[0x08] = 0x62 // \b
shortEscape[0x0c] = 0x66 // \f
const nullText = Buffer.from('null')

// A number is at most 24 characters ("1.7976931348623157e+308", 2^53-1 has 16 digits), plus a comma.
const numberBytesAtMost = 25
// An escaped byte takes at most 6 ("\u001f"); a string adds its quotes and a comma.
const escapedBytesPerByte = 6
const rowOverheadBytes = fieldCount * numberBytesAtMost + 4 * numberBytesAtMost + 16

/** Writes the rows of one task into one buffer: write() per row, then finish(). Same interface as EventRowWriter. */
export class EventRowJsonWriter {
  #bytes: Buffer<ArrayBuffer>
  #length = 0
  // '[' org_id, stream, received_at ',' : the same on every row, encoded once.
  readonly #prefix: Buffer

  /** initialBytes: expected output size; the buffer doubles when it runs out. */
  constructor (orgId: string, stream: string, receivedAt: number, initialBytes: number) {
    this.#bytes = Buffer.allocUnsafeSlow(Math.max(initialBytes, 1024))
    const head = Buffer.from(`[${JSON.stringify(orgId)},${JSON.stringify(stream)},${receivedAt},`)
    this.#prefix = head
  }

  /** Writes `row` (of a line of `size` bytes in the request) with its unique sequence number `seq`. */
  write (row: EventRow, seq: number, size: number): void {
    const pairs = threadPairs
    pairs.flatten(row.attrsBytes, row.attrsLength)
    this.#reserve(this.#prefix.length + rowOverheadBytes +
      escapedBytesPerByte * (row.stringBytesAtMost(size) + row.attrsLength + pairs.bytesAtMost()) + 4 * pairs.count)
    const bytes = this.#bytes
    const numbers = row.number
    const sources = row.source
    let at = this.#length
    at += this.#prefix.copy(bytes, at)
    at = writeNumber(bytes, at, numbers[tsField])
    for (let k = 0; k < stringFields.length; k++) {
      const f = stringFields[k]
      const source = sources[f]
      bytes[at++] = comma
      if (source === null) at += nullText.copy(bytes, at)
      else at = writeString(bytes, at, source, row.start[f], row.end[f])
    }
    for (let k = 0; k < numberFields.length; k++) {
      const value = numbers[numberFields[k]]
      bytes[at++] = comma
      // -0 would print as "0" anyway (String(-0) is "0").
      if (value < 0) at += nullText.copy(bytes, at)
      else at = writeNumber(bytes, at, value)
    }
    bytes[at++] = comma
    at = writeString(bytes, at, row.attrsBytes, 0, row.attrsLength)
    bytes[at++] = comma
    at = writeNumber(bytes, at, seq)
    bytes[at++] = comma
    at = writeNumber(bytes, at, size)
    const count = pairs.count
    const text = row.attrsBytes
    const scratch = pairs.scratch
    bytes[at++] = comma
    bytes[at++] = 0x5b // [
    for (let k = 0; k < count; k++) {
      if (k > 0) bytes[at++] = comma
      at = writeString(bytes, at, pairs.keyInScratch[k] === 1 ? scratch : text, pairs.keyStart[k], pairs.keyEnd[k])
    }
    bytes[at++] = 0x5d // ]
    bytes[at++] = comma
    bytes[at++] = 0x5b
    for (let k = 0; k < count; k++) {
      if (k > 0) bytes[at++] = comma
      at = writeString(bytes, at, pairs.valueInScratch[k] === 1 ? scratch : text, pairs.valueStart[k], pairs.valueEnd[k])
    }
    bytes[at++] = 0x5d
    bytes[at++] = 0x5d
    bytes[at++] = 0x0a
    this.#length = at
  }

  /** The rows, in an exact-size ArrayBuffer of their own, safe to transfer. The writer is spent. */
  finish (): ArrayBuffer {
    return this.#bytes.buffer.transfer(this.#length)
  }

  #reserve (bytes: number): void {
    this.#bytes = withRoom(this.#bytes, this.#length, bytes)
  }
}

/** A non-negative number as JSON at bytes[at]; returns the index after it. */
function writeNumber (bytes: Buffer, at: number, value: number): number {
  if (Number.isSafeInteger(value) && value < 1e15) {
    // Digits by hand: the common case (ts, seq, size, status, bytes) without a string.
    if (value === 0) { bytes[at++] = 0x30; return at }
    let digits = 0
    for (let v = value; v >= 1; v = Math.floor(v / 10)) digits++
    let v = value
    for (let k = at + digits - 1; k >= at; k--) {
      const next = Math.floor(v / 10)
      bytes[k] = 0x30 + (v - next * 10)
      v = next
    }
    return at + digits
  }
  return at + bytes.write(String(value), at, 'latin1')
}

/** A JSON string of UTF-8 bytes source[start, end) at bytes[at]; returns the index after it. */
function writeString (bytes: Buffer, at: number, source: Uint8Array, start: number, end: number): number {
  bytes[at++] = quote
  for (let k = start; k < end; k++) {
    const b = source[k]
    if (b >= 0x20 && b !== quote && b !== backslash) {
      bytes[at++] = b
    } else if (b >= 0x20) {
      bytes[at++] = backslash
      bytes[at++] = b
    } else if (shortEscape[b] !== 0) {
      bytes[at++] = backslash
      bytes[at++] = shortEscape[b]
    } else {
      bytes[at++] = backslash
      bytes[at++] = 0x75 // u
      bytes[at++] = 0x30
      bytes[at++] = 0x30
      bytes[at++] = hex[b >> 4]
      bytes[at++] = hex[b & 15]
    }
  }
  bytes[at++] = quote
  return at
}
