// Loki push to Sluice events (docs/api.md section 9.2), in the parse workers. Each entry of each
// stream becomes one event:
//   the line, as sent                                     -> message
//   the entry's timestamp (ns)                            -> ts (ms)
//   label or structured metadata host | hostname          -> host
//   filename                                              -> filename
//   level | detected_level (normalised when known)        -> level
//   service_name | service (Loki's own service label)      -> service
//   trace_id, span_id (structured metadata, usually)       -> trace_id, span_id
//   every other label and structured metadata pair        -> attrs under its name
//   the keys of a JSON object the line holds (lineObject)  -> the same, below labels and metadata
// Where two names of one column are sent, the first named here wins whatever their order (an
// explicit `level` over Loki's `detected_level`), the other kept in attrs under its name; a
// `detected_level` that is no level (Loki's `unknown`) is only an attribute.
// Structured metadata wins over a stream label of the same name, and both over a key of the
// line's JSON. A label whose name is a field of the event (ts, message, status, path, ...) is
// kept in attrs under its name (normalize.ts attrsOnly): reads name it `attrs.<name>`.
//
// A line that is a JSON object (pino-loki's default, Promtail reading JSON log files), or text
// followed by one (winston-loki's protobuf mode writes `<message> <meta as JSON>`), keeps its
// text as the message, and its keys become attributes too, as VictoriaLogs parses a Loki line
// that is JSON: `user_id:42` finds what a Loki client logged with `{ user_id: 42 }`
// (docs/api.md section 9.2).
import { Buffer } from 'node:buffer'
import type { BodyError, RecordSink } from '../../ingest/parse-task.ts'
import { invalidBody } from '../body-task.ts'
import { eventFields } from '../../events/fields.ts'
import { levelNames, levelOfSeverityText } from '../../events/level.ts'
import { parseEventJson } from '../../events/json-integers.ts'
import { attrsOnlyOf, maxValueDepth, nestsDeeperThan } from '../../events/normalize.ts'
import type { LokiProtoRequest } from './loki-proto.ts'

type Obj = Record<string | symbol, unknown>

/** Label names that fill a column, and the column; of two names of one column, the first listed wins. */
const columnLabels: Record<string, string> = {
  host: 'host',
  hostname: 'host',
  filename: 'filename',
  level: 'level',
  detected_level: 'level',
  service_name: 'service',
  service: 'service',
  trace_id: 'trace_id',
  span_id: 'span_id',
}
const labelRank: Record<string, number> = Object.fromEntries(Object.keys(columnLabels).map((name, rank) => [name, rank]))

/** Keys an event of this adapter may hold as fields (the field table's, and `log`): labels of these names are renamed. */
const eventKeys = new Set(['log', ...eventFields.flatMap((f) => [f.name, f.key])])

function isObj (value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Labels in Prometheus' text form, `{name="value", ...}` with Go string escapes in the values;
 * null when malformed.
 */
export function parseLabels (text: string): Array<[string, string]> | null {
  const pairs: Array<[string, string]> = []
  const pattern = /\s*([a-zA-Z_][a-zA-Z0-9_.]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|(?=\}))/y
  let i = text.indexOf('{')
  if (i === -1 || text.slice(0, i).trim() !== '') return null
  i++
  for (;;) {
    const rest = /\s*\}\s*$/y
    rest.lastIndex = i
    if (rest.test(text)) return pairs
    pattern.lastIndex = i
    const m = pattern.exec(text)
    if (m === null) return null
    pairs.push([m[1], unescapeGo(m[2])])
    i = pattern.lastIndex
  }
}

function unescapeGo (text: string): string {
  if (!text.includes('\\')) return text
  return text.replace(/\\(.)/g, (_, c: string) => c === 'n' ? '\n' : c === 't' ? '\t' : c === 'r' ? '\r' : c)
}

/** Per event being built: the label or metadata pair that filled each column (a key no JSON can hold). */
const filledBy = Symbol('filledBy')

/**
 * Adds a label or metadata pair to the event: a column when it fills one, else attrs. Of two
 * names of one column the first in columnLabels wins, the other goes to attrs under its name;
 * the same name again (structured metadata after the labels) replaces the value.
 */
function addPair (event: Obj, name: string, value: string): void {
  const column = columnLabels[name]
  const level = column === 'level' ? levelOfSeverityText(value) : -1
  if (column !== undefined && !(name === 'detected_level' && level < 0)) {
    const filled = (event[filledBy] ??= Object.create(null)) as Record<string, [string, string]>
    const holder = filled[column]
    if (holder === undefined || labelRank[name] <= labelRank[holder[0]]) {
      if (holder !== undefined && holder[0] !== name) attrPair(event, holder[0], holder[1])
      event[column] = column === 'level' ? (levelNames[level] ?? value) : value
      filled[column] = [name, value]
      return
    }
  }
  attrPair(event, name, value)
}

