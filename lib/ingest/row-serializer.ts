// An event row (lib/events/event-row.ts) -> ClickHouse RowBinary, columns in `eventColumns` order
// (lib/events/fields.ts), for
// `INSERT INTO events (<eventColumns>) FORMAT RowBinary`; and the reader of those bytes, for tests
// and benchmarks.
//
// Why RowBinary and not TabSeparated: ClickHouse reads it without scanning for escapes or
// parsing decimal text, and the worker writes it without escaping strings or printing numbers.
// Measured on 18.16, 300k bench/payload.ts rows into `events` with its rollup views, alternating,
// 8 inserts each: ClickHouse CPU 2.4-3.1 s per 1M rows and 550-700 ms per insert, against 3.1-4.8
// s and 710-1150 ms for the same rows as TabSeparated (bench/README.md, finding 14).
//
// The encoding (ClickHouse's RowBinary, the same in 18.16 and current versions):
// - String: its UTF-8 byte length as a VarUInt (LEB128: 7 bits a byte, low group first, the high
//   bit set on every byte but the last), then the bytes. A lone surrogate (a JSON "\ud800" escape)
//   becomes U+FFFD, as in Buffer.from.
// - Nullable(T): one byte, 1 for NULL (nothing follows), 0 followed by T.
// - UInt16, UInt32, UInt64: little-endian. ts, bytes and seq are integers below 2^53.
// - Float64 (rt): the IEEE 754 double, little-endian: stored exactly as JSON.parse read it.
//
// - Array(String) (attr_keys, attr_values): the element count as a VarUInt, then each String.
//   The pairs are attrs flattened (lib/events/attr-flatten.ts), walked once per row with attrs;
//   a row without attrs ('{}') writes two zero counts.
//
// A row's strings are UTF-8 byte spans already (the line scanner's, or the reference path's
// encoded onto the row's scratch), so each is its exact length as a VarUInt and a copy. Rows are
// written straight into one growing buffer, numbers through a DataView. Columns follow the field
// table: a new field needs no change here.
import { Buffer } from 'node:buffer'
import { threadPairs } from '../events/attr-flatten.ts'
import type { EventRow } from '../events/event-row.ts'
import { fieldCount, fieldsByColumnKind } from '../events/fields.ts'
import { maxUtf8BytesPerUnit, withRoom } from '../events/json-lex.ts'

// Spans up to this many bytes are copied by a JS loop, longer ones by Buffer#copy (a native call,
// which costs about as much as copying 40 bytes in JS).
const spanCopyLoop = 40

const isNull = 1
const notNull = 0

// The fields by how their columns are written, in eventColumns order (lib/events/fields.ts).
const tsField = fieldsByColumnKind.ts
const stringFields = Int32Array.from(fieldsByColumnKind.strings)
const uint16Fields = Int32Array.from(fieldsByColumnKind.uint16)
const float64Fields = Int32Array.from(fieldsByColumnKind.float64)
const uint64Fields = Int32Array.from(fieldsByColumnKind.uint64)

// Bound on a row's bytes besides its strings: per field at most a null flag and 8 bytes or a
// 5-byte string length; attrs' length (5), seq (8), size (4).
const rowOverheadBytes = fieldCount * 9 + 5 + 8 + 4

/** Writes the rows of one task into one buffer: write() per row, then finish(). */
export class EventRowWriter {
  #bytes: Buffer<ArrayBuffer>
  #view: DataView
  #length = 0
  // org_id, stream and received_at are the same on every row: encoded once, copied per row.
  readonly #prefix: Uint8Array

  /** initialBytes: expected output size; the buffer doubles when it runs out. */
  constructor (orgId: string, stream: string, receivedAt: number, initialBytes: number) {
    this.#bytes = Buffer.allocUnsafeSlow(Math.max(initialBytes, 1024))
    this.#view = new DataView(this.#bytes.buffer)
    this.#reserve(maxUtf8BytesPerUnit * (orgId.length + stream.length) + 16)
    this.#writeText(orgId)
    this.#writeText(stream)
    this.#length = writeUInt64(this.#view, this.#length, receivedAt)
    this.#prefix = Buffer.from(this.#bytes.subarray(0, this.#length))
    this.#length = 0
  }

  /**
   * Writes `row` (of a line of `size` bytes in the request) with its unique sequence number `seq`.
   * The write index lives in a local for the whole row (stored back once): the per-kind loops
   * then run on locals only, not on a private field loaded and stored per byte.
   */
  write (row: EventRow, seq: number, size: number): void {
    const pairs = threadPairs
    pairs.flatten(row.attrsBytes, row.attrsLength)
    this.#reserve(this.#prefix.length + rowOverheadBytes + row.stringBytesAtMost(size) + pairs.bytesAtMost())
    const bytes = this.#bytes
    const view = this.#view
    const numbers = row.number
    const sources = row.source
    const starts = row.start
    const ends = row.end
    const prefix = this.#prefix
    let at = this.#length
    for (let k = 0; k < prefix.length; k++) bytes[at++] = prefix[k]
    at = writeUInt64(view, at, numbers[tsField])
    for (let k = 0; k < stringFields.length; k++) {
      const f = stringFields[k]
      const source = sources[f]
      if (source === null) {
        bytes[at++] = isNull
      } else {
        bytes[at++] = notNull
        at = writeSpan(bytes, at, source, starts[f], ends[f])
      }
    }
    for (let k = 0; k < uint16Fields.length; k++) {
      const value = numbers[uint16Fields[k]]
      if (value < 0) {
        bytes[at++] = isNull
      } else {
        bytes[at] = notNull
        view.setUint16(at + 1, value, true)
        at += 3
      }
    }
    for (let k = 0; k < float64Fields.length; k++) {
      const value = numbers[float64Fields[k]]
      if (value < 0) {
        bytes[at++] = isNull
      } else {
        bytes[at] = notNull
        // -0 would be stored as -0 and print as "-0": rt >= 0 allows it, the column should not.
        view.setFloat64(at + 1, value + 0, true)
        at += 9
      }
    }
    for (let k = 0; k < uint64Fields.length; k++) {
      const value = numbers[uint64Fields[k]]
      if (value < 0) {
        bytes[at++] = isNull
      } else {
        bytes[at++] = notNull
        at = writeUInt64(view, at, value)
      }
    }
    at = writeSpan(bytes, at, row.attrsBytes, 0, row.attrsLength)
    at = writeUInt64(view, at, seq)
    view.setUint32(at, size, true)
    at += 4
    const count = pairs.count
    const text = row.attrsBytes
    const scratch = pairs.scratch
    at = writeVarUInt(bytes, at, count)
    for (let k = 0; k < count; k++) at = writeSpan(bytes, at, pairs.keyInScratch[k] === 1 ? scratch : text, pairs.keyStart[k], pairs.keyEnd[k])
    at = writeVarUInt(bytes, at, count)
    for (let k = 0; k < count; k++) at = writeSpan(bytes, at, pairs.valueInScratch[k] === 1 ? scratch : text, pairs.valueStart[k], pairs.valueEnd[k])
    this.#length = at
  }

