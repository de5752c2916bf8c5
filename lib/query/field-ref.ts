// A field named in a read (docs/api.md section 7.2): `q` terms, `stats?by=`, `context?same=`.
// A name of the field table (lib/events/fields.ts), or one of its aliases, is its column;
// `attrs.<name>` is always the attribute; any other name is an attribute by its dotted path
// (`user.id`). So every field a stored event has can be named, and a name never needs a schema
// to be known.
import { Buffer } from 'node:buffer'
import { SluiceError } from '../errors.ts'
import { eventFields, isStringField } from '../events/fields.ts'
import { rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { attrPresentSql, attrValueSql, columnSql } from './attr-sql.ts'
import type { AttrScope } from './attr-sql.ts'

export type FieldRef =
  | { kind: 'column', name: string, column: string, numeric: boolean }
  | { kind: 'attribute', name: string, path: string }

/** Longest field name accepted, in characters (attribute keys longer than this are not addressable). */
export const maxFieldNameLength = 256

const columnsByName = new Map(eventFields.map((f, i) => [f.name, { column: f.column, numeric: !isStringField[i] }]))
// A field's aliases (the keys ingest reads into it: `service.name`, `traceId`, `hostname`...)
// name it too: an OTel user's `service.name:checkout` finds every checkout event, whichever key
// its service came in. Such a key kept as an attribute (its value did not fit) is `attrs.<key>`.
const fieldsByAlias = new Map(eventFields.flatMap((f) => f.aliases.filter((a) => !columnsByName.has(a)).map((a) => [a, f.name] as const)))

/** The field `name` names, or invalid_query (naming `parameter`) when it is empty or too long. */
export function resolveField (name: string, parameter = 'q'): FieldRef {
  if (name === '' || name.length > maxFieldNameLength || name === 'attrs.') {
    throw new SluiceError('invalid_query', `${parameter}: a field name must be 1-${maxFieldNameLength} characters`, { details: { parameter } })
  }
  if (name.startsWith('attrs.')) return { kind: 'attribute', name, path: name.slice(6) }
  const fieldName = fieldsByAlias.get(name) ?? name
  const column = columnsByName.get(fieldName)
  if (column !== undefined) return { kind: 'column', name: fieldName, column: column.column, numeric: column.numeric }
  return { kind: 'attribute', name, path: name }
}

/**
 * The name resolveField reads back as the attribute at `path`: the path, or `attrs.<path>` when
 * the path is also a field's name or alias or itself starts with `attrs.` (/fields lists
 * attributes so).
 */
export function attributeFieldName (path: string): string {
  return path.startsWith('attrs.') || columnsByName.has(path) || fieldsByAlias.has(path) ? `attrs.${path}` : path
}

/**
 * The field names of a parameter (`same=`): separated by commas outside double quotes, each
 * trimmed, then read by quotedName; empty ones are left out. An unclosed quote is invalid_query.
 */
export function fieldNamesParam (text: string, parameter = 'same'): string[] {
  const names: string[] = []
  let start = 0
  let quoted = false
  for (let i = 0; i <= text.length; i++) {
    const c = text[i]
    if (quoted && c === '\\' && i + 1 < text.length) i++
    else if (c === '"') quoted = !quoted
    else if ((c === ',' && !quoted) || i === text.length) {
      const name = text.slice(start, i).trim()
      if (name !== '') names.push(quotedName(name, parameter))
      start = i + 1
    }
  }
  return names
}

/**
 * The quoted string opening at text[open], as `q` reads one (`\"` and `\\` are escapes, any other
 * backslash is literal): its text and the index after its closing quote; null when it is not
 * closed. With `offsets`, where in `text` each UTF-16 unit of the result came from.
 */
export function readQuoted (text: string, open: number, offsets?: number[]): { value: string, end: number } | null {
  let value = ''
  for (let i = open + 1; i < text.length; i++) {
    const ch = text[i]
    if (ch === '"') return { value, end: i + 1 }
    offsets?.push(i)
    if (ch === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) value += text[++i]
    else value += ch
  }
  return null
}

/**
 * A `by=` or `same=` name: its text, or the name inside its quotes as `q` writes one (readQuoted:
 * `"odd key"`). A name that opens a quote it does not close (or goes on after it) is
 * invalid_query, as in `q`.
 */
export function quotedName (text: string, parameter = 'by'): string {
  if (!text.startsWith('"')) return text
  const quoted = readQuoted(text, 0)
  if (quoted !== null && quoted.end === text.length) return quoted.value
  throw new SluiceError('invalid_query', `${parameter}: a quoted field name must end with its closing quote`, { details: { parameter } })
}

/** Values with their counts: count descending, ties by value as ClickHouse orders strings (by their UTF-8 bytes). */
export function byCountThenValue (a: { value: string, count: number }, b: { value: string, count: number }): number {
  return b.count - a.count || Buffer.compare(Buffer.from(a.value), Buffer.from(b.value))
}

/** The field's value as Nullable(String): a column's text (numbers as toString writes them), an attribute's value text. */
export function fieldTextSql (ref: FieldRef, scope: AttrScope): SqlFragment {
  if (ref.kind === 'attribute') return attrValueSql(ref.path, scope)
  return ref.numeric ? sql`toString(${rawSql(ref.column)})` : columnSql(ref.column, scope)
}

/** Whether the event has the field, as UInt8. */
export function fieldPresentSql (ref: FieldRef, scope: AttrScope): SqlFragment {
  return ref.kind === 'attribute' ? attrPresentSql(ref.path, scope) : sql`isNotNull(${columnSql(ref.column, scope)})`
}