/** A label or metadata pair kept in attrs under its name (a field's name too: attrs.<name>). */
function attrPair (event: Obj, name: string, value: string): void {
  if (eventKeys.has(name)) attrsOnlyOf(event)[name] = value
  else event[name] = value
}

/** The line's text keys that say the message again: left out, the line holds them. */
const messageKeys = new Set(['msg', 'message'])

/**
 * The JSON object the line holds: the whole line (after blanks), or its tail after the last
 * ` {` from which the rest parses (winston-loki's `<message> <meta>`; at most 4 tries); null when
 * there is none.
 */
export function lineObject (line: string): Obj | null {
  let end = line.length
  while (end > 0 && line.charCodeAt(end - 1) <= 32) end--
  if (end === 0 || line.charCodeAt(end - 1) !== 125 /* } */) return null
  let start = 0
  while (start < end && line.charCodeAt(start) <= 32) start++
  if (line.charCodeAt(start) === 123 /* { */) {
    const whole = parseObject(line.slice(start, end))
    if (whole !== null) return whole
  }
  let at = end
  for (let tries = 0; tries < 4; tries++) {
    at = line.lastIndexOf(' {', at - 1)
    if (at < start) return null
    const tail = parseObject(line.slice(at + 1, end))
    if (tail !== null) return tail
  }
  return null
}

/** The object `text` parses to; null when it is not one, or nests deeper than attrs may hold (the line stays text only). */
function parseObject (text: string): Obj | null {
  try {
    const value = parseEventJson(text)
    return isObj(value) && !nestsDeeperThan(value, maxValueDepth + 1) ? value : null
  } catch {
    return null
  }
}

/**
 * Adds a key of the line's JSON object after labels and metadata, where they left its place
 * empty (they win): a string under a column's label name fills that column (not `level`: pino
 * writes numbers), and so does an object under the column's own name, read as NDJSON reads it
 * (`{"service":{"name":..}}` is `service.name`, an alias: fields.ts); a key named like an event
 * field goes to attrs under its name, as a label would; any other key is an attribute, nested
 * objects by dotted paths as in NDJSON. A key whose column a label filled is left out (the line
 * holds it), as is the message again (`msg`).
 */
function addLineKey (event: Obj, name: string, value: unknown): void {
  if (messageKeys.has(name) && typeof value === 'string') return
  const column = columnLabels[name]
  if (column !== undefined && (event[filledBy] as Record<string, unknown> | undefined)?.[column] !== undefined) return
  if (column !== undefined && column !== 'level' && typeof value === 'string' && typeof event[column] !== 'string') {
    // An object the column's own key held gives way to the string, and stays in attrs.
    if (event[column] !== undefined) attrsOnlyOf(event)[column] = event[column]
    event[column] = value
  } else if (column === name && column !== 'level' && isObj(value) && event[column] === undefined) {
    event[column] = value
  } else if (eventKeys.has(name) || column !== undefined) {
    const only = attrsOnlyOf(event)
    if (!Object.hasOwn(only, name) || restates(only[name], value)) only[name] = value
  } else if (!Object.hasOwn(event, name) || restates(event[name], value)) {
    event[name] = value
  }
}

/**
 * Whether a label or metadata value (a string: Loki's protocol has no other) is the line's own
 * value of that key as text, which the line then gives typed: winston-loki with `json: true` sends
 * its meta both as structured metadata (`user` as `{"id":45}`, `amount` as `12.5`) and in the
 * line, and `user.id:45` should find it as it does the protobuf mode's (explore32 F1). A string
 * that says something else still wins over the line's key (docs/api.md section 9.2).
 */
function restates (said: unknown, value: unknown): boolean {
  if (typeof said !== 'string' || typeof value === 'string') return false
  return said === (typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value))
}

/** Nanoseconds since the epoch (a decimal string, or a number) to ms; NaN when not one. */
function nanosToMs (value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value / 1e6) : NaN
  if (typeof value !== 'string' || !/^\d{1,20}$/.test(value)) return NaN
  return Number((BigInt(value) + 500_000n) / 1_000_000n)
}

interface Entry { ms: number, line: unknown, metadata: Array<[string, string]> | null }

