// Compiles a parsed `q` (filter-parser.ts) into a WHERE fragment over the events table, for
// ClickHouse 18.16 and current versions (docs/api.md section 7.2). Every value is a literal
// rendered by storage/sql.ts; column names come from the field table, never from q; attributes
// are read only through attr-sql.ts (attrValueSql, attrPresentUnderSql), which knows their storage.
//
// Each term compiles to a UInt8 that is never NULL: a comparison with a Nullable column (NULL when
// the field is absent) yields NULL, which WHERE drops, but `NOT NULL` is NULL too and 18.16 even
// answers NULL to `0 AND NULL`. Wrapping every term in ifNull(.., 0) makes "absent" plainly false,
// so NOT, AND and OR work on 0 and 1 only and a negated term is exactly the complement: `-host:a`
// keeps rows whose host is absent, as filter-match.ts does in JS. The fragment is parenthesized,
// safe to AND into any WHERE.
//
// - equals:  ifNull(host = 'a', 0)              - prefix: ifNull(startsWith(path, '/api/'), 0)
// - present: isNotNull(path), attrPresentUnderSql   - integer columns as text: toString(status)
// - compare: ifNull(status >= 500, 0); text through numberSql (filter-number.ts's rule)
// - regex:   ifNull(match(text, 're2'), 0), the pattern rewritten by filter-regex.ts
// - level: ifNull(level IN ('warn', 'error', 'fatal'), 0) (`level:>=warn`); no level: 0
// - text: ifNull(position(lowerUTF8(col), folded) > 0, 0) over message, path, user_agent, OR-ed;
//   the needle is folded in JS (case-fold.ts), and the three lowerUTF8 calls are shared by all text
//   terms because ClickHouse computes an identical expression once per block. The functions run
//   on the Nullable column (NULL in, NULL out) and ifNull turns the UInt8 result's NULLs into 0:
//   ifNull(col, '') around the string instead copies every string of the column first, a quarter
//   of the search's time (bench/README.md, "Events API").
// startsWith (checked on 18.16) needs no LIKE escaping of % and _.
//
// Pre-filters (indexes: true, on servers with skip indexes; docs/schema-versions.md): beside the
// exact fragment, a conjunct that every matching row satisfies and that a skip index of `events`
// can answer (lib/storage/event-schema.ts): an ASCII word or phrase as LIKE over the folded search
// text (search_text), an attribute equality as has() over the key=value pairs (attr_pairs). The exact
// fragment stays, so results are the same with or without them; they only let ClickHouse skip
// granules. Only positive positions get one: a term under NOT, or an OR with a branch that has
// none, adds nothing. Not over ranges holding rows from before migration 11 (their pairs are empty).
import { Buffer } from 'node:buffer'
import { joinSql, rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { foldCase, foldProbe, foldTable } from './case-fold.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { levelNames } from '../events/level.ts'
import { maxNumberDigits, maxNumberScale, powersOfTen } from './filter-number.ts'
import type { FilterNumber } from './filter-number.ts'
import type { CompareTerm, FieldRef, FilterNode, FilterTerm } from './filter-parser.ts'
import { isNumericColumn, someTerm } from './filter-parser.ts'
import { attrHasValueSql, attrPresentUnderSql, attrValueSql, columnSql, noLegacyRows } from './attr-sql.ts'
import type { AttrScope } from './attr-sql.ts'
import { attrPairPrefilter, searchTextPrefilter } from '../storage/event-schema.ts'

const searchedColumns = [rawSql('message'), rawSql('path'), rawSql('user_agent')]

/** The field's value as a Nullable(String): text columns as they are, integer columns in decimal. */
function textSql (field: FieldRef, scope: AttrScope): SqlFragment {
  if (field.kind === 'attribute') return attrValueSql(field.path, scope)
  const col = columnSql(field.column, scope)
  return field.type === 'integer' ? sql`toString(${col})` : col
}

const powersSql = rawSql(`[${powersOfTen.map((p) => String(p)).join(', ')}]`)
// filter-number.ts's numberPattern; `{1,3}` and the groups are RE2 as well as JS.
const numberRe2 = '^-?[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$'

/**
 * The numeric value of a text expression by filter-number.ts's rule, NULL when it is none: the
 * digits as an integer times or divided by an exact power of ten, never toFloat64(text) (see
 * there). The text is bound once by a lambda over a one-element array, and the digits and scale
 * by a second: written inline, an attribute's expression (long for rows from before migration
 * 11) would be repeated some twenty times per term, past ClickHouse's 256 KiB max_query_size for
 * a q of 20 such terms. ClickHouse computes both sides of an `if` for every row, so the parts use
 * the OrZero conversions and array reads out of range, which give 0 rather than throw.
 */
function numberSql (text: SqlFragment): SqlFragment {
  const fraction = sql`extract(q_text, ${'^-?[0-9]+\\.([0-9]+)'})`
  const digits = sql`concat(extract(q_text, ${'^-?([0-9]+)'}), ${fraction})`
  const scale = sql`toInt64OrZero(extract(q_text, ${'[eE][+]?(-?[0-9]+)$'})) - toInt64(length(${fraction}))`
  const mantissa = rawSql('toFloat64(toUInt64OrZero(q_digits))')
  const magnitude = sql`if(q_scale >= 0, ${mantissa} * ${powersSql}[q_scale + 1], ${mantissa} / ${powersSql}[1 - q_scale])`
  const valid = sql`ifNull(match(q_text, ${numberRe2}) AND length(q_digits) <= ${maxNumberDigits} AND q_scale >= ${-maxNumberScale} AND q_scale <= ${maxNumberScale}, 0)`
  const value = sql`if(${valid}, if(startsWith(q_text, '-'), -1, 1) * ${magnitude}, NULL)`
  return sql`arrayElement(arrayMap(q_text -> arrayElement(arrayMap((q_digits, q_scale) -> ${value}, [${digits}], [${scale}]), 1), [${text}]), 1)`
}

/** Whether a text expression is a number by filter-number.ts's rule (what `q`'s comparisons compare), as UInt8. */
export function isNumberSql (text: SqlFragment): SqlFragment {
  return sql`isNotNull(${numberSql(text)})`
}

/**
 * numberPattern with at most maxNumberDigits digits (integer and fraction together), as one RE2
 * expression: one match() where numberSql takes three extracts and two lambdas (/fields' types
 * read every attribute value; numberSql doubled that read's time). Without an exponent this is
 * exactly filter-number.ts's rule (a fraction of at most 14 digits keeps the scale within 18);
 * a text with an exponent may still be out of scale (`1e400`): isNumberSql decides those.
 */
export const numberTextRe2 = `^-?(?:[0-9]{1,${maxNumberDigits}}${Array.from({ length: maxNumberDigits - 1 }, (_, i) =>
  `|[0-9]{${i + 1}}\\.[0-9]{1,${maxNumberDigits - 1 - i}}`).join('')})([eE][+-]?[0-9]{1,3})?$`

/** A number of q, exactly as filter-number.ts computes it (a float literal would be read inexactly by 18.16). */
function numberLiteral (n: FilterNumber): SqlFragment {
  if (Number.isSafeInteger(n.value)) return rawSql(String(n.value))
  const op = n.scale >= 0 ? '*' : '/'
  const magnitude = rawSql(`(toFloat64(${n.mantissa}) ${op} ${powersOfTen[Math.abs(n.scale)]})`)
  return n.negative ? sql`(-${magnitude})` : magnitude
}

/** A double exactly, by its bits: a float literal would be read inexactly by 18.16. */
function doubleLiteral (x: number): SqlFragment {
  const bits = Buffer.alloc(8)
  bits.writeDoubleLE(x)
  return rawSql(`reinterpretAsFloat64(unhex('${bits.toString('hex')}'))`)
}

/**
 * How the server folds text like case-fold.ts: 'lowerUTF8' where its lowerUTF8 is 18.16's (Poco's
 * tables), 'table' where it is not (26.x lowers with ICU: İ, ẞ, title case, the Kelvin sign...),
 * then translateUTF8 with case-fold.ts's own table, so SQL and the tail's matcher fold alike.
 */
export type FoldMode = 'lowerUTF8' | 'table'

/** Asks the server how its lowerUTF8 folds (once, at start). */
export async function detectFold (clickhouse: ClickHouse): Promise<FoldMode> {
  const [row] = await clickhouse.query<{ folded: string }>(sql`SELECT lowerUTF8(${foldProbe}) AS folded`)
  return row.folded === foldCase(foldProbe) ? 'lowerUTF8' : 'table'
}

let foldTableSql: { from: SqlFragment, to: SqlFragment } | undefined

/** translateUTF8 with case-fold.ts's table: exactly foldCase, on servers that have translateUTF8 (22.x on). */
function tableFoldSql (col: SqlFragment): SqlFragment {
  if (foldTableSql === undefined) {
    const table = foldTable()
    foldTableSql = { from: sql`${table.from}`, to: sql`${table.to}` }
  }
  return sql`translateUTF8(${col}, ${foldTableSql.from}, ${foldTableSql.to})`
}

/** The folded text of a searched column, as the text terms read it. */
type FoldOf = (col: SqlFragment) => SqlFragment
const lowerUtf8: FoldOf = (col) => sql`lowerUTF8(${col})`
/** In 'table' mode each column's fold is bound once by a lambda (filterToSql): its table is 4 KB of SQL. */
const foldParameter: FoldOf = (col) => rawSql(`q_fold_${col.text}`)

function hasTextTerm (node: FilterNode): boolean {
  return someTerm(node, (term) => term.kind === 'text')
}

function compileTerm (node: FilterTerm, scope: AttrScope, fold: FoldOf): SqlFragment {
  switch (node.kind) {
    case 'text': {
      const needle = foldCase(node.text)
      const scans = searchedColumns.map((col) => sql`ifNull(position(${fold(col)}, ${needle}) > 0, 0)`)
      return sql`(${joinSql(scans, ' OR ')})`
    }
    case 'equals':
      return sql`ifNull(${textSql(node.field, scope)} = ${node.value}, 0)`
    case 'prefix':
      return sql`ifNull(startsWith(${textSql(node.field, scope)}, ${node.prefix}), 0)`
    case 'present':
      return node.field.kind === 'attribute' ? attrPresentUnderSql(node.field.path, scope) : sql`isNotNull(${columnSql(node.field.column, scope)})`
    case 'regex':
      return sql`ifNull(match(${textSql(node.field, scope)}, ${node.regex.re2}), 0)`
    case 'compare': {
      const { field } = node
      const value = isNumericColumn(field)
        ? rawSql(field.column)
        : numberSql(textSql(field, scope))
      // The operator comes from the parser's fixed set, never from q as text. A number of 16 or
      // more digits is also the double its text denotes (filter-number.ts compareBounds).
      const n = node.value
      if (n.nearest === n.value) return sql`ifNull(${value} ${rawSql(node.operator)} ${numberLiteral(n)}, 0)`
      const nearest = doubleLiteral(n.nearest)
      if (node.operator === '=') return sql`ifNull(indexOf([${numberLiteral(n)}, ${nearest}], ${value}) > 0, 0)`
      const useNearest = (node.operator === '>=' || node.operator === '<') === (n.nearest < n.value)
      return sql`ifNull(${value} ${rawSql(node.operator)} ${useNearest ? nearest : numberLiteral(n)}, 0)`
    }
    case 'statusClass':
      return sql`ifNull(intDiv(status, 100) = ${node.digit}, 0)`
    case 'level':
      if (node.levels.length === 0) return rawSql('0')
      return sql`ifNull(level IN (${joinSql(node.levels.map((i) => sql`${levelNames[i]}`), ', ')}), 0)`
  }
}

function compileNode (node: FilterNode, scope: AttrScope, fold: FoldOf): SqlFragment {
  switch (node.kind) {
    case 'and': return sql`(${joinSql(node.children.map((c) => compileNode(c, scope, fold)), ' AND ')})`
    case 'or': return sql`(${joinSql(node.children.map((c) => compileNode(c, scope, fold)), ' OR ')})`
    case 'not': return sql`(NOT ${compileNode(node.child, scope, fold)})`
    default: return compileTerm(node, scope, fold)
  }
}

const nonAscii = /[^\p{ASCII}]/u
/** A word of tokenbf_v1's kind (ASCII letters and digits) with a separator on each side. */
const innerWord = /[^a-z0-9][a-z0-9]+[^a-z0-9]/

/** A condition every row the node accepts satisfies, made of `leaf`'s conditions of its positive terms; null: none. */
function prefilterOf (node: FilterNode, leaf: (term: FilterTerm) => SqlFragment | null): SqlFragment | null {
  switch (node.kind) {
    case 'and': {
      const parts = node.children.map((c) => prefilterOf(c, leaf)).filter((p) => p !== null)
      return parts.length === 0 ? null : sql`(${joinSql(parts, ' AND ')})`
    }
    case 'or': {
      const parts = node.children.map((c) => prefilterOf(c, leaf))
      return parts.some((p) => p === null) ? null : sql`(${joinSql(parts as SqlFragment[], ' OR ')})`
    }
    case 'not':
      return null
    default:
      return leaf(node)
  }
}

/**
 * A term's pre-filter on a server with skip indexes (and short-circuit evaluation): a condition
 * a skip index of `events` can answer, or a comparison's cheap guard (compareGuardSql), which
 * 26.x's AND evaluates before the exact rule and spares it the rows far from the bound; null: none.
 */
function indexPrefilter (node: FilterTerm): SqlFragment | null {
  switch (node.kind) {
    case 'text': {
      // ASCII needles only: the index folds with the server's lowerUTF8, which on 26.x (ICU)
      // differs from case-fold.ts on some non-ASCII letters, but never on an ASCII run, so a row
      // whose folded text holds an ASCII needle has it in the index's text as well.
      // And only a needle with a whole word inside (text on both sides of it within the needle):
      // the token filter can answer nothing else, and a pre-filter it cannot answer only adds
      // work (a one-word search took 40% longer with it: bench/README.md, "Version-aware schema").
      const needle = foldCase(node.text)
      return !nonAscii.test(needle) && innerWord.test(needle) ? searchTextPrefilter(needle) : null
    }
    case 'equals':
      return node.field.kind === 'attribute' ? attrPairPrefilter(node.field.path, node.value) : null
    case 'compare':
      // filterToSql adds pre-filters only over ranges without rows from before migration 11.
      return compareGuardSql(node, noLegacyRows)
    default:
      return null
  }
}

export interface FilterSqlOptions {
  /** The server has event-schema.ts's skip indexes: add their pre-filters (docs/schema-versions.md). */
  indexes?: boolean
  /** How text is folded (detectFold); default lowerUTF8, 18.16's. */
  fold?: FoldMode
}

/**
 * The WHERE fragment that holds for the events the tree accepts; `1` for no filter. `scope`
 * says whether the read's range can hold rows stored before attributes had their arrays
 * (attr-sql.ts attrScopeFor); the default reads the arrays only.
 */
export function filterToSql (node: FilterNode | null, scope: AttrScope = noLegacyRows, options: FilterSqlOptions = {}): SqlFragment {
  if (node === null) return rawSql('1')
  let exact: SqlFragment
  if (options.fold === 'table' && hasTextTerm(node)) {
    // Each searched column folded once, bound to q_fold_<column> for every text term.
    const body = compileNode(node, scope, foldParameter)
    exact = sql`arrayElement(arrayMap((${joinSql(searchedColumns.map(foldParameter), ', ')}) -> ${body}, ${joinSql(searchedColumns.map((c) => sql`[${tableFoldSql(c)}]`), ', ')}), 1)`
  } else {
    exact = compileNode(node, scope, lowerUtf8)
  }
  const prefilter = options.indexes === true && scope.before === 0 ? prefilterOf(node, indexPrefilter) : null
  return prefilter === null ? sql`(${exact})` : sql`(${prefilter} AND ${exact})`
}

/**
 * The PREWHERE of a read on a server without skip indexes (18.16; docs/schema-versions.md,
 * "Pre-filters"), with filterToSql's fragment then in WHERE: for each attribute equality in a
 * positive position, has(attr_values, value); for each comparison of text as a number, a
 * comparison by toFloat64OrNull (compareGuardSql). ClickHouse reads that one array of every row in
 * range, and both arrays (the exact test) only of the granules where the value occurs: a rare
 * attribute over 30 M events read 4.5 GiB instead of 8.9 and took 40% less CPU (bench/README.md,
 * "Find anything"). null when q has no such term, on servers with skip indexes (their pre-filter
 * is in filterToSql's fragment), and over ranges that can hold rows from before migration 11.
 */
export function valuesPrefilterSql (node: FilterNode | null, scope: AttrScope, options: FilterSqlOptions = {}): SqlFragment | null {
  if (node === null || options.indexes === true || scope.before !== 0) return null
  return prefilterOf(node, (term) => {
    if (term.kind === 'equals' && term.field.kind === 'attribute') return attrHasValueSql(term.value)
    if (term.kind === 'compare') return compareGuardSql(term, scope)
    return null
  })
}

/**
 * A comparison of text as a number, by toFloat64OrNull: a necessary condition of numberSql's
 * exact one, cheap where that one is not (three extracts, a match and two lambdas a row, which
 * 18.16 computes for every row of its blocks: it has no short-circuit evaluation). In PREWHERE
 * it keeps the exact test to the rows near the bound: `order.total:>=499` over an hour of the
 * find set (1.25 M events, 18.16, one thread) took 350 ms instead of 700-740 (bench/README.md,
 * "Find anything"). On 26.x it is ANDed before the exact test (indexPrefilter): 1.6-2x faster
 * over 2 M rows (bench/README.md, "A numeric comparison on text"). toFloat64OrNull reads every text numberSql accepts (signs, exponents in
 * either case, leading zeros, 19 digits), within an ulp or two of its exact value; the bound is
 * widened by a billionth, so no row the exact test keeps is left out. Numeric columns need none.
 */
function compareGuardSql (term: CompareTerm, scope: AttrScope): SqlFragment | null {
  const { field, operator, value } = term
  if (isNumericColumn(field)) return null
  const slack = Math.abs(value.value) * 1e-9 + 1e-300
  const low = value.value - slack
  const high = value.value + slack
  if (!Number.isFinite(low) || !Number.isFinite(high)) return null
  const x = sql`toFloat64OrNull(${textSql(field, scope)})`
  const atLeast = sql`${x} >= ${rawSql(String(low))}`
  const atMost = sql`${x} <= ${rawSql(String(high))}`
  const test = operator === '>' || operator === '>=' ? atLeast : operator === '<' || operator === '<=' ? atMost : sql`${atLeast} AND ${atMost}`
  return sql`ifNull(${test}, 0)`
}
