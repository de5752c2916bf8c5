// The reference path: turns one parsed JSON value into an event row (event-row.ts), by the rules
// of docs/api.md section 6.4 and the field table (fields.ts). Synchronous: it runs in the parse
// workers for the lines the line scanner declines, and for the records protocol adapters hand
// over as JS objects; nothing JSON.parse can return makes it throw. The row's strings are
// encoded onto its scratch, so everything downstream reads one row shape.
//
// - Format 2 is a line whose `log` is a string: it becomes `message`; `filename`, when present,
//   must be a string. Everything else is lenient: a field that is invalid (wrong type, or a ts
//   out of range) is kept in attrs instead of failing the line. When `log` holds a JSON object
//   (its first non-blank character is '{' and it parses), its fields are extracted the same
//   lenient way, and its other keys go to attrs too. Each field takes the nested value when
//   valid, else the top-level value when valid; a value that does not fill its column is kept
//   in attrs under its name (the nested one when both are left over, since attrs holds each key
//   once).
// - Format 1 is any other object (`log` absent, null, or an object, read as Elastic Common
//   Schema's `log`), strictly checked: a seed field (the table's format-1 fields: host, path,
//   method, src, user_agent, status, ts, rt, bytes: `strict` in fields.ts) of a wrong scalar type or range fails the
//   line; an object under a seed key is ECS nesting (`"host":{"name":..}`), kept in attrs and
//   read by the aliases; the fields that are not `strict` in the table (level, service, trace_id,
//   span_id) never fail: a value that does not fit is kept in attrs.
// - Field mapping: a field the seed's keys leave empty takes the first of its aliases
//   (fields.ts) that fits it, in the log object first, then in the line; an alias that does not
//   fit stays in attrs, never failing the line. In format 1 `filename` is tried that way too.
// - Numeric rules take numeric strings ("status":"200", what nginx's JSON log_format writes).
// - JSON `null` under a seed key (a format-1 field, `log`, `filename`) means the field is absent: the
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
import { eventFields, fieldCount, fieldOfKey, fMessage, levelNumberingOf } from './fields.ts'
import type { LevelNumbering } from './fields.ts'
import { isRawInteger, parseEventJson } from './json-integers.ts'
import { isNumericText, levelBytes, levelOf, levelOffsets } from './level.ts'
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

/** A ts value's ms since the epoch: a number by magnitude, RFC 3339 text or a numeric string; NaN when none. */
function tsOf (value: unknown): number {
  if (typeof value === 'number') return epochMsFromNumber(value)
  if (typeof value !== 'string') return NaN
  const ms = epochMsFromRfc3339(value)
  return Number.isNaN(ms) && isNumericText(value) ? epochMsFromNumber(Number(value)) : ms
}

/** A number, or a numeric string's number ("status":"200"); NaN otherwise. */
function numberOf (value: unknown): number {
  if (typeof value === 'number') return value
  return typeof value === 'string' && isNumericText(value) ? Number(value) : NaN
}

/**
 * Validates a non-null value of field `field` by its rule and stores it in the row when valid.
 * `numbering`: how a level's number reads (the alias's: fields.ts levelNumberingOf).
 */
function storeField (row: EventRow, field: number, value: unknown, bounds: TimeBounds, numbering: LevelNumbering = 'level'): number {
  // A long integer kept as its text (json-integers.ts) is a number to a field, as to the scanner.
  if (isRawInteger(value)) value = Number(value.rawJSON)
  switch (eventFields[field].rule) {
    case 'string':
      if (typeof value !== 'string') return wrongType
      row.setText(field, value)
      return stored
    case 'level': {
      const level = levelOf(value, numbering)
      if (level < 0) return wrongType
      row.setSpan(field, levelBytes, levelOffsets[level], levelOffsets[level + 1])
      return stored
    }
    case 'ts': {
      const ms = tsOf(value)
      if (Number.isNaN(ms)) return wrongType
      if (ms < bounds.minTs || ms > bounds.maxTs) return outOfRange
      row.number[field] = ms
      row.tsGiven = true
      return stored
    }
  }
  const number = numberOf(value)
  switch (eventFields[field].rule) {
    case 'status':
      if (!Number.isInteger(number) || number < 100 || number > 599) return wrongType
      break
    case 'seconds':
      // JSON.parse turns 1e999 into Infinity, which no column can hold.
      if (!(number >= 0) || number === Infinity) return wrongType
      break
    default: // count
      if (!Number.isSafeInteger(number) || number < 0) return wrongType
  }
  // -0 would be stored as -0 and print as "-0": rt >= 0 allows it, the column should not.
  row.number[field] = number + 0
  return stored
}

