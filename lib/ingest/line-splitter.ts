// Splits a decoded request body into its lines (SPEC.md section 6, "Framing").
//
// Contract: bytes in; out, one item per physical line in body order: the line as a string of
// latin1 characters, one per raw byte (the bytes are never decoded as UTF-8 here, so the worker
// can tell invalid UTF-8 apart: Buffer.from(line, 'latin1') gives the bytes back), or a
// FailedLine when the line fails before parsing. A leading UTF-8 BOM is dropped; lines end at LF,
// and the CR of a CRLF is removed; blank lines are passed on, so that line numbers stay physical;
// the last line may lack its LF. A line over maxLineBytes comes out as a line_too_long FailedLine
// and the lines after it go on; memory stays at about maxLineBytes plus one chunk whatever the
// length of a line.
//
// Extension: a body whose first byte after the BOM and any whitespace is '[' is a JSON array of
// objects (what Vector and Fluent Bit send with their `json` encoding), and element k is line k.
// Each element's bytes come out as one line with its LFs turned into CRs: both are JSON
// whitespace between tokens and both are forbidden raw inside strings, so the swap keeps a valid
// element valid and an invalid one invalid. Elements are not parsed here; the worker rejects a
// bad one as it would a bad line. What the framing itself gets wrong fails one line with
// invalid_json: an empty element ("[1,,2]", "[1,]"), a missing ']' (the unfinished element, or
// one more line when the body ends after a ','), anything but whitespace after the closing ']'
// (one more line for all of it).
//
// The bytes go to split2 as latin1 text. A line that has to fail is cut to maxLineBytes + 2 bytes
// on the way (one past the limit, plus room for a CR split2 would strip), or ends with a marker
// character above U+00FF, which latin1 text never holds otherwise.
import stream, { Transform } from 'node:stream'
import type { Duplex, TransformCallback } from 'node:stream'
import split2 from 'split2'
import type { LineFailureCode } from './parse-task.ts'

export interface LineSplitterOptions {
  /** Longest line accepted, in bytes, CR of CRLF excluded; default 256 KiB (SPEC.md section 6). */
  maxLineBytes?: number
}

/** A line that failed before reaching a worker; it keeps its line number. */
export interface FailedLine {
  code: LineFailureCode
  message: string
}

export type SplitLine = string | FailedLine

const defaultMaxLineBytes = 256 * 1024

/** stream.compose() (stable since nodejs/node#62562), which @types/node 24 does not declare. */
const { compose } = stream as unknown as { compose: (...streams: Duplex[]) => Duplex }

const LF = 0x0a
const CR = 0x0d
const SPACE = 0x20
const TAB = 0x09
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const bom = Buffer.from([0xef, 0xbb, 0xbf])

/** End-of-line markers for array framing failures; their messages are in `framingFailures`. */
const emptyElement = '\u0100'
const unclosedArray = '\u0101'
const dataAfterArray = '\u0102'
const firstMarker = 0x100
const framingFailures: readonly FailedLine[] = [
  { code: 'invalid_json', message: 'empty element in the JSON array' },
  { code: 'invalid_json', message: "the JSON array ends without its closing ']'" },
  { code: 'invalid_json', message: "unexpected data after the JSON array's closing ']'" },
]

export function createLineSplitter (options: LineSplitterOptions = {}): Duplex {
  const maxLineBytes = options.maxLineBytes ?? defaultMaxLineBytes
  const tooLong: FailedLine = { code: 'line_too_long', message: `the line is over the ${maxLineBytes}-byte limit` }
  function toLine (text: string): SplitLine {
    let length = text.length
    if (length === 0) return text
    const last = text.charCodeAt(length - 1)
    if (last === CR) length--
    else if (last >= firstMarker) return framingFailures[last - firstMarker]
    if (length > maxLineBytes) return tooLong
    return length === text.length ? text : text.slice(0, length)
  }
  // split2 decodes bytes as UTF-8, but passes strings through untouched (string_decoder returns
  // them as they are); decodeStrings: false keeps Writable from turning them back into bytes.
  return compose(new LineFramer(maxLineBytes + 2), split2('\n', toLine, { decodeStrings: false }))
}

type Mode = 'start' | 'lines' | 'array'
type ArrayState = 'between' | 'element' | 'closed' | 'junk'

/** Bytes in, latin1 text out: drops the BOM, cuts over-long lines, turns an array into lines. */
class LineFramer extends Transform {
  /** Bytes of a line passed on at most: the limit + 1 to fail it, + 1 for a CR. */
  readonly #keep: number
  #mode: Mode = 'start'
  /** The first bytes of the body while they could still be a BOM. */
  #head: Buffer | null = null
  #bodyStarted = false
  /** Whitespace before the first non-blank byte: LFs, then bytes after the last LF. */
  #blankLines = 0
  #blankBytes = 0
  /** 'lines' mode: bytes of the current line passed on, and whether the rest of it is dropped. */
  #lineBytes = 0
  #cutting = false
  /** 'array' mode: scanner state, carried across chunks. */
  #state: ArrayState = 'between'
  #depth = 0
  #inString = false
  #escaped = false
  #elements = 0
  #elementBytes = 0
  #out: Buffer = Buffer.alloc(0)

