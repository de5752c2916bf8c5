// The parse worker's fast path: reads one NDJSON line straight from its UTF-8 bytes into an event
// row (lib/events/event-row.ts), without JSON.parse or JS strings. The row's strings stay byte
// spans of the line (or of the row's scratch, when they had escapes). Field names, key classes
// and type rules come from the field table (lib/events/fields.ts); the JSON lexing primitives from
// lib/events/json-lex.ts.
//
// Contract: for a line it takes, the row is the row the reference path (JSON.parse,
// normalizeEvent in lib/events/normalize.ts) fills, field for field; test/ingest/line-scanner.test.ts
// checks this on generated lines. Every other line is declined (`declined`), and the worker runs
// the reference path on it, which also words every failure. So the scanner only needs to be
// right when it accepts, and declines whatever would take it long to get right:
// - any line that fails: not JSON, not an object, a field of the wrong type or a ts out of range;
// - keys with escapes, keys starting with a digit (JSON.parse lists array-index keys first),
//   repeated keys, more than maxMembers keys;
// - a lone surrogate (\ud800 without its pair) in a value that is stored (pairs are taken);
// - an attrs value whose JSON text is not already the text the reference writes back:
//   whitespace inside a container, numbers other than integers in one, \/ or \u escapes;
// - in format 2, a field nested in `log` that is present but invalid (the reference keeps it in
//   attrs), or a key in it that the field mapping may read;
// - a key that is the first segment of a dotted alias (`http`, `url`...: the reference reads
//   paths into such objects), an object under a field's key (ECS nesting), a string for a
//   numeric field that is not a plain numeric string, a level it does not know;
// - nesting deeper than maxDepth (the reference's maxValueDepth: it fails such a line, too_deep);
// - a line whose only member is a container under a key a wrapper of many records uses
//   (wrapped-body.ts wrapperKeys: `resourceLogs`, `streams`, `logs`...): the worker fails the
//   wrappers among them with wrapped_body, after JSON.parse.
// It maps the aliases spelt as keys (pino's msg/time/hostname, ECS's flattened names, nginx's,
// OpenTelemetry-shaped records) and numeric strings as the reference does. It takes every line of
// bench/payload.ts, and the common shapes of shippers' lines (the test checks both).
//
// Field rules are those of normalize.ts (format 1 strict, format 2 lenient, null = absent);
// numbers are read as JSON.parse reads them: digits exactly, fractions by one correctly rounded
// division (Clinger's fast path), anything longer by Number() on the token's text. In attrs an
// integer keeps its own digits, however many (the reference path's json-integers.ts: an integer
// past 2^53 stays findable as sent); other numbers are written as JSON.stringify writes them.
import { Buffer } from 'node:buffer'
import { EventRow } from '../events/event-row.ts'
import { eventFields, fieldCount, fFilename, fMessage, format1Mask, levelNumberingOf, mappedKeys } from '../events/fields.ts'
import type { LevelNumbering } from '../events/fields.ts'
import { levelBytes, levelOffsets, levelOfNameBytes, levelOfNumberAs } from '../events/level.ts'
import {
  BACKSLASH, JsonLexer, LF, QUOTE, copyBytes, escOther, escSimple, escSurrogate, numberOf, sameBytes, skipBlank, skipSpace,
} from '../events/json-lex.ts'
import { maxValueDepth } from '../events/normalize.ts'
import type { TimeBounds } from '../events/normalize.ts'
import { epochMsFromNumber, epochMsFromRfc3339Bytes } from '../events/time.ts'
import { wrapperKeys } from './wrapped-body.ts'

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

// Key classes: a key naming a field of the table (fields.ts) has that field's number; format 2's
// `log` is the message field's. A key the field mapping may read (an alias, or the first segment
// of a dotted one: fields.ts mappedKeys) is kMapped, and its line is declined (the reference path
// maps it). Every other key is kOther.
const kLog = fMessage
const kFilename = fFilename
const kOther = fieldCount
const kMapped = fieldCount + 1
/**
 * Each alias spelt as a key (fields.ts `aliases`) has class aliasBase + its index in aliasKeys;
 * the scanner maps those as the reference path does (a dotted alias read as a path is the
 * reference path's alone: its first segment is kMapped).
 */
const aliasBase = fieldCount + 2
const aliasKeys: Array<{ key: string, field: number }> = eventFields.flatMap((f, field) => f.aliases.map((key) => ({ key, field })))
/** Per field, the classes to try for it in order when its own key gave no value. */
const aliasClassesOf: number[][] = eventFields.map((f, field) => [
  // In format 1, a format-2 field's own key (filename) is tried like an alias, first.
  ...(f.format === 2 && f.key !== eventFields[fMessage].key ? [field] : []),
  ...aliasKeys.flatMap((a, k) => a.field === field ? [aliasBase + k] : []),
])
/**
 * Per key class: 1 when a key of that class in a `log` object goes to attrs (kOther, `log`,
 * `filename`, and the message's aliases, since the log string fills the message).
 */
