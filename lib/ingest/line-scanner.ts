// The parse worker's fast path: reads one NDJSON line straight from its UTF-8 bytes into the
// fields of an events row, without JSON.parse, JS strings or an EventRow. The row's strings stay
// byte spans of the line (or of a scratch buffer, when they had escapes), which
// EventRowWriter#writeScanned copies into RowBinary.
//
// Contract: for a line it takes, the row written is byte for byte the row the reference path
// (JSON.parse, normalizeEvent, EventRowWriter#write) writes; test/ingest/line-scanner.test.ts
// checks this on generated lines. Every other line is declined (`declined`), and the worker runs
// the reference path on it, which also words every failure. So the scanner only needs to be
// right when it accepts, and declines whatever would take it long to get right:
// - any line that fails: not JSON, not an object, a field of the wrong type or a ts out of range;
// - keys with escapes, keys starting with a digit (JSON.parse lists array-index keys first),
//   repeated keys, more than maxMembers keys;
// - a lone surrogate (\ud800 without its pair) in a value that is stored: it becomes U+FFFD in
//   the column but stays as it was in the reference's JS strings (pairs are taken);
// - an attrs value whose JSON text is not already the text JSON.stringify would give back:
//   whitespace inside a container, numbers other than plain integers in one, \/ or \u escapes;
// - in format 2, a field nested in `log` that is present but invalid (the reference keeps it in
//   attrs);
// - nesting deeper than maxDepth (the reference's maxValueDepth: it fails such a line, too_deep).
// It takes every line of bench/payload.ts, and the common shapes of shippers' lines (the test
// checks both).
//
// Field rules are those of event-schema.ts (format 1 strict, format 2 lenient, null = absent);
// numbers are read as JSON.parse reads them: digits exactly, fractions by one correctly rounded
// division (Clinger's fast path), anything longer by Number() on the token's text.
import { Buffer } from 'node:buffer'
import { epochMsFromNumber, epochMsFromRfc3339Bytes, maxValueDepth } from './event-schema.ts'
import type { EventRow, TimeBounds } from './event-schema.ts'
import { writeCodePoint } from './row-serializer.ts'

/** Keys a line may have before it is declined (shippers send a dozen or two). */
const maxMembers = 64
/**
 * Containers nested deeper than this are declined: the reference fails a line whose attrs value
 * nests deeper (too_deep), so the scanner must never take one. A member's value is read at depth
 * 0 and its containers at 1..maxDepth, the levels maxValueDepth counts.
 */
const maxDepth = maxValueDepth

// Token types.
const tString = 1
const tNumber = 2
const tLiteral = 3 // true, false
const tNull = 4
const tContainer = 5

// Key classes: 0-8 are the format-1 fields in event-schema.ts's fieldIndex order.
const kStatus = 3
const kTs = 4
const kRt = 5
const kBytes = 6
const kLog = 9
const kFilename = 10
const kOther = 11

// String escapes seen: simple ones (\" \\ \b \f \n \r \t, as JSON.stringify writes them), others
// (\/ and \u of a non-surrogate), and \u of a surrogate.
const escSimple = 1
const escOther = 2
const escSurrogate = 4

/** String columns of a row, in the order EventRowWriter#writeScanned reads them. */
export const scannedStrings = ['host', 'path', 'method', 'src', 'user_agent', 'message', 'filename'] as const
const sHost = 0
const sPath = 1
const sMethod = 2
const sSrc = 3
const sUserAgent = 4
const sMessage = 5
const sFilename = 6
/** String column of each format-1 string field (key class), -1 for the numeric ones. */
const stringSlotOf = [sHost, sPath, sMethod, -1, -1, -1, -1, sSrc, sUserAgent]

/** #members: read the line again, recording its members (format 2, or an invalid field). */
const readAgain = -2

// Outcomes of scan().
export const scannedRow = 0
export const blankLine = 1
export const declined = 2

const QUOTE = 0x22
const BACKSLASH = 0x5c
const LF = 0x0a

const pow10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15]

export class LineScanner {
  /** Outcome of the last scan(): scannedRow, blankLine or declined. */
  outcome = declined

  // The row, valid after a scan() with outcome scannedRow.
  ts = 0
  /** -1 when absent. */
  status = -1
  /** -1 when absent (a present rt is >= 0). */
  rt = -1
  /** -1 when absent. */
  bytes = -1
  /** Per scannedStrings column: the buffer holding its UTF-8 (the line or `scratch`), null when absent. */
  readonly stringSource: Array<Buffer | null> = new Array(scannedStrings.length).fill(null)
  readonly stringStart = new Int32Array(scannedStrings.length)
  readonly stringEnd = new Int32Array(scannedStrings.length)
  /** attrs' JSON text: attrsBytes[0, attrsLength). */
  attrsBytes: Buffer = Buffer.allocUnsafeSlow(4096)
  attrsLength = 0
  /** Where unescaped strings go. Grows; spans into it stay valid until the next scan(). */
  scratch: Buffer = Buffer.allocUnsafeSlow(64 * 1024)

