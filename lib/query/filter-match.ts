// Compiles a parsed `q` (filter-parser.ts) into a JS predicate for the live tail, which filters
// events straight from the ingest pipeline. It must accept exactly the rows filter-sql.ts selects
// once the same events are stored (docs/api.md section 7.2); test/query/filter.test.ts checks the
// two against ClickHouse on generated queries and events.
//
// How the SQL semantics carry over:
// - An absent field or attribute is null: it fails every positive term and so passes every
//   negated one, as ifNull(.., 0) makes it in SQL; NOT, AND and OR then agree on plain booleans.
// - Strings are compared as ClickHouse stores them: a lone surrogate is U+FFFD (toWellFormed).
//   Then ===, startsWith and includes on UTF-16 agree with ClickHouse's byte comparisons on UTF-8:
//   in either encoding a well-formed needle can only match whole characters.
// - Text search folds the haystack with foldCase, ClickHouse's lowerUTF8, not toLowerCase.
// - Integer columns as text (`status:40*`, a regex on bytes) are their decimal digits, as
//   toString() writes them; numbers in text are read by filter-number.ts, as numberSql does.
// - Regular expressions run on filter-regex.ts's automaton, the same tree ClickHouse gets as RE2.
// - Attributes are the event's attrs JSON flattened by the walker that writes the attr_keys and
//   attr_values columns (events/attr-flatten.ts); for a path stored twice the first one counts,
//   as indexOf does.
//
// Each event's attrs are flattened at most once, and only when a filter reads an attribute; the
// three searched fields are folded at most once. The collector runs every tail's predicate on the
// same event object in turn, so the parsed attrs and folded text of the last event are kept for
// the next predicate.
import { foldCase, toWellFormed } from './case-fold.ts'
import { levelNames } from '../events/level.ts'
import { compareBounds, numberValue } from './filter-number.ts'
import { matchesRegex } from './filter-regex.ts'
import { flattenAttrsText } from '../events/attr-flatten.ts'
import type { CompareOperator, FieldRef, FilterNode, FilterTerm } from './filter-parser.ts'
import { isNumericColumn } from './filter-parser.ts'

/**
 * An event as the tail sees it (EventRow#toObject): field names of the field table, absent fields
 * null, strings and numbers as stored, `attrs` the JSON object text.
 */
export type EventLike = Readonly<Record<string, string | number | null | undefined>>

/** One event's derived values, computed on first use. */
class EventView {
  readonly event: EventLike
  #attrs: Map<string, string> | null = null
  /** message, path and user_agent folded; null until a text term asks. */
  #message: string | null = null
  #path = ''
  #userAgent = ''

  constructor (event: EventLike) {
    this.event = event
  }

  /** The attribute's value as text, null when absent. */
  attr (path: string): string | null {
    if (this.#attrs === null) {
      const attrs = new Map<string, string>()
      const text = this.event.attrs
      if (typeof text === 'string' && text !== '' && text !== '{}') {
        const { keys, values } = flattenAttrsText(text)
        for (let k = 0; k < keys.length; k++) if (!attrs.has(keys[k])) attrs.set(keys[k], values[k])
      }
      this.#attrs = attrs
    }
    return this.#attrs.get(path) ?? null
  }