const nestedOther = Uint8Array.from({ length: aliasBase + aliasKeys.length }, (_, cls) =>
  cls === kOther || cls === kLog || cls === kFilename || (cls >= aliasBase && aliasKeys[cls - aliasBase].field === fMessage) ? 1 : 0)
/** Per alias class (from aliasBase): how its level numbers read (OpenTelemetry's, syslog's 0-7, or the level rule). */
const aliasNumbering: LevelNumbering[] = aliasKeys.map((a) => levelNumberingOf(a.key))

// Field rules as small integers, per key class, for #storeField.
const rString = 0
const rTs = 1
const rStatus = 2
const rSeconds = 3
const rCount = 4
const rLevel = 5
const ruleOf = Uint8Array.from(eventFields, (f) =>
  f.rule === 'string' ? rString : f.rule === 'ts' ? rTs : f.rule === 'status' ? rStatus : f.rule === 'seconds' ? rSeconds
    : f.rule === 'level' ? rLevel : rCount)

/** Whether key class `cls` is a format-1 field (one a `log` object may carry too). */
function isFormat1 (cls: number): boolean {
  return cls < fieldCount && (format1Mask & (1 << cls)) !== 0
}

// Whitespace between tokens is skipped as `if (src[i] <= 0x20) i = skipSpace(...)`: compact
// NDJSON has none, so the call sits on a branch never taken and the JIT does not inline it there,
// which leaves the hot loops' inlining budget to the calls that do run (the field stores).

/** #members: read the line again, recording its members (format 2, or an invalid field). */
const readAgain = -2

// Outcomes of scan().
export const scannedRow = 0
export const blankLine = 1
export const declined = 2

const pow10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15]

/** A JsonLexer (its primitives and their state are this object's), reading lines into `row`. */
export class LineScanner extends JsonLexer {
  /** Outcome of the last scan(): scannedRow, blankLine or declined. */
  outcome = declined

  /** The row, valid after a scan() with outcome scannedRow (until the next scan()). */
  readonly row = new EventRow()

  #bounds: TimeBounds = { receivedAt: 0, minTs: 0, maxTs: 0 }
  // Inside a `log` object LF is whitespace; on a line it ends the line.
  #lfIsSpace = false
  // #members stores format-1 members as it reads them (else it records them for #recorded).
  #direct = true
  // A nested scan failed for a reason other than invalid JSON: decline the line.
  #unsupported = false

  // The last token read by #value.
  #type = 0
  #start = 0 // strings: after the opening quote; others: the first byte
  #end = 0 // strings: the closing quote; others: after the last byte
  #escapes = 0
  #number = 0
  #numberPlain = false // an integer token, not -0: attrs keep its text as it is (json-integers.ts)
  #numberRead = false // #number holds the value; else it needs Number() on the text

  // The line's members, in order.
  #count = 0
  /** Recorded members whose key is an alias: the mapping has work only when some are (or a format-1 filename). */
  #mappable = 0
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
  /** #recorded: members whose value went to a column (or null under a field's key). */
  readonly #used = new Uint8Array(maxMembers)

  // The format-1 fields found in a `log` object (by key class).
  #nestedSeen = 0
  readonly #nestedType = new Uint8Array(fieldCount)
  readonly #nestedStart = new Int32Array(fieldCount)
  readonly #nestedEnd = new Int32Array(fieldCount)
  readonly #nestedEscapes = new Uint8Array(fieldCount)
  readonly #nestedNumber = new Float64Array(fieldCount)
  readonly #nestedRead = new Uint8Array(fieldCount)
  // The other keys of a `log` object, in order, for attrs (their text in the row's scratch).
  #otherCount = 0
  readonly #otherKeyStart = new Int32Array(maxMembers)
  readonly #otherKeyEnd = new Int32Array(maxMembers)
  readonly #otherType = new Uint8Array(maxMembers)
  readonly #otherStart = new Int32Array(maxMembers)
  readonly #otherEnd = new Int32Array(maxMembers)
  readonly #otherEscapes = new Uint8Array(maxMembers)
  readonly #otherNumber = new Float64Array(maxMembers)
  readonly #otherPlain = new Uint8Array(maxMembers)
  readonly #otherRead = new Uint8Array(maxMembers)

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
    if (!this.#direct && !this.#recorded(line, this.#find(kLog))) return 0
    i = end
    if (line[i] <= 0x20) i = skipSpace(line, i, false)
    if (i < line.length && line[i] !== LF) return 0
    const row = this.row
    if (row.attrsLength === 0) {
      row.attrsRoom(2)
      row.attrsBytes[0] = 0x7b
      row.attrsBytes[1] = 0x7d
      row.attrsLength = 2
    } else {
      row.attrsRoom(1)
      row.attrsBytes[row.attrsLength++] = 0x7d
    }
    this.outcome = scannedRow
    return i
  }

