// The export's lines in bytes (docs/api.md section 7.8; export-query.ts): ClickHouse's
// JSONEachRow output of the export's SELECT, as it arrives in chunks of any size, turned into the
// events API's JSON of each event without a string ever being made of it.
//
// Contract and why:
// - The SELECT lists attrs first, then the API's members in their order (id ... span_id,
//   received_at). ClickHouse writes attrs as a JSON string of its text, so a line starts
//   `{"attrs":"`; the string is unescaped into a scratch buffer in one pass that also finds its
//   end (the first quote not escaped), and the line is written as the event's JSON: `{`, the
//   members up to received_at, `,"attrs":` and the object text, then received_at.
// - Why bytes, and why one pass: with a string per line (decoding it, JSON.parse of attrs,
//   concatenation, encoding again) exportEvents took 3.7-3.8 Sluice CPU-s per million events
//   in-process, in bytes 2.6-2.8; native calls per escape or per key search cost more than a
//   loop. Over HTTP the socket reads and writes dominate (bench/README.md, "Find anything", export).
// - JSONEachRow escapes every line break inside a value, so a raw `\n` ends a line; a line cut
//   by a chunk boundary is carried to the next chunk. received_at is the last member and a number,
//   so `,"received_at":` before the trailing digits is where it starts.
// - attrs stays a JSON string (copied as ClickHouse wrote it) when its text nests deeper than
//   ingest allows (readAttrs in events-query.ts: a row stored before the limit), or when the
//   text holds a raw control character or a lone surrogate (not JSON text Sluice wrote; unescaped,
//   a line break could cut the line). The bracket count of the unescaping pass bounds the depth,
//   so only a text with more brackets than levels is scanned again.
// - Output comes in buffers of about `chunkBytes` whole lines, each a copy of its own (the HTTP
//   response holds it until written).
import { Buffer } from 'node:buffer'
import { maxValueDepth } from '../events/normalize.ts'
import { BACKSLASH, JsonLexer, LF, escOther, escSimple, nestsDeeper, sameBytes, withRoom } from '../events/json-lex.ts'

/** How a line starts: the attrs member, its string opened. */
const lineStart = Buffer.from('{"attrs":"')
const attrsMember = Buffer.from(',"attrs":')
const receivedAtKey = Buffer.from(',"received_at":')
/** attrs is itself one level: its values may nest maxValueDepth more (readAttrs). */
const levels = maxValueDepth + 1

export class ExportLineWriter {
  readonly #chunkBytes: number
  #out: Buffer<ArrayBuffer>
  #length = 0
  /** The unescaped attrs text of the line being written. */
  #scratch = Buffer.allocUnsafe(64 * 1024)
  /** Set by #unescape: brackets in the text (an upper bound of its depth), and where the string ends. */
  #brackets = 0
  #closing = -1
  /** Decodes the attrs string's escapes (json-lex.ts; its fields hold the last escape's length). */
  readonly #lexer = new JsonLexer()
  /** Bytes of a line begun in an earlier chunk. */
  #carry: Buffer[] = []
  /** Lines written so far. */
  lines = 0

  constructor (chunkBytes: number) {
    this.#chunkBytes = chunkBytes
    this.#out = Buffer.allocUnsafeSlow(chunkBytes * 2)
  }

