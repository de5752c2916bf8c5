// Turns one parsed JSON line into an events row, by the rules of docs/api.md section 6.4. Pure and
// synchronous: it runs in the parse workers once per line, so the happy path allocates little
// beyond the row and its attrs text, and nothing JSON.parse can return makes it throw.
//
// - Format 2 is a line with a `log` key. `log` must be a string and becomes `message`; `filename`,
//   when present, must be a string. Everything else is lenient: a format-1 field that is invalid
//   (wrong type, or a ts out of range) is kept in attrs instead of failing the line. When `log`
//   holds a JSON object (its first non-blank character is '{' and it parses), its format-1 fields
//   are extracted the same lenient way; its other keys stay in `message` only. Each format-1
//   field takes the nested value when valid, else the top-level value when valid; a value that
//   does not fill its column is kept in attrs under its name (the nested one when both are left
//   over, since attrs holds each key once).
// - Format 1 is any other object, strictly checked: a wrong type or range fails the line. Its
//   fields are host, path, method, src, user_agent, status, ts, rt and bytes; `message` and
//   `filename` are columns of format 2 only, so in a format-1 line they are attrs like any key.
// - JSON `null` for a field (a format-1 field, `log`, `filename`) means the field is absent: the
//   column is NULL and nothing goes to attrs. Shippers write null for "no value", and failing
//   such lines would drop good data. So a null `log` makes a format-1 line. Under any other key
//   null is data, kept in attrs.
// - `ts`: absent means the receive time. Otherwise an RFC 3339 string ('T', 't' or a space between
//   date and time, 'Z' or a ±hh:mm offset, any number of fraction digits) or a number of epoch
//   seconds, milliseconds, microseconds or nanoseconds told apart by magnitude (see
//   epochMsFromNumber), stored as the nearest integer millisecond. Outside [minTs, maxTs]:
//   `ts_out_of_range`.
// - Keys that are not fields of the line's format go to attrs, a JSON object text ('{}' when
//   none), in JSON.parse's order (integer-like keys first). attrs is concatenated from each key
//   and value as JSON text, never built by assignment into an object, so `__proto__` and
//   `constructor` keys are plain data.
// - Depth: a value kept in attrs may nest objects and arrays at most maxValueDepth (64) levels
//   (`[[1]]` is 2); a deeper one fails the line with `too_deep`. JSON.parse reads any depth (it
//   does not recurse) but JSON.stringify and every reader of attrs do, so without the limit one
//   stored line nested a few thousand levels broke every page of the events API holding it.
//   The line scanner declines such lines (its own depth bound is this constant), so both paths
//   agree.
import type { LineFailureCode } from './parse-task.ts'

/** One events row before serialization; null is SQL NULL (field absent). */
export interface EventRow {
  /** Event time, integer ms since the epoch. */
  ts: number
  host: string | null
  path: string | null
  method: string | null
  /** Integer 100..599. */
  status: number | null
  /** Response time in seconds, finite and >= 0. */
  rt: number | null
  /** Integer 0..2^53-1: larger values would lose precision in a JS number. */
  bytes: number | null
  src: string | null
  userAgent: string | null
  /** The `log` string of a format-2 line. */
  message: string | null
  filename: string | null
  /** JSON object text of the keys that are not fields. */
  attrs: string
}

export interface TimeBounds {
  /** ts of events that carry none, ms since the epoch. */
  receivedAt: number
  /** Oldest accepted ts, ms; must be >= 0 (the column is UInt64). */
  minTs: number
  /** Newest accepted ts, ms. */
  maxTs: number
}

/** Why a line was rejected; the worker adds the line number. */
export class EventRejection {
  readonly code: LineFailureCode
  readonly message: string
  constructor (code: LineFailureCode, message: string) {
    this.code = code
    this.message = message
  }
}

type JsonObject = Record<string, unknown>

// Format-1 fields by index (see fieldIndex); bit masks over the indexes track where a format-2
// value came from.
const fieldMessages = [
  'host must be a string',
  'path must be a string',
  'method must be a string',
  'status must be an integer 100-599',
  'ts must be an RFC 3339 string or a number of epoch seconds, milliseconds, microseconds or nanoseconds',
  'rt must be a finite number >= 0 (seconds)',
  'bytes must be an integer from 0 to 2^53-1',
  'src must be a string',
  'user_agent must be a string',
]
const notAField = -1

// storeField outcomes.
const stored = 0
const wrongType = 1
const outOfRange = 2

