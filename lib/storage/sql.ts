// Safe SQL text for ClickHouse. ClickHouse 18.16 has no server-side query parameters, so every
// value that reaches SQL is rendered here as a literal: strings escaped, numbers checked finite,
// identifiers checked against a strict pattern. Routes never concatenate user input into SQL; they
// use the `sql` tag, which quotes each interpolated value.

export class SqlFragment {
  readonly text: string
  constructor (text: string) { this.text = text }
  toString (): string { return this.text }
}

/** A ClickHouse string literal: backslash and quote escaped, control bytes as escapes. */
export function quoteString (value: string): string {
  // ClickHouse parses string literals with C-style escapes; escaping \ and ' is what makes the
  // literal safe, and \n, \r, \t, \0 keep the query text on one line in server logs.
  let out = "'"
  for (let i = 0; i < value.length; i++) {
    const ch = value.charCodeAt(i)
    if (ch === 92) out += '\\\\'
    else if (ch === 39) out += "\\'"
    else if (ch === 10) out += '\\n'
    else if (ch === 13) out += '\\r'
    else if (ch === 9) out += '\\t'
    else if (ch === 0) out += '\\0'
    else out += value[i]
  }
  return out + "'"
}

const identifierPattern = /^[A-Za-z_][A-Za-z0-9_]*$/

/** A backquoted identifier; only plain names are accepted, so nothing can be smuggled in. */
export function quoteIdentifier (name: string): string {
  if (!identifierPattern.test(name)) throw new TypeError(`not a plain identifier: ${JSON.stringify(name)}`)
  return '`' + name + '`'
}

export function quoteValue (value: unknown): string {
  if (value instanceof SqlFragment) return value.text
  if (typeof value === 'string') return quoteString(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`not a finite number: ${value}`)
    return String(value)
  }
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'boolean') return value ? '1' : '0'
  if (value === null || value === undefined) return 'NULL'
  if (Array.isArray(value)) return '[' + value.map(quoteValue).join(', ') + ']'
  throw new TypeError(`cannot render ${typeof value} as SQL`)
}

/** Tagged template: `sql\`SELECT * FROM t WHERE id = ${id}\`` quotes every interpolated value. */
export function sql (strings: TemplateStringsArray, ...values: unknown[]): SqlFragment {
  let text = strings[0]
  for (let i = 0; i < values.length; i++) text += quoteValue(values[i]) + strings[i + 1]
  return new SqlFragment(text)
}

/** Raw SQL text that the caller vouches for (table names from config, compiled filters). */
export function rawSql (text: string): SqlFragment {
  return new SqlFragment(text)
}

const maxUint64 = 2n ** 64n - 1n

/**
 * UInt64 values ClickHouse gave as decimal text (a cityHash64: past 2^53, not a JSON number) as a
 * comma-separated SQL list; a text that is not one throws.
 */
export function uint64List (values: readonly string[]): SqlFragment {
  return new SqlFragment(values.map((v) => {
    if (!/^[0-9]{1,20}$/.test(v) || BigInt(v) > maxUint64) throw new TypeError(`not a UInt64: ${JSON.stringify(v)}`)
    return v
  }).join(', '))
}

export function joinSql (parts: SqlFragment[], separator: string): SqlFragment {
  return new SqlFragment(parts.map((p) => p.text).join(separator))
}
