// The one row shape downstream of parsing: an event's fields as numbers and UTF-8 byte spans, slots
// numbered by the field table (fields.ts). The line scanner fills it from a line's bytes (its
// strings stay spans of the line, or of the row's scratch when they had escapes); the reference
// path (normalize.ts, JSON.parse) encodes its JS strings into the scratch. Everything after
// parsing reads this shape only: the RowBinary writer, the live collector and stats, the tail
// frames and the events API's JSON writer (event-json.ts).
//
// Contract: a row is valid from a fill (the scanner's scan() or normalizeEvent) until the next
// reset(); spans into the line are valid while that line's buffer is. Strings are valid UTF-8 with
// no lone surrogate (the reference path writes U+FFFD for one, as ClickHouse then stores it).
// Numbers: -1 means absent (every numeric field is >= 0); ts is always set.
import { Buffer } from 'node:buffer'
import { eventFields, fieldCount, fBytes, fPath, fRt, fStatus, fTs, isHexIdField, isStringField } from './fields.ts'
import { encodeUtf8, maxUtf8BytesPerUnit } from './json-lex.ts'

/** A row's fields as JS values, keyed by field name (absent: null), attrs as JSON text. */
export type EventObject = Record<string, string | number | null>

// Below this many UTF-16 units the JS loop beats a native write (measured: the native call costs
// about as much as copying 15 characters in JS).
const shortString = 16

export class EventRow {
  /** Per field: its value for numeric fields (ts too); -1 when absent. */
  readonly number = new Float64Array(fieldCount)
  /** Per string field: the buffer holding its UTF-8 (a line or `scratch`), null when absent. */
  readonly source: Array<Buffer | null> = Array.from({ length: fieldCount }, () => null) // packed: no hole checks on reads
  readonly start = new Int32Array(fieldCount)
  readonly end = new Int32Array(fieldCount)
  /** attrs' JSON object text: attrsBytes[0, attrsLength). */
  attrsBytes: Buffer = Buffer.allocUnsafeSlow(4096)
  attrsLength = 0
  /** Where unescaped or encoded strings go. Grows; spans into it stay valid until reset(). */
  scratch: Buffer = Buffer.allocUnsafeSlow(64 * 1024)
  scratchLength = 0

  /** True once the line gave ts (else ts is the receive time): retries are recognised by it (docs/api.md section 6.7). */
  tsGiven = false

  /** Empties the row: every field absent, ts the receive time, attrs empty (not yet '{}'). */
  reset (receivedAt: number): void {
    const numbers = this.number
    for (let k = 0; k < fieldCount; k++) numbers[k] = -1
    numbers[fTs] = receivedAt
    this.tsGiven = false
    const sources = this.source
    for (let k = 0; k < fieldCount; k++) sources[k] = null
    this.attrsLength = 0
    this.scratchLength = 0
  }

  // Named accessors for the fields that code reads by name.
  get ts (): number { return this.number[fTs] }
  get status (): number | null { return nullIfAbsent(this.number[fStatus]) }
  get rt (): number | null { return nullIfAbsent(this.number[fRt]) }
  get bytes (): number | null { return nullIfAbsent(this.number[fBytes]) }
  get path (): string | null { return this.text(fPath) }

  /** Field `field`'s string, decoded; null when absent. */
  text (field: number): string | null {
    const source = this.source[field]
    return source === null ? null : source.toString('utf8', this.start[field], this.end[field])
  }

  /** Field `field`'s value as JS: a string, a number, or null. */
  value (field: number): string | number | null {
    return isStringField[field] ? this.text(field) : nullIfAbsent(this.number[field])
  }

