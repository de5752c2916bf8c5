// @ts-check
// The view in the URL hash (#stream=web&range=1h&q=status:5xx, or range=custom&from=&to= in ms;
// Explore adds view=explore|panels, cols=time,level,message, by=service, ev=<id>, ctx=<id>), so a
// reload or a shared link shows the same view; and the time parameters a range stands for.
import { rangeMs } from './state.js'
import { formatEventTime } from './format.js'

/** What Explore's histogram is grouped by when the URL does not say. */
export const defaultBy = 'level'

/** @typedef {import('./state.js').AppState} AppState */

/**
 * Reads the hash into state; true when it changed something.
 * @param {AppState} state
 * @param {string} hash location.hash
 */
export function readHash (state, hash) {
  const params = new URLSearchParams(hash.slice(1))
  const before = snapshot(state)
  const stream = params.get('stream')
  if (stream !== null) state.stream = stream
  const range = params.get('range')
  if (range === 'custom' && Number(params.get('from')) < Number(params.get('to'))) {
    state.range = 'custom'
    state.custom = { from: Number(params.get('from')), to: Number(params.get('to')) }
  } else if (range !== null && (range === 'live' || rangeMs[range])) {
    state.range = range
  }
  state.q = params.get('q') ?? ''
  const mode = params.get('view')
  state.mode = mode === 'explore' || mode === 'panels' ? mode : null
  const cols = params.get('cols')
  state.columns = cols ? readColumns(cols) : null
  state.by = params.get('by') || defaultBy
  state.event = params.get('ev') || null
  state.context = params.get('ctx') || null
  return snapshot(state) !== before
}

/**
 * The columns as `cols` holds them: comma-separated, a name with a comma, a quote or a backslash
 * in double quotes with `\"` and `\\` escaped, as `context?same=` writes one (docs/api.md section
 * 7.2): an attribute `a,b` stays one column through a reload (explore34c H4).
 * @param {readonly string[]} columns
 */
