// @ts-check
// Editing the `q` text from clicks (docs/api.md section 7.2): a `name:value` term for a field and
// a value, quoted where the grammar needs it; adding it to a query (a top-level OR is wrapped in
// parentheses first, since AND binds tighter); a second click on the same value turning it into
// its exclusion, a third removing it; and the word under the caret, for the suggestions. Names
// and values are quoted by format.js's quoteField and quoteValue.
import { filterTerm as fieldTerm, quoteField, quoteValue, splitTerms } from './format.js'

export { quoteField, quoteValue }

/**
 * `name:value`, or `-name:value` to exclude it (format.js filterTerm: a value with a line break
 * by its first line, as a prefix).
 * @param {string} name
 * @param {string} value the value's text (columns.js valueText)
 * @param {boolean} [exclude]
 */
export function filterTerm (name, value, exclude = false) {
  return (exclude ? '-' : '') + fieldTerm(name, value)
}

/**
 * The query's top-level tokens: words, quoted phrases, parenthesised groups kept whole.
 * @param {string} q
 * @returns {string[]}
 */
export function topLevelTokens (q) {
  /** @type {string[]} */
  const tokens = []
  let depth = 0
  let start = -1
  let quoted = false
  for (let i = 0; i < q.length; i++) {
    const c = q[i]
    if (quoted) {
      if (c === '\\') i++
      else if (c === '"') quoted = false
      continue
    }
    if (c === '"') { quoted = true; if (start === -1) start = i; continue }
    if (c === '(') { depth++; if (start === -1) start = i; continue }
    if (c === ')') { depth = Math.max(0, depth - 1); continue }
    if (/\s/.test(c) && depth === 0) {
      if (start !== -1) tokens.push(q.slice(start, i))
      start = -1
    } else if (start === -1) start = i
  }
  if (start !== -1) tokens.push(q.slice(start))
  return tokens
}

/**
 * q with `term` added as one more condition: a query with a top-level OR is parenthesised first.
 * @param {string} q
 * @param {string} term
 */
export function addCondition (q, term) {
  const tokens = topLevelTokens(q.trim())
  if (tokens.length === 0) return term
  const found = findCondition(tokens, term)
  if (found !== null && !found.negated) return q.trim() // already a condition of the whole query
  const base = tokens.includes('OR') ? `(${tokens.join(' ')})` : tokens.join(' ')
  return `${base} ${term}`
}

/**
 * Where q's top-level tokens hold `term` as a condition of the whole query: `term`, or negated as
 * `-term` or `NOT term`; null when they do not, or when q has a top-level OR (a term in one
 * branch is no condition of the whole query).
 * @param {readonly string[]} tokens
 * @param {string} term
 * @returns {{ start: number, end: number, negated: boolean } | null}
 */
function findCondition (tokens, term) {
  if (tokens.includes('OR')) return null
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i] === term) return tokens[i - 1] === 'NOT' ? { start: i - 1, end: i + 1, negated: true } : { start: i, end: i + 1, negated: false }
    if (tokens[i] === '-' + term) return { start: i, end: i + 1, negated: true }
  }
  return null
}

/**
 * tokens without [start, end), and without the AND that joined them to a neighbour.
 * @param {readonly string[]} tokens
 * @param {number} start
 * @param {number} end
 */
function withoutCondition (tokens, start, end) {
  if (tokens[end] === 'AND') end++
  else if (tokens[start - 1] === 'AND') start--
  return [...tokens.slice(0, start), ...tokens.slice(end)]
}

/**
 * A click on a value: filter for it; when q already filters for it, exclude it instead; when q
 * already excludes it (`-name:value` or `NOT name:value`), drop that. exclude (a modifier click)
 * goes straight to excluding.
 * @param {string} q
 * @param {string} name
 * @param {string} value
 * @param {{ exclude?: boolean }} [options]
 */
export function toggleFilter (q, name, value, { exclude = false } = {}) {
  const positive = filterTerm(name, value)
  const tokens = topLevelTokens(q.trim())
  const found = findCondition(tokens, positive)
  if (found?.negated) return withoutCondition(tokens, found.start, found.end).join(' ')
  if (found) return [...tokens.slice(0, found.start), filterTerm(name, value, true), ...tokens.slice(found.end)].join(' ')
  return addCondition(q, exclude ? filterTerm(name, value, true) : positive)
}

/**
 * A row's + or − (filter for, exclude): q with `name:value` required, or excluded; the term of
 * the other kind, if q has one, is turned around, and the same term is not added twice.
 * @param {string} q
 * @param {string} name
 * @param {string} value
 * @param {boolean} exclude
 */
export function setFilter (q, name, value, exclude) {
  const tokens = topLevelTokens(q.trim())
  const found = findCondition(tokens, filterTerm(name, value))
  if (found !== null && found.negated === exclude) return q.trim()
  const term = filterTerm(name, value, exclude)
  if (found !== null) return [...tokens.slice(0, found.start), term, ...tokens.slice(found.end)].join(' ')
  return addCondition(q, term)
}

/**
 * Whether q requires `name:value` ('for'), excludes it ('against') or neither (null).
 * @param {string} q
 * @param {string} name
 * @param {string} value
 * @returns {'for' | 'against' | null}
 */
export function filterState (q, name, value) {
  const found = findCondition(topLevelTokens(q), filterTerm(name, value))
  return found === null ? null : found.negated ? 'against' : 'for'
}

/**
 * The field terms q excludes as a whole (`-name:...`, `NOT name:...`, outside any OR): no matching
 * event holds them, so the sidebar lists them apart, for the click that drops the term. `label`
 * is the value as shown (a prefix ends with …); `term` the term as q has it (for dropTerm).
 * @param {string} q
 * @returns {Array<{ name: string, label: string, term: string }>}
 */
