// The `q` filter language of events, stats and tail (docs/api.md section 7.2), parsed into a flat list
// of terms that must all hold. filter-sql.ts compiles the list to a ClickHouse WHERE fragment and
// filter-match.ts to a JS predicate for the live tail; both follow the semantics stated here.
//
// Grammar (terms are separated by whitespace; a position is a 0-based UTF-16 offset into q):
//   term   = ["-"] (field ":" value | word | phrase)
//   value  = bare ["*"] | phrase ["*"]          field = host path method src status filename user_agent
//   phrase = '"' chars '"'                      inside quotes \" is a quote and \\ a backslash; any
//                                               other backslash is literal (C:\logs needs no escape)
// - `field:value` is exact and case-sensitive; a trailing `*` outside quotes makes it a prefix
//   match, so `path:"/a*"` is the literal /a* and `path:*` means "path is present".
// - `status:` takes 404, 5xx, >=500 (also >, <=, <, =) or a digit prefix such as 40*.
// - `level:` takes a level name (lib/events/level.ts: trace debug info warn error fatal, or a
//   synonym such as warning or err), optionally after >=, >, <=, < or =: `level:>=warn` is warn
//   or worse. `level:*` means "a level is present".
// - A word or phrase matches case-insensitively (see case-fold.ts) inside message, path or
//   user_agent. A trailing `*` on either is dropped: a substring match already matches any ending.
// - `-` negates a term: it holds exactly when the term does not, so `-host:a` keeps events whose
//   host is absent, and `-path:*` finds events without a path.
// - A bare word with a `"` inside, or with a `:` after a name that is not a field, is an error;
//   quote it ("10:30", "say \"hi\"") to search for it as text.
// Errors are SluiceError('invalid_query') with details.position.
import { SluiceError } from '../errors.ts'
import { toWellFormed } from './case-fold.ts'
import { levelNames, levelOfName } from '../events/level.ts'

export const filterFields = ['host', 'path', 'method', 'src', 'status', 'filename', 'user_agent'] as const
export type FilterField = typeof filterFields[number]
export type StringField = Exclude<FilterField, 'status'>
export type StatusOperator = '=' | '>' | '>=' | '<' | '<='

interface TermBase {
  /** True for `-term`: the term must not hold. */
  negated: boolean
  /** Offset in q where the term starts (its `-` included). */
  position: number
}

/** A word or phrase, searched for in message, path and user_agent. */
export interface TextTerm extends TermBase { kind: 'text'; text: string }
export interface EqualsTerm extends TermBase { kind: 'equals'; field: StringField; value: string }
/** `field:prefix*`; an empty prefix holds whenever the field is present. */
export interface PrefixTerm extends TermBase { kind: 'prefix'; field: FilterField; prefix: string }
export interface StatusTerm extends TermBase { kind: 'status'; operator: StatusOperator; value: number }
/** `status:5xx`: `digit` is the hundreds digit. */
export interface StatusClassTerm extends TermBase { kind: 'statusClass'; digit: number }
/** `level:>=warn`: `levels` are the indexes (into levelNames) the term accepts; `level:*` is every one. */
export interface LevelTerm extends TermBase { kind: 'level'; levels: number[] }

export type FilterNode = TextTerm | EqualsTerm | PrefixTerm | StatusTerm | StatusClassTerm | LevelTerm

/** Longest q accepted, in UTF-16 units: far above any hand-written filter, small enough to parse and run cheaply. */
export const maxFilterLength = 1000
/** Most terms in one q: each text term adds three substring scans per row. */
export const maxFilterTerms = 20

function fail (message: string, position: number, hint?: string): never {
  const text = `${message} at position ${position}` + (hint === undefined ? '' : ` (${hint})`)
  throw new SluiceError('invalid_query', text, { details: { position } })
}

const isSpace = (ch: string | undefined): boolean => ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r'
const isField = (name: string): name is FilterField => (filterFields as readonly string[]).includes(name)
const statusClass = /^([1-5])xx$/i
const statusComparison = /^(>=|<=|>|<|=)?([1-5]\d\d)$/
const statusPrefix = /^[1-5]\d{0,2}$/