  /**
   * Sets a string field to a span of `source` (valid UTF-8). A trace or span id (fields.ts
   * `hexId`) in hex with capitals is stored in lowercase, copied onto the scratch: both the
   * scanner and the reference path set their strings here.
   */
  setSpan (field: number, source: Buffer, start: number, end: number): void {
    if (isHexIdField[field] && isUpperHex(source, start, end)) {
      this.scratchRoom(end - start) // `source` may be the scratch before it grew: still intact
      const at = this.scratchLength
      const scratch = this.scratch
      for (let i = start; i < end; i++) {
        const c = source[i]
        scratch[at + i - start] = c >= 0x41 && c <= 0x46 ? c + 0x20 : c
      }
      this.scratchLength = at + end - start
      source = scratch
      start = at
      end = this.scratchLength
    }
    this.source[field] = source
    this.start[field] = start
    this.end[field] = end
  }

  /** Sets a string field to `text`, encoded onto the scratch (a lone surrogate as U+FFFD). */
  setText (field: number, text: string): void {
    this.scratchRoom(maxUtf8BytesPerUnit * text.length)
    const at = this.scratchLength
    this.scratchLength = text.length < shortString ? encodeUtf8(text, this.scratch, at) : at + this.scratch.write(text, at)
    this.setSpan(field, this.scratch, at, this.scratchLength)
  }

  /** Sets attrs to a JSON object text. */
  setAttrsText (text: string): void {
    this.attrsLength = 0
    this.attrsRoom(maxUtf8BytesPerUnit * text.length)
    this.attrsLength = text.length < shortString ? encodeUtf8(text, this.attrsBytes, 0) : this.attrsBytes.write(text, 0)
  }

  /** attrs as text. */
  attrsText (): string {
    return this.attrsBytes.toString('utf8', 0, this.attrsLength)
  }

  /** Bytes the row's strings take at most: its line's `size`, the scratch and attrs. */
  stringBytesAtMost (size: number): number {
    return size + this.scratchLength + this.attrsLength
  }

  /** Makes room for `bytes` more on the scratch, moving the spans that point into it. */
  scratchRoom (bytes: number): void {
    if (this.scratchLength + bytes <= this.scratch.length) return
    const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.scratch.length, this.scratchLength + bytes))
    this.scratch.copy(grown, 0, 0, this.scratchLength)
    for (let f = 0; f < fieldCount; f++) if (this.source[f] === this.scratch) this.source[f] = grown
    this.scratch = grown
  }

  attrsRoom (bytes: number): void {
    if (this.attrsLength + bytes <= this.attrsBytes.length) return
    const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.attrsBytes.length, this.attrsLength + bytes))
    this.attrsBytes.copy(grown, 0, 0, this.attrsLength)
    this.attrsBytes = grown
  }

  /**
   * Fills the row from JS values by field name (absent or null: no value; ts required) and attrs
   * as JSON object text ('{}' when absent), unchecked: for tests and benchmarks, which build rows
   * by hand. Real events go through normalizeEvent (normalize.ts), which checks them.
   */
  fill (values: Readonly<Record<string, string | number | null | undefined>>): this {
    this.reset(Number(values.ts))
    for (let f = 0; f < fieldCount; f++) {
      const value = values[eventFields[f].name]
      if (value === null || value === undefined) continue
      if (isStringField[f]) this.setText(f, String(value))
      else this.number[f] = Number(value)
    }
    this.setAttrsText(typeof values.attrs === 'string' ? values.attrs : '{}')
    return this
  }

  /** The row as JS values by field name, attrs as text: for the live filters and tests. */
  toObject (): EventObject {
    const out: EventObject = {}
    for (let f = 0; f < fieldCount; f++) out[eventFields[f].name] = this.value(f)
    out.attrs = this.attrsText()
    return out
  }
}

/** Whether src[start, end) is hex digits, at least one of them a capital A-F. */
function isUpperHex (src: Buffer, start: number, end: number): boolean {
  let upper = false
  for (let i = start; i < end; i++) {
    const c = src[i]
    if (c >= 0x41 && c <= 0x46) upper = true
    else if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false
  }
  return upper
}

function nullIfAbsent (value: number): number | null {
  return value < 0 ? null : value
}
