// @ts-check
// Formatting numbers, sizes, durations and times for display, and editing the `q` filter text
// (docs/api.md section 7.2) when a table row adds a `field:value` term.

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 })
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 })
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 })

/**
 * Whole numbers with grouping; compact (12.3K) past a million or when asked.
 * @param {number | null | undefined} n
 * @param {{ short?: boolean }} [options]
 */
export function formatCount (n, { short = false } = {}) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–'
  if (short || Math.abs(n) >= 1e6) return compact.format(n)
  return Math.abs(n) < 10 && !Number.isInteger(n) ? decimal.format(n) : integer.format(n)
}

/**
 * A rate per second: 0.04, 3.2, 1,204.
 * @param {number | null | undefined} n
 */
export function formatRate (n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–'
  if (n === 0) return '0'
  if (Math.abs(n) < 10) return decimal.format(n)
  return formatCount(n, { short: Math.abs(n) >= 1e5 })
}

const byteUnits = ['B', 'KB', 'MB', 'GB', 'TB', 'PB']

/**
 * Bytes in powers of 1000, one decimal past the first unit.
 * @param {number | null | undefined} n
 */
export function formatBytes (n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–'
  let i = 0
  let v = Math.abs(n)
  while (v >= 1000 && i < byteUnits.length - 1) { v /= 1000; i++ }
  const text = i === 0 ? integer.format(v) : v.toFixed(v < 10 ? 1 : 0)
  return (n < 0 ? '-' : '') + text + ' ' + byteUnits[i]
}

/**
 * A response time given in seconds: "850 µs", "12 ms", "1.24 s".
 * @param {number | null | undefined} s
 */
export function formatSeconds (s) {
  if (s === null || s === undefined || Number.isNaN(s)) return '–'
  if (s === 0) return '0 ms'
  if (s < 0.001) return Math.round(s * 1e6) + ' µs'
  if (s < 1) return (s < 0.01 ? (s * 1000).toFixed(1) : Math.round(s * 1000)) + ' ms'
  return (s < 10 ? s.toFixed(2) : s.toFixed(1)) + ' s'
}

/**
 * A share (0..1) as a percentage.
 * @param {number | null | undefined} share
 */
export function formatPercent (share) {
  if (share === null || share === undefined || Number.isNaN(share)) return '–'
  if (share === 0) return '0%'
  if (share < 0.001) return '<0.1%'
  return (share * 100).toFixed(share < 0.1 ? 1 : 0) + '%'
}

/**
 * A count and its noun: `1 event`, `2 events`, `1,204 hits`.
 * @param {number | null | undefined} n
 * @param {string} noun singular; the plural adds an s
 */
export function formatCountOf (n, noun) {
  return `${formatCount(n)} ${n === 1 ? noun : noun + 's'}`
}

/** @type {(n: number, w?: number) => string} */
const pad = (n, w = 2) => String(n).padStart(w, '0')

/**
 * Event time in local time: 14:03:27.120, with the date when asked.
 * @param {number} ms
 * @param {{ withDate?: boolean }} [options]
 */
export function formatEventTime (ms, { withDate = false } = {}) {
  const d = new Date(ms)
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
  return withDate ? `${formatDate(d)} ${time}` : time
}

/** @param {Date} d */
function formatDate (d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
}

/**
 * "5 s ago", "3 min ago", "2 h ago", "4 d ago".
 * @param {number} ms
 * @param {number} [now]
 */
