// EventRow -> ClickHouse RowBinary, columns in `eventColumns` order, for
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
// A string's length is written before its bytes, and a long string's UTF-8 length is known only
// once it is encoded. So the writer reserves as many length bytes as the string's worst case
// (3 bytes per UTF-16 unit) needs, encodes, and writes the length padded to that many bytes
// (0x85 0x00 for 5 when two were reserved). ClickHouse's readVarUInt reads a group at a time
// until a byte without the high bit, so a padded length reads as the same number; it saves a
// native call per string (Buffer.byteLength) or a copy.
//
// Rows are written straight into one growing buffer: short strings by a JS loop that encodes
// UTF-8, longer ones by Buffer#write (native), numbers through a DataView.
import { Buffer } from 'node:buffer'
import type { EventRow } from './event-schema.ts'
import type { LineScanner } from './line-scanner.ts'

// Below this many UTF-16 units the JS loop beats a native write (measured: the native call costs
// about as much as copying 15 characters in JS).
const shortString = 16

// Spans up to this many bytes are copied by a JS loop, longer ones by Buffer#copy (a native call,
// which costs about as much as copying 40 bytes in JS).
const spanCopyLoop = 40

const isNull = 1
const notNull = 0

// Bound on a row's bytes besides its strings: 4 UInt64 (32), Float64 and UInt16 (10), UInt32
// (4), 9 null flags, and 10 string lengths of at most 4 bytes each (40).
const rowOverheadBytes = 32 + 10 + 4 + 9 + 40
// Worst case bytes per UTF-16 code unit: 3 (a BMP character above U+07FF, or U+FFFD for a lone
// surrogate; a surrogate pair is 4 bytes for 2 units).
const maxBytesPerUnit = 3

/** Writes the rows of one task into one buffer: write() per row, then finish(). */
export class EventRowWriter {
  #bytes: Buffer<ArrayBuffer>
  #view: DataView
  #length = 0
  // org_id and stream, then received_at, are the same on every row: encoded once, copied per row.
  readonly #prefix: Uint8Array
  readonly #receivedAt: Uint8Array

  /** initialBytes: expected output size; the buffer doubles when it runs out. */
  constructor (orgId: string, stream: string, receivedAt: number, initialBytes: number) {
    this.#bytes = Buffer.allocUnsafeSlow(Math.max(initialBytes, 1024))
    this.#view = new DataView(this.#bytes.buffer)
    this.#reserve(maxBytesPerUnit * (orgId.length + stream.length) + 8)
    this.#writeString(orgId)
    this.#writeString(stream)
    this.#prefix = Buffer.from(this.#bytes.subarray(0, this.#length))
    this.#length = 0
    this.#writeUInt64(receivedAt)
    this.#receivedAt = Buffer.from(this.#bytes.subarray(0, 8))
    this.#length = 0
  }

