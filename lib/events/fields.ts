// The event fields: ONE table from which everything that knows a field follows (docs/api.md
// section 6.4): the reference path's type rules, failure messages and field mapping
// (normalize.ts), the line scanner's key classes (lib/ingest/line-scanner.ts), the row's slots
// (event-row.ts), the RowBinary column order (`eventColumns`, lib/ingest/row-serializer.ts), the
// events API's JSON members and their order (event-json.ts), and the strings the live tail's
// filters see.
//
// Adding a column: one line here, one migration (lib/storage/migrations/), and the tests.
//
// Field mapping (`aliases`): the names common schemas use for a field (pino, Bunyan, GELF,
// journald, OpenTelemetry, Elastic Common Schema, Python logging, nginx), tried in order when the
// seed's own key gives no value. A dotted alias (`host.name`) is a key spelt that way or a path
// into nested objects (`{"host":{"name":..}}`). The seed's key always wins; an alias whose value
// does not fit the field stays in attrs (never failing the line), as does one that is not used.
//
// A field's index in `eventFields` is its number everywhere (the scanner's key class, the row's
// slot, bit masks of fields): fewer than 31 fields, so a mask fits a small integer.

/**
 * How a value is checked and stored (the reference path: normalize.ts storeField; the scanner:
 * LineScanner#storeField):
 * - string: a JSON string;
 * - ts: an RFC 3339 string or epoch seconds/ms/µs/ns by magnitude, within the task's bounds;
 * - status: an integer 100-599 (UInt16);
 * - seconds: a finite number >= 0 (Float64);
 * - count: an integer 0..2^53-1 (UInt64);
 * - level: a level name or number, normalised to trace|debug|info|warn|error|fatal (level.ts),
 *   stored as its name; a value that is no level is kept in attrs (never failing the line).
 * Numeric rules (ts, status, seconds, count, level) take numeric strings too ("status":"200").
 */
export type FieldRule = 'string' | 'ts' | 'status' | 'seconds' | 'count' | 'level'

export interface EventField {
  /** The member name in the events API's JSON and in `q`. */
  readonly name: string
  /** The key a line carries it under (format 2's message comes from `log`). */
  readonly key: string
  /** The events table's column. */
  readonly column: string
  /** Its ClickHouse type (as the migration creates it). */
  readonly type: string
  readonly rule: FieldRule
  /**
   * 1: a field of every line, checked in format 1 as `strict` says and leniently in
   * format 2 (kept in attrs), also read from a JSON object in `log`. 2: a column of format 2 only
   * (`log`, `filename`); in a format-1 line that key is an attr like any other.
   */
  readonly format: 1 | 2
  /** The failure message of a value of the wrong type (invalid_field). */
  readonly message: string
  /** Other keys for this field, in order of preference (see "Field mapping" above). */
  readonly aliases: readonly string[]
  /**
   * true: in format 1 a value of the wrong type fails the line (the seed's fields). false: it is
   * kept in attrs instead (level, and the fields added for application logs: a line with a
   * numeric `service` was stored before `service` was a column, and still is).
   */
  readonly strict: boolean
  /**
   * A trace or span id: a value in hex is stored in lowercase, as OTLP's ids are, and `q` reads a
   * hex value in lowercase too (docs/api.md section 6.4): one trace stays one through any input.
   */
  readonly hexId?: true
}