export function writeColumns (columns) {
  return columns.map((c) => /[,"\\]/.test(c) ? '"' + c.replace(/["\\]/g, (x) => '\\' + x) + '"' : c).join(',')
}

/**
 * writeColumns' names back; a quote left open runs to the end.
 * @param {string} text
 * @returns {string[]}
 */
export function readColumns (text) {
  /** @type {string[]} */
  const out = []
  let name = ''
  let quoted = false
  for (let i = 0; i <= text.length; i++) {
    const c = text[i]
    if (quoted && c === '\\' && i + 1 < text.length) name += text[++i]
    else if (c === '"') quoted = !quoted
    else if ((c === ',' && !quoted) || i === text.length) {
      if (name !== '') out.push(name)
      name = ''
    } else {
      name += c
    }
  }
  return out
}

/** @param {AppState} state */
function snapshot (state) {
  return JSON.stringify([state.stream, state.range, state.custom, state.q, state.mode, state.columns, state.by, state.event, state.context])
}

/**
 * The hash for state (replaces the history entry: no back-button step per search).
 * @param {AppState} state
 */
export function writeHash (state) {
  const params = new URLSearchParams({ stream: state.stream ?? '', range: state.range })
  if (state.range === 'custom' && state.custom) { params.set('from', String(state.custom.from)); params.set('to', String(state.custom.to)) }
  if (state.q) params.set('q', state.q)
  if (state.mode) params.set('view', state.mode)
  if (state.columns) params.set('cols', writeColumns(state.columns))
  if (state.by !== defaultBy) params.set('by', state.by)
  if (state.event) params.set('ev', state.event)
  if (state.context) params.set('ctx', state.context)
  window.history.replaceState(null, '', '#' + params)
}

/**
 * from/to parameters of a historical range (docs/api.md section 7.1).
 * @param {AppState} state
 * @returns {{ from: string | number, to: string | number }}
 */
export function rangeParams (state) {
  if (state.range === 'custom' && state.custom) return { from: state.custom.from, to: state.custom.to }
  return { from: `now-${state.range}`, to: 'now' }
}

/**
 * The historical range in ms as of `now` (a preset's end taken once: the reads of one view, and
 * its export, then count the same events; explore32c F2), or null for live.
 * @param {AppState} state
 * @param {number} now ms
 * @returns {{ from: number, to: number } | null}
 */
export function resolveWindow (state, now) {
  if (state.range === 'live') return null
  if (state.range === 'custom' && state.custom) return stepAligned(state.custom.from, state.custom.to, state.q !== '', state.by === 'level')
  const span = rangeMs[state.range]
  if (span === undefined) return null
  // The start on the histogram's buckets, as a zoom's ends are, so that the hits, the sidebar and
  // the histogram count the same events (explore32c F3: /stats widens a range to whole steps, and
  // its legend counted 5,067 beside 5,046 hits). The grid is a multiple of every step /stats picks
  // for the preset (docs/api.md 7.4: about 100 points; whole minutes from the minute rollup,
  // whole hours for by=level over a day), so the range is at most one grid longer. The end stays
  // now: /stats widens it into the future, which holds no events yet, and events arriving later
  // are not the view's (its export holds what it counted).
  const grid = presetGridMs[state.range] ?? 1000
  return { from: Math.floor((now - span) / grid) * grid, to: now }
}

const second = 1000
const minute = 60 * second
const hour = 60 * minute
const day = 24 * hour
/** lib/query/stats-plan.ts's nice steps, chooseStep's target and rollup ranges (test/dashboard/dashboard-client.test.ts holds them to planStats). */
const niceStepsMs = [second, 5 * second, 10 * second, 30 * second, minute, 5 * minute, 10 * minute, 30 * minute, hour, 3 * hour, 6 * hour, 12 * hour, day]

/**
 * The step /stats reads [from, to) at (stats-plan.ts planStats): the nice step nearest to 100
 * points, raised to the bucket of the rollup it reads (none with a q; minutes up to 3 days; hours
 * beyond, and for by=level from a day on).
 * @param {number} from
 * @param {number} to
 * @param {boolean} filtered
 * @param {boolean} byLevel
 */
function statsStepMs (from, to, filtered, byLevel) {
  const ideal = Math.max(1, to - from) / 100
  let step = niceStepsMs[0]
  for (const s of niceStepsMs) if (Math.abs(Math.log(s / ideal)) < Math.abs(Math.log(step / ideal))) step = s
  let bucket = 1
  if (!filtered && to - from > hour) bucket = to - from <= 3 * day ? minute : hour
  if (byLevel && bucket > 1 && to - from >= day) bucket = hour
  return Math.ceil(step / bucket) * bucket
}

/**
 * A custom range widened to the steps /stats reads it at, both ends, so that the hits, the fields
 * and the histogram count the same events: /stats widens a range to whole steps, and its last bar
 * held the events after a chosen end in the past (explore34c H10: 110,228 in the legend beside
 * 105,489 hits). The wider range may take a coarser step: widened again until it holds.
 * @param {number} from
 * @param {number} to
 * @param {boolean} filtered
 * @param {boolean} byLevel
 */
function stepAligned (from, to, filtered, byLevel) {
  let window = { from, to }
  for (let k = 0; k < 4; k++) {
    const step = statsStepMs(window.from, window.to, filtered, byLevel)
    const next = { from: Math.floor(from / step) * step, to: Math.ceil(to / step) * step }
    if (next.from === window.from && next.to === window.to) break
    window = next
  }
  return window
}

/**
 * Per preset range: the grid its ends are put on (resolveWindow). 1 h on whole minutes: the range
 * is then a little over an hour, which /stats reads from the minute rollup at 1 min steps (a 30 s
 * grid left half a minute more in the legend than in the hits: explore34c H1).
 */
const presetGridMs = /** @type {Readonly<Record<string, number>>} */ ({ '15m': 10_000, '1h': 60_000, '24h': 3_600_000, '7d': 3_600_000 })

/**
 * Length of a historical range, ms.
 * @param {AppState} state
 */
export function rangeSpanMs (state) {
  return state.range === 'custom' && state.custom ? state.custom.to - state.custom.from : rangeMs[state.range] ?? 0
}

/**
 * "Nov 21 21:26 → 22:26", with the second date only when it differs.
 * @param {number} from ms
 * @param {number} to ms
 */
export function formatRange (from, to) {
  /** @param {number} ms */
  const day = (ms) => new Date(ms).toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
  // Seconds when an end has them (a zoom's), else minutes (explore32c F14).
  const length = from % 60_000 !== 0 || to % 60_000 !== 0 ? 8 : 5
  /** @param {number} ms */
  const time = (ms) => formatEventTime(ms).slice(0, length)
  return day(from) === day(to) ? `${day(from)} ${time(from)} → ${time(to)}` : `${day(from)} ${time(from)} → ${day(to)} ${time(to)}`
}
