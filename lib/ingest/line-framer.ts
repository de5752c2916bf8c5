// The byte-level stage in front of split2 (line-splitter.ts): turns a decoded body into latin1 text
// that split2 cuts at every '\n' into exactly the body's lines, one character per raw byte.
//
// Contract, bytes in, strings out:
// - A leading UTF-8 BOM is dropped, even when it arrives split over chunks.
// - NDJSON: the bytes pass unchanged, except that a line over the limit is cut to maxLineBytes + 2
//   bytes (one past the limit, and room for a CR that the splitter strips) and the rest of it,
//   up to its '\n', is dropped. The splitter fails it by its length; memory stays at about
//   maxLineBytes plus one chunk however long the line.
// - Extension: a body whose first byte after the BOM and any whitespace is '[' is a JSON array of
//   objects (Vector's and Fluent Bit's `json` encoding): element k comes out as line k
//   (array-scanner.ts), cut like an over-long line. Two framing errors fail one line, which then
//   ends with a marker character above U+00FF (which latin1 text never holds): a missing ']' (the
//   unfinished element, or one more line if the body ends after a ','), and anything but
//   whitespace after the closing ']' (one more line for all of it).
// - Text goes out one 64 KiB piece of input at a time (see maxPieceBytes).
// - A run of LFs (minBlankRun or more; a blank-line bomb) goes out as one marker line instead:
//   blankRunMarker followed by the number of blank lines in decimal. The splitter hands it to
//   LineBatcher.addBlankLines, so the run costs a memcmp per 4 KiB instead of a string, a split
//   and a batch entry per line (1 GiB of '\n' took 2.6 s of CPU before its 413).
import { Transform } from 'node:stream'
import type { TransformCallback } from 'node:stream'
import type { FailedLine } from './line-batcher.ts'
import { ArrayScanner } from './array-scanner.ts'

/**
 * Input is framed 64 KiB at a time, so that split2 gets strings of about that size: it joins each
 * to the partial line before it and splits the result, and from 128 KiB on V8 allocates such
 * strings in its large-object space; the decoder's 256 KiB chunks, passed whole, framed at half
 * the speed (bench/split.bench.ts).
 */
const maxPieceBytes = 64 * 1024

const LF = 0x0a
const CR = 0x0d
const SPACE = 0x20
const TAB = 0x09
const OPEN_BRACKET = 0x5b
const bom = Buffer.from([0xef, 0xbb, 0xbf])

/** The marker line for `count` blank lines, LF included. */
function blankRunText (count: number): string {
  return blankRunPrefix + String(count) + '\n'
}

/** The marker that ends a line failed by the array framing is `firstMarker + i` for failure i. */
export const firstMarker = 0x100
export const framingFailures: readonly FailedLine[] = [
  { code: 'invalid_json', message: "the JSON array ends without its closing ']'" },
  { code: 'invalid_json', message: "unexpected data after the JSON array's closing ']'" },
]
/** Starts a line that stands for a run of blank lines (see the contract). */
export const blankRunMarker = 0x200
const blankRunPrefix = String.fromCharCode(blankRunMarker)

/**
 * LFs in a row that make a run; shorter ones go through as text, at no extra cost to real lines.
 * At 64 a run costs a quarter of its lines as text (bench/blank-lines.bench.ts: 64 MiB of 63 LFs and a
 * line, 0.83 s framed); at 16 the marker's own cost ate the gain (64 MiB of 15 LFs and a line:
 * 3.8 s against 3.0 s as text).
 */
const minBlankRun = 64
const blankRunNeedle = Buffer.alloc(minBlankRun, LF)
/** A run is skipped by comparing blocks of this many LFs at a time. */
const lfBlock = Buffer.alloc(4096, LF)

const unclosedArray = String.fromCharCode(firstMarker)
const dataAfterArray = String.fromCharCode(firstMarker + 1)

type Mode = 'start' | 'lines' | 'array'

export class LineFramer extends Transform {
  /** Bytes of a line passed on at most: the limit + 1 to fail it, + 1 for a CR the splitter strips. */
  readonly #keep: number
  #mode: Mode = 'start'
  /** The first bytes of the body while they could still be a BOM. */
  #head: Buffer | null = null
  #bodyStarted = false
  /** Whitespace held before the mode is known: LFs, then bytes after the last LF. */
  #blankLines = 0
  #blankBytes = 0
  /** 'lines' mode: bytes of the current line passed on, and whether the rest of it is dropped. */
  #lineBytes = 0
  #cutting = false
  /** 'array' mode: the scanner, and the buffer it writes each piece's lines into. */
  readonly #array: ArrayScanner
  #out: Buffer = Buffer.alloc(0)
  /** Text of the piece being framed ('lines' mode), pushed as one string at the end of the piece. */
  #text: string[] = []