/** Parses q into the terms that must all hold; an empty or blank q gives []. Throws invalid_query. */
export function parseFilter (q: string): FilterNode[] {
  if (q.length > maxFilterLength) {
    throw new SluiceError('invalid_query', `q is ${q.length} characters long; at most ${maxFilterLength} are allowed`,
      { details: { position: maxFilterLength } })
  }
  const text = toWellFormed(q)
  const nodes: FilterNode[] = []
  let i = 0

  // Reads a quoted phrase whose opening quote is at i; leaves i after the closing quote.
  function readPhrase (): string {
    const open = i++
    let out = ''
    while (i < text.length) {
      const ch = text[i]
      if (ch === '"') { i++; return out }
      if (ch === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) { out += text[i + 1]; i += 2; continue }
      out += ch
      i++
    }
    return fail('unterminated quote starting', open)
  }

  // Reads up to the next whitespace; a quote inside a bare word is an error.
  function readBare (stopAtColon: boolean): string {
    const start = i
    while (i < text.length && !isSpace(text[i]) && !(stopAtColon && text[i] === ':')) {
      if (text[i] === '"') fail('unexpected quote inside a word', i, 'quote the whole term')
      i++
    }
    return text.slice(start, i)
  }

  // After a phrase: an optional `*`, then the end of the term. Returns whether a `*` was there.
  function endPhrase (): boolean {
    const star = text[i] === '*'
    if (star) i++
    if (i < text.length && !isSpace(text[i])) fail(`unexpected ${JSON.stringify(text[i])} after closing quote`, i)
    return star
  }

  while (i < text.length) {
    if (isSpace(text[i])) { i++; continue }
    const position = i
    if (nodes.length === maxFilterTerms) fail(`term ${maxFilterTerms + 1} is one too many`, position, `at most ${maxFilterTerms} terms`)
    const negated = text[i] === '-'
    if (negated) {
      i++
      if (i === text.length || isSpace(text[i])) fail('nothing to negate after "-"', position)
    }

    if (text[i] === '"') {
      const phrase = readPhrase()
      endPhrase()
      if (phrase === '') fail('empty phrase', position)
      nodes.push({ kind: 'text', negated, position, text: phrase })
      continue
    }

    const wordStart = i
    const word = readBare(true)
    if (text[i] !== ':') {
      const needle = word.endsWith('*') ? word.slice(0, -1) : word
      if (needle === '') fail('nothing to search for', wordStart)
      nodes.push({ kind: 'text', negated, position, text: needle })
      continue
    }

    if (!isField(word) && word !== 'level') {
      fail(`unknown field ${JSON.stringify(word)}`, wordStart, `fields: ${filterFields.join(', ')}, level; quote the term to search for it as text`)
    }
    const valueStart = ++i
    let value: string
    let isPrefix: boolean
    if (text[i] === '"') {
      value = readPhrase()
      isPrefix = endPhrase()
    } else {
      value = readBare(false)
      isPrefix = value.endsWith('*')
      if (isPrefix) value = value.slice(0, -1)
    }
    if (value === '' && !isPrefix) fail(`empty value for ${word}`, valueStart)
    if (word === 'level') {
      nodes.push(parseLevel(value, isPrefix, negated, position, valueStart))
      continue
    }
    nodes.push(word === 'status'
      ? parseStatus(value, isPrefix, negated, position, valueStart)
      : isPrefix
        ? { kind: 'prefix', negated, position, field: word, prefix: value }
        : { kind: 'equals', negated, position, field: word, value })
  }
  return nodes
}

function parseStatus (value: string, isPrefix: boolean, negated: boolean, position: number, valueStart: number): FilterNode {
  if (isPrefix) {
    if (value === '' || statusPrefix.test(value)) return { kind: 'prefix', negated, position, field: 'status', prefix: value }
  } else {
    const cls = statusClass.exec(value)
    if (cls) return { kind: 'statusClass', negated, position, digit: Number(cls[1]) }
    const cmp = statusComparison.exec(value)
    if (cmp) return { kind: 'status', negated, position, operator: (cmp[1] ?? '=') as StatusOperator, value: Number(cmp[2]) }
  }
  const shown = isPrefix ? value + '*' : value
  return fail(`status:${shown} is not a status`, valueStart, 'use 404, 5xx, >=500 or 40*')
}

const levelComparison = /^(>=|<=|>|<|=)?(.+)$/

function parseLevel (value: string, isPrefix: boolean, negated: boolean, position: number, valueStart: number): LevelTerm {
  const all = levelNames.map((_, i) => i)
  if (isPrefix) {
    if (value === '') return { kind: 'level', negated, position, levels: all }
  } else {
    const cmp = levelComparison.exec(value)
    const level = cmp === null ? -1 : levelOfName(cmp[2])
    if (cmp !== null && level >= 0) {
      const operator = cmp[1] ?? '='
      const levels = all.filter((i) => operator === '=' ? i === level : operator === '>=' ? i >= level
        : operator === '>' ? i > level : operator === '<=' ? i <= level : i < level)
      return { kind: 'level', negated, position, levels }
    }
  }
  const shown = isPrefix ? value + '*' : value
  return fail(`level:${shown} is not a level`, valueStart, `use one of ${levelNames.join(', ')}, optionally after >=, >, <=, <`)
}