  constructor (keep: number) {
    super({ readableObjectMode: true })
    this.#keep = keep
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let start = 0
    if (!this.#bodyStarted) {
      if (this.#head !== null) chunk = Buffer.concat([this.#head, chunk])
      if (chunk.length < bom.length && bom.subarray(0, chunk.length).equals(chunk)) {
        this.#head = chunk
        callback()
        return
      }
      this.#head = null
      this.#bodyStarted = true
      if (chunk.subarray(0, bom.length).equals(bom)) start = bom.length
    }
    this.#frame(chunk, start)
    callback()
  }

  override _flush (callback: TransformCallback): void {
    if (this.#head !== null) {
      // A body of one or two bytes that began like a BOM: they are data.
      this.#frame(this.#head, 0)
      this.#head = null
    }
    if (this.#mode === 'array' && (this.#state === 'between' || this.#state === 'element')) {
      this.push(unclosedArray + '\n')
    }
    callback()
  }

  #frame (chunk: Buffer, start: number): void {
    if (this.#mode === 'start') start = this.#sniff(chunk, start)
    if (this.#mode === 'lines') this.#passLines(chunk, start)
    else if (this.#mode === 'array') this.#scanArray(chunk, start)
  }

  /** Skips leading whitespace; the first other byte picks the mode. Returns where the mode starts. */
  #sniff (chunk: Buffer, start: number): number {
    for (let i = start; i < chunk.length; i++) {
      const byte = chunk[i]
      if (byte === LF) {
        this.#blankLines++
        this.#blankBytes = 0
      } else if (byte === SPACE || byte === TAB || byte === CR) {
        this.#blankBytes++
      } else if (byte === OPEN_BRACKET) {
        this.#mode = 'array'
        return i + 1
      } else {
        // Leading blank lines count in NDJSON: pass them on, and the first line's indentation as
        // spaces so that positions in its error messages stay right.
        this.#mode = 'lines'
        if (this.#blankLines > 0 || this.#blankBytes > 0) {
          this.push('\n'.repeat(this.#blankLines) + ' '.repeat(this.#blankBytes))
          this.#lineBytes = this.#blankBytes
        }
        return i
      }
    }
    return chunk.length
  }

  #passLines (chunk: Buffer, start: number): void {
    const keep = this.#keep
    const end = chunk.length
    // Common case, two memchr calls a chunk: no line in it can be over `keep`, pass it whole.
    if (!this.#cutting) {
      const first = chunk.indexOf(LF, start)
      const last = first === -1 ? -1 : chunk.lastIndexOf(LF)
      const tail = last === -1 ? this.#lineBytes + end - start : end - last - 1
      if (tail <= keep && (first === -1 || (this.#lineBytes + first - start <= keep && last - first - 1 <= keep))) {
        this.#lineBytes = tail
        if (end > start) this.push(chunk.toString('latin1', start, end))
        return
      }
    }
    let from = start // first byte not yet passed on or dropped
    let pos = start
    while (pos < end) {
      const lf = chunk.indexOf(LF, pos)
      if (this.#cutting) {
        if (lf === -1) return // the rest of the chunk belongs to the cut line
        this.#cutting = false
        this.#lineBytes = 0
        from = lf // its LF ends the cut line
        pos = lf + 1
        continue
      }
      const lineEnd = lf === -1 ? end : lf
      if (this.#lineBytes + lineEnd - pos > keep) {
        const cut = pos + keep - this.#lineBytes
        if (cut > from) this.push(chunk.toString('latin1', from, cut))
        this.#cutting = true
        from = pos = lineEnd
        continue
      }
      if (lf === -1) {
        this.#lineBytes += end - pos
        break
      }
      this.#lineBytes = 0
      pos = lf + 1
    }
    if (from < end) this.push(chunk.toString('latin1', from, end))
  }

  /**
   * Walks a JSON array byte by byte, tracking strings, escapes and nesting depth, and writes each
   * element as one line. Elements are not validated: brackets of either kind count as one depth.
   */
  #scanArray (chunk: Buffer, start: number): void {
    if (this.#state === 'junk') return
    // Each input byte gives at most one output byte, so the chunk's size is enough room.
    if (this.#out.length < chunk.length - start) this.#out = Buffer.allocUnsafe(chunk.length - start)
    const out = this.#out
    const keep = this.#keep
    let o = 0
    for (let i = start; i < chunk.length; i++) {
      const byte = chunk[i]
      if (this.#state !== 'element') {
        if (byte === SPACE || byte === LF || byte === CR || byte === TAB) continue
        if (this.#state === 'between') {
          if (byte === COMMA || (byte === CLOSE_BRACKET && this.#elements > 0)) {
            o = this.#pushMarker(out, o, emptyElement)
            this.#elements++
          }
          if (byte === CLOSE_BRACKET) { this.#state = 'closed'; continue }
          if (byte === COMMA) continue
          this.#state = 'element'
          this.#elementBytes = 0
        } else {
          if (this.#state === 'closed') o = this.#pushMarker(out, o, dataAfterArray)
          this.#state = 'junk'
          break
        }
      }
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false
        else if (byte === BACKSLASH) this.#escaped = true
        else if (byte === QUOTE) this.#inString = false
      } else if (byte === QUOTE) {
        this.#inString = true
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        this.#depth++
      } else if ((byte === CLOSE_BRACE || byte === CLOSE_BRACKET) && this.#depth > 0) {
        this.#depth--
      } else if ((byte === COMMA || byte === CLOSE_BRACKET) && this.#depth === 0) {
        out[o++] = LF
        this.#elements++
        this.#state = byte === COMMA ? 'between' : 'closed'
        continue
      }
      if (this.#elementBytes++ < keep) out[o++] = byte === LF ? CR : byte
    }
    if (o > 0) this.push(out.toString('latin1', 0, o))
  }

  /** Passes on what `out` holds, then a line that is only `marker`. Returns the new fill of `out`. */
  #pushMarker (out: Buffer, o: number, marker: string): number {
    if (o > 0) this.push(out.toString('latin1', 0, o))
    this.push(marker + '\n')
    return 0
  }
}
