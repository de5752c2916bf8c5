// The reference path: turns one parsed JSON value into an event row (event-row.ts), by the rules
// of docs/api.md section 6.4 and the field table (fields.ts). Synchronous: it runs in the parse
// workers for the lines the line scanner declines, and for the records protocol adapters hand
// over as JS objects; nothing JSON.parse can return makes it throw. The row's strings are
// encoded onto its scratch, so everything downstream reads one row shape.
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
//   fields are the table's format-1 fields (host, path, method, src, user_agent, status, ts, rt,
//   bytes); `message` and `filename` are columns of format 2 only, so in a format-1 line they are
//   attrs like any key.
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
import type { EventRow } from './event-row.ts'
import { eventFields, fieldOfKey, fMessage, fFilename } from './fields.ts'
import { EventRejection } from './rejection.ts'
import { epochMsFromNumber, epochMsFromRfc3339 } from './time.ts'

export interface TimeBounds {
  /** ts of events that carry none, ms since the epoch. */
  receivedAt: number
  /** Oldest accepted ts, ms; must be >= 0 (the column is UInt64). */
  minTs: number
  /** Newest accepted ts, ms. */
  maxTs: number
}

type JsonObject = Record<string, unknown>

// storeField outcomes.
const stored = 0
const wrongType = 1
const outOfRange = 2

/** Validates a non-null value of field `field` by its rule and stores it in the row when valid. */
function storeField (row: EventRow, field: number, value: unknown, bounds: TimeBounds): number {
  switch (eventFields[field].rule) {
    case 'string':
      if (typeof value !== 'string') return wrongType
      row.setText(field, value)
      return stored
    case 'status':
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 100 || value > 599) return wrongType
      break
    case 'ts': {
      const ms = typeof value === 'number' ? epochMsFromNumber(value) : typeof value === 'string' ? epochMsFromRfc3339(value) : NaN
      if (Number.isNaN(ms)) return wrongType
      if (ms < bounds.minTs || ms > bounds.maxTs) return outOfRange
      row.number[field] = ms
      return stored
    }
    case 'seconds':
      // JSON.parse turns 1e999 into Infinity, which no column can hold.
      if (typeof value !== 'number' || !(value >= 0) || value === Infinity) return wrongType
      // -0 would be stored as -0 and print as "-0": rt >= 0 allows it, the column should not.
      row.number[field] = value + 0
      return stored
    case 'count':
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return wrongType
      break
  }
  row.number[field] = value as number
  return stored
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

/** Opens attrs with its first pair or appends one; closed with '}' once all keys are seen. */
function appendAttr (attrs: string, pair: string): string {
  return attrs === '' ? '{' + pair : attrs + ',' + pair
}

/**
 * Validates and normalizes one parsed line (or a record a protocol adapter built as a JS object in
 * the line shape) into `row`, which it resets first. Returns null when the row holds the event, or
 * the rejection that fails the line: `not_an_object`, `invalid_field`, `ts_out_of_range` or
 * `too_deep`.
 */
export function normalizeEvent (value: unknown, bounds: TimeBounds, row: EventRow): EventRejection | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return new EventRejection('not_an_object', `a line must be a JSON object, not ${describeJsonType(value)}`)
  }
  row.reset(bounds.receivedAt)
  const line = value as JsonObject
  // "log" is not on Object.prototype, so a plain read sees only the line's own key. Likewise the
  // for-in loops below see own keys only: nothing in a worker adds enumerable prototype keys.
  const outcome = line.log === undefined || line.log === null ? normalizeFormat1(line, bounds, row) : normalizeFormat2(line, bounds, row)
  if (typeof outcome === 'string') {
    row.setAttrsText(outcome === '' ? '{}' : outcome + '}')
    return null
  }
  return outcome
}

function describeJsonType (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'string' ? 'a string' : typeof value === 'number' ? 'a number' : 'a boolean'
}

/** The fields into the row; returns attrs' text so far ('' for none, else without its '}') or the rejection. */
function normalizeFormat1 (line: JsonObject, bounds: TimeBounds, row: EventRow): string | EventRejection {
  let attrs = ''
  for (const key in line) {
    const value = line[key]
    const field = fieldOfKey(key)
    if (field < 0 || eventFields[field].format !== 1) {
      // A null log made this line format 1: it is absent, not an attr.
      if (field === fMessage && value === null) continue
      const pair = attrPair(key, value)
      if (pair === undefined) return tooDeep(key)
      attrs = appendAttr(attrs, pair)
    } else if (value !== null) {
      const outcome = storeField(row, field, value, bounds)
      if (outcome === wrongType) return new EventRejection('invalid_field', eventFields[field].message)
      if (outcome === outOfRange) return rejectTs(value, bounds)
    }
  }
  return attrs
}

function normalizeFormat2 (line: JsonObject, bounds: TimeBounds, row: EventRow): string | EventRejection {
  const log = line.log
  if (typeof log !== 'string') return new EventRejection('invalid_field', eventFields[fMessage].message)
  row.setText(fMessage, log)
  let attrs = ''
  // Fields filled from the nested object, and fields whose nested value went to attrs.
  let fromNested = 0
  let nestedInAttrs = 0
  const nested = parseNestedObject(log)
  if (nested !== undefined) {
    for (const key in nested) {
      const value = nested[key]
      const field = fieldOfKey(key)
      if (field < 0 || eventFields[field].format !== 1 || value === null) continue
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
    const field = fieldOfKey(key)
    if (field === fMessage) continue
    const value = line[key]
    if (field === fFilename) {
      if (value === null) continue
      if (typeof value !== 'string') return new EventRejection('invalid_field', eventFields[fFilename].message)
      row.setText(fFilename, value)
      continue
    }
    if (field >= 0) {
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
  return attrs
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
