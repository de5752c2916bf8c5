// @ts-check
// What the live and history views share: the host that app.js hands them (the API, the state,
// the panels, and the ways back to the app), /stats answers turned into chart points and totals,
// and the "no events" box.
import { $, codeBlock, el, replaceChildren, show } from './dom.js'
import { rangeSpanMs } from './url-state.js'

/** @typedef {import('./types.js').StatsAnswer} StatsAnswer */
/** @typedef {import('./types.js').StatsPoint} StatsPoint */

/**
 * @typedef {object} ViewHost
 * @property {import('./api.js').Api} api
 * @property {import('./state.js').AppState} state
 * @property {import('./charts.js').Charts} charts
 * @property {import('./panels.js').TopLists} topLists
 * @property {import('./panels.js').EventsTable} table
 * @property {(err: unknown, retry: () => void) => void} handleFailure the app's one place for failures
 * @property {() => void} restart starts the view again (a retry)
 * @property {(q: string) => void} applySearch
 * @property {() => void} clearPanels
 * @property {(count: number) => void} countLive the stream took `count` events in the last second (Live)
 */

/**
 * `/api/streams/{stream}/{suffix}?params`, empty parameters left out.
 * @param {string | null} stream
 * @param {string} suffix
 * @param {Record<string, string | number | null | undefined>} params
 */
export function streamPath (stream, suffix, params) {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(key, String(value))
  return `/api/streams/${encodeURIComponent(stream ?? '')}/${suffix}?${search}`
}

/**
 * A /stats series with the empty buckets filled in (zero counts, no percentiles).
 * @param {StatsAnswer} stats
 * @returns {StatsPoint[]}
 */
export function fillSeries (stats) {
  const byT = new Map(stats.series.map((p) => [p.t, p]))
  const step = stats.step_ms
  /** @type {StatsPoint[]} */
  const out = []
  const first = Math.floor(stats.from / step) * step
  for (let t = first; t < stats.to && out.length < 10_000; t += step) {
    out.push(byT.get(t) ?? { t, count: 0, status_2xx: 0, status_3xx: 0, status_4xx: 0, status_5xx: 0, bytes: 0, rt_p50: null, rt_p95: null, rt_p99: null })
  }
  return out
}

/**
 * @param {StatsAnswer} stats
 * @returns {import('./panels.js').Totals}
 */
export function totalsOf (stats) {
  return {
    count: stats.totals.count,
    errorRate: stats.totals.error_rate,
    bytes: stats.totals.bytes,
    uniqueSources: stats.totals.unique_sources,
  }
}

/**
 * The box under an empty events table: how to send a first event, or how to clear the search.
 * @param {ViewHost} host
 * @param {'live' | 'history' | null} kind null hides it
 */
export function showEventsEmpty (host, kind) {
  const box = $('events-empty')
  if (kind === null) { show(box, false); return }
  const { q, stream } = host.state
  const origin = location.origin
  const send = '# an ingest token for this stream (the answer\'s "token" is shown once)\n' +
    `curl -s -X POST ${origin}/api/streams/${stream}/ingest-token -H "Authorization: Bearer $SLUICE_TOKEN" \\\n  -H 'Content-Type: application/json' -d '{}'\n` +
    '# send an event with it\n' +
    `curl -s -X POST ${origin}/api/ingest/${stream} -H "Authorization: Bearer $INGEST_TOKEN" \\\n  -H 'Content-Type: application/x-ndjson' \\\n` +
    '  --data-binary \'{"host":"web-1","method":"GET","path":"/","status":200,"rt":0.012,"bytes":512}\''
  const title = q
    ? `No events match “${q}”${kind === 'live' ? ' yet' : ' in this range'}.`
    : kind === 'live' ? 'Waiting for events…' : 'No events in this range.'
  replaceChildren(box,
    el('p', { class: 'empty-title' }, title),
    q
      ? el('button', { type: 'button', class: 'btn', onclick: () => host.applySearch('') }, 'Clear the search')
      : [el('p', {}, `Send one to “${stream}” with an ingest token:`), codeBlock(send)])
  show(box)
}

/** Reads over a range longer than this scan raw events when they have a q (lib/query/read-limits.ts scanRangeMs). */
const scanRangeMs = 3_600_000

/**
 * How a view's first reads run: one after the other when each scans raw events (a q over more
 * than an hour: the server runs one such read per org at a time, query.maxScansPerOrg; the others
 * wait in the org's queue and answer 429 too_many_reads past query.maxQueueMs), else all at once. Call the function it returns with
 * each read, in the order they should run.
 * @param {import('./state.js').AppState} state
 * @returns {<T>(read: () => Promise<T>) => Promise<T>}
 */
export function readsInTurn (state) {
  if (!(state.q.trim() !== '' && state.range !== 'live' && rangeSpanMs(state) > scanRangeMs)) return (read) => read()
  /** @type {Promise<unknown>} */
  let queue = Promise.resolve()
  return (read) => {
    const result = queue.then(read)
    queue = result.then(() => {}, () => {})
    return result
  }
}