  /**
   * The rows, in an exact-size ArrayBuffer of their own, safe to transfer (never a slice of
   * Buffer's shared pool). The writer is spent: its buffer is handed over, not copied.
   */
  finish (): ArrayBuffer {
    return this.#bytes.buffer.transfer(this.#length)
  }

  #reserve (bytes: number): void {
    const room = withRoom(this.#bytes, this.#length, bytes)
    if (room === this.#bytes) return
    this.#bytes = room
    this.#view = new DataView(room.buffer)
  }

  /** A String column from a JS string (org and stream names, once per task). */
  #writeText (text: string): void {
    const encoded = Buffer.from(text)
    this.#length = writeSpan(this.#bytes, this.#length, encoded, 0, encoded.length)
  }
}

/** A non-negative integer below 2^53 as UInt64, little-endian, at view[at]; returns the index after it. */
function writeUInt64 (view: DataView, at: number, value: number): number {
  const high = Math.floor(value / 0x100000000)
  view.setUint32(at, value - high * 0x100000000, true)
  view.setUint32(at + 4, high, true)
  return at + 8
}

function writeVarUInt (bytes: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    bytes[at++] = 0x80 | (value & 0x7f)
    value = Math.floor(value / 0x80)
  }
  bytes[at++] = value
  return at
}

/** A String column from UTF-8 bytes at bytes[at]: its exact length as a VarUInt, then the bytes; returns the index after it. */
function writeSpan (bytes: Buffer, at: number, source: Buffer, start: number, end: number): number {
  at = writeVarUInt(bytes, at, end - start)
  if (end - start > spanCopyLoop) return at + source.copy(bytes, at, start, end)
  for (let k = start; k < end; k++) bytes[at++] = source[k]
  return at
}

/**
 * Reads rows written by EventRowWriter back into their fields, in eventColumns order: strings as
 * strings, numbers as their decimal text (String(value)), NULL as null. For tests and benchmarks
 * (the server never reads rows back). Throws on bytes that end inside a row.
 */
export function readEventRows (rows: ArrayBuffer | Uint8Array): Array<Array<string | null>> {
  const bytes = rows instanceof ArrayBuffer ? new Uint8Array(rows) : rows
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  // ignoreBOM: a string that starts with U+FEFF keeps it (the default decoder drops it).
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true })
  let at = 0
  const need = (count: number): void => {
    if (at + count > bytes.length) throw new RangeError(`RowBinary ends inside a row at byte ${at}`)
  }
  const varUInt = (): number => {
    let value = 0
    let scale = 1
    for (;;) {
      need(1)
      const byte = bytes[at++]
      value += (byte & 0x7f) * scale
      scale *= 0x80
      if ((byte & 0x80) === 0) return value
    }
  }
  const string = (): string => {
    const length = varUInt()
    need(length)
    const text = decoder.decode(bytes.subarray(at, at + length))
    at += length
    return text
  }
  const uint64 = (): string => {
    need(8)
    const value = view.getBigUint64(at, true)
    at += 8
    return String(value)
  }
  const nullable = (read: () => string): string | null => {
    need(1)
    return bytes[at++] === isNull ? null : read()
  }
  const uint16 = (): string => { need(2); at += 2; return String(view.getUint16(at - 2, true)) }
  const float64 = (): string => { need(8); at += 8; return String(view.getFloat64(at - 8, true)) }
  const uint32 = (): string => { need(4); at += 4; return String(view.getUint32(at - 4, true)) }
  // An Array(String) as the JSON text of its strings.
  const strings = (): string => JSON.stringify(Array.from({ length: varUInt() }, string))
  const out: Array<Array<string | null>> = []
  const readers = [
    uint64,
    ...fieldsByColumnKind.strings.map(() => () => nullable(string)),
    ...fieldsByColumnKind.uint16.map(() => () => nullable(uint16)),
    ...fieldsByColumnKind.float64.map(() => () => nullable(float64)),
    ...fieldsByColumnKind.uint64.map(() => () => nullable(uint64)),
  ]
  while (at < bytes.length) {
    const row: Array<string | null> = [string(), string(), uint64()]
    for (const read of readers) row.push(read())
    row.push(string(), uint64(), uint32(), strings(), strings())
    out.push(row)
  }
  return out
}
