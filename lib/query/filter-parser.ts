// The `q` filter language of events, stats, tail (and every other read that takes q), parsed into
// one tree (docs/api.md section 7.2). filter-sql.ts compiles the tree to a ClickHouse WHERE
// fragment and filter-match.ts to the live tail's JS predicate; both follow the meanings stated
// here, and test/query/filter.test.ts holds them equal on generated queries and events.
//
// Grammar (a position is a 0-based UTF-16 offset into q; keywords are upper case only, so `and`
// and `or` stay words to search for):
//   query   = or
//   or      = and { "OR" and }
//   and     = unary { ["AND"] unary }               juxtaposition is AND
//   unary   = ("NOT" | "-") unary | "(" or ")" | term
//   term    = name ":" value | word | phrase
//   name    = 1*(letter | digit | "_" | "." | "-" | "@" | "/") | phrase
//   value   = "*" | bare ["*"] | phrase ["*"] | op number | "~" (phrase | bare)
//   op      = ">=" | ">" | "<=" | "<" | "="
//   phrase  = '"' chars '"'      inside quotes \" is a quote and \\ a backslash; any other
//                                backslash is literal (C:\logs and ~"\d+" need no escape)
// NOT binds tighter than AND, AND tighter than OR. A word or bare value ends at whitespace or
// `)`; `(` and `)` group, so text containing them is quoted.
//
// Names: a field of the field table (lib/events/fields.ts: `host`, `status`, `message`, ...) is
// that column; any other name is an attribute by its dotted path (`user.id`); `attrs.<path>`
// is always the attribute, for a key that a column shadows (`attrs.host`). A quoted name
// ("odd key":v) takes any characters. The rule and its 256-character cap are field-ref.ts's,
// shared with stats?by= and context?same=.
//
// Meanings (an absent field or attribute fails every term on it, so `-x:y` holds when x is absent):
// - `name:value` exact, case-sensitive text; on numeric columns (ts status rt bytes) the number.
// - `name:*` present; `name:pre*` prefix of the text (integer columns: of the decimal digits);
//   a star inside quotes is literal, one after the closing quote makes a prefix.
// - `name:>n` `>=` `<` `<=` `=`: numeric comparison (filter-number.ts says what a number is). For
//   text (attributes, string columns) a value that is not a number fails the term.
// - `name:~"regex"`: a regular expression of the subset in filter-regex.ts, on the text.
// - `status:5xx` a status class, `status:40*` a prefix; `level:` a level name (or synonym) with
//   an optional comparison in order of severity (`level:>=warn`), `level:e*` the levels whose
//   name starts so, `level:*` a level is present.
// - A word or phrase: case-insensitive substring (case-fold.ts) of message, path or user_agent;
//   a trailing `*` is dropped (a substring already matches any ending). A q of only `*` is no
//   filter (every event); a `*` among other terms is refused (nothing to search for).
// Errors are SluiceError('invalid_query') with details.position.
import { SluiceError } from '../errors.ts'
import { toWellFormed } from './case-fold.ts'
import { eventFields, hexIdColumns } from '../events/fields.ts'
import type { FieldRule } from '../events/fields.ts'
import { levelNames, levelOfName } from '../events/level.ts'
import { maxNumberDigits, readNumber } from './filter-number.ts'
import type { FilterNumber } from './filter-number.ts'
import { parseRegex } from './filter-regex.ts'
import type { FilterRegex } from './filter-regex.ts'
import { maxFieldNameLength, readQuoted, resolveField as resolveFieldRef } from './field-ref.ts'

/** How a column's values are compared: text, integers (their decimal text for prefixes and regexes), floats, a level. */
export type ColumnType = 'string' | 'integer' | 'float' | 'level'

export interface ColumnRef {
  readonly kind: 'column'
  /** The field's name in q and in the events JSON. */
  readonly name: string
  /** Its column in the events table. */
  readonly column: string
  readonly type: ColumnType
}
export interface AttributeRef {
  readonly kind: 'attribute'
  /** The dotted path (`user.id`), as attr-flatten stores it. */
  readonly path: string
}
export type FieldRef = ColumnRef | AttributeRef

/** A column holding numbers (compared as they are, not as text read as a number). */
export function isNumericColumn (field: FieldRef): field is ColumnRef & { readonly type: 'integer' | 'float' } {
  return field.kind === 'column' && (field.type === 'integer' || field.type === 'float')
}