  #resetRow (): void {
    this.#count = 0
    this.#mappable = 0
    this.#otherCount = 0
    this.row.reset(this.#bounds.receivedAt)
  }

  /**
   * The members of the top-level object from after its '{'; returns the index after its '}', -1
   * to decline the line, or readAgain. While #direct, each member is stored by format 1's rules
   * as it is read, and readAgain means the line needs #recorded (format 2, a mapped key, an invalid field); else the
   * members are recorded for #recorded. A line that starts with a non-null log switches to
   * recording at once, with nothing to undo.
   */
  #members (src: Buffer, i: number): number {
    if (src[i] <= 0x20) i = skipSpace(src, i, false)
    if (src[i] === 0x7d) return i + 1
    let seen = 0
    for (;;) {
      if (src[i] !== QUOTE) return -1
      const keyStart = i + 1
      i = this.scanString(src, i)
      if (i < 0 || this.escapes !== 0) return -1
      const keyEnd = i - 1
      const cls = classifyKey(src, keyStart, keyEnd)
      if (cls === kMapped) return -1
      if (cls >= aliasBase) {
        if (this.#direct) return readAgain
        if (this.#find(cls) >= 0) return -1 // a repeated key: JSON.parse keeps the last
      } else if (cls === kOther) {
        const first = src[keyStart]
        if (first >= 0x30 && first <= 0x39) return -1
        if (this.#repeatsKey(src, keyStart, keyEnd)) return -1
      } else {
        if ((seen & (1 << cls)) !== 0) return -1
        seen |= 1 << cls
      }
      if (src[i] <= 0x20) i = skipSpace(src, i, false)
      if (src[i] !== 0x3a) return -1
      i++
      if (src[i] <= 0x20) i = skipSpace(src, i, false)
      // Values kept in attrs are copied as they are, so they must read as JSON.stringify writes.
      // (A field's value may go to attrs too, in format 2: #appendAttr checks it then.)
      // A string (most values) is read here into locals; other values by #value, whose token
      // fields are then copied to the same locals. (A string leaves the number fields as they
      // were: they are read for numbers only.)
      let type: number
      let start: number
      let end: number
      let escapes: number
      if (src[i] === QUOTE && cls !== kLog) {
        start = i + 1
        i = this.scanString(src, i)
        if (i < 0) return -1
        escapes = this.escapes
        if (cls === kOther && (escapes & (escOther | escSurrogate)) !== 0) return -1
        type = tString
        end = i - 1
      } else {
        i = cls === kLog && src[i] === QUOTE ? this.#logString(src, i) : this.#value(src, i, cls === kOther, 0)
        if (i < 0) return -1
        type = this.#type
        start = this.#start
        end = this.#end
        escapes = this.#escapes
      }
      if (this.#direct) {
        if (cls === kLog && type !== tNull && this.#count === 0 && seen === 1 << kLog) {
          this.#direct = false
        } else if (isFormat1(cls)) {
          // #storeField's common cases spelt out, so that the string fields' stores inline here.
          const rule = ruleOf[cls]
          if (type === tString && rule === rString) {
            if (escapes === 0) this.row.setSpan(cls, src, start, end)
            else if (!this.#storeString(cls, src, start, end, escapes)) return readAgain
          } else if (type === tNumber && rule !== rString) {
            if (!this.#storeNumber(cls, this.#numberRead ? this.#number : numberOf(src, start, end), 'level')) return readAgain
          } else if (type === tString && rule === rTs && escapes === 0) {
            // An RFC 3339 ts; #storeField again for anything else (a numeric string).
            const ms = epochMsFromRfc3339Bytes(src, start, end)
            if (Number.isNaN(ms) ? !this.#storeField(cls, src, type, start, end, escapes, this.#number, this.#numberRead)
              : !this.#storeTs(cls, ms)) return readAgain
          } else if (type !== tNull && !this.#storeField(cls, src, type, start, end, escapes,
            this.#number, this.#numberRead)) return readAgain
        } else if (cls === kLog) {
          if (type !== tNull) return readAgain
        } else if (cls === kFilename) {
          return readAgain // a column of format 2; in format 1 mapped (the reference path's)
        } else if (!this.#appendAttr(src, keyStart, keyEnd, cls, type, start, end, escapes,
          this.#numberPlain, this.#numberRead, this.#number)) {
          return -1
        }
      }
      if (!this.#direct || cls === kOther) {
        // Direct reading records the other keys only, for #repeatsKey.
        const m = this.#count
        if (m === maxMembers) return -1
        this.#keyStart[m] = keyStart
        this.#keyEnd[m] = keyEnd
        this.#class[m] = cls
        this.#valueType[m] = type
        this.#valueStart[m] = start
        this.#valueEnd[m] = end
        this.#valueEscapes[m] = escapes
        this.#valueNumber[m] = this.#number
        this.#valuePlain[m] = this.#numberPlain ? 1 : 0
        this.#valueRead[m] = this.#numberRead ? 1 : 0
        this.#count = m + 1
        if (cls >= aliasBase) this.#mappable++
      }
      if (src[i] <= 0x20) i = skipSpace(src, i, false)
      const c = src[i]
      if (c === 0x7d) {
        // A line whose only member is a container under a wrapper key may be a wrapper of many
        // records (an OTLP export, a Loki push, {"logs":[...]}): the reference path decides
        // (wrapped-body.ts). The first member is the only one recorded when #count is 1 and no
        // field was seen; an alias would have asked for readAgain in direct reading.
        if (cls === kOther && this.#count === 1 && seen === 0 && type === tContainer &&
          isWrapperKey(src, keyStart, keyEnd)) return -1
        return i + 1
      }
      if (c !== 0x2c) return -1
      i++
      if (src[i] <= 0x20) i = skipSpace(src, i, false)
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

  /**
   * Fills the row from the recorded members: format 2 when `log` (a member, or -1) is a string,
   * else format 1 (a line with a mapped key or a filename). False to decline the line.
   */
  #recorded (line: Buffer, log: number): boolean {
    const format2 = log >= 0 && this.#valueType[log] !== tNull
    const row = this.row
    let filled = 0
    if (format2) {
      // #logString set the message.
      if (this.#valueType[log] !== tString) return false
      filled = 1 << fMessage
      const source = row.source[fMessage]!
      // parseNestedObject's test, on the message: its first non-blank character is '{'.
      if (source[skipBlank(source, row.start[fMessage], row.end[fMessage])] === 0x7b) {
        const fromNested = this.#nestedObject(line)
        if (fromNested < 0) return false
        filled |= fromNested
      }
    }
    // Fields still empty take their aliases, in order (the log object's were declined), after
    // the loop below. (In format 1 a filename is tried like an alias.)
    const mapping = this.#mappable > 0 || (!format2 && this.#find(kFilename) >= 0)
    // Without a mapping or a log object's other keys (the common case), whatever member is
    // unused is known in the loop, and goes to attrs there, in order.
    const attrsNow = !mapping && this.#otherCount === 0
    const used = this.#used
    for (let m = 0; m < this.#count; m++) {
      const cls = this.#class[m]
      const type = this.#valueType[m]
      let use = 0
      if (cls === kLog) {
        use = 1 // the message, or a null log: absent
      } else if (cls === kFilename) {
        // In format 1 it is mapped like an alias, below.
        if (format2) {
          if (type !== tNull) {
            if (type !== tString) return false
            if (!this.#storeString(fFilename, line, this.#valueStart[m], this.#valueEnd[m], this.#valueEscapes[m])) return false
            filled |= 1 << fFilename
          }
          use = 1
        }
      } else if (isFormat1(cls)) {
        if (type === tNull) {
          use = 1
        } else if ((filled & (1 << cls)) === 0) { // (a field the log object filled: this value goes to attrs)
          if (this.#storeMember(line, cls, m, 'level')) {
            filled |= 1 << cls
            use = 1
          } else if (!format2) {
            // Format 1 fails the line (or reads an object as ECS): the reference path's to word.
            return false
          } else if (type === tString && ruleOf[cls] !== rString) {
            // Format 2 keeps an invalid value in attrs; but a string for a numeric field may be a
            // numeric string the reference path reads.
            return false
          }
        }
      }
      used[m] = use
      if (use === 0 && attrsNow && !this.#appendMember(line, m)) return false
    }
    if (attrsNow) return true
    for (let field = 0; field < fieldCount && mapping; field++) {
      if ((filled & (1 << field)) !== 0) continue
      const classes = aliasClassesOf[field]
      for (let c = 0; c < classes.length; c++) {
        const cls = classes[c]
        if (cls === field && format2) continue // filename in format 2 was read above
        const m = this.#find(cls)
        if (m < 0 || this.#valueType[m] === tNull) continue
        if (!this.#storeMember(line, field, m, cls >= aliasBase ? aliasNumbering[cls - aliasBase] : 'level')) {
          // A string that may be a numeric string: the reference path's to read.
          if (this.#valueType[m] === tString && ruleOf[field] !== rString) return false
          continue
        }
        used[m] = 1
        break
      }
    }
    // attrs: the log object's other keys first, then the line's unused members, each key once.
    const scratch = row.scratch
    for (let n = 0; n < this.#otherCount; n++) {
      if (!this.#appendAttr(scratch, this.#otherKeyStart[n], this.#otherKeyEnd[n], kOther, this.#otherType[n], this.#otherStart[n],
        this.#otherEnd[n], this.#otherEscapes[n], this.#otherPlain[n] === 1, this.#otherRead[n] === 1, this.#otherNumber[n])) return false
    }
    for (let m = 0; m < this.#count; m++) {
      if (used[m] === 1) continue
      if (this.#otherCount > 0 && this.#isOtherKey(line, this.#keyStart[m], this.#keyEnd[m])) continue
      if (!this.#appendMember(line, m)) return false
    }
    return true
  }

  /** Appends member m to attrs (#appendAttr); false to decline the line. */
  #appendMember (line: Buffer, m: number): boolean {
    return this.#appendAttr(line, this.#keyStart[m], this.#keyEnd[m], this.#class[m], this.#valueType[m], this.#valueStart[m],
      this.#valueEnd[m], this.#valueEscapes[m], this.#valuePlain[m] === 1, this.#valueRead[m] === 1, this.#valueNumber[m])
  }

  /** Reads the object the message (a log string) holds; returns the fields it filled, -1 to decline. */
  #nestedObject (line: Buffer): number {
    const row = this.row
    let source = row.source[fMessage]!
    let start = row.start[fMessage]
    let end = row.end[fMessage]
    if (source !== row.scratch) {
      // A log without escapes that may be an object: read from a copy, after which a
      // sentinel stops every scan (in the line, the log's closing quote would not).
      row.scratchRoom(2 * (end - start) + 1)
      const at = row.scratchLength
      row.scratchLength = copyBytes(line, start, end, row.scratch, at)
      source = row.scratch
      start = at
      end = row.scratchLength
    }
    // A 0 byte after the message: invalid anywhere in JSON, so no scan reads past it.
    row.scratch[row.scratchLength++] = 0
    return this.#nested(row.scratch, start, end)
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
    this.#otherCount = 0
    let i = skipSpace(src, start, true) + 1 // past the '{'
    i = this.#nestedMembers(src, i)
    if (i >= 0 && src[i] <= 0x20) i = skipSpace(src, i, true)
    this.#lfIsSpace = false
    if (i !== end) {
      this.#otherCount = 0 // plain text: nothing of it goes to attrs
      return this.#unsupported ? -1 : 0
    }
    let filled = 0
    for (let cls = 0; cls < fieldCount; cls++) {
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
    if (src[i] <= 0x20) i = skipSpace(src, i, true)
    if (src[i] === 0x7d) return i + 1
    for (;;) {
      if (src[i] !== QUOTE) return -1
      const keyStart = i + 1
      i = this.scanString(src, i)
      if (i < 0) return -1
      const keyEnd = i - 1
      const keyEscapes = this.escapes
      if (src[i] <= 0x20) i = skipSpace(src, i, true)
      if (src[i] !== 0x3a) return -1
      i++
      if (src[i] <= 0x20) i = skipSpace(src, i, true)
      // An escaped key may spell a field's name; a repeated field takes JSON.parse's last value.
      const cls = keyEscapes !== 0 ? kMapped : classifyKey(src, keyStart, keyEnd)
      // Other keys go to attrs, their text copied: read as JSON.stringify writes it. Keys the
      // mapping may read (aliases of a field the message does not fill) are the reference path's.
      const other = nestedOther[cls] === 1
      const valueStart = i
      // A string is read here into locals (as in #members), any other value by #value.
      let type = tString
      let start = i + 1
      let end: number
      let escapes: number
      if (src[i] === QUOTE) {
        i = this.scanString(src, i)
        escapes = this.escapes
        if (other && (escapes & (escOther | escSurrogate)) !== 0) i = -1
        end = i - 1
      } else {
        i = this.#value(src, valueStart, other, 0)
        type = this.#type
        start = this.#start
        end = this.#end
        escapes = this.#escapes
      }
      if (i < 0) {
        // Not plain text, yet JSON: the reference path's; else the log is no JSON object.
        if (other && this.#value(src, valueStart, false, 0) >= 0) this.#unsupported = true
        return -1
      }
      if (!isFormat1(cls) && !other) {
        this.#unsupported = true
        return -1
      }
      if (other) {
        const first = src[keyStart]
        const n = this.#otherCount
        // JSON.parse lists array-index keys first; attrs holds a key once; a log value that is
        // an object is ECS's `log` (mapped).
        if (keyEscapes !== 0 || (first >= 0x30 && first <= 0x39) || n === maxMembers || this.#repeatsOther(src, keyStart, keyEnd) ||
          (cls === kLog && type === tContainer)) {
          this.#unsupported = true
          return -1
        }
        this.#otherKeyStart[n] = keyStart
        this.#otherKeyEnd[n] = keyEnd
        this.#otherType[n] = type
        this.#otherStart[n] = start
        this.#otherEnd[n] = end
        this.#otherEscapes[n] = escapes
        this.#otherNumber[n] = this.#number
        this.#otherPlain[n] = this.#numberPlain ? 1 : 0
        this.#otherRead[n] = this.#numberRead ? 1 : 0
        this.#otherCount = n + 1
      } else {
        if ((this.#nestedSeen & (1 << cls)) !== 0) {
          this.#unsupported = true
          return -1
        }
        this.#nestedSeen |= 1 << cls
        this.#nestedType[cls] = type
        this.#nestedStart[cls] = start
        this.#nestedEnd[cls] = end
        this.#nestedEscapes[cls] = escapes
        this.#nestedNumber[cls] = this.#number
        this.#nestedRead[cls] = this.#numberRead ? 1 : 0
      }
      if (src[i] <= 0x20) i = skipSpace(src, i, true)
      const c = src[i]
      if (c === 0x7d) return i + 1
      if (c !== 0x2c) return -1
      i++
      if (src[i] <= 0x20) i = skipSpace(src, i, true)
    }
  }

  /** Whether the log object's other keys hold the key line[start, end). */
  #isOtherKey (line: Buffer, start: number, end: number): boolean {
    const scratch = this.row.scratch
    const length = end - start
    for (let n = 0; n < this.#otherCount; n++) {
      if (this.#otherKeyEnd[n] - this.#otherKeyStart[n] === length && sameBytes(scratch, this.#otherKeyStart[n], line, start, length)) return true
    }
    return false
  }

  /** Whether the other keys of the log object so far hold the key src[start, end). */
  #repeatsOther (src: Buffer, start: number, end: number): boolean {
    const length = end - start
    for (let n = 0; n < this.#otherCount; n++) {
      if (this.#otherKeyEnd[n] - this.#otherKeyStart[n] === length && sameBytes(src, this.#otherKeyStart[n], src, start, length)) return true
    }
    return false
  }

  /** Stores member m's value as field `field`; false when it does not fit. */
  #storeMember (line: Buffer, field: number, m: number, numbering: LevelNumbering): boolean {
    return this.#storeField(field, line, this.#valueType[m], this.#valueStart[m], this.#valueEnd[m],
      this.#valueEscapes[m], this.#valueNumber[m], this.#valueRead[m] === 1, numbering)
  }

  /**
   * Validates a non-null value of field `cls` (normalize.ts's storeField) and stores it; false
   * when invalid. `numbering`: how a level's number reads (fields.ts levelNumberingOf). Small, so that
   * it inlines into #members; the rarer cases are methods of their own.
   */
  #storeField (cls: number, src: Buffer, type: number, start: number, end: number, escapes: number,
    number: number, read: boolean, numbering: LevelNumbering = 'level'): boolean {
    if (ruleOf[cls] === rString) return type === tString && this.#storeString(cls, src, start, end, escapes)
    if (type === tNumber) return this.#storeNumber(cls, read ? number : numberOf(src, start, end), numbering)
    return type === tString && escapes === 0 && this.#storeText(cls, src, start, end, numbering)
  }

  /** A number for a numeric field (ts by magnitude, a level number, status, seconds, count). */
  #storeNumber (cls: number, value: number, numbering: LevelNumbering): boolean {
    const rule = ruleOf[cls]
    if (rule === rTs) return this.#storeTs(cls, epochMsFromNumber(value))
    if (rule === rLevel) return this.#storeLevel(cls, levelOfNumberAs(value, numbering))
    if (rule === rStatus) {
      if (!Number.isInteger(value) || value < 100 || value > 599) return false
    } else if (rule === rSeconds) {
      if (!(value >= 0) || value === Infinity) return false
    } else if (!Number.isSafeInteger(value) || value < 0) {
      return false
    }
    this.row.number[cls] = value + 0 // -0 as 0, as the reference path stores it
    return true
  }

  /** Text (no escapes) for a numeric field: RFC 3339 for ts, a name for a level, else a numeric string. */
  #storeText (cls: number, src: Buffer, start: number, end: number, numbering: LevelNumbering): boolean {
    const rule = ruleOf[cls]
    if (rule === rTs) {
      const ms = epochMsFromRfc3339Bytes(src, start, end)
      if (!Number.isNaN(ms)) return this.#storeTs(cls, ms)
    } else if (rule === rLevel) {
      const level = levelOfNameBytes(src, start, end)
      if (level >= 0) return this.#storeLevel(cls, level)
    }
    const value = this.#numericString(src, start, end)
    return !Number.isNaN(value) && this.#storeNumber(cls, value, numbering)
  }

  #storeTs (cls: number, ms: number): boolean {
    if (!(ms >= this.#bounds.minTs && ms <= this.#bounds.maxTs)) return false
    this.row.number[cls] = ms
    this.row.tsGiven = true
    return true
  }

  #storeLevel (cls: number, level: number): boolean {
    if (level < 0) return false
    this.row.setSpan(cls, levelBytes, levelOffsets[level], levelOffsets[level + 1])
    return true
  }

  /** The number a string body src[start, end) spells as a JSON number ("200"), NaN when it is none. Overwrites the token's number. */
  #numericString (src: Buffer, start: number, end: number): number {
    if (this.#numberToken(src, start) !== end) return NaN
    return this.#numberRead ? this.#number : numberOf(src, start, end)
  }

  #storeString (field: number, src: Buffer, start: number, end: number, escapes: number): boolean {
    const row = this.row
    if (escapes === 0) {
      row.setSpan(field, src, start, end)
      return true
    }
    if ((escapes & escSurrogate) !== 0) return false
    // src may be the scratch itself (a nested field): #nestedObject made room for this beforehand.
    if (src !== row.scratch) row.scratchRoom(end - start)
    const at = row.scratchLength
    row.scratchLength = this.unescapeInto(src, start, end, row.scratch, at)
    row.setSpan(field, row.scratch, at, row.scratchLength)
    return true
  }

  /**
   * Appends a member to attrs as `"key":value` (key and value as #value read them); false to
   * decline the line. Small, so that it inlines; a number JSON.stringify writes otherwise is
   * #appendNumberAttr's.
   */
  #appendAttr (line: Buffer, keyStart: number, keyEnd: number, cls: number, type: number, valueStart: number,
    valueEnd: number, escapes: number, numberPlain: boolean, numberRead: boolean, number: number): boolean {
    // A container's text was checked only under a key that is no field.
    if (type === tContainer && cls !== kOther) return false
    if (type === tString) {
      if ((escapes & (escOther | escSurrogate)) !== 0) return false
      valueStart--
      valueEnd++
    } else if (type === tNumber && !numberPlain) {
      return this.#appendNumberAttr(line, keyStart, keyEnd, numberRead ? number : numberOf(line, valueStart, valueEnd))
    }
    const row = this.row
    row.attrsRoom(keyEnd - keyStart + valueEnd - valueStart + 4)
    const out = row.attrsBytes
    let at = row.attrsLength
    out[at] = at === 0 ? 0x7b : 0x2c
    at++
    at = copyBytes(line, keyStart - 1, keyEnd + 1, out, at)
    out[at++] = 0x3a
    row.attrsLength = copyBytes(line, valueStart, valueEnd, out, at)
    return true
  }

  /** Appends `"key":value` for a number, written as JSON.stringify writes the value JSON.parse reads (1e999 is Infinity, written null). */
  #appendNumberAttr (line: Buffer, keyStart: number, keyEnd: number, value: number): boolean {
    const text = Number.isFinite(value) ? String(value) : 'null'
    const row = this.row
    row.attrsRoom(keyEnd - keyStart + text.length + 4)
    const out = row.attrsBytes
    let at = row.attrsLength
    out[at] = at === 0 ? 0x7b : 0x2c
    at++
    at = copyBytes(line, keyStart - 1, keyEnd + 1, out, at)
    out[at++] = 0x3a
    for (let k = 0; k < text.length; k++) out[at++] = text.charCodeAt(k)
    row.attrsLength = at
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
      i = this.scanString(src, i)
      if (i < 0 || (plain && (this.escapes & (escOther | escSurrogate)) !== 0)) return -1
      this.#escapes = this.escapes
      this.#type = tString
      this.#start = start + 1
      this.#end = i - 1
      return i
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      i = this.#numberToken(src, i)
      // A member's number other than an integer is rewritten as JSON.stringify writes it; one inside a container is copied.
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
      i = this.scanString(src, i)
      if (i < 0) return -1
      if (keys !== null) {
        // JSON.stringify writes array-index keys first and a repeated key once.
        const first = src[keyStart]
        if ((this.escapes & ~escSimple) !== 0 || (first >= 0x30 && first <= 0x39)) return -1
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
    // mantissa is 0 only for the token 0 (JSON has no leading zeros), however long the digits.
    this.#numberPlain = !exponent && fraction === 0 && !(negative && mantissa === 0)
    return i
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
    const row = this.row
    if (c === QUOTE) {
      row.setSpan(fMessage, src, start, i)
    } else {
      // Room for the message and, behind it, a sentinel and the strings of a log object, which
      // are no longer than the message; the line ends before the buffer does.
      row.scratchRoom(2 * (src.length - start) + 1)
      const out = row.scratch
      const messageStart = row.scratchLength
      let at = copyBytes(src, start, i, out, messageStart)
      while (c !== QUOTE) {
        if (c !== BACKSLASH) return -1 // a control character, or the line's end
        const e = src[i + 1]
        if (e === QUOTE || e === BACKSLASH) {
          // \" and \\, most of the escapes of a log holding JSON: the character itself.
          escapes |= escSimple
          out[at++] = e
          i += 2
        } else {
          const kind = this.escapeAt(src, i)
          if (kind < 0 || kind === escSurrogate) return -1
          escapes |= kind
          at = this.writeEscape(src, i, out, at)
          i += this.escapeLength
        }
        c = src[i]
        while (c !== QUOTE && c !== BACKSLASH && c >= 0x20) {
          out[at++] = c
          c = src[++i]
        }
      }
      row.scratchLength = at
      row.setSpan(fMessage, out, messageStart, at)
    }
    this.#type = tString
    this.#start = start
    this.#end = i
    this.#escapes = escapes
    return i + 1
  }
}

// Key classes by the keys' bytes, from the field table: a key is looked up by its length and the
// low 5 bits of its first and last bytes, which tell the known keys apart but for a few pairs
// (those share a chain). So a key costs one table load and a compare of its first and last four
// bytes, as two words, with a candidate or two (and of the bytes between, for keys over 8 bytes).
// None of the keys every line carries shares a slot (host/http and status/source shared the
// old scheme's length-and-first-byte slot).
const classKeys: Array<[string, number]> = [
  ...eventFields.map((f, i): [string, number] => [f.key, i]),
  ...aliasKeys.map((a, k): [string, number] => [a.key, aliasBase + k]),
]
for (const key of mappedKeys) if (!classKeys.some(([known]) => known === key)) classKeys.push([key, kMapped])
const keyBytes = classKeys.map(([key]) => Buffer.from(key, 'utf8'))
const keyClasses = Uint8Array.from(classKeys, ([, cls]) => cls)
const maxKeyLength = Math.max(...keyBytes.map((k) => k.length))
/** Every known key's bytes, one after another: key k is keyFlat[keyAt[k], keyAt[k] + its length). */
const keyAt = new Int32Array(keyBytes.length)
const keyFlat = new Uint8Array(keyBytes.reduce((sum, k) => sum + k.length, 0))
keyBytes.reduce((at, k, i) => {
  keyAt[i] = at
  keyFlat.set(k, at)
  return at + k.length
}, 0)
/** Four bytes at src[at] as a little-endian 32-bit word. */
function word (src: Uint8Array, at: number): number {
  return src[at] | (src[at + 1] << 8) | (src[at + 2] << 16) | (src[at + 3] << 24)
}
/** Per key: its first four bytes as a word (a shorter key: its bytes), and its last four (0 for a shorter key). */
const keyHead = Int32Array.from(keyBytes, (k) => k.length >= 4 ? word(k, 0) : k.reduce((w, b, i) => w | (b << (8 * i)), 0))
const keyTail = Int32Array.from(keyBytes, (k) => k.length >= 4 ? word(k, k.length - 4) : 0)
/** The table slot of a key of `length` (1..maxKeyLength) bytes from its first and last bytes. */
function keySlot (length: number, first: number, last: number): number {
  return (length << 10) | ((first & 31) << 5) | (last & 31)
}
/** By keySlot: the first known key (its index into keyBytes) in that slot, -1 for none. */
const firstKeyAt = new Int16Array((maxKeyLength + 1) << 10).fill(-1)
/** By key index: the next known key in the same slot, -1 for none. */
const nextKeyAt = new Int16Array(keyBytes.length).fill(-1)
// Chained last key first, so that a chain lists its keys in table order.
for (let i = keyBytes.length - 1; i >= 0; i--) {
  const k = keyBytes[i]
  const slot = keySlot(k.length, k[0], k[k.length - 1])
  nextKeyAt[i] = firstKeyAt[slot]
  firstKeyAt[slot] = i
}

const wrapperKeyBytes = wrapperKeys.map((key) => Buffer.from(key, 'utf8'))

/** Whether the key src[start, end) is one wrapped-body.ts checks (run only on single-member lines). */
function isWrapperKey (src: Buffer, start: number, end: number): boolean {
  for (const key of wrapperKeyBytes) {
    if (key.length === end - start && sameBytes(key, 0, src, start, key.length)) return true
  }
  return false
}

/** The key class of the key src[start, end) (no escapes): a field's number, an alias class, kMapped or kOther. */
function classifyKey (src: Buffer, start: number, end: number): number {
  const length = end - start
  if (length === 0 || length > maxKeyLength) return kOther
  const slot = keySlot(length, src[start], src[end - 1])
  if (length < 4) {
    const head = length === 3 ? src[start] | (src[start + 1] << 8) | (src[start + 2] << 16)
      : length === 2 ? src[start] | (src[start + 1] << 8) : src[start]
    for (let k = firstKeyAt[slot]; k >= 0; k = nextKeyAt[k]) if (head === keyHead[k]) return keyClasses[k]
    return kOther
  }
  // The first and the last four bytes (overlapping below 8) as two words; longer keys compare
  // the bytes between them too.
  const head = word(src, start)
  const tail = word(src, end - 4)
  for (let k = firstKeyAt[slot]; k >= 0; k = nextKeyAt[k]) {
    if (head !== keyHead[k] || tail !== keyTail[k]) continue
    if (length <= 8) return keyClasses[k]
    const at = keyAt[k] - start
    let p = start + 4
    while (p < end - 4 && keyFlat[at + p] === src[p]) p++
    if (p === end - 4) return keyClasses[k]
  }
  return kOther
}
