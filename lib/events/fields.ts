// The event fields: ONE table from which everything that knows a field follows (docs/api.md
// section 6.4): the reference path's type rules and failure messages (normalize.ts), the line
// scanner's key classes (lib/ingest/line-scanner.ts), the row's slots (event-row.ts), the RowBinary
// column order (`eventColumns`, lib/ingest/row-serializer.ts), the events API's JSON members and
// their order (event-json.ts), and the strings the live tail's filters see.
//
// Adding a column: one line here, one migration (lib/storage/migrations/), and the tests.
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
 * - count: an integer 0..2^53-1 (UInt64).
 */
export type FieldRule = 'string' | 'ts' | 'status' | 'seconds' | 'count'

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
   * 1: a field of every line, strictly checked in format 1 (failing the line) and leniently in
   * format 2 (kept in attrs), also read from a JSON object in `log`. 2: a column of format 2 only
   * (`log`, `filename`); in a format-1 line that key is an attr like any other.
   */
  readonly format: 1 | 2
  /** The failure message of a value of the wrong type (invalid_field). */
  readonly message: string
}

/** In the events API's member order. */
export const eventFields: readonly EventField[] = [
  { name: 'ts', key: 'ts', column: 'ts', type: 'UInt64', rule: 'ts', format: 1, message: 'ts must be an RFC 3339 string or a number of epoch seconds, milliseconds, microseconds or nanoseconds' },
  { name: 'host', key: 'host', column: 'host', type: 'Nullable(String)', rule: 'string', format: 1, message: 'host must be a string' },
  { name: 'path', key: 'path', column: 'path', type: 'Nullable(String)', rule: 'string', format: 1, message: 'path must be a string' },
  { name: 'status', key: 'status', column: 'status', type: 'Nullable(UInt16)', rule: 'status', format: 1, message: 'status must be an integer 100-599' },
  { name: 'rt', key: 'rt', column: 'rt', type: 'Nullable(Float64)', rule: 'seconds', format: 1, message: 'rt must be a finite number >= 0 (seconds)' },
  { name: 'bytes', key: 'bytes', column: 'bytes', type: 'Nullable(UInt64)', rule: 'count', format: 1, message: 'bytes must be an integer from 0 to 2^53-1' },
  { name: 'method', key: 'method', column: 'method', type: 'Nullable(String)', rule: 'string', format: 1, message: 'method must be a string' },
  { name: 'src', key: 'src', column: 'src', type: 'Nullable(String)', rule: 'string', format: 1, message: 'src must be a string' },
  { name: 'user_agent', key: 'user_agent', column: 'user_agent', type: 'Nullable(String)', rule: 'string', format: 1, message: 'user_agent must be a string' },
  { name: 'message', key: 'log', column: 'message', type: 'Nullable(String)', rule: 'string', format: 2, message: 'log must be a string' },
  { name: 'filename', key: 'filename', column: 'filename', type: 'Nullable(String)', rule: 'string', format: 2, message: 'filename must be a string' },
]

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

/** Per field, whether its value is a string (a byte span in a row). */
export const isStringField: readonly boolean[] = eventFields.map((f) => f.rule === 'string')

/** Bit mask of the format-1 fields (the ones a `log` object may carry). */
export const format1Mask = eventFields.reduce((mask, f, i) => f.format === 1 ? mask | (1 << i) : mask, 0)

const byKey = new Map<string, number>(eventFields.map((f, i) => [f.key, i]))

/** The field a line's key names, or -1 (the key goes to attrs). */
export function fieldOfKey (key: string): number {
  return byKey.get(key) ?? -1
}

/**
 * Column order of the rows a worker produces (row-serializer.ts); the events table's INSERT names
 * them in this order. org_id, stream and received_at are the same for every row of a request.
 */
export const eventColumns: readonly string[] = [
  'org_id', 'stream', 'received_at', ...eventFields.map((f) => f.column), 'attrs', 'seq', 'size',
]