function fieldIndex (key: string): number {
  switch (key) {
    case 'host': return 0
    case 'path': return 1
    case 'method': return 2
    case 'status': return 3
    case 'ts': return 4
    case 'rt': return 5
    case 'bytes': return 6
    case 'src': return 7
    case 'user_agent': return 8
    default: return notAField
  }
}

/** Validates a non-null value of format-1 field `field` and stores it in the row when valid. */
function storeField (row: EventRow, field: number, value: unknown, bounds: TimeBounds): number {
  switch (field) {
    case 3:
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 100 || value > 599) return wrongType
      row.status = value
      return stored
    case 4: {
      const ms = typeof value === 'number' ? epochMsFromNumber(value) : typeof value === 'string' ? epochMsFromRfc3339(value) : NaN
      if (Number.isNaN(ms)) return wrongType
      if (ms < bounds.minTs || ms > bounds.maxTs) return outOfRange
      row.ts = ms
      return stored
    }
    case 5:
      // JSON.parse turns 1e999 into Infinity, which no column can hold.
      if (typeof value !== 'number' || !(value >= 0) || value === Infinity) return wrongType
      row.rt = value
      return stored
    case 6:
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return wrongType
      row.bytes = value
      return stored
  }
  if (typeof value !== 'string') return wrongType
  switch (field) {
    case 0: row.host = value; break
    case 1: row.path = value; break
    case 2: row.method = value; break
    case 7: row.src = value; break
    default: row.userAgent = value
  }
  return stored
}

/**
 * Seconds, milliseconds, microseconds or nanoseconds by magnitude: below 1e11 is seconds (up to
 * year 5138), below 1e14 milliseconds (from 1973), below 1e17 microseconds, above nanoseconds.
 * Each unit is unambiguous for any date from 1973 to 5138. Rounded to the nearest millisecond
 * because s * 1000 is rarely exact in binary floating point. NaN when not finite.
 */
export function epochMsFromNumber (value: number): number {
  if (!Number.isFinite(value)) return NaN
  const magnitude = Math.abs(value)
  if (magnitude < 1e11) return Math.round(value * 1e3)
  if (magnitude < 1e14) return Math.round(value)
  if (magnitude < 1e17) return Math.round(value / 1e3)
  return Math.round(value / 1e6)
}

const daysInMonth = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const zero = 0x30

/** A string's characters as bytes for epochMsFromRfc3339Bytes (only ASCII can match). */
let rfc3339Text = new Uint8Array(64)

/**
 * RFC 3339 date-time to ms since the epoch, NaN when malformed or not a real date (Date.parse
 * would take 2024-02-30 as March 1st, and years 0-99 as 19xx through Date.UTC). Fraction digits
 * are rounded to the nearest ms (half up), like numbers. A leap second (:60) is accepted, as
 * RFC 3339 allows, and lands on the next second.
 */
export function epochMsFromRfc3339 (text: string): number {
  if (text.length > rfc3339Text.length) rfc3339Text = new Uint8Array(2 * text.length)
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    rfc3339Text[i] = code < 0x80 ? code : 0
  }
  return epochMsFromRfc3339Bytes(rfc3339Text, 0, text.length)
}

/**
 * epochMsFromRfc3339 of the ASCII text src[start, end), read in place: the parse worker's line
 * scanner reads ts strings from the line's bytes. The shape is
 * `YYYY-MM-DD[Tt ]hh:mm:ss[.f+]([Zz]|[+-]hh:mm)`.
 */