export type CompareOperator = '=' | '>' | '>=' | '<' | '<='

interface NodeBase {
  /** Offset in q where the node starts (a `-` or NOT included). */
  readonly position: number
}
/** A word or phrase, searched for in message, path and user_agent. */
export interface TextTerm extends NodeBase { readonly kind: 'text', readonly text: string }
/** `name:value` on text (a string column, a level column's name or an attribute): exact. */
export interface EqualsTerm extends NodeBase { readonly kind: 'equals', readonly field: FieldRef, readonly value: string }
/** `name:pre*`, a non-empty prefix of the text (an integer column's decimal digits). */
export interface PrefixTerm extends NodeBase { readonly kind: 'prefix', readonly field: FieldRef, readonly prefix: string }
/** `name:*`. */
export interface PresentTerm extends NodeBase { readonly kind: 'present', readonly field: FieldRef }
/** `name:>=n`, and `name:n` on a numeric column. */
export interface CompareTerm extends NodeBase { readonly kind: 'compare', readonly field: FieldRef, readonly operator: CompareOperator, readonly value: FilterNumber }
/** `name:~"regex"` on the text. */
export interface RegexTerm extends NodeBase { readonly kind: 'regex', readonly field: FieldRef, readonly regex: FilterRegex }
/** `status:5xx`: `digit` is the hundreds digit. */
export interface StatusClassTerm extends NodeBase { readonly kind: 'statusClass', readonly digit: number }
/** `level:>=warn`: the indexes (into levelNames) the term accepts. */
export interface LevelTerm extends NodeBase { readonly kind: 'level', readonly levels: readonly number[] }

export type FilterTerm = TextTerm | EqualsTerm | PrefixTerm | PresentTerm | CompareTerm | RegexTerm | StatusClassTerm | LevelTerm

export interface NotNode extends NodeBase { readonly kind: 'not', readonly child: FilterNode }
/** Two or more children, all of which hold. */
export interface AndNode extends NodeBase { readonly kind: 'and', readonly children: readonly FilterNode[] }
/** Two or more children, one of which holds. */
export interface OrNode extends NodeBase { readonly kind: 'or', readonly children: readonly FilterNode[] }

export type FilterNode = FilterTerm | NotNode | AndNode | OrNode

/** Longest q accepted, in UTF-16 units: far above any hand-written filter, small enough to parse and run cheaply. */
export const maxFilterLength = 1000
/** Most terms in one q: each text term adds three substring scans per row, each attribute a lookup. */
export const maxFilterTerms = 20
/** Deepest nesting of parentheses and negations: keeps the SQL and the matcher's recursion shallow. */
export const maxFilterDepth = 10

function columnType (rule: FieldRule): ColumnType {
  return rule === 'string' ? 'string' : rule === 'level' ? 'level' : rule === 'seconds' ? 'float' : 'integer'
}

/** Every column q can name, from the field table. */
export const filterColumns: readonly ColumnRef[] = eventFields.map((f) => ({ kind: 'column', name: f.name, column: f.column, type: columnType(f.rule) }))
const columnsByName = new Map<string, ColumnRef>(filterColumns.map((c) => [c.name, c]))

function fail (message: string, position: number, hint?: string): never {
  const text = `${message} at position ${position}` + (hint === undefined ? '' : ` (${hint})`)
  throw new SluiceError('invalid_query', text, { details: { parameter: 'q', position } })
}

const isSpace = (ch: string | undefined): boolean => ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r'
/** Where a bare word or value ends. */
const endsBare = (ch: string | undefined): boolean => ch === undefined || isSpace(ch) || ch === ')'
const nameChars = /[\p{L}\p{N}_.@/-]+/uy
const statusClass = /^([1-5])xx$/i
const status = /^[1-5]\d\d$/
const statusPrefix = /^[1-5]\d{0,2}$/
const comparison = /^(>=|<=|>|<|=)([^]*)$/
const levelComparison = /^(>=|<=|>|<|=)?(.+)$/

/** Parses q into its tree; null for an empty or blank q (every event). Throws invalid_query. */
export function parseFilter (q: string): FilterNode | null {
  if (q.length > maxFilterLength) {
    throw new SluiceError('invalid_query', `q is ${q.length} characters long; at most ${maxFilterLength} are allowed`,
      { details: { parameter: 'q', position: maxFilterLength } })
  }
  // A lone `*` is every event, as in Kibana, Loki's UI and VictoriaLogs (docs/api.md section 7.2).
  if (q.trim() === '*') return null
  return new FilterParser(toWellFormed(q)).parse()
}