  #bounds: TimeBounds = { receivedAt: 0, minTs: 0, maxTs: 0 }
  #scratchLength = 0
  // Inside a `log` object LF is whitespace; on a line it ends the line.
  #lfIsSpace = false
  // #members stores format-1 members as it reads them (else it records them for #format2).
  #direct = true
  // A nested scan failed for a reason other than invalid JSON: decline the line.
  #unsupported = false

  // The last token read by #value.
  #type = 0
  #start = 0 // strings: after the opening quote; others: the first byte
  #end = 0 // strings: the closing quote; others: after the last byte
  #escapes = 0
  #number = 0
  #numberPlain = false // an integer of at most 15 digits, not -0: JSON.stringify writes it back as it is
  #numberRead = false // #number holds the value; else it needs Number() on the text

  // The line's members, in order.
  #count = 0
  readonly #keyStart = new Int32Array(maxMembers)
  readonly #keyEnd = new Int32Array(maxMembers)
  readonly #class = new Uint8Array(maxMembers)
  readonly #valueType = new Uint8Array(maxMembers)
  readonly #valueStart = new Int32Array(maxMembers)
  readonly #valueEnd = new Int32Array(maxMembers)
  readonly #valueEscapes = new Uint8Array(maxMembers)
  readonly #valueNumber = new Float64Array(maxMembers)
  readonly #valuePlain = new Uint8Array(maxMembers)
  readonly #valueRead = new Uint8Array(maxMembers)

  // The format-1 fields found in a `log` object (by key class 0-8).
  #nestedSeen = 0
  readonly #nestedType = new Uint8Array(9)
  readonly #nestedStart = new Int32Array(9)
  readonly #nestedEnd = new Int32Array(9)
  readonly #nestedEscapes = new Uint8Array(9)
  readonly #nestedNumber = new Float64Array(9)
  readonly #nestedRead = new Uint8Array(9)

  /** Sets the receive time and the accepted ts range for the lines that follow. */
  setBounds (bounds: TimeBounds): void {
    this.#bounds = bounds
  }

  /**
   * Scans the line starting at `start` in `line` (ended by '\n' or the buffer's end; the buffer
   * must be valid UTF-8). Sets `outcome`; for scannedRow and blankLine returns the index of the
   * line's end ('\n' or line.length). For declined the return value is meaningless.
   */
  scan (line: Buffer, start: number): number {
    this.outcome = declined
    this.#lfIsSpace = false
    let i = skipSpace(line, start, false)
    const c = line[i]
    if (c === LF || i >= line.length) {
      this.outcome = blankLine
      return i
    }
    if (c !== 0x7b) return 0
    // Format 1 in one pass; a line that is format 2 (or has an invalid field, which format 2
    // keeps in attrs) is read again, its members recorded first.
    this.#resetRow()
    this.#direct = true
    let end = this.#members(line, i + 1)
    if (end === readAgain) {
      this.#resetRow()
      this.#direct = false
      end = this.#members(line, i + 1)
    }
    if (end < 0) return 0
    if (!this.#direct) {
      const log = this.#find(kLog)
      if (log < 0 || this.#valueType[log] === tNull || !this.#format2(line, log)) return 0
    }
    i = skipSpace(line, end, false)
    if (i < line.length && line[i] !== LF) return 0
    if (this.attrsLength === 0) {
      this.#attrsRoom(2)
      this.attrsBytes[0] = 0x7b
      this.attrsBytes[1] = 0x7d
      this.attrsLength = 2
    } else {
      this.#attrsRoom(1)
      this.attrsBytes[this.attrsLength++] = 0x7d
    }
    this.outcome = scannedRow
    return i
  }

  #resetRow (): void {
    this.#count = 0
    this.#scratchLength = 0
    this.attrsLength = 0
    this.ts = this.#bounds.receivedAt
    this.status = -1
    this.rt = -1
    this.bytes = -1
    const sources = this.stringSource
    for (let k = 0; k < sources.length; k++) sources[k] = null
  }

  /** Bytes the row's strings take at most: its line's size, the unescaped strings and attrs. */
  stringBytesAtMost (size: number): number {
    return size + this.#scratchLength + this.attrsLength
  }

  /** The row as the reference path would have built it (for the live tail, which needs strings). */
  toEventRow (): EventRow {
    return {
      ts: this.ts,
      host: this.#text(sHost),
      path: this.#text(sPath),
      method: this.#text(sMethod),
      status: this.status < 0 ? null : this.status,
      rt: this.rt < 0 ? null : this.rt,
      bytes: this.bytes < 0 ? null : this.bytes,
      src: this.#text(sSrc),
      userAgent: this.#text(sUserAgent),
      message: this.#text(sMessage),
      filename: this.#text(sFilename),
      attrs: this.attrsBytes.toString('utf8', 0, this.attrsLength),
    }
  }