class StreamEvents {
  #sink: RecordSink
  n = 0
  constructor (sink: RecordSink) { this.#sink = sink }

  /** Emits the entries of one stream; labels null: the stream's labels were malformed, as `problem` says. */
  emit (labels: Array<[string, string]> | null, entries: Iterable<Entry | string>, problem = 'the stream\'s labels are not of the form {name="value", ...}'): void {
    for (const entry of entries) {
      this.n++
      if (labels === null) { this.#sink.fail(this.n, 'invalid_field', problem); continue }
      if (typeof entry === 'string') { this.#sink.fail(this.n, 'invalid_field', entry); continue }
      if (Number.isNaN(entry.ms)) { this.#sink.fail(this.n, 'invalid_field', 'the timestamp must be a string of nanoseconds since the epoch'); continue }
      if (typeof entry.line !== 'string') { this.#sink.fail(this.n, 'invalid_field', 'the line must be a string'); continue }
      const event = Object.create(null) as Obj
      for (const [name, value] of labels) addPair(event, name, value)
      if (entry.metadata !== null) for (const [name, value] of entry.metadata) addPair(event, name, value)
      const object = lineObject(entry.line)
      if (object !== null) for (const name of Object.keys(object)) addLineKey(event, name, object[name])
      event.ts = entry.ms
      event.message = entry.line
      this.#sink.add(event, this.n, Buffer.byteLength(entry.line))
    }
  }
}

/** Loki's JSON push body: {"streams":[{"stream":{labels},"values":[["<ns>","line",{metadata}?], ...]}]}. */
export function lokiJsonEvents (body: unknown, sink: RecordSink): BodyError | null {
  if (!isObj(body) || !Array.isArray(body.streams)) return invalidBody('The body is not a Loki push request: {"streams":[{"stream":{...},"values":[...]}]}')
  const out = new StreamEvents(sink)
  for (const stream of body.streams) {
    const values = isObj(stream) && Array.isArray(stream.values) ? stream.values : []
    const labels = isObj(stream) && stream.stream !== undefined ? textPairs(stream.stream) : []
    out.emit(labels, jsonEntries(values), 'the stream\'s labels must be an object of strings (numbers and booleans are taken as their text)')
  }
  return null
}

/**
 * A JSON object of label or metadata values as name-text pairs, or null when it is no object or a
 * value is an object or an array. Loki's protocol has strings only, but winston-loki with
 * `useWinstonMetaAsLabels` sends a meta value 0, false or "" unconverted (`value ? String(value) :
 * value`): a number or a boolean is taken as its text, and null as no label, so that one entry is
 * not refused while its batch's others are stored, which the client answers by sending them all
 * again every minute (explore32 F3).
 */
function textPairs (object: unknown): Array<[string, string]> | null {
  if (!isObj(object)) return null
  const pairs: Array<[string, string]> = []
  for (const [k, v] of Object.entries(object)) {
    if (typeof v === 'string') pairs.push([k, v])
    else if (typeof v === 'number' || typeof v === 'boolean') pairs.push([k, String(v)])
    else if (v !== null) return null
  }
  return pairs
}

function * jsonEntries (values: unknown[]): Generator<Entry | string> {
  for (const value of values) {
    if (!Array.isArray(value) || value.length < 2 || value.length > 3) {
      yield 'an entry must be ["<ns timestamp>", "<line>"] or ["<ns timestamp>", "<line>", {structured metadata}]'
      continue
    }
    let metadata: Array<[string, string]> | null = null
    if (value.length === 3) {
      metadata = textPairs(value[2])
      if (metadata === null) {
        yield 'structured metadata must be an object of strings (numbers and booleans are taken as their text)'
        continue
      }
    }
    yield { ms: nanosToMs(value[0]), line: value[1], metadata }
  }
}

/** A decoded protobuf PushRequest (loki-proto.ts). */
export function lokiProtoEvents (request: LokiProtoRequest, sink: RecordSink): null {
  const out = new StreamEvents(sink)
  for (const stream of request.streams ?? []) {
    out.emit(parseLabels(stream.labels ?? '{}'), (function * () {
      for (const entry of stream.entries ?? []) {
        const ts = entry.timestamp ?? {}
        const seconds = BigInt(ts.seconds ?? '0')
        const ns = seconds * 1_000_000_000n + BigInt(ts.nanos ?? 0)
        const metadata = (entry.structuredMetadata ?? []).map((p): [string, string] => [p.name ?? '', p.value ?? ''])
        yield { ms: ns < 0n ? NaN : Number((ns + 500_000n) / 1_000_000n), line: entry.line ?? '', metadata }
      }
    })())
  }
  return null
}
