// OTLP logs to Sluice events (docs/api.md section 9.1), in the parse workers. Reads an
// ExportLogsServiceRequest as plain objects in OTLP/JSON's shape: the parsed JSON body, or the
// protobuf body through otlp-proto.ts's decodeOtlpProto (then trace and span ids are base64,
// not hex). Lenient where OTLP/JSON is (int64 as a string or a number, the SeverityNumber as a
// number or its name), strict where a value could only be wrong: a record whose timestamp is not
// a number fails alone with invalid_field, and the others are stored.
//
// Per LogRecord, one event:
//   body (string, or any other AnyValue as JSON text)      -> message
//   timeUnixNano, or observedTimeUnixNano when 0 or unset  -> ts (ms; unset both: receive time)
//   severityNumber 1-24, else severityText                 -> level (trace..fatal; an unknown text stays in attrs.level)
//   traceId, spanId                                        -> trace_id, span_id (lowercase hex)
//   service.name (record attribute, else resource attribute) -> service (the field table's alias)
//   eventName                                              -> attrs event_name
//   scope name                                             -> attrs scope.name
//   host.name, else host (record attribute, else resource) -> host (Fluent Bit's record key `host`)
//   http.response.status_code | http.status_code (100-599) -> status
//   http.request.method | http.method                      -> method
//   url.path | http.target                                 -> path
//   user_agent.original | http.user_agent                  -> user_agent
//   client.address                                         -> src
//   other attributes, then resource attributes             -> attrs under their own keys
//   a kvlist body's keys, below both                       -> attrs too (the message is its JSON)
// A record attribute wins over a resource attribute of the same key. An attribute whose key is a
// field of the event (trace_id, level, message, status, ...) fills it when the record left it
// empty, as its aliases do (addAttributes); else it is kept in attrs under its key (normalize.ts
// attrsOnly): reads name it `attrs.<key>`.
import { Buffer } from 'node:buffer'
import type { BodyError, RecordSink } from '../../ingest/parse-task.ts'
import { invalidBody } from '../body-task.ts'
import { eventFields } from '../../events/fields.ts'
import { levelNames, levelOfSeverityNumber, levelOfSeverityText } from '../../events/level.ts'
import { attrsOnly, attrsOnlyOf, lenientFields, maxValueDepth } from '../../events/normalize.ts'
import { int64Value, isRawInteger, numberOrText } from '../../events/json-integers.ts'

type Obj = Record<string | symbol, unknown>

export type IdEncoding = 'hex' | 'base64'

/** Keys an event of this adapter may hold as fields; attributes of these names fill them only when the record did not. */
const eventKeys = new Set(['log', 'event_name', 'scope.name', ...eventFields.flatMap((f) => [f.name, f.key])])
/**
 * Keys only the record sets: `log` would make the event a format-2 line, `event_name` and
 * `scope.name` are the record's eventName and scope. Attributes of these names go to attrs.
 */
const recordOnlyKeys = new Set(['log', 'event_name', 'scope.name'])
/** An event field's name or key, and every name that can fill that field (its name, key and aliases). */
const fieldNames = new Map(eventFields.flatMap((f) => {
  const names = [f.name, f.key, ...f.aliases]
  return [[f.name, names], [f.key, names]] as Array<[string, string[]]>
}))

/** Attribute keys that fill a column, and the column; the first key of a column that is valid wins. */
const columnAttributes: Array<[string, string]> = [
  ['host.name', 'host'], ['host', 'host'],
  ['http.response.status_code', 'status'], ['http.status_code', 'status'],
  ['http.request.method', 'method'], ['http.method', 'method'],
  ['url.path', 'path'], ['http.target', 'path'],
  ['user_agent.original', 'user_agent'], ['http.user_agent', 'user_agent'],
  ['client.address', 'src'],
  // OpenTelemetry's service identity, the record's else the resource's: before a record
  // attribute that is only named `service` (the service called, say), which stays in attrs
  // (explore34 F5).
  ['service.name', 'service'],
]

/** OpenTelemetry's service.name when none was set: `unknown_service`, or `unknown_service:<process>`. */
function isUnknownService (value: string): boolean {
  return value === 'unknown_service' || value.startsWith('unknown_service:')
}

class TooDeep extends Error {}

/** Marks resource attributes that nest too deep (a symbol: no attribute key can be it). */
const tooDeepMark = Symbol('tooDeep')