export function formatAgo (ms, now = Date.now()) {
  const s = Math.max(0, Math.round((now - ms) / 1000))
  if (s < 60) return `${s} s ago`
  if (s < 3600) return `${Math.round(s / 60)} min ago`
  if (s < 86400) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86400)} d ago`
}

/**
 * Value of an <input type="datetime-local"> for a ms timestamp, in local time.
 * @param {number} ms
 */
export function toDateTimeLocal (ms) {
  const d = new Date(ms)
  return `${formatDate(d)}T${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/**
 * 2xx, 3xx, 4xx, 5xx (or '' for none) for CSS classes and colours.
 * @param {unknown} status
 */
export function statusClass (status) {
  return typeof status === 'number' && status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : ''
}

// --- the q filter ----------------------------------------------------------------------------

/**
 * A value as the parser reads it (docs/api.md section 7.2): bare when that is exactly the text,
 * else a quoted phrase (\" and \\ escaped). Quoted: spaces, quotes, a star (a prefix when bare),
 * backslashes, parentheses (they group), and a leading ~ > < = (a regex or a comparison when bare).
 * @param {unknown} value
 */
export function quoteValue (value) {
  const text = String(value)
  if (text !== '' && !/[\s"*\\()]|^[~<>=]/.test(text)) return text
  return '"' + text.replace(/[\\"]/g, (c) => '\\' + c) + '"'
}

/**
 * A field name as the parser reads it: bare when it is letters, digits and _ . - @ / (not
 * starting with -, which negates), else quoted.
 * @param {string} field
 */
export function quoteField (field) {
  return /^[\p{L}\p{N}_.@/][\p{L}\p{N}_.@/-]*$/u.test(field) ? field : '"' + field.replace(/[\\"]/g, (c) => '\\' + c) + '"'
}

/**
 * `field:value`; null (the field is absent) becomes `-field:*`. A value holding a line break (a
 * stack trace) is filtered for by its first line, as a prefix (`err.stack:"Error: x"*`): the
 * search box is an <input>, which drops line breaks, so an exact term would find nothing once
 * the search is run again from the box.
 * @param {string} field
 * @param {unknown} value
 */
export function filterTerm (field, value) {
  const name = quoteField(field)
  if (value === null || value === undefined) return `-${name}:*`
  const text = String(value)
  const lineEnd = text.search(/[\r\n]/)
  if (lineEnd < 0) return `${name}:${quoteValue(text)}`
  return `${name}:"${text.slice(0, lineEnd).replace(/[\\"]/g, (c) => '\\' + c)}"*`
}

/**
 * Whether q's terms (splitTerms) hold an OR outside every parenthesis.
 * @param {readonly string[]} parts
 */
function hasTopLevelOr (parts) {
  let depth = 0
  for (const part of parts) {
    if (part === 'OR' && depth === 0) return true
    if (part.startsWith('"')) continue
    for (const ch of part) depth += ch === '(' ? 1 : ch === ')' ? -1 : 0
  }
  return false
}

/**
 * Splits q into its terms, keeping quoted phrases whole.
 * @param {string} q
 * @returns {string[]}
 */
export function splitTerms (q) {
  return q.match(/(?:[^\s"]+|"(?:\\.|[^"\\])*"?)+/g) ?? []
}

/**
 * q with the given terms added. A positive term on the same field replaces the old one (two
 * different paths can never both hold); an identical term is not repeated. A q with a top-level
 * OR is kept whole in parentheses, since a term added after it would bind to its last branch
 * only (AND binds tighter than OR).
 * @param {string} q
 * @param {readonly string[]} terms
 */
export function addTerms (q, terms) {
  let parts = splitTerms(q)
  if (hasTopLevelOr(parts)) parts = [`(${q.trim()})`]
  for (const term of terms) {
    const field = /^([a-z_]+):/.exec(term)?.[1]
    if (field && !term.startsWith('-')) parts = parts.filter((p) => !p.startsWith(field + ':'))
    if (!parts.includes(term)) parts.push(term)
  }
  return parts.join(' ')
}

/**
 * The browser's time zone as the page shows times in it: `UTC`, or `UTC+01:00` (the offset now),
 * said beside the times (explore32c F13: no zone was shown anywhere).
 * @param {number} [ms] the time whose offset to name (default now)
 */
export function zoneLabel (ms = Date.now()) {
  const offset = -new Date(ms).getTimezoneOffset()
  if (offset === 0) return 'UTC'
  const abs = Math.abs(offset)
  return `UTC${offset > 0 ? '+' : '-'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
}