/** A ts for a failure message: ISO when Date can show it, the raw number otherwise. */
function describeTime (ms: number): string {
  return Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : String(ms)
}

function rejectTs (value: unknown, bounds: TimeBounds): EventRejection {
  const ms = tsOf(value)
  const message = ms < bounds.minTs
    ? `ts ${describeTime(ms)} is older than the stream's retention (${describeTime(bounds.minTs)})`
    : `ts ${describeTime(ms)} is after the newest accepted time (${describeTime(bounds.maxTs)})`
  return new EventRejection('ts_out_of_range', message)
}

// A string needs escaping in JSON only for '"', '\\', control characters and lone surrogates
// (any surrogate here, to keep the test simple). Most keys and values have none, and a quoted
// copy is 2-3x faster than JSON.stringify.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
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
  if (typeof value !== 'object' || value === null || isRawInteger(value)) return false
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
  // JSON.stringify writes a long integer kept as its text (json-integers.ts) as that text.
  return quoteJson(key) + ':' + JSON.stringify(value)
}

function tooDeep (key: string): EventRejection {
  return new EventRejection('too_deep', `${key} nests objects and arrays more than ${maxValueDepth} levels deep`)
}

/** Opens attrs with its first pair or appends one; closed with '}' once all keys are seen. */
function appendAttr (attrs: string, pair: string): string {
  return attrs === '' ? '{' + pair : attrs + ',' + pair
}

function isPlainObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isRawInteger(value)
}

/**
 * An event object's attributes that go to attrs only, under their own keys, never to a field: a
 * protocol input's attribute named like an event field (an OTLP record attribute `level` beside
 * the record's severity, a Loki label `status`), so that reads name it `attrs.<key>` (docs/api.md
 * section 7.2). A symbol: no JSON line can hold it.
 */
export const attrsOnly: unique symbol = Symbol('attrsOnly')

/**
 * Marks an event object whose field keys came from a protocol's attributes (OTLP): a value that
 * does not fit its field stays in attrs under its key, as an alias's does, instead of failing the
 * record (`status: "n/a"`). A symbol: no JSON line can hold it.
 */
export const lenientFields: unique symbol = Symbol('lenientFields')

/** The event object's attrsOnly record, made (without a prototype: keys are data) on first use. */
export function attrsOnlyOf (event: Record<string | symbol, unknown>): Record<string, unknown> {
  return (event[attrsOnly] ??= Object.create(null)) as Record<string, unknown>
}

/**
 * Validates and normalizes one parsed line (or a record a protocol adapter built as a JS object in
 * the line shape) into `row`, which it resets first. Returns null when the row holds the event, or
 * the rejection that fails the line: `not_an_object`, `invalid_field`, `ts_out_of_range` or
 * `too_deep`.
 *
 * Each field takes the first of these that fits it (a value that does not stays in attrs):
 * - format 2: the field in the object `log` holds, then the line's own key (both lenient);
 *   format 1: the line's own key, strictly (a wrong scalar type fails the line; an object is read
 *   as ECS and kept in attrs; a level never fails);
 * - then its aliases (fields.ts), in order: in the `log` object first (format 2), then the line.
 * attrs holds every key not used for a field (null under a field's key means absent: not kept),
 * the `log` object's first, each key once.
 */