  /** seq: the row's unique sequence number; size: its line's bytes in the request. */
  write (row: EventRow, seq: number, size: number): void {
    this.#reserve(this.#prefix.length + rowOverheadBytes + maxBytesPerUnit * (
      stringLength(row.host) + stringLength(row.path) + stringLength(row.method) +
      stringLength(row.src) + stringLength(row.userAgent) + stringLength(row.message) +
      stringLength(row.filename) + row.attrs.length))
    const bytes = this.#bytes
    const view = this.#view
    this.#writeConstant(this.#prefix)
    this.#writeUInt64(row.ts)
    this.#writeConstant(this.#receivedAt)
    this.#writeNullableString(row.host)
    this.#writeNullableString(row.path)
    this.#writeNullableString(row.method)
    if (row.status === null) {
      bytes[this.#length++] = isNull
    } else {
      bytes[this.#length] = notNull
      view.setUint16(this.#length + 1, row.status, true)
      this.#length += 3
    }
    if (row.rt === null) {
      bytes[this.#length++] = isNull
    } else {
      bytes[this.#length] = notNull
      // -0 would be stored as -0 and print as "-0": rt >= 0 allows it, the column should not.
      view.setFloat64(this.#length + 1, row.rt + 0, true)
      this.#length += 9
    }
    if (row.bytes === null) {
      bytes[this.#length++] = isNull
    } else {
      bytes[this.#length++] = notNull
      this.#writeUInt64(row.bytes)
    }
    this.#writeNullableString(row.src)
    this.#writeNullableString(row.userAgent)
    this.#writeNullableString(row.message)
    this.#writeNullableString(row.filename)
    this.#writeString(row.attrs)
    this.#writeUInt64(seq)
    view.setUint32(this.#length, size, true)
    this.#length += 4
  }

  /**
   * Writes the row a LineScanner just read (outcome scannedRow): the same bytes write() gives
   * for the EventRow of that line, its strings copied from the scanner's byte spans.
   */
  writeScanned (row: LineScanner, seq: number, size: number): void {
    const sources = row.stringSource
    const starts = row.stringStart
    const ends = row.stringEnd
    this.#reserve(this.#prefix.length + rowOverheadBytes + row.stringBytesAtMost(size))
    const bytes = this.#bytes
    const view = this.#view
    this.#writeConstant(this.#prefix)
    this.#writeUInt64(row.ts)
    this.#writeConstant(this.#receivedAt)
    // host, path, method; then status, rt, bytes; then src, user_agent, message, filename.
    this.#writeNullableSpan(sources[0], starts[0], ends[0])
    this.#writeNullableSpan(sources[1], starts[1], ends[1])
    this.#writeNullableSpan(sources[2], starts[2], ends[2])
    if (row.status < 0) {
      bytes[this.#length++] = isNull
    } else {
      bytes[this.#length] = notNull
      view.setUint16(this.#length + 1, row.status, true)
      this.#length += 3
    }
    if (row.rt < 0) {
      bytes[this.#length++] = isNull
    } else {
      bytes[this.#length] = notNull
      view.setFloat64(this.#length + 1, row.rt + 0, true)
      this.#length += 9
    }
    if (row.bytes < 0) {
      bytes[this.#length++] = isNull
    } else {
      bytes[this.#length++] = notNull
      this.#writeUInt64(row.bytes)
    }
    this.#writeNullableSpan(sources[3], starts[3], ends[3])
    this.#writeNullableSpan(sources[4], starts[4], ends[4])
    this.#writeNullableSpan(sources[5], starts[5], ends[5])
    this.#writeNullableSpan(sources[6], starts[6], ends[6])
    this.#writeSpan(row.attrsBytes, 0, row.attrsLength)
    this.#writeUInt64(seq)
    view.setUint32(this.#length, size, true)
    this.#length += 4
  }

  /**
   * The rows, in an exact-size ArrayBuffer of their own, safe to transfer (never a slice of
   * Buffer's shared pool). The writer is spent: its buffer is handed over, not copied.
   */
  finish (): ArrayBuffer {
    return this.#bytes.buffer.transfer(this.#length)
  }

  #reserve (bytes: number): void {
    if (this.#length + bytes <= this.#bytes.length) return
    const grown = Buffer.allocUnsafeSlow(Math.max(this.#bytes.length * 2, this.#length + bytes))
    this.#bytes.copy(grown, 0, 0, this.#length)
    this.#bytes = grown
    this.#view = new DataView(grown.buffer)
  }

  /** A non-negative integer below 2^53 as UInt64, little-endian. */
  #writeUInt64 (value: number): void {
    const high = Math.floor(value / 0x100000000)
    this.#view.setUint32(this.#length, value - high * 0x100000000, true)
    this.#view.setUint32(this.#length + 4, high, true)
    this.#length += 8
  }

  #writeNullableString (value: string | null): void {
    if (value === null) {
      this.#bytes[this.#length++] = isNull
    } else {
      this.#bytes[this.#length++] = notNull
      this.#writeString(value)
    }
  }

  /** Bytes that every row repeats (a dozen or two): copied by a loop, cheaper than a native set(). */
  #writeConstant (constant: Uint8Array): void {
    const bytes = this.#bytes
    let at = this.#length
    for (let k = 0; k < constant.length; k++) bytes[at++] = constant[k]
    this.#length = at
  }

  #writeNullableSpan (source: Buffer | null, start: number, end: number): void {
    if (source === null) {
      this.#bytes[this.#length++] = isNull
    } else {
      this.#bytes[this.#length++] = notNull
      this.#writeSpan(source, start, end)
    }
  }

  /** A String column from UTF-8 bytes: its exact length as a VarUInt, then the bytes. */
  #writeSpan (source: Buffer, start: number, end: number): void {
    const bytes = this.#bytes
    let at = this.#length
    let length = end - start
    while (length >= 0x80) {
      bytes[at++] = 0x80 | (length & 0x7f)
      length = Math.floor(length / 0x80)
    }
    bytes[at++] = length
    if (end - start > spanCopyLoop) {
      at += source.copy(bytes, at, start, end)
    } else {
      for (let k = start; k < end; k++) bytes[at++] = source[k]
    }
    this.#length = at
  }

  #writeString (text: string): void {
    if (text.length < shortString) {
      // At most 15 units: 45 bytes, a one-byte length.
      const start = this.#length
      this.#length = start + 1
      this.#encode(text)
      this.#bytes[start] = this.#length - start - 1
      return
    }
    const lengthBytes = varUIntBytes(text.length * maxBytesPerUnit)
    const start = this.#length + lengthBytes
    const written = this.#bytes.write(text, start)
    writePaddedVarUInt(this.#bytes, this.#length, written, lengthBytes)
    this.#length = start + written
  }

  /** UTF-8 of `text` at #length, as Buffer#write encodes it. */
  #encode (text: string): void {
    const bytes = this.#bytes
    let at = this.#length
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (code < 0x80) {
        bytes[at++] = code
      } else if (code < 0xd800 || code > 0xdfff) {
        at = writeCodePoint(bytes, at, code)
      } else {
        const low = code < 0xdc00 ? text.charCodeAt(i + 1) : NaN
        if (low >= 0xdc00 && low <= 0xdfff) {
          at = writeCodePoint(bytes, at, 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00))
          i++
        } else {
          // A lone surrogate: U+FFFD, as Buffer#write and TextEncoder write it.
          at = writeCodePoint(bytes, at, 0xfffd)
        }
      }
    }
    this.#length = at
  }
}

/** The UTF-8 of code point `point` (not a surrogate) at bytes[at]; returns the index after it. */
export function writeCodePoint (bytes: Uint8Array, at: number, point: number): number {
  if (point < 0x80) {
    bytes[at++] = point
  } else if (point < 0x800) {
    bytes[at++] = 0xc0 | (point >> 6)
    bytes[at++] = 0x80 | (point & 0x3f)
  } else if (point < 0x10000) {
    bytes[at++] = 0xe0 | (point >> 12)
    bytes[at++] = 0x80 | ((point >> 6) & 0x3f)
    bytes[at++] = 0x80 | (point & 0x3f)
  } else {
    bytes[at++] = 0xf0 | (point >> 18)
    bytes[at++] = 0x80 | ((point >> 12) & 0x3f)
    bytes[at++] = 0x80 | ((point >> 6) & 0x3f)
    bytes[at++] = 0x80 | (point & 0x3f)
  }
  return at
}

function stringLength (value: string | null): number {
  return value === null ? 0 : value.length
}

/** Bytes of the shortest VarUInt that holds `value`. */
function varUIntBytes (value: number): number {
  let bytes = 1
  while (value >= 0x80) {
    value = Math.floor(value / 0x80)
    bytes++
  }
  return bytes
}

/** `value` as a VarUInt of exactly `count` bytes (padded with empty groups); `value` must fit. */
function writePaddedVarUInt (bytes: Uint8Array, at: number, value: number, count: number): void {
  for (let i = 0; i < count - 1; i++) {
    bytes[at + i] = 0x80 | (value & 0x7f)
    value = Math.floor(value / 0x80)
  }
  bytes[at + count - 1] = value
}

/**
 * Reads rows written by EventRowWriter back into their fields, in eventColumns order: strings as
 * strings, numbers as their decimal text (String(value)), NULL as null. For tests and benchmarks
 * (the server never reads rows back). Throws on bytes that end inside a row.
 */
export function readEventRows (rows: ArrayBuffer | Uint8Array): Array<Array<string | null>> {
  const bytes = rows instanceof ArrayBuffer ? new Uint8Array(rows) : rows
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const decoder = new TextDecoder()
  let at = 0
  const need = (count: number): void => {
    if (at + count > bytes.length) throw new RangeError(`RowBinary ends inside a row at byte ${at}`)
  }
  const string = (): string => {
    let length = 0
    let scale = 1
    for (;;) {
      need(1)
      const byte = bytes[at++]
      length += (byte & 0x7f) * scale
      scale *= 0x80
      if ((byte & 0x80) === 0) break
    }
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
  const out: Array<Array<string | null>> = []
  while (at < bytes.length) {
    out.push([
      string(), string(), uint64(), uint64(),
      nullable(string), nullable(string), nullable(string), nullable(uint16), nullable(float64), nullable(uint64),
      nullable(string), nullable(string), nullable(string), nullable(string),
      string(), uint64(), uint32(),
    ])
  }
  return out
}