class FilterParser {
  readonly #text: string
  #i = 0
  #terms = 0

  constructor (text: string) {
    this.#text = text
  }

  parse (): FilterNode | null {
    this.#skipSpace()
    if (this.#i === this.#text.length) return null
    const node = this.#parseOr(0)
    this.#skipSpace()
    if (this.#i < this.#text.length) fail('unmatched ")"', this.#i)
    return node
  }

  #skipSpace (): void {
    while (isSpace(this.#text[this.#i])) this.#i++
  }

  /** Whether the keyword stands at the cursor, as a whole token. */
  #atKeyword (keyword: 'AND' | 'OR' | 'NOT'): boolean {
    const t = this.#text
    if (!t.startsWith(keyword, this.#i)) return false
    const after = t[this.#i + keyword.length]
    return after === undefined || isSpace(after) || after === '(' || after === ')'
  }

  /** After AND, OR or NOT at `at`: a term must follow. */
  #expectOperand (keyword: string, at: number): void {
    this.#skipSpace()
    const ch = this.#text[this.#i]
    if (ch === undefined || ch === ')' || this.#atKeyword('AND') || this.#atKeyword('OR')) fail(`nothing after ${keyword}`, at)
  }

  #parseOr (depth: number): FilterNode {
    const children = [this.#parseAnd(depth)]
    for (;;) {
      this.#skipSpace()
      if (!this.#atKeyword('OR')) break
      const at = this.#i
      this.#i += 2
      this.#expectOperand('OR', at)
      children.push(this.#parseAnd(depth))
    }
    return children.length === 1 ? children[0] : { kind: 'or', position: children[0].position, children }
  }

  #parseAnd (depth: number): FilterNode {
    const children = [this.#parseUnary(depth)]
    for (;;) {
      this.#skipSpace()
      const ch = this.#text[this.#i]
      if (ch === undefined || ch === ')' || this.#atKeyword('OR')) break
      if (this.#atKeyword('AND')) {
        const at = this.#i
        this.#i += 3
        this.#expectOperand('AND', at)
      }
      children.push(this.#parseUnary(depth))
    }
    return children.length === 1 ? children[0] : { kind: 'and', position: children[0].position, children }
  }

  #nested (depth: number, position: number): number {
    if (depth + 1 > maxFilterDepth) fail(`nesting deeper than ${maxFilterDepth}`, position, 'parentheses and negations')
    return depth + 1
  }

  #parseUnary (depth: number): FilterNode {
    this.#skipSpace()
    const t = this.#text
    const position = this.#i
    if (this.#atKeyword('NOT')) {
      this.#i += 3
      this.#expectOperand('NOT', position)
      return { kind: 'not', position, child: this.#parseUnary(this.#nested(depth, position)) }
    }
    if (t[position] === '-') {
      this.#i++
      if (endsBare(t[this.#i])) fail('nothing to negate after "-"', position)
      return { kind: 'not', position, child: this.#parseUnary(this.#nested(depth, position)) }
    }
    if (this.#atKeyword('AND') || this.#atKeyword('OR')) fail(`${t.startsWith('OR', position) ? 'OR' : 'AND'} needs a term before it`, position)
    if (t[position] === ')') fail('unmatched ")"', position)
    if (t[position] === '(') {
      this.#i++
      const inner = this.#nested(depth, position)
      this.#skipSpace()
      if (this.#i === t.length) fail('unclosed "("', position)
      if (t[this.#i] === ')') fail('empty parentheses', position)
      const node = this.#parseOr(inner)
      this.#skipSpace()
      if (t[this.#i] !== ')') fail('unclosed "("', position)
      this.#i++
      return node
    }
    return this.#parseTerm()
  }

  // Reads a quoted phrase whose opening quote is at the cursor; leaves the cursor after the closing
  // quote. With `offsets`, records where in q each UTF-16 unit of the phrase came from.
  #readPhrase (offsets?: number[]): string {
    const open = this.#i
    const quoted = readQuoted(this.#text, open, offsets)
    if (quoted === null) return fail('unterminated quote starting', open)
    this.#i = quoted.end
    return quoted.value
  }

  // Reads up to whitespace or `)`; a quote inside a bare word is an error.
  #readBare (): string {
    const t = this.#text
    const start = this.#i
    while (!endsBare(t[this.#i])) {
      if (t[this.#i] === '"') fail('unexpected quote inside a word', this.#i, 'quote the whole term')
      this.#i++
    }
    return t.slice(start, this.#i)
  }

  // After a phrase: an optional `*`, then the end of the term. Returns whether a `*` was there.
  #endPhrase (allowStar: boolean): boolean {
    const t = this.#text
    const star = allowStar && t[this.#i] === '*'
    if (star) this.#i++
    if (!endsBare(t[this.#i])) fail(`unexpected ${JSON.stringify(t[this.#i])} after closing quote`, this.#i)
    return star
  }

  #parseTerm (): FilterNode {
    const t = this.#text
    const position = this.#i
    if (++this.#terms > maxFilterTerms) fail(`term ${maxFilterTerms + 1} is one too many`, position, `at most ${maxFilterTerms} terms`)

    if (t[position] === '"') {
      const phrase = this.#readPhrase()
      if (t[this.#i] === ':') {
        if (phrase === '') fail('empty field name', position)
        this.#i++
        return this.#parseFieldValue(phrase, position)
      }
      this.#endPhrase(true)
      if (phrase === '') fail('empty phrase', position)
      return { kind: 'text', position, text: phrase }
    }

    nameChars.lastIndex = position
    const name = nameChars.exec(t)?.[0] ?? ''
    if (t[position + name.length] === ':') {
      if (name === '') fail('a field name must come before ":"', position)
      this.#i = position + name.length + 1
      return this.#parseFieldValue(name, position)
    }
    const word = this.#readBare()
    const needle = word.endsWith('*') ? word.slice(0, -1) : word
    if (needle === '') fail('nothing to search for', position)
    return { kind: 'text', position, text: needle }
  }

  #parseFieldValue (name: string, position: number): FilterNode {
    const t = this.#text
    const field = resolveField(name, position)
    const valueStart = this.#i

    if (t[valueStart] === '~') {
      this.#i++
      let source: string
      let offsets: number | number[] = this.#i
      if (t[this.#i] === '"') {
        offsets = []
        source = this.#readPhrase(offsets)
        this.#endPhrase(false)
        if (source === '') offsets = this.#i - 1
      } else {
        source = this.#readBare()
      }
      if (field.kind === 'column' && field.type === 'float') fail(`${field.name} is a number: compare it (${field.name}:>=0.5) instead`, valueStart)
      return { kind: 'regex', position, field, regex: parseRegex(source, offsets) }
    }

    let value: string
    let isPrefix: boolean
    let quoted = false
    if (t[valueStart] === '"') {
      value = this.#readPhrase()
      isPrefix = this.#endPhrase(true)
      quoted = true
    } else {
      value = this.#readBare()
      isPrefix = value.endsWith('*')
      if (isPrefix) value = value.slice(0, -1)
    }
    // `name:""` is the empty text (a field present and empty, as Kibana reads it); `name:` is a mistake.
    if (value === '' && !isPrefix && !quoted) fail(`empty value for ${name}`, valueStart)
    if (value === '' && isPrefix) return { kind: 'present', position, field }

    if (field.kind === 'column' && field.type === 'level') return parseLevel(value, isPrefix, position, valueStart)
    if (field.kind === 'column' && field.name === 'status') return parseStatus(field, value, isPrefix, position, valueStart)
    const numeric = isNumericColumn(field)

    // `x:>=4*` reads as a comparison with a star, never as a prefix that starts with the operator
    // (explore34 F14): quoted, `x:">=4"*` is that prefix.
    if (isPrefix && !quoted && /^[<>=]/.test(value)) {
      fail(`${name}:${value}* compares with a prefix: after an operator comes a number alone`, valueStart, `${name}:${value} or, for text that starts so, ${name}:"${value}"*`)
    }
    if (!isPrefix && (numeric || !quoted)) {
      const cmp = comparison.exec(value)
      if (cmp !== null) return { kind: 'compare', position, field, operator: cmp[1] as CompareOperator, value: numberAt(cmp[2], valueStart + cmp[1].length) }
    }
    if (numeric) {
      if (!isPrefix) return { kind: 'compare', position, field, operator: '=', value: numberAt(value, valueStart) }
      if (field.type === 'float') fail(`${field.name} is a number: compare it (${field.name}:>=0.5) instead of a prefix`, valueStart)
      if (!/^\d+$/.test(value)) fail(`${name}:${value}* is not a prefix of a number`, valueStart, 'digits, then *')
      return { kind: 'prefix', position, field, prefix: value }
    }
    // Trace and span ids in hex are stored in lowercase (fields.ts `hexId`): so are they read. A
    // hex prefix with capitals may also begin an id that is not hex, kept as sent (a UUID with
    // its dashes, `3F2504E0-4F89-...`): it is read both ways (explore34 F11).
    if (field.kind === 'column' && hexIdColumns.has(field.column) && hexDigits.test(value)) {
      const lower = value.toLowerCase()
      if (isPrefix && lower !== value) {
        return { kind: 'or', position, children: [{ kind: 'prefix', position, field, prefix: lower }, { kind: 'prefix', position, field, prefix: value }] }
      }
      value = lower
    }
    return isPrefix ? { kind: 'prefix', position, field, prefix: value } : { kind: 'equals', position, field, value }
  }
}

const hexDigits = /^[0-9A-Fa-f]+$/

/** A name's field by field-ref.ts's rule (shared with stats?by= and context?same=), with q's position on an error. */
function resolveField (name: string, position: number): FieldRef {
  if (name.length > maxFieldNameLength) fail(`a field name is at most ${maxFieldNameLength} characters`, position)
  if (name === 'attrs.') fail('"attrs." names no attribute', position)
  const ref = resolveFieldRef(name, 'q')
  if (ref.kind === 'attribute') return { kind: 'attribute', path: ref.path }
  return columnsByName.get(ref.name) as ColumnRef
}

function numberAt (text: string, position: number): FilterNumber {
  const n = readNumber(text)
  if (n === null) fail(`${JSON.stringify(text)} is not a number`, position, `at most ${maxNumberDigits} digits, such as 42, -0.5 or 1.5e3`)
  return n
}

function parseStatus (field: ColumnRef, value: string, isPrefix: boolean, position: number, valueStart: number): FilterTerm {
  if (isPrefix) {
    if (statusPrefix.test(value)) return { kind: 'prefix', position, field, prefix: value }
  } else {
    const cls = statusClass.exec(value)
    if (cls) return { kind: 'statusClass', position, digit: Number(cls[1]) }
    if (status.test(value)) return { kind: 'compare', position, field, operator: '=', value: readNumber(value) as FilterNumber }
    // With an operator, any number is a bound, as on the other numeric columns (status:<600, status:>=1e2).
    const bound = comparison.exec(value)
    const n = bound === null ? null : readNumber(bound[2])
    if (n !== null) return { kind: 'compare', position, field, operator: bound![1] as CompareOperator, value: n }
  }
  const shown = isPrefix ? value + '*' : value
  return fail(`status:${shown} is not a status`, valueStart, 'use 404, 5xx, >=500 or 40*')
}

function parseLevel (value: string, isPrefix: boolean, position: number, valueStart: number): LevelTerm {
  if (!isPrefix) {
    const cmp = levelComparison.exec(value)
    const level = cmp === null ? -1 : levelOfName(cmp[2])
    if (cmp !== null && level >= 0) {
      const operator = cmp[1] ?? '='
      const levels = levelNames.map((_, i) => i).filter((i) => operator === '=' ? i === level : operator === '>=' ? i >= level
        : operator === '>' ? i > level : operator === '<=' ? i <= level : i < level)
      return { kind: 'level', position, levels }
    }
  } else {
    // `level:warn*`, `level:e*`: the levels whose name starts so.
    const prefix = value.toLowerCase()
    const levels = levelNames.map((_, i) => i).filter((i) => levelNames[i].startsWith(prefix))
    if (levels.length > 0) return { kind: 'level', position, levels }
  }
  const shown = isPrefix ? value + '*' : value
  return fail(`level:${shown} is not a level`, valueStart, `use one of ${levelNames.join(', ')}, optionally after >=, >, <=, <`)
}

/** Whether some term of the tree passes `test`. */
export function someTerm (node: FilterNode, test: (term: FilterTerm) => boolean): boolean {
  switch (node.kind) {
    case 'and': case 'or': return node.children.some((child) => someTerm(child, test))
    case 'not': return someTerm(node.child, test)
    default: return test(node)
  }
}

/** Whether the tree reads any attribute (the tail then flattens each event's attrs). */
export function readsAttributes (node: FilterNode | null): boolean {
  return node !== null && someTerm(node, (term) => term.kind !== 'text' && term.kind !== 'statusClass' && term.kind !== 'level' && term.field.kind === 'attribute')
}
