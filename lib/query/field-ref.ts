// A field named in a read (docs/api.md section 7.2): `q` terms, `stats?by=`, `context?same=`.
// A name of the field table (lib/events/fields.ts) is its column; `attrs.<name>` is always the
// attribute; any other name is an attribute by its dotted path (`user.id`). So every field a
// stored event has can be named, and a name never needs a schema to be known.
import { SluiceError } from '../errors.ts'
import { eventFields, isStringField } from '../events/fields.ts'
import { rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { attrPresentSql, attrValueSql } from './attr-sql.ts'
import type { AttrScope } from './attr-sql.ts'

export type FieldRef =
  | { kind: 'column', name: string, column: string, numeric: boolean }
  | { kind: 'attribute', name: string, path: string }

/** Longest field name accepted, in characters (attribute keys longer than this are not addressable). */
export const maxFieldNameLength = 256

const columnsByName = new Map(eventFields.map((f, i) => [f.name, { column: f.column, numeric: !isStringField[i] }]))

/** The field `name` names, or invalid_query (naming `parameter`) when it is empty or too long. */
export function resolveField (name: string, parameter = 'q'): FieldRef {
  if (name === '' || name.length > maxFieldNameLength || name === 'attrs.') {
    throw new SluiceError('invalid_query', `${parameter}: a field name must be 1-${maxFieldNameLength} characters`, { details: { parameter } })
  }
  if (name.startsWith('attrs.')) return { kind: 'attribute', name, path: name.slice(6) }
  const column = columnsByName.get(name)
  if (column !== undefined) return { kind: 'column', name, column: column.column, numeric: column.numeric }
  return { kind: 'attribute', name, path: name }
}

/**
 * The field names of a parameter (`by=`, `same=`): separated by commas, each bare or in double
 * quotes as `q` writes a name (`"odd key"`, with `\"` and `\\` inside; a comma inside quotes
 * is part of the name). Bare names are trimmed; empty ones are left out.
 */
export function fieldNamesParam (text: string): string[] {
  const names: string[] = []
  let i = 0
  while (i <= text.length) {
    while (text[i] === ' ') i++
    if (text[i] === '"') {
      let name = ''
      let j = i + 1
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && (text[j + 1] === '"' || text[j + 1] === '\\')) j++
        name += text[j]
      }
      // An unclosed quote: the rest is the name, as written.
      if (j >= text.length) {
        names.push(text.slice(i).trim())
        break
      }
      names.push(name)
      i = text.indexOf(',', j + 1)
      if (i < 0) break
      i++
    } else {
      const comma = text.indexOf(',', i)
      const name = text.slice(i, comma < 0 ? text.length : comma).trim()
      if (name !== '') names.push(name)
      if (comma < 0) break
      i = comma + 1
    }
  }
  return names
}

/** A `by=` name: its text, or the name inside its quotes (`"odd key"`, `\"` and `\\` escapes). */
export function quotedName (text: string): string {
  if (text.length < 2 || text[0] !== '"' || text[text.length - 1] !== '"') return text
  return text.slice(1, -1).replace(/\\(["\\])/g, '$1')
}

/** The field's value as Nullable(String): a column's text (numbers as toString writes them), an attribute's value text. */
export function fieldTextSql (ref: FieldRef, scope: AttrScope): SqlFragment {
  if (ref.kind === 'attribute') return attrValueSql(ref.path, scope)
  return ref.numeric ? sql`toString(${rawSql(ref.column)})` : rawSql(ref.column)
}

/** Whether the event has the field, as UInt8. */
export function fieldPresentSql (ref: FieldRef, scope: AttrScope): SqlFragment {
  return ref.kind === 'attribute' ? attrPresentSql(ref.path, scope) : sql`isNotNull(${rawSql(ref.column)})`
}