export function excludedTerms (q) {
  const tokens = topLevelTokens(q)
  if (tokens.includes('OR')) return []
  /** @type {Array<{ name: string, label: string, term: string }>} */
  const out = []
  tokens.forEach((token, i) => {
    const negated = token.startsWith('-') && token.length > 1
    if (!negated && tokens[i - 1] !== 'NOT') return
    const parsed = parseFieldTerm(negated ? token.slice(1) : token)
    if (parsed !== null) out.push({ ...parsed, term: negated ? token : `NOT ${token}` })
  })
  return out
}

/** A quoted text's content: \" is a quote and \\ a backslash, as the parser reads them. @param {string} inner */
const unquote = (inner) => inner.replace(/\\(["\\])/g, '$1')

/**
 * `name:value` split into the field's name and the value as shown; null for a word or phrase.
 * @param {string} term
 * @returns {{ name: string, label: string } | null}
 */
function parseFieldTerm (term) {
  let name
  let rest
  if (term.startsWith('"')) {
    const close = /^"((?:\\.|[^"\\])*)":/.exec(term)
    if (close === null) return null
    name = unquote(close[1])
    rest = term.slice(close[0].length)
  } else {
    const colon = term.indexOf(':')
    if (colon <= 0) return null
    name = term.slice(0, colon)
    rest = term.slice(colon + 1)
  }
  const quoted = /^"((?:\\.|[^"\\])*)"(\*?)$/.exec(rest)
  const label = quoted === null ? rest : unquote(quoted[1]) + (quoted[2] === '*' ? '…' : '')
  return { name, label }
}

/**
 * q without `term` (as excludedTerms gives it), and the AND that joined it to a neighbour.
 * @param {string} q
 * @param {string} term
 */
export function dropTerm (q, term) {
  const tokens = topLevelTokens(q.trim())
  const words = term.startsWith('NOT ') ? ['NOT', term.slice(4)] : [term]
  for (let i = 0; i + words.length <= tokens.length; i++) {
    if (words.every((w, k) => tokens[i + k] === w)) return withoutCondition(tokens, i, i + words.length).join(' ')
  }
  return q.trim()
}

/**
 * The word the caret is in, for suggestions: its start and end in q, and either a field name
 * being typed (no colon yet) or a field and the value typed after its colon. A word ends at
 * whitespace or a parenthesis outside double quotes (\" escapes a quote), as the parser reads
 * it: `"odd key":` names a field, `message:"card iss` is a value being typed, `"a phrase"` none.
 * @param {string} q
 * @param {number} caret
 * @returns {{ start: number, end: number, negated: boolean, field: string | null, text: string }}
 */
export function wordAt (q, caret) {
  let start = caret
  let end = caret
  for (let i = 0; i < q.length;) {
    if (/[\s()]/.test(q[i])) { i++; continue }
    const from = i
    let quoted = false
    for (; i < q.length && (quoted || !/[\s()]/.test(q[i])); i++) {
      if (quoted && q[i] === '\\') i++
      else if (q[i] === '"') quoted = !quoted
    }
    if (from <= caret && caret <= i) { start = from; end = i; break }
    if (from > caret) break
  }
  let word = q.slice(start, end)
  let negated = false
  if (word.startsWith('-')) { negated = true; word = word.slice(1); start++ }
  const name = /^"((?:\\.|[^"\\])*)":/.exec(word)
  if (name !== null) return { start, end, negated, field: name[0].slice(0, -1), text: valueText(word.slice(name[0].length)) }
  const colon = word.indexOf(':')
  if (colon === -1 || word.startsWith('"')) return { start, end, negated, field: null, text: word }
  return { start, end, negated, field: word.slice(0, colon), text: valueText(word.slice(colon + 1)) }
}

/** A value as typed: a quoted one's content up to its closing quote, if any. @param {string} raw */
function valueText (raw) {
  const quoted = /^"((?:\\.|[^"\\])*)/.exec(raw)
  return quoted === null ? raw : unquote(quoted[1])
}

/** Lower-case spellings of q's keywords, which q searches as words (docs/api.md section 7.2). */
const lowerKeywords = new Set(['or', 'and', 'not'])

/**
 * What a search that found nothing may have meant, for the slips a newcomer makes (explore32c
 * F7): a bare trace or span id, which as a word is looked for in the message, path and user agent
 * only; `or`, `and` or `not` in lower case, which are words. Each hint with the search it offers.
 * @param {string} q
 * @returns {Array<{ text: string, q: string }>}
 */
export function emptySearchHints (q) {
  const terms = splitTerms(q)
  /** @type {Array<{ text: string, q: string }>} */
  const hints = []
  for (const [field, digits] of /** @type {const} */ ([['trace_id', 32], ['span_id', 16]])) {
    const id = terms.find((t) => t.length === digits && /^[0-9a-fA-F]+$/.test(t))
    if (id !== undefined) {
      hints.push({ text: `A bare word is looked for in the message, path and user agent. Search ${id} as a ${field === 'trace_id' ? 'trace' : 'span'} id?`, q: terms.map((t) => t === id ? `${field}:${t}` : t).join(' ') })
    }
  }
  if (terms.some((t) => lowerKeywords.has(t))) {
    hints.push({ text: 'OR, AND and NOT are upper case: in lower case they are words to search for.', q: terms.map((t) => lowerKeywords.has(t) ? t.toUpperCase() : t).join(' ') })
  }
  return hints
}