function isObj (value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function list (value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

/** A plain object without a prototype, so any key (`__proto__` included) is data. */
function dict (): Obj {
  return Object.create(null) as Obj
}

/**
 * An AnyValue as a JS value: scalars as themselves, kvlist as an object, array as an array.
 * `depth` is the level an array or kvlist here would be (an attribute's value is at 1, as a value
 * of an NDJSON line's key): past maxValueDepth it throws TooDeep, as an NDJSON line nesting more
 * than 64 levels fails (docs/api.md 6.4). A scalar at any level is no level of its own.
 */
function anyValue (value: unknown, depth: number): unknown {
  if (!isObj(value)) return null
  if (typeof value.stringValue === 'string') return value.stringValue
  if (typeof value.boolValue === 'boolean') return value.boolValue
  // int64 beyond 2^53 keeps its digits: a number in attrs, as in an NDJSON line.
  if (value.intValue !== undefined) return int64Value(value.intValue)
  if (value.doubleValue !== undefined) {
    const n = Number(numberOrText(value.doubleValue))
    return Number.isFinite(n) ? n : String(value.doubleValue) // "NaN", "Infinity": JSON has no number for them
  }
  if (typeof value.bytesValue === 'string') return value.bytesValue // base64 in both encodings
  if (isObj(value.arrayValue)) {
    if (depth > maxValueDepth) throw new TooDeep()
    return list(value.arrayValue.values).map((v) => anyValue(v, depth + 1))
  }
  if (isObj(value.kvlistValue)) {
    if (depth > maxValueDepth) throw new TooDeep()
    return keyValues(value.kvlistValue.values, depth + 1)
  }
  return null
}

/**
 * KeyValues as an object, each value at `depth` (anyValue). A KeyValue without a key has the
 * empty key: protobuf cannot tell an empty string from an absent one (decodeOtlpProto leaves
 * defaults out), and proto3's JSON may leave it out too; an NDJSON line's `""` key is kept.
 */
function keyValues (values: unknown, depth: number): Obj {
  const out = dict()
  for (const kv of list(values)) {
    if (!isObj(kv)) continue
    const key = kv.key ?? ''
    if (typeof key === 'string') out[key] = anyValue(kv.value, depth)
  }
  return out
}

/** int64/fixed64 nanoseconds (a decimal string or a number) to ms; 0 for unset; NaN when not a number. */
function nanosToMs (raw: unknown): number {
  const value = numberOrText(raw) // 19 digits written as a JSON number: their text (parseEventJson)
  if (value === undefined || value === null) return 0
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value / 1e6) : NaN
  if (typeof value !== 'string' || !/^\d{1,20}$/.test(value)) return NaN
  return Number((BigInt(value) + 500_000n) / 1_000_000n)
}

function idText (value: unknown, encoding: IdEncoding): string | null {
  if (typeof value !== 'string' || value === '') return null
  const id = encoding === 'base64' ? Buffer.from(value, 'base64').toString('hex') : /^[0-9a-fA-F]+$/.test(value) ? value.toLowerCase() : value
  // All zeros is the specification's invalid id, which SDKs send for a record outside a span: no id (explore32 F7).
  return /^0+$/.test(id) ? null : id
}

function levelOf (record: Obj): string | null {
  const n = record.severityNumber
  const numbered = typeof n === 'number' ? levelOfSeverityNumber(n) : typeof n === 'string' ? levelOfSeverityText(n) : -1
  if (numbered >= 0) return levelNames[numbered]
  const text = record.severityText
  if (typeof text !== 'string' || text === '') return null
  const named = levelOfSeverityText(text)
  return named >= 0 ? levelNames[named] : text
}

/**
 * The body as a JS value (anyValue), null when absent. A kvlist body is the record's own object
 * (its keys become attributes, as an NDJSON line's keys), so its values are at level 1.
 */
function bodyOf (body: unknown): unknown {
  return isObj(body) ? anyValue(body, 0) : null
}

function messageOf (value: unknown): string | null {
  if (value === null) return null
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value)
}

/**
 * Fills seed columns from the attributes that map to one: a column's keys in their order, each
 * from the record's attributes, else the resource's (`host.name` anywhere before `host`); a
 * mapped attribute leaves attrs.
 */
function mapColumns (event: Obj, sources: readonly Obj[]): void {
  for (const [key, column] of columnAttributes) {
    for (const attributes of sources) {
      if (!(key in attributes) || event[column] !== undefined) continue
      const value = attributes[key]
      if (column === 'status') {
        const n = typeof value === 'string' ? Number(value) : value
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 100 || n > 599) continue
        event.status = n
      } else {
        if (typeof value !== 'string') continue
        // The SDKs' placeholder when no service.name is set (`unknown_service`,
        // `unknown_service:node`: OpenTelemetry's resource conventions) names no service: a
        // record attribute `service` goes first, and the placeholder fills the field only as its
        // alias after that (explore34 F16).
        if (column === 'service' && isUnknownService(value)) continue
        event[column] = value
      }
      delete attributes[key]
    }
  }
}

/**
 * Adds attributes below what the record itself filled: a key named like an event field fills it
 * when the record left it empty (`trace_id` without a traceId, `level` without a severity), as
 * its aliases (`traceId`, `severity`) do, and a value that does not fit stays in attrs under its
 * key (lenientFields; explore32 F2: `trace_id` stayed in attrs where `traceId` filled the
 * column); else attrs under its key. `fromAttributes`: the keys attributes set, so a resource's
 * key does not shadow a record's.
 */