  /** Whether the attribute `path`, or one below it (`path.` a prefix of its key), is present. */
  hasAttrUnder (path: string): boolean {
    if (this.attr(path) !== null) return true
    const prefix = path + '.'
    for (const key of this.#attrs!.keys()) if (key.startsWith(prefix)) return true
    return false
  }

  /** Whether message, path or user_agent, folded by lowerUTF8's rules, holds `needle`; an absent one is ''. */
  searchedIncludes (needle: string): boolean {
    if (this.#message === null) {
      const e = this.event
      this.#message = typeof e.message === 'string' ? foldCase(e.message) : ''
      this.#path = typeof e.path === 'string' ? foldCase(e.path) : ''
      this.#userAgent = typeof e.user_agent === 'string' ? foldCase(e.user_agent) : ''
    }
    return this.#message.includes(needle) || this.#path.includes(needle) || this.#userAgent.includes(needle)
  }
}

let lastEvent: EventLike | null = null
let lastView: EventView | null = null

function viewOf (event: EventLike): EventView {
  if (event !== lastEvent || lastView === null) {
    lastEvent = event
    lastView = new EventView(event)
  }
  return lastView
}

type Test = (view: EventView) => boolean

function textGetter (field: FieldRef): (view: EventView) => string | null {
  if (field.kind === 'attribute') {
    const path = field.path
    return (view) => view.attr(path)
  }
  const name = field.name
  if (isNumericColumn(field)) {
    return (view) => {
      const value = view.event[name]
      return typeof value === 'number' ? String(value) : null
    }
  }
  return (view) => {
    const value = view.event[name]
    return typeof value === 'string' ? toWellFormed(value) : null
  }
}

function numberGetter (field: FieldRef): (view: EventView) => number | null {
  if (isNumericColumn(field)) {
    const name = field.name
    return (view) => {
      const value = view.event[name]
      return typeof value === 'number' ? value : null
    }
  }
  const text = textGetter(field)
  return (view) => {
    const value = text(view)
    return value === null ? null : numberValue(value)
  }
}

const compare: Record<CompareOperator, (a: number, b: number) => boolean> = {
  '=': (a, b) => a === b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
}

function compileTerm (node: FilterTerm): Test {
  switch (node.kind) {
    case 'text': {
      const needle = foldCase(node.text)
      return (view) => view.searchedIncludes(needle)
    }
    case 'equals': {
      const text = textGetter(node.field)
      const value = node.value
      return (view) => text(view) === value
    }
    case 'prefix': {
      const text = textGetter(node.field)
      const prefix = node.prefix
      return (view) => text(view)?.startsWith(prefix) ?? false
    }
    case 'present': {
      const field = node.field
      if (field.kind === 'attribute') {
        const path = field.path
        return (view) => view.hasAttrUnder(path)
      }
      const name = field.name
      return (view) => view.event[name] !== null && view.event[name] !== undefined
    }
    case 'regex': {
      const text = textGetter(node.field)
      const regex = node.regex
      return (view) => {
        const value = text(view)
        return value !== null && matchesRegex(regex, value)
      }
    }
    case 'compare': {
      const number = numberGetter(node.field)
      // q's number and the double its text denotes (filter-number.ts compareBounds).
      const { low, high } = compareBounds(node.value)
      const test = compare[node.operator]
      const bound = node.operator === '>=' || node.operator === '<' ? low : high
      return (view) => {
        const value = number(view)
        return value !== null && (test(value, bound) || (node.operator === '=' && value === low))
      }
    }
    case 'statusClass': {
      const digit = node.digit
      return (view) => {
        const status = view.event.status
        return typeof status === 'number' && Math.trunc(status / 100) === digit
      }
    }
    case 'level': {
      const accepted = new Set<string>(node.levels.map((i) => levelNames[i]))
      return (view) => {
        const level = view.event.level
        return typeof level === 'string' && accepted.has(level)
      }
    }
  }
}

function compileNode (node: FilterNode): Test {
  switch (node.kind) {
    case 'and': {
      const tests = node.children.map(compileNode)
      return (view) => {
        for (const test of tests) if (!test(view)) return false
        return true
      }
    }
    case 'or': {
      const tests = node.children.map(compileNode)
      return (view) => {
        for (const test of tests) if (test(view)) return true
        return false
      }
    }
    case 'not': {
      const test = compileNode(node.child)
      return (view) => !test(view)
    }
    default: return compileTerm(node)
  }
}

/** A predicate that holds for the events the tree accepts; always true for no filter. */
export function compileMatcher (node: FilterNode | null): (event: EventLike) => boolean {
  if (node === null) return () => true
  const test = compileNode(node)
  return (event) => test(viewOf(event))
}
