// @ts-check
// Editing the `q` text from clicks (docs/api.md section 7.2): a `name:value` term for a field and
// a value, quoted where the grammar needs it; adding it to a query (a top-level OR is wrapped in
// parentheses first, since AND binds tighter); a second click on the same value turning it into
// its exclusion, a third removing it; and the word under the caret, for the suggestions. Names
// and values are quoted by format.js's quoteField and quoteValue.
import { quoteField, quoteValue } from './format.js'

export { quoteField, quoteValue }

/**
 * `name:value`, or `-name:value` to exclude it.
 * @param {string} name
 * @param {string} value the value's text (columns.js valueText)
 * @param {boolean} [exclude]
 */
export function filterTerm (name, value, exclude = false) {
  return (exclude ? '-' : '') + quoteField(name) + ':' + quoteValue(value)
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
  if (tokens.includes(term)) return q.trim()
  const base = tokens.includes('OR') ? `(${tokens.join(' ')})` : tokens.join(' ')
  return `${base} ${term}`
}

/**
 * A click on a value: filter for it; when q already filters for it, exclude it instead; when q
 * already excludes it, drop that. exclude (a modifier click) goes straight to excluding.
 * @param {string} q
 * @param {string} name
 * @param {string} value
 * @param {{ exclude?: boolean }} [options]
 */
export function toggleFilter (q, name, value, { exclude = false } = {}) {
  const positive = filterTerm(name, value)
  const negative = filterTerm(name, value, true)
  const tokens = topLevelTokens(q.trim())
  if (tokens.includes(negative)) return tokens.filter((t) => t !== negative).join(' ')
  if (tokens.includes(positive)) return tokens.map((t) => (t === positive ? negative : t)).join(' ')
  return addCondition(q, exclude ? negative : positive)
}

/**
 * Whether q holds `name:value` at the top level: 'for', 'against' (excluded) or null.
 * @param {string} q
 * @param {string} name
 * @param {string} value
 * @returns {'for' | 'against' | null}
 */
export function filterState (q, name, value) {
  const tokens = topLevelTokens(q)
  if (tokens.includes(filterTerm(name, value))) return 'for'
  if (tokens.includes(filterTerm(name, value, true))) return 'against'
  return null
}

/**
 * The word the caret is in, for suggestions: its start and end in q, and either a field name
 * being typed (no colon yet) or a field and the value typed after its colon.
 * @param {string} q
 * @param {number} caret
 * @returns {{ start: number, end: number, negated: boolean, field: string | null, text: string }}
 */
export function wordAt (q, caret) {
  let start = caret
  while (start > 0 && !/[\s(]/.test(q[start - 1])) start--
  let end = caret
  while (end < q.length && !/[\s)]/.test(q[end])) end++
  let word = q.slice(start, end)
  let negated = false
  if (word.startsWith('-')) { negated = true; word = word.slice(1); start++ }
  const colon = word.indexOf(':')
  if (colon === -1 || word.startsWith('"')) return { start, end, negated, field: null, text: word }
  return { start, end, negated, field: word.slice(0, colon), text: word.slice(colon + 1).replace(/^"/, '') }
}