function addAttributes (event: Obj, attributes: Obj, fromAttributes: Set<string>, lower = false): void {
  for (const key in attributes) {
    // A resource's (or a structured body's) key gives way to any name of its field the record or
    // its attributes used: a record attribute `traceId` wins over a resource `trace_id`.
    const taken = lower && fieldNames.get(key)?.some((name) => event[name] !== undefined) === true
    if (event[key] === undefined && !recordOnlyKeys.has(key) && !taken) {
      event[key] = attributes[key]
      fromAttributes.add(key)
    } else if (eventKeys.has(key) && !fromAttributes.has(key)) {
      const only = attrsOnlyOf(event)
      if (only[key] === undefined) only[key] = attributes[key]
    }
  }
}

/** The keys the record being converted took from attributes (recordEvent; addAttributes). */
const recordAttributeKeys = new Set<string>()

/** One LogRecord as a Sluice event, or the reason it fails. */
function recordEvent (record: Obj, resource: Obj, scopeName: string | null, ids: IdEncoding): Obj | string {
  const event = dict()
  let ms = nanosToMs(record.timeUnixNano)
  if (ms === 0) ms = nanosToMs(record.observedTimeUnixNano)
  if (Number.isNaN(ms)) return 'timeUnixNano and observedTimeUnixNano must be int64 nanoseconds since the epoch'
  if (ms > 0) event.ts = ms
  const body = bodyOf(record.body)
  const message = messageOf(body)
  if (message !== null) event.message = message
  const level = levelOf(record)
  if (level !== null) event.level = level
  // A severity number that names no level (0 is "unspecified") is kept as an NDJSON line's would be.
  else if (typeof record.severityNumber === 'number' && record.severityNumber !== 0) event.severityNumber = record.severityNumber
  const traceId = idText(record.traceId, ids)
  if (traceId !== null) event.trace_id = traceId
  const spanId = idText(record.spanId, ids)
  if (spanId !== null) event.span_id = spanId
  if (typeof record.eventName === 'string' && record.eventName !== '') event.event_name = record.eventName
  if (scopeName !== null) event['scope.name'] = scopeName
  const attributes = keyValues(record.attributes, 1)
  mapColumns(event, [attributes, resource])
  // One set for every record (a worker converts one record at a time): no allocation per record.
  const fromAttributes = recordAttributeKeys
  fromAttributes.clear()
  addAttributes(event, attributes, fromAttributes)
  addAttributes(event, resource, fromAttributes, true)
  // A structured body (a kvlist): its keys are attributes too, below the record's and the
  // resource's (docs/api.md section 9.1); the message is its JSON text.
  if (isObj(body) && !isRawInteger(body)) addAttributes(event, body, fromAttributes, true)
  if (fromAttributes.size > 0) event[lenientFields] = true
  return event
}

/**
 * Emits one event per LogRecord of `request` into `sink`, numbered from 1 in body order; an
 * InvalidBody when the request is not an ExportLogsServiceRequest at all.
 */
export function otlpEvents (request: unknown, ids: IdEncoding, sink: RecordSink): BodyError | null {
  if (!isObj(request)) return invalidBody('The body is not an ExportLogsServiceRequest (a JSON object with resourceLogs)')
  if (request.resourceLogs !== undefined && !Array.isArray(request.resourceLogs)) {
    return invalidBody('resourceLogs must be an array')
  }
  let n = 0
  for (const resourceLogs of list(request.resourceLogs)) {
    if (!isObj(resourceLogs)) continue
    let resource: Obj
    try {
      resource = keyValues(isObj(resourceLogs.resource) ? resourceLogs.resource.attributes : undefined, 1)
    } catch (err) {
      if (!(err instanceof TooDeep)) throw err
      resource = dict() // its records fail below, as each reads the same attributes
      resource[tooDeepMark] = true
    }
    for (const scopeLogs of list(resourceLogs.scopeLogs)) {
      if (!isObj(scopeLogs)) continue
      const scope = scopeLogs.scope
      const scopeName = isObj(scope) && typeof scope.name === 'string' && scope.name !== '' ? scope.name : null
      for (const record of list(scopeLogs.logRecords)) {
        n++
        if (!isObj(record)) {
          sink.fail(n, 'not_an_object', 'a LogRecord must be an object')
          continue
        }
        let event: Obj | string
        try {
          if (resource[tooDeepMark] === true) throw new TooDeep()
          // A copy per record: mapColumns takes the keys that fill a column out of it.
          event = recordEvent(record, Object.assign(dict(), resource), scopeName, ids)
        } catch (err) {
          if (!(err instanceof TooDeep)) throw err
          sink.fail(n, 'too_deep', `an attribute or the body nests values more than ${maxValueDepth} levels deep`)
          continue
        }
        if (typeof event === 'string') sink.fail(n, 'invalid_field', event)
        else sink.add(event, n, Buffer.byteLength(JSON.stringify(event)) + (event[attrsOnly] === undefined ? 0 : Buffer.byteLength(JSON.stringify(event[attrsOnly]))))
      }
    }
  }
  return null
}