/** In the events API's member order. */
export const eventFields: readonly EventField[] = [
  { name: 'ts', key: 'ts', column: 'ts', type: 'UInt64', rule: 'ts', format: 1, message: 'ts must be an RFC 3339 string or a number of epoch seconds, milliseconds, microseconds or nanoseconds', aliases: ['time', 'timestamp', '@timestamp', 'date', 'timereported', '__REALTIME_TIMESTAMP'], strict: true },
  { name: 'host', key: 'host', column: 'host', type: 'Nullable(String)', rule: 'string', format: 1, message: 'host must be a string', aliases: ['hostname', 'host.name', 'host.hostname', 'fromhost', '_HOSTNAME'], strict: true },
  { name: 'path', key: 'path', column: 'path', type: 'Nullable(String)', rule: 'string', format: 1, message: 'path must be a string', aliases: ['url.path', 'uri'], strict: true },
  { name: 'status', key: 'status', column: 'status', type: 'Nullable(UInt16)', rule: 'status', format: 1, message: 'status must be an integer 100-599', aliases: ['http.response.status_code', 'http.status_code'], strict: true },
  { name: 'rt', key: 'rt', column: 'rt', type: 'Nullable(Float64)', rule: 'seconds', format: 1, message: 'rt must be a finite number >= 0 (seconds)', aliases: ['request_time'], strict: true },
  { name: 'bytes', key: 'bytes', column: 'bytes', type: 'Nullable(UInt64)', rule: 'count', format: 1, message: 'bytes must be an integer from 0 to 2^53-1', aliases: ['http.response.body.bytes', 'body_bytes_sent'], strict: true },
  { name: 'method', key: 'method', column: 'method', type: 'Nullable(String)', rule: 'string', format: 1, message: 'method must be a string', aliases: ['http.request.method', 'http.method', 'request_method'], strict: true },
  { name: 'src', key: 'src', column: 'src', type: 'Nullable(String)', rule: 'string', format: 1, message: 'src must be a string', aliases: ['source.address', 'client.address', 'source.ip', 'client.ip', 'remote_addr'], strict: true },
  { name: 'user_agent', key: 'user_agent', column: 'user_agent', type: 'Nullable(String)', rule: 'string', format: 1, message: 'user_agent must be a string', aliases: ['user_agent.original', 'http.user_agent', 'http_user_agent'], strict: true },
  { name: 'message', key: 'log', column: 'message', type: 'Nullable(String)', rule: 'string', format: 2, message: 'log must be a string', aliases: ['message', 'msg', 'MESSAGE', 'body', 'short_message'], strict: true },
  { name: 'filename', key: 'filename', column: 'filename', type: 'Nullable(String)', rule: 'string', format: 2, message: 'filename must be a string', aliases: ['log.file.path'], strict: true },
  { name: 'level', key: 'level', column: 'level', type: 'Nullable(String)', rule: 'level', format: 1, message: 'level must be a level name or number', aliases: ['severity', 'severity_text', 'severityText', 'levelname', 'log.level', 'severityNumber', 'severity_number', 'priority', 'PRIORITY'], strict: false },
  { name: 'service', key: 'service', column: 'service', type: 'Nullable(String)', rule: 'string', format: 1, message: 'service must be a string', aliases: ['service.name', 'service_name'], strict: false },
  { name: 'trace_id', key: 'trace_id', column: 'trace_id', type: 'Nullable(String)', rule: 'string', format: 1, message: 'trace_id must be a string', aliases: ['traceId', 'trace.id'], strict: false, hexId: true },
  { name: 'span_id', key: 'span_id', column: 'span_id', type: 'Nullable(String)', rule: 'string', format: 1, message: 'span_id must be a string', aliases: ['spanId', 'span.id'], strict: false, hexId: true },
]

/** Aliases whose numbers are OpenTelemetry severity numbers (1-24), not syslog or pino levels. */
export const severityNumberAliases: ReadonlySet<string> = new Set(['severityNumber', 'severity_number'])

/**
 * Aliases whose numbers are syslog severities 0-7 only: rsyslog's `priority` (StdJSONFmt's
 * `syslogpriority-text` is a severity name; its number is the severity, not the PRI) and
 * journald's `PRIORITY` (a digit in a string, as Fluent Bit's systemd input passes it on). A
 * larger number there is some other priority (a ticket's, a PRI) and no level.
 */
export const syslogSeverityAliases: ReadonlySet<string> = new Set(['priority', 'PRIORITY'])