  /** `maxLineBytes`: the longest line accepted, CR of CRLF excluded. */
  constructor (maxLineBytes: number) {
    super({ readableObjectMode: true })
    this.#keep = maxLineBytes + 2
    this.#array = new ArrayScanner(this.#keep)
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
    for (let at = start; at < chunk.length; at += maxPieceBytes) this.#frame(chunk.subarray(at, at + maxPieceBytes))
    callback()
  }

  override _flush (callback: TransformCallback): void {
    if (this.#head !== null) {
      // A body of one or two bytes that began like a BOM: they are data.
      this.#frame(this.#head)
      this.#head = null
    }
    if (this.#mode === 'array' && this.#array.isOpen) this.push(unclosedArray + '\n')
    callback()
  }

  #frame (piece: Buffer): void {
    const start = this.#mode === 'start' ? this.#sniff(piece) : 0
    if (this.#mode === 'lines') this.#passLines(piece, start)
    else if (this.#mode === 'array') this.#passElements(piece, start)
    const text = this.#text
    if (text.length === 0) return
    this.#text = []
    this.push(text.length === 1 ? text[0] : text.join(''))
  }

  /**
   * Queues text of the piece being framed: a piece goes out as one string however many runs of
   * blank lines cut it, so that split2 and the stream machinery run once per piece.
   */
  #emit (text: string): void {
    this.#text.push(text)
  }

  /**
   * Holds back leading whitespace until the first other byte picks the mode; returns where that
   * mode starts. Past a line's worth (#keep bytes) of it the body is taken for NDJSON, so that
   * what is held stays bounded: Vector and Fluent Bit start their arrays with '[' itself.
   */
  #sniff (chunk: Buffer): number {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]
      if (byte === OPEN_BRACKET) {
        this.#mode = 'array'
        return i + 1
      }
      const blank = byte === LF || byte === SPACE || byte === TAB || byte === CR
      if (blank && this.#blankLines + this.#blankBytes < this.#keep) {
        if (byte === LF) {
          this.#blankLines++
          this.#blankBytes = 0
        } else {
          this.#blankBytes++
        }
        continue
      }
      // NDJSON: the leading blank lines count, so they go on, and the first line's indentation
      // as spaces so that positions in its error messages stay right.
      this.#mode = 'lines'
      if (this.#blankLines >= minBlankRun) this.#emit(blankRunText(this.#blankLines))
      else if (this.#blankLines > 0) this.#emit('\n'.repeat(this.#blankLines))
      if (this.#blankBytes > 0) {
        this.#emit(' '.repeat(this.#blankBytes))
        this.#lineBytes = this.#blankBytes
      }
      return i
    }
    return chunk.length
  }

  /** NDJSON: passes the bytes on as text, runs of LFs as markers (see the contract). */
  #passLines (chunk: Buffer, start: number): void {
    let from = start
    for (let run = chunk.indexOf(blankRunNeedle, from); run !== -1; run = chunk.indexOf(blankRunNeedle, from)) {
      let end = run + minBlankRun
      while (end + lfBlock.length <= chunk.length && chunk.compare(lfBlock, 0, lfBlock.length, end, end + lfBlock.length) === 0) end += lfBlock.length
      while (end < chunk.length && chunk[end] === LF) end++
      // The run's first LF ends the line before it; each LF after that ends a blank line.
      this.#passText(chunk.subarray(0, run + 1), from)
      this.#emit(blankRunText(end - run - 1))
      from = end
    }
    if (from < chunk.length) this.#passText(chunk, from)
  }

  /** Passes bytes on as text, but at most #keep bytes of any line. */
  #passText (chunk: Buffer, start: number): void {
    const keep = this.#keep
    const end = chunk.length
    // Common case, two memchr calls a chunk: no line in it can be over `keep`, pass it whole.
    if (!this.#cutting) {
      const first = chunk.indexOf(LF, start)
      const last = first === -1 ? -1 : chunk.lastIndexOf(LF)
      const tail = last === -1 ? this.#lineBytes + end - start : end - last - 1
      if (tail <= keep && (first === -1 || (this.#lineBytes + first - start <= keep && last - first - 1 <= keep))) {
        this.#lineBytes = tail
        if (end > start) this.#emit(chunk.toString('latin1', start, end))
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
        if (cut > from) this.#emit(chunk.toString('latin1', from, cut))
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
    if (from < end) this.#emit(chunk.toString('latin1', from, end))
  }

  /** JSON array: passes its elements on as lines of text. */
  #passElements (piece: Buffer, start: number): void {
    if (this.#array.hasDataAfter) return // reported once, when the scanner met it
    if (this.#out.length < 2 * (piece.length - start)) this.#out = Buffer.allocUnsafe(2 * (piece.length - start))
    const length = this.#array.scan(piece, start, this.#out)
    if (length > 0) this.push(this.#out.toString('latin1', 0, length))
    if (this.#array.hasDataAfter) this.push(dataAfterArray + '\n')
  }
}