export function epochMsFromRfc3339Bytes (src: Uint8Array, start: number, end: number): number {
  const length = end - start
  if (length < 20) return NaN
  const year = digitsAt(src, start, 4)
  const month = digitsAt(src, start + 5, 2)
  const day = digitsAt(src, start + 8, 2)
  const hour = digitsAt(src, start + 11, 2)
  const minute = digitsAt(src, start + 14, 2)
  const second = digitsAt(src, start + 17, 2)
  const t = src[start + 10]
  if (src[start + 4] !== 0x2d || src[start + 7] !== 0x2d || (t !== 0x54 && t !== 0x74 && t !== 0x20) ||
    src[start + 13] !== 0x3a || src[start + 16] !== 0x3a) return NaN
  // NaN digits fail every comparison below.
  if (!(month >= 1 && month <= 12 && day >= 1 && hour <= 23 && minute <= 59 && second <= 60 && year >= 0)) return NaN
  const isLeapYear = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  if (day > daysInMonth[month - 1] + (month === 2 && isLeapYear ? 1 : 0)) return NaN
  // The zone designator ends the text: 'Z' or 'z', else a ±hh:mm offset.
  const last = src[end - 1]
  const zone = last === 0x5a || last === 0x7a ? end - 1 : end - 6
  let fractionMs = 0
  if (zone > start + 19) {
    // A fraction: '.' and at least one digit.
    if (src[start + 19] !== 0x2e || zone === start + 20) return NaN
    for (let i = start + 20, scale = 100; i < zone; i++, scale /= 10) {
      const digit = src[i] - zero
      if (!(digit >= 0 && digit <= 9)) return NaN
      if (scale >= 1) fractionMs += digit * scale
    }
    if (zone > start + 23 && src[start + 23] >= zero + 5) fractionMs++
  } else if (zone !== start + 19) {
    return NaN
  }
  let offsetMinutes = 0
  if (zone === end - 6) {
    const sign = src[zone]
    const offsetHour = digitsAt(src, zone + 1, 2)
    const offsetMinute = digitsAt(src, zone + 4, 2)
    if ((sign !== 0x2b && sign !== 0x2d) || src[zone + 3] !== 0x3a || !(offsetHour <= 23 && offsetMinute <= 59)) return NaN
    offsetMinutes = (sign === 0x2d ? -1 : 1) * (offsetHour * 60 + offsetMinute)
  }
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
  return seconds * 1e3 + fractionMs
}

/** The decimal value of `count` digits at src[start], NaN when one is not a digit. */
function digitsAt (src: Uint8Array, start: number, count: number): number {
  let value = 0
  for (let i = start; i < start + count; i++) {
    const digit = src[i] - zero
    if (!(digit >= 0 && digit <= 9)) return NaN
    value = value * 10 + digit
  }
  return value
}

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil (year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146097 + dayOfEra - 719468
}

/** A ts for a failure message: ISO when Date can show it, the raw number otherwise. */
function describeTime (ms: number): string {
  return Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : String(ms)
}

function rejectTs (value: unknown, bounds: TimeBounds): EventRejection {
  const ms = typeof value === 'number' ? epochMsFromNumber(value) : epochMsFromRfc3339(value as string)
  const message = ms < bounds.minTs
    ? `ts ${describeTime(ms)} is older than the stream's retention (${describeTime(bounds.minTs)})`
    : `ts ${describeTime(ms)} is after the newest accepted time (${describeTime(bounds.maxTs)})`
  return new EventRejection('ts_out_of_range', message)
}

// A string needs escaping in JSON only for '"', '\\', control characters and lone surrogates
// (any surrogate here, to keep the test simple). Most keys and values have none, and a quoted
// copy is 2-3x faster than JSON.stringify.
const jsonUnsafe = /["\\\u0000-\u001f\ud800-\udfff]/

function quoteJson (text: string): string {
  return jsonUnsafe.test(text) ? JSON.stringify(text) : '"' + text + '"'
}

/**
 * Levels of objects and arrays a value kept in attrs may nest (`[[1]]` is 2). 64 is far beyond
 * what shippers send (Kubernetes metadata nests 3-4) and keeps every recursive reader of attrs
 * (JSON.stringify in the events API, clients' parsers) a few hundred stack frames from its limit.
 */
export const maxValueDepth = 64

/**
 * True when `value` (as JSON.parse returns it) nests objects and arrays more than `levels` deep.
 * It recurses at most `levels` + 1 frames, whatever the value's depth.
 */
export function nestsDeeperThan (value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (levels === 0) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (nestsDeeperThan(value[i], levels - 1)) return true
    return false
  }
  const object = value as JsonObject
  for (const key in object) if (nestsDeeperThan(object[key], levels - 1)) return true
  return false
}

/** `"key":value` for attrs, or undefined when the value nests deeper than maxValueDepth. */
function attrPair (key: string, value: unknown): string | undefined {
  if (typeof value === 'string') return quoteJson(key) + ':' + quoteJson(value)
  // JSON.parse turns 1e999 into Infinity, which JSON writes as null.
  if (typeof value === 'number') return quoteJson(key) + ':' + (Number.isFinite(value) ? String(value) : 'null')
  if (nestsDeeperThan(value, maxValueDepth)) return undefined
  return quoteJson(key) + ':' + JSON.stringify(value)
}

function tooDeep (key: string): EventRejection {
  return new EventRejection('too_deep', `${key} nests objects and arrays more than ${maxValueDepth} levels deep`)
}