/** How numbers under a level key read (level.ts levelOf): the level rule, OpenTelemetry's, or syslog's 0-7. */
export function levelNumberingOf (key: string): LevelNumbering {
  return severityNumberAliases.has(key) ? 'severityNumber' : syslogSeverityAliases.has(key) ? 'syslog' : 'level'
}

export type LevelNumbering = 'level' | 'severityNumber' | 'syslog'

export const fieldCount = eventFields.length

/** A field's index by its name; throws for a name that is not in the table (a programming error). */
export function fieldNumber (name: string): number {
  const i = eventFields.findIndex((f) => f.name === name)
  if (i < 0) throw new Error(`no event field ${name}`)
  return i
}

// The fields the code treats specially (by name, whatever their place in the table).
export const fTs = fieldNumber('ts')
export const fPath = fieldNumber('path')
export const fStatus = fieldNumber('status')
export const fRt = fieldNumber('rt')
export const fBytes = fieldNumber('bytes')
/** The message column, from format 2's `log`. */
export const fMessage = fieldNumber('message')
export const fFilename = fieldNumber('filename')

export const fLevel = fieldNumber('level')
export const fService = fieldNumber('service')
export const fTraceId = fieldNumber('trace_id')

/** Per field, whether it is a trace or span id (`hexId`). */
export const isHexIdField: readonly boolean[] = eventFields.map((f) => f.hexId === true)
/** The columns of the trace and span ids (`hexId`). */
export const hexIdColumns: ReadonlySet<string> = new Set(eventFields.filter((f) => f.hexId === true).map((f) => f.column))

/** Per field, whether its value is a string (a byte span in a row): a level is stored as its name. */
export const isStringField: readonly boolean[] = eventFields.map((f) => f.rule === 'string' || f.rule === 'level')

/**
 * Every alias key, and the first segment of every dotted alias (`http` of `http.request.method`):
 * keys whose value the mapping may read. The line scanner declines lines holding one.
 */
export const mappedKeys: ReadonlySet<string> = new Set(eventFields.flatMap((f) => f.aliases.flatMap((a) => [a, a.split('.')[0]])))

/** Bit mask of the format-1 fields (the ones a `log` object may carry). */
export const format1Mask = eventFields.reduce((mask, f, i) => f.format === 1 ? mask | (1 << i) : mask, 0)

const byKey = new Map<string, number>(eventFields.map((f, i) => [f.key, i]))

/** The field a line's key names, or -1 (the key goes to attrs). */
export function fieldOfKey (key: string): number {
  return byKey.get(key) ?? -1
}

/** The fields by how RowBinary writes them, each list in table order: UInt64 ts, strings, Nullable(UInt16), Nullable(Float64), Nullable(UInt64). */
export const fieldsByColumnKind = {
  ts: fTs,
  strings: eventFields.flatMap((_f, i) => isStringField[i] ? [i] : []),
  uint16: eventFields.flatMap((f, i) => f.rule === 'status' ? [i] : []),
  float64: eventFields.flatMap((f, i) => f.rule === 'seconds' ? [i] : []),
  uint64: eventFields.flatMap((f, i) => f.rule === 'count' ? [i] : []),
} as const

/**
 * Column order of the rows a worker produces (row-serializer.ts); the events table's INSERT names
 * them in this order. org_id, stream and received_at are the same for every row of a request;
 * the fields follow grouped by how they are written (fieldsByColumnKind), so the writer runs one
 * tight loop per kind instead of a switch per field.
 */
export const eventColumns: readonly string[] = [
  'org_id', 'stream', 'received_at', eventFields[fTs].column,
  ...[...fieldsByColumnKind.strings, ...fieldsByColumnKind.uint16, ...fieldsByColumnKind.float64, ...fieldsByColumnKind.uint64]
    .map((i) => eventFields[i].column),
  'attrs', 'seq', 'size', 'attr_keys', 'attr_values',
]