  #text (slot: number): string | null {
    const source = this.stringSource[slot]
    return source === null ? null : source.toString('utf8', this.stringStart[slot], this.stringEnd[slot])
  }

  /**
   * The members of the top-level object from after its '{'; returns the index after its '}', -1
   * to decline the line, or readAgain. While #direct, each member is stored by format 1's rules
   * as it is read, and readAgain means the line needs #format2 or has an invalid field; else the
   * members are recorded for #format2. A line that starts with a non-null log switches to
   * recording at once, with nothing to undo.
   */
  #members (src: Buffer, i: number): number {
    i = skipSpace(src, i, false)
    if (src[i] === 0x7d) return i + 1
    let seen = 0
    for (;;) {
      if (src[i] !== QUOTE) return -1
      const keyStart = i + 1
      i = scanString(src, i)
      if (i < 0 || stringEscapes !== 0) return -1
      const keyEnd = i - 1
      const cls = classifyKey(src, keyStart, keyEnd)
      if (cls === kOther) {
        const first = src[keyStart]
        if (first >= 0x30 && first <= 0x39) return -1
        if (this.#repeatsKey(src, keyStart, keyEnd)) return -1
      } else {
        if ((seen & (1 << cls)) !== 0) return -1
        seen |= 1 << cls
      }
      i = skipSpace(src, i, false)
      if (src[i] !== 0x3a) return -1
      i = skipSpace(src, i + 1, false)
      // Values kept in attrs are copied as they are, so they must read as JSON.stringify writes.
      // (A field's value may go to attrs too, in format 2: #appendAttr checks it then.)
      i = cls === kLog && src[i] === QUOTE ? this.#logString(src, i) : this.#value(src, i, cls === kOther, 0)
      if (i < 0) return -1
      if (this.#direct) {
        const type = this.#type
        if (cls === kLog && type !== tNull && this.#count === 0 && seen === 1 << kLog) {
          this.#direct = false
        } else if (cls < kLog) {
          if (type !== tNull && !this.#storeField(cls, src, type, this.#start, this.#end, this.#escapes,
            this.#number, this.#numberRead)) return readAgain
        } else if (cls === kLog) {
          if (type !== tNull) return readAgain
        } else if (!this.#appendAttr(src, keyStart, keyEnd, cls, type, this.#start, this.#end, this.#escapes,
          this.#numberPlain, this.#numberRead, this.#number)) {
          return cls === kFilename ? readAgain : -1 // a format-2 filename may be what attrs cannot hold
        }
      }
      if (!this.#direct || cls === kOther) {
        // Direct reading records the other keys only, for #repeatsKey.
        const m = this.#count
        if (m === maxMembers) return -1
        this.#keyStart[m] = keyStart
        this.#keyEnd[m] = keyEnd
        this.#class[m] = cls
        this.#valueType[m] = this.#type
        this.#valueStart[m] = this.#start
        this.#valueEnd[m] = this.#end
        this.#valueEscapes[m] = this.#escapes
        this.#valueNumber[m] = this.#number
        this.#valuePlain[m] = this.#numberPlain ? 1 : 0
        this.#valueRead[m] = this.#numberRead ? 1 : 0
        this.#count = m + 1
      }
      i = skipSpace(src, i, false)
      const c = src[i]
      if (c === 0x7d) return i + 1
      if (c !== 0x2c) return -1
      i = skipSpace(src, i + 1, false)
    }
  }

  #repeatsKey (src: Buffer, start: number, end: number): boolean {
    const length = end - start
    for (let m = 0; m < this.#count; m++) {
      if (this.#class[m] !== kOther || this.#keyEnd[m] - this.#keyStart[m] !== length) continue
      if (sameBytes(src, this.#keyStart[m], src, start, length)) return true
    }
    return false
  }

  #find (cls: number): number {
    for (let m = 0; m < this.#count; m++) if (this.#class[m] === cls) return m
    return -1
  }

  #format2 (line: Buffer, log: number): boolean {
    // #logString set the message.
    if (this.#valueType[log] !== tString) return false
    let fromNested = 0
    let source = this.stringSource[sMessage]!
    let start = this.stringStart[sMessage]
    let end = this.stringEnd[sMessage]
    // parseNestedObject's test, on the message: its first non-blank character is '{'.
    if (source[skipBlank(source, start, end)] === 0x7b) {
      if (source !== this.scratch) {
        // A log without escapes that may be an object: read from a copy, after which a
        // sentinel stops every scan (in the line, the log's closing quote would not).
        this.#scratchRoom(2 * (end - start) + 1)
        const at = this.#scratchLength
        this.#scratchLength = copyBytes(line, start, end, this.scratch, at)
        source = this.scratch
        start = at
        end = this.#scratchLength
      }
      // A 0 byte after the message: invalid anywhere in JSON, so no scan reads past it.
      this.scratch[this.#scratchLength++] = 0
      fromNested = this.#nested(this.scratch, start, end)
      if (fromNested < 0) return false
    }
    for (let m = 0; m < this.#count; m++) {
      const cls = this.#class[m]
      if (cls === kLog) continue
      const type = this.#valueType[m]
      if (cls === kFilename) {
        if (type === tNull) continue
        if (type !== tString) return false
        if (!this.#storeString(sFilename, line, this.#valueStart[m], this.#valueEnd[m], this.#valueEscapes[m])) return false
        continue
      }
      if (cls < kLog) {
        if (type === tNull) continue
        // A field the log object filled goes to attrs, as does an invalid one (format 2 is lenient).
        if ((fromNested & (1 << cls)) === 0 && this.#storeMember(line, m)) continue
      }
      if (!this.#appendAttr(line, this.#keyStart[m], this.#keyEnd[m], cls, type, this.#valueStart[m], this.#valueEnd[m],
        this.#valueEscapes[m], this.#valuePlain[m] === 1, this.#valueRead[m] === 1, this.#valueNumber[m])) return false
    }
    return true
  }

  /**
   * Reads the object a log message holds, src[start, end), and stores its format-1 fields.
   * Returns the fields it filled (bits by key class); 0 when the message is no JSON object (it
   * is then plain text), -1 to decline the line.
   */
  #nested (src: Buffer, start: number, end: number): number {
    this.#lfIsSpace = true
    this.#unsupported = false
    this.#nestedSeen = 0
    let i = skipSpace(src, start, true) + 1 // past the '{'
    i = this.#nestedMembers(src, i)
    if (i >= 0) i = skipSpace(src, i, true)
    this.#lfIsSpace = false
    if (i !== end) return this.#unsupported ? -1 : 0
    let filled = 0
    for (let cls = 0; cls < kLog; cls++) {
      if ((this.#nestedSeen & (1 << cls)) === 0) continue
      const type = this.#nestedType[cls]
      if (type === tNull) continue
      if (!this.#storeField(cls, src, type, this.#nestedStart[cls], this.#nestedEnd[cls], this.#nestedEscapes[cls],
        this.#nestedNumber[cls], this.#nestedRead[cls] === 1)) return -1
      filled |= 1 << cls
    }
    return filled
  }

  #nestedMembers (src: Buffer, i: number): number {
    i = skipSpace(src, i, true)
    if (src[i] === 0x7d) return i + 1
    for (;;) {
      if (src[i] !== QUOTE) return -1
      const keyStart = i + 1
      i = scanString(src, i)
      if (i < 0) return -1
      const keyEnd = i - 1
      const keyEscapes = stringEscapes
      i = skipSpace(src, i, true)
      if (src[i] !== 0x3a) return -1
      i = this.#value(src, skipSpace(src, i + 1, true), false, 0)
      if (i < 0) return -1
      // An escaped key may spell a field's name; a repeated field takes JSON.parse's last value.
      if (keyEscapes !== 0) {
        this.#unsupported = true
        return -1
      }
      const cls = classifyKey(src, keyStart, keyEnd)
      if (cls < kLog) {
        if ((this.#nestedSeen & (1 << cls)) !== 0) {
          this.#unsupported = true
          return -1
        }
        this.#nestedSeen |= 1 << cls
        this.#nestedType[cls] = this.#type
        this.#nestedStart[cls] = this.#start
        this.#nestedEnd[cls] = this.#end
        this.#nestedEscapes[cls] = this.#escapes
        this.#nestedNumber[cls] = this.#number
        this.#nestedRead[cls] = this.#numberRead ? 1 : 0
      }
      i = skipSpace(src, i, true)
      const c = src[i]
      if (c === 0x7d) return i + 1
      if (c !== 0x2c) return -1
      i = skipSpace(src, i + 1, true)
    }
  }

  #storeMember (line: Buffer, m: number): boolean {
    return this.#storeField(this.#class[m], line, this.#valueType[m], this.#valueStart[m], this.#valueEnd[m],
      this.#valueEscapes[m], this.#valueNumber[m], this.#valueRead[m] === 1)
  }

  /** Validates a non-null value of format-1 field `cls` (event-schema's storeField) and stores it; false when invalid. */
  #storeField (cls: number, src: Buffer, type: number, start: number, end: number, escapes: number,
    number: number, read: boolean): boolean {
    if (cls === kStatus || cls === kRt || cls === kBytes) {
      if (type !== tNumber) return false
      const value = read ? number : numberOf(src, start, end)
      if (cls === kStatus) {
        if (!Number.isInteger(value) || value < 100 || value > 599) return false
        this.status = value
      } else if (cls === kRt) {
        if (!(value >= 0) || value === Infinity) return false
        this.rt = value
      } else {
        if (!Number.isSafeInteger(value) || value < 0) return false
        this.bytes = value
      }
      return true
    }
    if (cls === kTs) {
      let ms: number
      if (type === tNumber) ms = epochMsFromNumber(read ? number : numberOf(src, start, end))
      else if (type === tString && escapes === 0) ms = epochMsFromRfc3339Bytes(src, start, end)
      else return false
      if (!(ms >= this.#bounds.minTs && ms <= this.#bounds.maxTs)) return false
      this.ts = ms
      return true
    }
    if (type !== tString) return false
    return this.#storeString(stringSlotOf[cls], src, start, end, escapes)
  }

  #storeString (slot: number, src: Buffer, start: number, end: number, escapes: number): boolean {
    if (escapes === 0) {
      this.#setString(slot, src, start, end)
      return true
    }
    if ((escapes & escSurrogate) !== 0) return false
    // src may be the scratch itself (a nested field): #format2 made room for this beforehand.
    if (src !== this.scratch) this.#scratchRoom(end - start)
    const at = this.#scratchLength
    this.#unescapeInto(src, start, end)
    this.#setString(slot, this.scratch, at, this.#scratchLength)
    return true
  }

  #setString (slot: number, src: Buffer, start: number, end: number): void {
    this.stringSource[slot] = src
    this.stringStart[slot] = start
    this.stringEnd[slot] = end
  }

  /** Appends a member to attrs as `"key":value` (key and value as #value read them); false to decline the line. */
  #appendAttr (line: Buffer, keyStart: number, keyEnd: number, cls: number, type: number, valueStart: number,
    valueEnd: number, escapes: number, numberPlain: boolean, numberRead: boolean, number: number): boolean {
    keyStart--
    keyEnd++
    let text: string | null = null
    // A container's text was checked only under a key that is no field.
    if (type === tContainer && cls !== kOther) return false
    if (type === tString) {
      if ((escapes & (escOther | escSurrogate)) !== 0) return false
      valueStart--
      valueEnd++
    } else if (type === tNumber && !numberPlain) {
      // As JSON.stringify writes the value JSON.parse reads (1e999 is Infinity, written null).
      const value = numberRead ? number : numberOf(line, valueStart, valueEnd)
      text = Number.isFinite(value) ? String(value) : 'null'
    }
    const valueLength = text === null ? valueEnd - valueStart : text.length
    this.#attrsRoom(keyEnd - keyStart + valueLength + 2)
    const out = this.attrsBytes
    let at = this.attrsLength
    out[at++] = this.attrsLength === 0 ? 0x7b : 0x2c
    at = copyBytes(line, keyStart, keyEnd, out, at)
    out[at++] = 0x3a
    if (text === null) {
      at = copyBytes(line, valueStart, valueEnd, out, at)
    } else {
      for (let k = 0; k < text.length; k++) out[at++] = text.charCodeAt(k)
    }
    this.attrsLength = at
    return true
  }

  /**
   * Reads the value at src[i] (no whitespace before it) into the token fields; returns the index
   * after it, or -1 when it is invalid or, with `plain`, not written as JSON.stringify writes it.
   */
  #value (src: Buffer, i: number, plain: boolean, depth: number): number {
    const start = i
    const c = src[i]
    if (c === QUOTE) {
      i = scanString(src, i)
      if (i < 0 || (plain && (stringEscapes & (escOther | escSurrogate)) !== 0)) return -1
      this.#escapes = stringEscapes
      this.#type = tString
      this.#start = start + 1
      this.#end = i - 1
      return i
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      i = this.#numberToken(src, i)
      // A member's number is rewritten as JSON.stringify writes it; one inside a container is copied.
      if (i < 0 || (plain && depth > 0 && !this.#numberPlain)) return -1
      this.#type = tNumber
    } else if (c === 0x74) { // true
      if (src[i + 1] !== 0x72 || src[i + 2] !== 0x75 || src[i + 3] !== 0x65) return -1
      i += 4
      this.#type = tLiteral
    } else if (c === 0x66) { // false
      if (src[i + 1] !== 0x61 || src[i + 2] !== 0x6c || src[i + 3] !== 0x73 || src[i + 4] !== 0x65) return -1
      i += 5
      this.#type = tLiteral
    } else if (c === 0x6e) { // null
      if (src[i + 1] !== 0x75 || src[i + 2] !== 0x6c || src[i + 3] !== 0x6c) return -1
      i += 4
      this.#type = tNull
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === maxDepth) {
        this.#unsupported = true
        return -1
      }
      i = c === 0x7b ? this.#object(src, i + 1, plain, depth + 1) : this.#array(src, i + 1, plain, depth + 1)
      if (i < 0) return -1
      this.#type = tContainer
    } else {
      return -1
    }
    this.#start = start
    this.#end = i
    this.#escapes = 0
    return i
  }

  /** A container's members from after its '{'; returns the index after its '}', or -1. */
  #object (src: Buffer, i: number, plain: boolean, depth: number): number {
    if (!plain) i = skipSpace(src, i, this.#lfIsSpace)
    if (src[i] === 0x7d) return i + 1
    // Keys so far, for the repeated-key check of plain text: [start, end] pairs.
    const keys: number[] | null = plain ? [] : null
    for (;;) {
      if (src[i] !== QUOTE) return -1
      const keyStart = i + 1
      i = scanString(src, i)
      if (i < 0) return -1
      if (keys !== null) {
        // JSON.stringify writes array-index keys first and a repeated key once.
        const first = src[keyStart]
        if ((stringEscapes & ~escSimple) !== 0 || (first >= 0x30 && first <= 0x39)) return -1
        const keyEnd = i - 1
        for (let k = 0; k < keys.length; k += 2) {
          if (keys[k + 1] - keys[k] === keyEnd - keyStart && sameBytes(src, keys[k], src, keyStart, keyEnd - keyStart)) return -1
        }
        keys.push(keyStart, keyEnd)
      } else {
        i = skipSpace(src, i, this.#lfIsSpace)
      }
      if (src[i] !== 0x3a) return -1
      i++
      if (!plain) i = skipSpace(src, i, this.#lfIsSpace)
      i = this.#value(src, i, plain, depth)
      if (i < 0) return -1
      if (!plain) i = skipSpace(src, i, this.#lfIsSpace)
      const c = src[i]
      if (c === 0x7d) return i + 1
      if (c !== 0x2c) return -1
      i++
      if (!plain) i = skipSpace(src, i, this.#lfIsSpace)
    }
  }

  /** An array's elements from after its '['; returns the index after its ']', or -1. */
  #array (src: Buffer, i: number, plain: boolean, depth: number): number {
    if (!plain) i = skipSpace(src, i, this.#lfIsSpace)
    if (src[i] === 0x5d) return i + 1
    for (;;) {
      i = this.#value(src, i, plain, depth)
      if (i < 0) return -1
      if (!plain) i = skipSpace(src, i, this.#lfIsSpace)
      const c = src[i]
      if (c === 0x5d) return i + 1
      if (c !== 0x2c) return -1
      i++
      if (!plain) i = skipSpace(src, i, this.#lfIsSpace)
    }
  }

  /** A number token by JSON's grammar; sets #number and #numberRead (and #numberPlain). */
  #numberToken (src: Buffer, i: number): number {
    let c = src[i]
    const negative = c === 0x2d
    if (negative) c = src[++i]
    let mantissa = 0
    let digits = 0
    if (c === 0x30) {
      c = src[++i]
      digits = 1
    } else if (c >= 0x31 && c <= 0x39) {
      do {
        mantissa = mantissa * 10 + c - 0x30
        digits++
        c = src[++i]
      } while (c >= 0x30 && c <= 0x39)
    } else {
      return -1
    }
    let fraction = 0
    if (c === 0x2e) {
      c = src[++i]
      if (!(c >= 0x30 && c <= 0x39)) return -1
      do {
        mantissa = mantissa * 10 + c - 0x30
        digits++
        fraction++
        c = src[++i]
      } while (c >= 0x30 && c <= 0x39)
    }
    let exponent = false
    if (c === 0x65 || c === 0x45) {
      exponent = true
      c = src[++i]
      if (c === 0x2b || c === 0x2d) c = src[++i]
      if (!(c >= 0x30 && c <= 0x39)) return -1
      do c = src[++i]; while (c >= 0x30 && c <= 0x39)
    }
    // Up to 15 digits the mantissa is exact, and so is 10^fraction: one division rounds correctly.
    this.#numberRead = !exponent && digits <= 15
    if (this.#numberRead) {
      const value = fraction === 0 ? mantissa : mantissa / pow10[fraction]
      this.#number = negative ? -value : value
    }
    this.#numberPlain = this.#numberRead && fraction === 0 && !(negative && mantissa === 0)
    return i
  }

  /** Unescapes the string body src[start, end) (valid, no lone surrogate) onto the scratch as UTF-8. */
  #unescapeInto (src: Buffer, start: number, end: number): void {
    const out = this.scratch
    let at = this.#scratchLength
    let i = start
    while (i < end) {
      const c = src[i]
      if (c !== BACKSLASH) {
        out[at++] = c
        i++
      } else {
        at = writeEscape(src, i, out, at)
        i += escapeLength
      }
    }
    this.#scratchLength = at
  }

  /**
   * A log string from its opening quote, read and, when it has escapes, unescaped onto the
   * scratch in the same pass: the message, and what a log object is read from. As #value, plus
   * the message's span; -1 when invalid or holding a lone surrogate.
   */
  #logString (src: Buffer, i: number): number {
    const start = i + 1
    i = start
    let c = src[i]
    while (c !== QUOTE && c !== BACKSLASH && c >= 0x20) c = src[++i]
    let escapes = 0
    if (c === QUOTE) {
      this.#setString(sMessage, src, start, i)
    } else {
      // Room for the message and, behind it, a sentinel and the strings of a log object, which
      // are no longer than the message; the line ends before the buffer does.
      this.#scratchRoom(2 * (src.length - start) + 1)
      const out = this.scratch
      const messageStart = this.#scratchLength
      let at = copyBytes(src, start, i, out, messageStart)
      while (c !== QUOTE) {
        if (c !== BACKSLASH) return -1 // a control character, or the line's end
        const kind = escapeAt(src, i)
        if (kind < 0 || kind === escSurrogate) return -1
        escapes |= kind
        at = writeEscape(src, i, out, at)
        i += escapeLength
        c = src[i]
        while (c !== QUOTE && c !== BACKSLASH && c >= 0x20) {
          out[at++] = c
          c = src[++i]
        }
      }
      this.#scratchLength = at
      this.#setString(sMessage, out, messageStart, at)
    }
    this.#type = tString
    this.#start = start
    this.#end = i
    this.#escapes = escapes
    return i + 1
  }

  #scratchRoom (bytes: number): void {
    if (this.#scratchLength + bytes <= this.scratch.length) return
    const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.scratch.length, this.#scratchLength + bytes))
    this.scratch.copy(grown, 0, 0, this.#scratchLength)
    for (let s = 0; s < scannedStrings.length; s++) if (this.stringSource[s] === this.scratch) this.stringSource[s] = grown
    this.scratch = grown
  }

  #attrsRoom (bytes: number): void {
    if (this.attrsLength + bytes <= this.attrsBytes.length) return
    const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.attrsBytes.length, this.attrsLength + bytes))
    this.attrsBytes.copy(grown, 0, 0, this.attrsLength)
    this.attrsBytes = grown
  }
}

/** Escapes seen by the last scanString(). */
let stringEscapes = 0

/**
 * A string from its opening quote: returns the index after its closing quote, or -1 when it is
 * invalid (a control character, a bad escape, no closing quote on the line). Sets stringEscapes.
 * A function of its own, small enough for the JIT to inline into each caller.
 */
function scanString (src: Buffer, i: number): number {
  i++
  let c = src[i]
  // The common case: no escape and no control character before the closing quote.
  while (c !== QUOTE && c !== BACKSLASH && c >= 0x20) c = src[++i]
  if (c === QUOTE) {
    stringEscapes = 0
    return i + 1
  }
  return scanEscapedString(src, i)
}

/** The rest of a string from its first escape (or an invalid byte) at src[i]. */
function scanEscapedString (src: Buffer, i: number): number {
  let escapes = 0
  for (;;) {
    const c = src[i]
    if (c === QUOTE) break
    if (c === BACKSLASH) {
      const kind = escapeAt(src, i)
      if (kind < 0) return -1
      escapes |= kind
      i += escapeLength
    } else if (c >= 0x20) {
      i++
    } else {
      return -1 // a control character, '\n' (the line's end) or past the buffer
    }
  }
  stringEscapes = escapes
  return i + 1
}

/**
 * The kind of the escape at src[i] (its backslash): escSimple, escOther (\/, a \u of a
 * non-surrogate or of a surrogate pair) or escSurrogate (a lone one); -1 when invalid. Sets
 * escapeLength.
 */
function escapeAt (src: Buffer, i: number): number {
  const e = src[i + 1]
  escapeLength = 2
  if (e === QUOTE || e === BACKSLASH || e === 0x6e || e === 0x74 || e === 0x72 || e === 0x62 || e === 0x66) return escSimple
  if (e === 0x2f) return escOther
  if (e !== 0x75) return -1
  const code = hex4(src, i + 2)
  if (code < 0) return -1
  escapeLength = 6
  if (code < 0xd800 || code > 0xdfff) return escOther
  if (code < 0xdc00 && isLowSurrogateEscape(src, i + 6)) {
    escapeLength = 12 // a pair: one character
    return escOther
  }
  return escSurrogate
}

/** The index of the first byte of src[start, end) that is not JSON whitespace (LF included), or end. */
function skipBlank (src: Buffer, start: number, end: number): number {
  let i = start
  for (; i < end; i++) {
    const c = src[i]
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== LF) break
  }
  return i
}

/** Skips JSON whitespace; LF counts only inside a log object (on a line it is the line's end). */
function skipSpace (src: Buffer, i: number, lfIsSpace: boolean): number {
  for (;;) {
    const c = src[i]
    if (c === 0x20 || c === 0x09 || c === 0x0d || (c === LF && lfIsSpace)) i++
    else return i
  }
}

/** Bytes of src the last writeEscape() read: 2, 6 for \uXXXX, 12 for a surrogate pair. */
let escapeLength = 2

/** Whether src[i] starts the escape of a low surrogate, \uDC00-\uDFFF. */
function isLowSurrogateEscape (src: Buffer, i: number): boolean {
  if (src[i] !== BACKSLASH || src[i + 1] !== 0x75) return false
  const code = hex4(src, i + 2)
  return code >= 0xdc00 && code <= 0xdfff
}

/**
 * Writes the character of the (valid) escape at src[i] to out[at] as UTF-8; returns the index
 * after it and sets escapeLength. A high surrogate must be followed by its low one.
 */
function writeEscape (src: Buffer, i: number, out: Buffer, at: number): number {
  const e = src[i + 1]
  escapeLength = 2
  switch (e) {
    case 0x6e: out[at++] = 0x0a; return at
    case 0x74: out[at++] = 0x09; return at
    case 0x72: out[at++] = 0x0d; return at
    case 0x62: out[at++] = 0x08; return at
    case 0x66: out[at++] = 0x0c; return at
    case 0x75: break
    default: out[at++] = e; return at // " \ /
  }
  let code = hex4(src, i + 2)
  escapeLength = 6
  if (code >= 0xd800 && code <= 0xdfff) {
    code = 0x10000 + ((code - 0xd800) << 10) + (hex4(src, i + 8) - 0xdc00)
    escapeLength = 12
  }
  return writeCodePoint(out, at, code)
}

/** The value of four hex digits at src[i], -1 when they are not. */
function hex4 (src: Buffer, i: number): number {
  let code = 0
  for (let k = i; k < i + 4; k++) {
    const c = src[k]
    let digit: number
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x57
    else if (c >= 0x41 && c <= 0x46) digit = c - 0x37
    else return -1
    code = code * 16 + digit
  }
  return code
}

/** A number token's value as JSON.parse reads it (for tokens #numberToken leaves unread). */
function numberOf (src: Buffer, start: number, end: number): number {
  return Number(src.toString('latin1', start, end))
}

function sameBytes (a: Buffer, aStart: number, b: Buffer, bStart: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (a[aStart + k] !== b[bStart + k]) return false
  return true
}

function copyBytes (src: Buffer, start: number, end: number, out: Buffer, at: number): number {
  if (end - start > 32) {
    src.copy(out, at, start, end)
    return at + end - start
  }
  for (let k = start; k < end; k++) out[at++] = src[k]
  return at
}

/** Bytes src[at, at + 4) as a little-endian integer (what keyWord gives for 4 characters). */
function word (src: Buffer, at: number): number {
  return (src[at] | (src[at + 1] << 8) | (src[at + 2] << 16) | (src[at + 3] << 24)) >>> 0
}

/** Up to 4 characters of ASCII text as little-endian integer, as word() reads them. */
function keyWord (text: string): number {
  let value = 0
  for (let k = Math.min(text.length, 4) - 1; k >= 0; k--) value = value * 256 + text.charCodeAt(k)
  return value
}

const wTs = keyWord('ts')
const wRt = keyWord('rt')
const wSrc = keyWord('src')
const wLog = keyWord('log')
const wHost = keyWord('host')
const wPath = keyWord('path')
const wByte = keyWord('byte')
const wMeth = keyWord('meth')
const wOd = keyWord('od')
const wStat = keyWord('stat')
const wUs = keyWord('us')
const wFile = keyWord('file')
const wName = keyWord('name')
const wUser = keyWord('user')
const wAge = keyWord('_age')
const wNt = keyWord('nt')

/** The key class of the key src[start, end) (no escapes): a format-1 field, log, filename or other. */
function classifyKey (src: Buffer, start: number, end: number): number {
  switch (end - start) {
    case 2: {
      const w = src[start] | (src[start + 1] << 8)
      return w === wTs ? kTs : w === wRt ? kRt : kOther
    }
    case 3: {
      const w = src[start] | (src[start + 1] << 8) | (src[start + 2] << 16)
      return w === wSrc ? 7 : w === wLog ? kLog : kOther
    }
    case 4: {
      const w = word(src, start)
      return w === wHost ? 0 : w === wPath ? 1 : kOther
    }
    case 5:
      return word(src, start) === wByte && src[start + 4] === 0x73 ? kBytes : kOther
    case 6: {
      const w = word(src, start)
      const tail = src[start + 4] | (src[start + 5] << 8)
      if (w === wMeth) return tail === wOd ? 2 : kOther
      return w === wStat && tail === wUs ? kStatus : kOther
    }
    case 8:
      return word(src, start) === wFile && word(src, start + 4) === wName ? kFilename : kOther
    case 10:
      return word(src, start) === wUser && word(src, start + 4) === wAge &&
        (src[start + 8] | (src[start + 9] << 8)) === wNt ? 8 : kOther
  }
  return kOther
}