function newRow (bounds: TimeBounds): EventRow {
  return {
    ts: bounds.receivedAt,
    host: null,
    path: null,
    method: null,
    status: null,
    rt: null,
    bytes: null,
    src: null,
    userAgent: null,
    message: null,
    filename: null,
    attrs: '{}',
  }
}

/** Opens attrs with its first pair or appends one; closed with '}' once all keys are seen. */
function appendAttr (attrs: string, pair: string): string {
  return attrs === '' ? '{' + pair : attrs + ',' + pair
}

/**
 * Validates and normalizes one parsed line. Returns the row, or the rejection that fails the
 * line: `not_an_object`, `invalid_field` or `ts_out_of_range`.
 */
export function normalizeEvent (value: unknown, bounds: TimeBounds): EventRow | EventRejection {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return new EventRejection('not_an_object', `a line must be a JSON object, not ${describeJsonType(value)}`)
  }
  const line = value as JsonObject
  // "log" is not on Object.prototype, so a plain read sees only the line's own key. Likewise the
  // for-in loops below see own keys only: nothing in a worker adds enumerable prototype keys.
  return line.log === undefined || line.log === null ? normalizeFormat1(line, bounds) : normalizeFormat2(line, bounds)
}

function describeJsonType (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'string' ? 'a string' : typeof value === 'number' ? 'a number' : 'a boolean'
}

function normalizeFormat1 (line: JsonObject, bounds: TimeBounds): EventRow | EventRejection {
  const row = newRow(bounds)
  let attrs = ''
  for (const key in line) {
    const value = line[key]
    const field = fieldIndex(key)
    if (field === notAField) {
      // A null log made this line format 1: it is absent, not an attr.
      if (key === 'log') continue
      const pair = attrPair(key, value)
      if (pair === undefined) return tooDeep(key)
      attrs = appendAttr(attrs, pair)
    } else if (value !== null) {
      const outcome = storeField(row, field, value, bounds)
      if (outcome === wrongType) return new EventRejection('invalid_field', fieldMessages[field])
      if (outcome === outOfRange) return rejectTs(value, bounds)
    }
  }
  if (attrs !== '') row.attrs = attrs + '}'
  return row
}

function normalizeFormat2 (line: JsonObject, bounds: TimeBounds): EventRow | EventRejection {
  const log = line.log
  if (typeof log !== 'string') return new EventRejection('invalid_field', 'log must be a string')
  const row = newRow(bounds)
  row.message = log
  let attrs = ''
  // Fields filled from the nested object, and fields whose nested value went to attrs.
  let fromNested = 0
  let nestedInAttrs = 0
  const nested = parseNestedObject(log)
  if (nested !== undefined) {
    for (const key in nested) {
      const value = nested[key]
      const field = fieldIndex(key)
      if (field === notAField || value === null) continue
      if (storeField(row, field, value, bounds) === stored) {
        fromNested |= 1 << field
      } else {
        const pair = attrPair(key, value)
        if (pair === undefined) return tooDeep(key)
        attrs = appendAttr(attrs, pair)
        nestedInAttrs |= 1 << field
      }
    }
  }
  for (const key in line) {
    if (key === 'log') continue
    const value = line[key]
    if (key === 'filename') {
      if (value === null) continue
      if (typeof value !== 'string') return new EventRejection('invalid_field', 'filename must be a string')
      row.filename = value
      continue
    }
    const field = fieldIndex(key)
    if (field !== notAField) {
      if (value === null) continue
      const bit = 1 << field
      if ((fromNested & bit) === 0) {
        if (storeField(row, field, value, bounds) === stored) continue
        // Both values invalid: attrs holds the nested one under this key already.
        if ((nestedInAttrs & bit) !== 0) continue
      }
    }
    const pair = attrPair(key, value)
    if (pair === undefined) return tooDeep(key)
    attrs = appendAttr(attrs, pair)
  }
  if (attrs !== '') row.attrs = attrs + '}'
  return row
}

/** The object a `log` string holds, if it holds one: text starting with '{' that parses. */
function parseNestedObject (log: string): JsonObject | undefined {
  let i = 0
  let ch = log.charCodeAt(0)
  // JSON whitespace: space, tab, LF, CR.
  while (ch === 32 || ch === 9 || ch === 10 || ch === 13) ch = log.charCodeAt(++i)
  if (ch !== 123) return undefined
  try {
    // Text starting with '{' either parses to an object or throws.
    return JSON.parse(log) as JsonObject
  } catch {
    return undefined
  }
}