  /** Takes a chunk of JSONEachRow bytes; complete lines go to the output. */
  push (chunk: Uint8Array): void {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    let start = 0
    while (start < bytes.length) {
      const end = bytes.indexOf(LF, start)
      if (end < 0) {
        this.#carry.push(Buffer.from(bytes.subarray(start)))
        return
      }
      if (this.#carry.length > 0) {
        this.#carry.push(bytes.subarray(start, end))
        const line = Buffer.concat(this.#carry)
        this.#carry = []
        this.#line(line, 0, line.length)
      } else if (end > start) {
        this.#line(bytes, start, end)
      }
      start = end + 1
    }
  }

  /** A full buffer of lines when there is one (at least chunkBytes), else null. */
  take (): Buffer | null {
    return this.#length >= this.#chunkBytes ? this.#flush() : null
  }

  /** The rest of the lines (null when none); a line left unfinished by the input is an error. */
  end (): Buffer | null {
    if (this.#carry.length > 0) throw new Error(`unexpected export row: ${Buffer.concat(this.#carry).subarray(0, 200).toString()}`)
    return this.#length > 0 ? this.#flush() : null
  }

  #flush (): Buffer {
    // A copy of exactly the lines: the work buffer stays for the next ones (a fresh buffer twice
    // the size per chunk held more memory and made more garbage to collect).
    const done = Buffer.from(this.#out.subarray(0, this.#length))
    this.#length = 0
    return done
  }

  /** One JSONEachRow line, bytes[start, end), as the event's JSON and a line break. */
  #line (bytes: Buffer, start: number, end: number): void {
    if (end - start > this.#scratch.length) this.#scratch = Buffer.allocUnsafe(2 * (end - start))
    const open = start + lineStart.length - 1 // the attrs string's opening quote
    const text = end - start > lineStart.length && sameBytes(bytes, start, lineStart, 0, lineStart.length) ? this.#unescape(bytes, open + 1, end) : -1
    const close = this.#closing // the attrs string's closing quote
    const members = text === -1 || bytes[close + 1] !== 0x2c ? -1 : receivedAt(bytes, close + 2, end)
    if (members < 0) throw new Error(`unexpected export row: ${bytes.subarray(start, Math.min(end, start + 200)).toString()}`)
    // Unescaping only shrinks a string, so the line fits in its own length and a line break.
    this.#reserve(end - start + 1)
    const out = this.#out
    let at = this.#length
    out[at++] = 0x7b // {
    at += bytes.copy(out, at, close + 2, members)
    at += attrsMember.copy(out, at)
    if (text < 0 || (this.#brackets > levels && nestsDeeper(this.#scratch, 0, text, levels))) {
      // Kept as the JSON string ClickHouse wrote (the same value as JSON.stringify of the text).
      at += bytes.copy(out, at, open, close + 1)
    } else {
      at += this.#scratch.copy(out, at, 0, text)
    }
    at += bytes.copy(out, at, members, end)
    out[at++] = LF
    this.#length = at
    this.lines++
  }

  /**
   * Unescapes the JSON string body from bytes[start] (after its opening quote) into the scratch
   * buffer, up to its closing quote (#closing), counting brackets (#brackets). Returns the text's
   * length; -2 when it holds a control character or a lone surrogate (#closing is still found);
   * -1 when the string does not end before `end`.
   */
  #unescape (bytes: Buffer, start: number, end: number): number {
    const out = this.#scratch
    const lexer = this.#lexer
    let at = 0
    let brackets = 0
    let kept = true
    for (let i = start; i < end; i++) {
      const c = bytes[i]
      if (c === 0x22) {
        this.#closing = i
        this.#brackets = brackets
        return kept ? at : -2
      }
      if (c !== BACKSLASH) {
        if (c === 0x7b || c === 0x5b) brackets++
        out[at++] = c
        continue
      }
      // The escape's character by the lexer's own decoding (json-lex.ts); \n \t and the like,
      // and \u of a control character, decode to one byte below 0x20.
      const kind = lexer.escapeAt(bytes, i)
      if (kind === escSimple || kind === escOther) {
        const from = at
        at = lexer.writeEscape(bytes, i, out, at)
        if (at - from === 1 && out[from] < 0x20) kept = false
      } else {
        kept = false // a lone surrogate (not text JSON.parse gives back as it was), or no escape
      }
      i += lexer.escapeLength - 1
    }
    return -1
  }

  #reserve (bytes: number): void {
    this.#out = withRoom(this.#out, this.#length, bytes)
  }
}

/**
 * Where the received_at member starts in the line's rest bytes[start, end): its `,"received_at":`
 * before the trailing digits and `}`; -1 when the line does not end so.
 */
function receivedAt (bytes: Buffer, start: number, end: number): number {
  let i = end - 2 // before the closing brace
  while (i > start && bytes[i] >= 0x30 && bytes[i] <= 0x39) i--
  const key = i - receivedAtKey.length + 1
  if (bytes[end - 1] !== 0x7d || key < start || !sameBytes(bytes, key, receivedAtKey, 0, receivedAtKey.length)) return -1
  return key
}