export function normalizeEvent (value: unknown, bounds: TimeBounds, row: EventRow): EventRejection | null {
  if (!isPlainObject(value)) {
    return new EventRejection('not_an_object', `a line must be a JSON object, not ${describeJsonType(value)}`)
  }
  row.reset(bounds.receivedAt)
  const line = value
  const lenient = (line as { [lenientFields]?: boolean })[lenientFields] === true
  // "log" is not on Object.prototype, so a plain read sees only the line's own key. Likewise the
  // for-in loops below see own keys only: nothing in a worker adds enumerable prototype keys.
  const log = line.log
  const format2 = typeof log === 'string'
  if (log !== undefined && log !== null && !format2 && !isPlainObject(log)) {
    return new EventRejection('invalid_field', eventFields[fMessage].message)
  }
  let filled = 0
  // Keys used for a field (or null under a field's key): not kept in attrs.
  const usedNested = new Set<string>()
  const used = new Set<string>()
  let nested: JsonObject | undefined
  if (format2) {
    row.setText(fMessage, log)
    filled |= 1 << fMessage
    used.add('log')
    nested = parseNestedObject(log)
    if (nested !== undefined) {
      for (const key in nested) {
        const field = fieldOfKey(key)
        if (field < 0 || eventFields[field].format !== 1) continue
        const v = nested[key]
        if (v === null) usedNested.add(key)
        else if (storeField(row, field, v, bounds) === stored) {
          filled |= 1 << field
          usedNested.add(key)
        }
      }
    }
  } else if (log === null) {
    used.add('log') // a null log made this line format 1: it is absent, not an attr
  }
  for (const key in line) {
    const field = fieldOfKey(key)
    if (field < 0 || field === fMessage) continue
    const v = line[key]
    const format = eventFields[field].format
    if (format === 2) {
      // filename: a column of format 2, checked as the seed checks it; in format 1 an alias.
      if (!format2) continue
      if (v !== null && typeof v !== 'string') return new EventRejection('invalid_field', eventFields[field].message)
      if (v !== null) {
        row.setText(field, v)
        filled |= 1 << field
      }
      used.add(key)
      continue
    }
    if (v === null) {
      used.add(key)
      continue
    }
    // A field the log object filled: the line's value stays in attrs.
    if ((filled & (1 << field)) !== 0) continue
    const outcome = storeField(row, field, v, bounds)
    if (outcome === stored) {
      filled |= 1 << field
      used.add(key)
    } else if (!format2 && !isPlainObject(v) && eventFields[field].strict && !lenient) {
      if (outcome === wrongType) return new EventRejection('invalid_field', eventFields[field].message)
      return rejectTs(v, bounds)
    }
  }
  for (let field = 0; field < fieldCount; field++) {
    if ((filled & (1 << field)) !== 0) continue
    const f = eventFields[field]
    // In format 1, a format-2 field's own key (filename) is tried like an alias, first.
    const keys = f.format === 2 && !format2 && f.key !== 'log' ? [f.key, ...f.aliases] : f.aliases
    if (keys.length === 0) continue
    if (nested !== undefined && field !== fMessage && mapAlias(row, field, keys, nested, usedNested, bounds)) continue
    mapAlias(row, field, keys, line, used, bounds)
  }
  let attrs = ''
  if (nested !== undefined) {
    for (const key in nested) {
      if (usedNested.has(key)) continue
      const pair = attrPair(key, nested[key])
      if (pair === undefined) {
        // A deep value under a key that is no field stays in the message only, as it did before
        // such keys were kept in attrs; a field's value is held to the limit (too_deep).
        const field = fieldOfKey(key)
        if (field < 0 || eventFields[field].format !== 1) continue
        return tooDeep(key)
      }
      attrs = appendAttr(attrs, pair)
      // attrs holds each key once: the log object's value, when both have it.
      used.add(key)
    }
  }
  for (const key in line) {
    if (used.has(key)) continue
    const pair = attrPair(key, line[key])
    if (pair === undefined) return tooDeep(key)
    attrs = appendAttr(attrs, pair)
  }
  // A protocol input's attributes named like an event field: attrs under their own keys.
  const only = (line as { [attrsOnly]?: JsonObject })[attrsOnly]
  if (only !== undefined) {
    for (const key in only) {
      const pair = attrPair(key, only[key])
      if (pair === undefined) return tooDeep(key)
      attrs = appendAttr(attrs, pair)
    }
  }
  row.setAttrsText(attrs === '' ? '{}' : attrs + '}')
  return null
}

/**
 * Stores the first of `keys` found in `object` (a key spelt that way, or a dotted path into its
 * objects) whose value fits field `field`; a key spelt that way is then marked used. True when
 * one did.
 */
function mapAlias (row: EventRow, field: number, keys: readonly string[], object: JsonObject, used: Set<string>,
  bounds: TimeBounds): boolean {
  for (const key of keys) {
    let v: unknown = Object.hasOwn(object, key) ? object[key] : undefined
    const spelt = v !== undefined
    if (!spelt && key.includes('.')) v = valueAtPath(object, key)
    if (v === undefined || v === null) continue
    if (storeField(row, field, v, bounds, levelNumberingOf(key)) !== stored) continue
    if (spelt) used.add(key)
    return true
  }
  return false
}

/** The value at a dotted path through nested objects (`host.name`), or undefined. */
function valueAtPath (object: JsonObject, path: string): unknown {
  let at: unknown = object
  for (const segment of path.split('.')) {
    if (!isPlainObject(at) || !Object.hasOwn(at, segment)) return undefined
    at = at[segment]
  }
  return at
}

function describeJsonType (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'string' ? 'a string' : typeof value === 'number' || isRawInteger(value) ? 'a number' : 'a boolean'
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
    return parseEventJson(log) as JsonObject
  } catch {
    return undefined
  }
}
