// Compiles parsed `q` terms (filter-parser.ts) into a JS predicate for the live tail, which filters
// events straight from the ingest pipeline. It must accept exactly the rows filter-sql.ts selects
// once the same events are stored; test/query/filter.test.ts checks the two against ClickHouse.
//
// How the SQL semantics carry over:
// - An absent field is null (or undefined): it fails every positive term and so passes every
//   negated one, as ifNull(.., 0) makes it in SQL.
// - Strings are compared as ClickHouse stores them: a lone surrogate is U+FFFD (toWellFormed).
//   Then ===, startsWith and includes on UTF-16 agree with ClickHouse's byte comparisons on UTF-8:
//   in either encoding a well-formed needle can only match whole characters.
// - Text search folds the haystack with foldCase, ClickHouse's lowerUTF8, not toLowerCase.
// - `status:40*` compares the decimal text of status, as toString(status) does.
//
// The tail calls the predicate once per event per client, so it is compiled once: field terms are
// closures run first (cheap), and the three searched fields are folded at most once per event.
import { foldCase, toWellFormed } from './case-fold.ts'
import { levelNames } from '../events/level.ts'
import type { FilterField, FilterNode, StatusOperator, StringField } from './filter-parser.ts'

/** An event as the tail sees it: format-1 field names, absent fields null. */
export interface EventLike {
  readonly host?: string | null
  readonly path?: string | null
  readonly method?: string | null
  readonly src?: string | null
  readonly status?: number | null
  readonly filename?: string | null
  readonly user_agent?: string | null
  readonly message?: string | null
  /** A normalised level name (lib/events/level.ts). */
  readonly level?: string | null
}

type Test = (event: EventLike) => boolean

function textOf (event: EventLike, field: StringField | 'message'): string | null {
  const value = event[field]
  return value === null || value === undefined ? null : toWellFormed(value)
}

function statusText (event: EventLike): string | null {
  const status = event.status
  return status === null || status === undefined ? null : String(status)
}

const compare: Record<StatusOperator, (a: number, b: number) => boolean> = {
  '=': (a, b) => a === b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
}

function fieldText (field: FilterField): (event: EventLike) => string | null {
  return field === 'status' ? statusText : (event) => textOf(event, field)
}

// Field terms only; text terms are handled together in compileMatcher.
function compileFieldTest (node: Exclude<FilterNode, { kind: 'text' }>): Test {
  switch (node.kind) {
    case 'equals': {
      const { field, value } = node
      return (event) => textOf(event, field) === value
    }
    case 'prefix': {
      const text = fieldText(node.field)
      const prefix = node.prefix
      return (event) => text(event)?.startsWith(prefix) ?? false
    }
    case 'status': {
      const test = compare[node.operator]
      const value = node.value
      return (event) => event.status !== null && event.status !== undefined && test(event.status, value)
    }
    case 'statusClass': {
      const digit = node.digit
      return (event) => event.status !== null && event.status !== undefined && Math.trunc(event.status / 100) === digit
    }
    case 'level': {
      const accepted = new Set<string>(node.levels.map((i) => levelNames[i]))
      return (event) => event.level !== null && event.level !== undefined && accepted.has(event.level)
    }
  }
}

/** A predicate that holds for the events all of `nodes` hold for; always true for no terms. */
export function compileMatcher (nodes: readonly FilterNode[]): (event: EventLike) => boolean {
  const fieldTests: Test[] = []
  const needles: string[] = []
  const negatedNeedles: boolean[] = []
  for (const node of nodes) {
    if (node.kind === 'text') {
      needles.push(foldCase(node.text))
      negatedNeedles.push(node.negated)
    } else {
      const test = compileFieldTest(node)
      fieldTests.push(node.negated ? (event) => !test(event) : test)
    }
  }

  return (event) => {
    for (const test of fieldTests) if (!test(event)) return false
    if (needles.length === 0) return true
    // An absent field is searched as '', as ifNull(col, '') does; needles are never empty.
    const message = foldCase(event.message ?? '')
    const path = foldCase(event.path ?? '')
    const userAgent = foldCase(event.user_agent ?? '')
    for (let i = 0; i < needles.length; i++) {
      const needle = needles[i]
      const found = message.includes(needle) || path.includes(needle) || userAgent.includes(needle)
      if (found === negatedNeedles[i]) return false
    }
    return true
  }
}
